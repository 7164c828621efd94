"""A problem for LTPO: the embedded input [E(x); H; E(g)] split into a fixed prefix, K thought slots and a suffix.

``x`` is the prompt up to the thought slots, ``H ∈ R^{K×d}`` the latent thoughts (initialised with the embedding of
a placeholder token repeated K times), ``g`` what follows them up to where the answer starts (the end of the user
turn and the assistant header in a chat model; an answer marker in a tiny model). Only ``H`` is ever optimised.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LatentProblem:
    prefix_ids: torch.Tensor  # [n_prefix] long
    suffix_ids: torch.Tensor  # [n_suffix] long
    num_thoughts: int
    placeholder_id: int

    def __post_init__(self):
        self.prefix_ids = torch.as_tensor(self.prefix_ids, dtype=torch.long).reshape(-1)
        self.suffix_ids = torch.as_tensor(self.suffix_ids, dtype=torch.long).reshape(-1)
        if len(self.prefix_ids) < 1:
            raise ValueError("LatentProblem.prefix_ids is empty; the prompt before the thoughts needs ≥ 1 token")
        if self.num_thoughts < 1:
            raise ValueError(f"LatentProblem.num_thoughts must be ≥ 1, got {self.num_thoughts}")

    @property
    def input_ids(self) -> torch.Tensor:
        """The token sequence of CoT-Unk: prefix, K placeholders, suffix (what H^0 embeds)."""
        thoughts = torch.full((self.num_thoughts,), self.placeholder_id, dtype=torch.long)
        return torch.cat([self.prefix_ids, thoughts, self.suffix_ids])


_SEPARATORS = ("endoftext", "end_of_text", "eos", "eot", "im_end", "im_start", "</s>", "<s>", "begin_of_text")


def _is_separator(tokenizer, tid: int) -> bool:
    """A token that ends or starts a document or a turn (bos, eos, pad-as-eos, <|endoftext|>, <|im_end|>, ...)."""
    if tid in {tokenizer.eos_token_id, tokenizer.bos_token_id}:
        return True
    text = str(tokenizer.convert_ids_to_tokens(int(tid))).lower()
    return any(s in text for s in _SEPARATORS)


def placeholder_id(tokenizer, token: str | None = None) -> int:
    """The id whose embedding initialises the thoughts (not stated in the paper; the official code uses Llama-3's
    reserved special tokens and Qwen's ``<|endoftext|>``). ``token`` if given (it must be one token of the
    vocabulary); else, chosen from the tokenizer and never a separator (a document or turn separator such as
    SmolLM2's ``<|endoftext|>``, its unk token, makes a chat model start a new document):

    1. a reserved / unused special token of the vocabulary (Llama-3's ``<|reserved_special_token_0|>``);
    2. the single token of ``...`` (a neutral "thinking" filler; SmolLM2, GPT-2, Qwen2);
    3. the unk token, if it is not a separator (word-level tokenizers);
    otherwise an error asks for ``LTPOConfig(placeholder=...)``."""
    if token is not None:
        ids = tokenizer.convert_tokens_to_ids([token])
        if not ids or ids[0] is None or (tokenizer.unk_token_id is not None and ids[0] == tokenizer.unk_token_id
                                         and token != tokenizer.unk_token):  # fmt: skip
            example = tokenizer.convert_ids_to_tokens(tokenizer("...", add_special_tokens=False)["input_ids"][:1])
            raise ValueError(
                f"placeholder token {token!r} is not one token of the tokenizer's vocabulary; pass a token as the "
                f"vocabulary spells it (e.g. {example})"
            )
        return int(ids[0])
    vocab = tokenizer.get_vocab()
    spare = [t for t in vocab if ("reserved" in t.lower() or "unused" in t.lower()) and t.startswith(("<", "["))]
    reserved = sorted(spare, key=lambda t: (len(t), t))
    if reserved:
        return int(vocab[reserved[0]])
    dots = tokenizer("...", add_special_tokens=False)["input_ids"]
    if len(dots) == 1 and dots[0] != tokenizer.unk_token_id and not _is_separator(tokenizer, dots[0]):
        return int(dots[0])
    unk = tokenizer.unk_token_id
    if unk is not None and not _is_separator(tokenizer, unk):
        return int(unk)
    raise ValueError(
        "this tokenizer has no reserved token, no single-token '...' and no unk token that is not a separator: pass "
        "LTPOConfig(placeholder=TOKEN) with a token of its vocabulary"
    )


THOUGHT_NOTE = (
    "There are {k} special tokens that hold compressed latent reasoning which may help you. "
    "Use them if they are useful, else ignore them. Here are the {k} special tokens: "
)


def chat_problem(tokenizer, question: str, num_thoughts: int, placeholder: str | None = None,
                 note: str = THOUGHT_NOTE, answer_prefix: str = "") -> LatentProblem:  # fmt: skip
    """Chat-formatted problem as in the official ``build_inputs``: the thoughts end the user message (after a note
    that announces them), the suffix is the end-of-turn token(s) plus the assistant generation prompt (and an
    optional ``answer_prefix`` such as "The answer is", which the official code does not use). A tokenizer without a
    chat template gets plain text: question and note, the thoughts, then the answer prefix."""
    pid = placeholder_id(tokenizer, placeholder)
    content = question.rstrip() + "\n\n" + note.format(k=num_thoughts)
    if getattr(tokenizer, "chat_template", None) is None:  # a plain LM: the question, the thoughts, the prefix
        prefix = tokenizer(content.rstrip())["input_ids"]
        suffix = tokenizer(answer_prefix, add_special_tokens=False)["input_ids"] if answer_prefix else []
        return LatentProblem(torch.tensor(prefix), torch.tensor(suffix, dtype=torch.long), num_thoughts, pid)
    marker = "\u2063LTPO\u2063"  # a string that cannot occur in the question: where the thoughts go
    content += marker
    text = tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                         add_generation_prompt=True)  # fmt: skip
    before, after = text.split(marker)
    prefix = tokenizer(before, add_special_tokens=False)["input_ids"]
    suffix = tokenizer(after + answer_prefix, add_special_tokens=False)["input_ids"]
    return LatentProblem(torch.tensor(prefix), torch.tensor(suffix), num_thoughts, pid)
