"""BED-LLM's LLM roles on a Hugging Face causal LM (any model `iclr26.lm.load_model` or `zoo.load` gives).

- `HFAnswerModel`: p(y | θ, x) from the next-token distribution after a prompt in which the model knows the target
  ("The secret is θ. Question: x. Answer Yes or No."), restricted to the admissible answer tokens and renormalised
  over them (paper §3: answers are read from the answer-token logits, never sampled). Each answer may have several
  tokenisations (" Yes", "Yes", "yes"); their probabilities are summed.
- `HFHypothesisSampler` and `HFQuestionProposer`: in-context sampling with `generate`, one candidate per line.

Small models (SmolLM2-135M) are poor generators; the answer model is the part that carries over, and it is what the
real-model games of the reproduction use.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import torch

ANSWER_PROMPT = "You are playing 20 Questions. The secret thing is: {hypothesis}. Answer the question about it with Yes or No.\nQuestion: {question}"  # noqa: E501
VARIANTS = {"Yes": ("Yes", " Yes", "yes", " yes"), "No": ("No", " No", "no", " no")}


def _first_tokens(tok, words: Sequence[str]) -> list[int]:
    ids = []
    for w in words:
        t = tok(w, add_special_tokens=False)["input_ids"]
        if t and t[0] not in ids:
            ids.append(t[0])
    return ids


class HFAnswerModel:
    """p(answer | hypothesis, question) from an HF causal LM's next-token probabilities (cached per pair)."""

    def __init__(
        self,
        model,
        tok,
        template: str = ANSWER_PROMPT,
        answers: tuple[str, ...] = ("No", "Yes"),
        variants: dict[str, Sequence[str]] | None = None,
        chat: bool | None = None,
        batch_size: int = 32,
        render: Callable[[Hashable, Hashable], str] | None = None,
        prefix: str = "",
    ):
        if render is None and ("{hypothesis}" not in template or "{question}" not in template):
            raise ValueError("template must contain {hypothesis} and {question}")
        self.render = render  # optional: (hypothesis, question) -> prompt text, replacing the template
        self.prefix = prefix  # shared text before every prompt (few-shot examples), encoded once and cached
        if prefix and chat:
            raise ValueError("a shared prefix needs chat=False (the chat template would wrap it per prompt)")
        self.model, self.tok, self.template, self.answers = model, tok, template, tuple(answers)
        variants = variants or VARIANTS
        missing = [a for a in self.answers if a not in variants]
        if missing:
            raise ValueError(f"no token variants for answers {missing}; pass variants={{answer: [strings]}}")
        self.answer_ids = [_first_tokens(tok, variants[a]) for a in self.answers]
        self.chat = chat if chat is not None else (not prefix and getattr(tok, "chat_template", None) is not None)
        self._prefix_cache = None
        self.batch_size = batch_size
        self._cache: dict[tuple[Hashable, Hashable], np.ndarray] = {}

    def prompt(self, hypothesis, question) -> str:
        if self.render is not None:
            text = self.render(hypothesis, question)
        else:
            text = self.template.format(hypothesis=hypothesis, question=question)
        if self.chat:
            msgs = [{"role": "user", "content": text}]
            return self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        return text if self.render is not None else text + "\nAnswer:"

    @torch.no_grad()
    def _prefix(self):
        """The KV cache of the shared prefix (computed once) and its length."""
        if self._prefix_cache is None:
            ids = torch.tensor([self.tok(self.prefix)["input_ids"]])
            self._prefix_cache = (self.model(input_ids=ids, use_cache=True).past_key_values, ids.shape[1])
        return self._prefix_cache

    @torch.no_grad()
    def _score(self, pairs: list[tuple[Hashable, Hashable]]) -> None:
        import copy

        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        for i in range(0, len(pairs), self.batch_size):
            chunk = pairs[i : i + self.batch_size]
            special = not self.chat and not self.prefix
            enc = [self.tok(self.prompt(h, q), add_special_tokens=special)["input_ids"] for h, q in chunk]
            n = max(map(len, enc))
            ids = torch.full((len(enc), n), pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for j, e in enumerate(enc):
                ids[j, : len(e)], mask[j, : len(e)] = torch.tensor(e), 1
            if self.prefix:  # continue from the cached prefix (right padding keeps the real tokens' positions)
                cache, plen = self._prefix()
                cache = copy.deepcopy(cache)
                cache.batch_repeat_interleave(len(enc))
                full = torch.cat([torch.ones(len(enc), plen, dtype=torch.long), mask], 1)
                logits = self.model(input_ids=ids, attention_mask=full, past_key_values=cache).logits
            else:
                logits = self.model(input_ids=ids, attention_mask=mask).logits
            last = logits[torch.arange(len(enc)), mask.sum(1) - 1].float().softmax(-1)
            mass = torch.stack([last[:, a].sum(-1) for a in self.answer_ids], -1)  # [B, Y]
            mass = mass / mass.sum(-1, keepdim=True)  # renormalise over the admissible answers
            for (h, q), row in zip(chunk, mass.numpy()):
                self._cache[(h, q)] = row

    def probs(self, hypotheses, questions) -> np.ndarray:
        todo = list(dict.fromkeys((h, q) for h in hypotheses for q in questions if (h, q) not in self._cache))
        if todo:
            self._score(todo)
        return np.array([[self._cache[(h, q)] for q in questions] for h in hypotheses])


def _lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = line.strip().lstrip("-*0123456789.) ").strip()
        if s:
            out.append(s)
    return out


def _history_text(history) -> str:
    return "\n".join(f"Q: {q} A: {'Yes' if a == 1 else 'No'}" for q, a in history) or "(no questions yet)"


class HFHypothesisSampler:
    """q(θ | h_t): the LM lists candidates consistent with the history (in context), one per line."""

    def __init__(self, model, tok, kind: str = "animal", max_new_tokens: int = 80, temperature: float = 1.0):
        self.model, self.tok, self.kind = model, tok, kind
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    @torch.no_grad()
    def sample(self, history, n, rng) -> list[str]:
        torch.manual_seed(int(rng.integers(2**31)))
        text = f"We play 20 Questions about an {self.kind}. So far:\n{_history_text(history)}\nList {n} {self.kind}s consistent with every answer, one per line."  # noqa: E501
        msgs = [{"role": "user", "content": text}]
        ids = self.tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        out = self.model.generate(ids, do_sample=True, temperature=self.temperature, max_new_tokens=self.max_new_tokens)
        return [s.lower() for s in _lines(self.tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True))][:n]


class HFQuestionProposer:
    """Hypothesis-conditioned candidate questions: "ask a yes/no question that splits these candidates"."""

    def __init__(self, model, tok, max_new_tokens: int = 120, temperature: float = 1.0):
        self.model, self.tok, self.max_new_tokens, self.temperature = model, tok, max_new_tokens, temperature

    @torch.no_grad()
    def propose(self, history, hypotheses, weights, k, rng) -> list[str]:
        torch.manual_seed(int(rng.integers(2**31)))
        cands = ", ".join(map(str, list(hypotheses)[:12]))
        text = f"We play 20 Questions. So far:\n{_history_text(history)}\nThe answer is one of: {cands}. Write {k} different yes/no questions that split these candidates into two halves, one per line."  # noqa: E501
        msgs = [{"role": "user", "content": text}]
        ids = self.tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        out = self.model.generate(ids, do_sample=True, temperature=self.temperature, max_new_tokens=self.max_new_tokens)
        asked = {q for q, _ in history}
        qs = [s for s in _lines(self.tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)) if s.endswith("?")]
        return [q for q in dict.fromkeys(qs) if q not in asked][:k]
