"""AUTO-RT's strategy generator on a Hugging Face causal LM (the paper's AM^g_theta is an LLM, Vicuna-7B).

The LM writes a strategy as a sequence of vocabulary tokens, one per primitive, by constrained decoding: at every
position its next-token logits are read at the ``n_prims`` primitive tokens and one end token only (the other
tokens of the vocabulary are never sampled), with the same length rules as the toy `StrategyPolicy` (at least one
primitive, at most ``max_len``). The class has the toy's interface (``sample``, ``log_prob``, ``n_prims``, ``end``,
``max_len``), so `AutoRT`, `fit_supervised` and the pruner run on it unchanged: PPO's sequence log-probabilities
are the LM's own log-probabilities renormalised over the allowed tokens.

    model = AutoModelForCausalLM.from_pretrained(name)          # any causal LM (gpt2, llama, qwen2, ...)
    policy = LMStrategyPolicy.from_tokenizer(model, tok, n_prims=32, max_len=6)   # words chosen from the tokenizer
    AutoRT(policy, env, AutoRTConfig()).train()                  # lr None: the LM default, 1e-6

Primitive words are single tokens of the tokenizer: `from_tokenizer` picks them (common English words that are one
token with a leading space, else single-token words of the vocabulary), `from_words` takes yours and names any word
that is not one token (a multi-token word would need its later tokens scored too; pick another or let
`from_tokenizer` choose).

Wrap ``model`` with a peft LoRA first to train an adapter only (frozen weights get no gradient and the optimiser
skips them). `AutoRT` keeps a deep copy of the policy as its KL reference, so the model is held twice in memory.
Dropout is switched off (``model.eval()``): PPO's first ratio must be exactly 1.
"""

from __future__ import annotations

import torch
from torch import nn

from .policy import check_probs, constrain

# candidate primitive words for `from_tokenizer`, tried in this order (then the tokenizer's own vocabulary)
_WORD_TEXT = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo "
    "sierra tango uniform victor whiskey yankee zulu red green blue yellow black white brown orange purple pink grey "
    "one two three four five six seven eight nine ten cat dog bird fish horse cow lion bear wolf fox tree river "
    "stone cloud rain snow sun moon star fire water wind house door road book table chair apple bread milk salt"
)
WORDS = tuple(_WORD_TEXT.split(" "))


class LMStrategyPolicy(nn.Module):
    default_lr = 1e-6  # AutoRTConfig(lr=None): PPO on a pretrained LM (on a 135M one 3e-3 diverges, 1e-5 jumps)

    def __init__(self, model, n_prims: int, max_len: int, token_ids=None, prompt_ids=None):
        """``token_ids``: vocabulary ids of primitives 0..n_prims-1 followed by the end token (default
        0..n_prims); ``prompt_ids``: the prefix the strategy is written after (default: the model's BOS id, else the
        last vocabulary id)."""
        super().__init__()
        vocab = model.get_input_embeddings().num_embeddings
        ids = list(range(n_prims + 1)) if token_ids is None else [int(i) for i in token_ids]
        if len(ids) != n_prims + 1 or len(set(ids)) != len(ids):
            raise ValueError(f"token_ids must be {n_prims + 1} distinct ids (n_prims primitives, then end), got {ids}")
        if min(ids) < 0 or max(ids) >= vocab:
            raise ValueError(f"token_ids must lie in [0, {vocab}) (the model's vocabulary), got {ids}")
        if prompt_ids is None:
            bos = getattr(model.config, "bos_token_id", None)
            prompt_ids = [bos if isinstance(bos, int) and 0 <= bos < vocab else vocab - 1]
        if len(prompt_ids) == 0:
            raise ValueError("prompt_ids must hold at least one token (the first action is read after it)")
        self.model = model.eval()
        self.n_prims, self.max_len = n_prims, max_len
        self.words: list[str] | None = None  # the primitive words (then the end word), when built from a tokenizer
        self.register_buffer("ids", torch.tensor(ids), persistent=False)
        self.register_buffer("prompt", torch.tensor([int(i) for i in prompt_ids]), persistent=False)

    @classmethod
    def from_words(cls, model, tokenizer, words, end: str, prompt: str, max_len: int) -> LMStrategyPolicy:
        """Primitives named by ``words`` (each must be a single token of ``tokenizer``), ``end`` the stop word,
        ``prompt`` the text the strategy follows."""
        ids = []
        for w in [*words, end]:
            t = tokenizer(w, add_special_tokens=False)["input_ids"]
            if len(t) != 1:
                raise ValueError(
                    f"{w!r} is {len(t)} tokens for this tokenizer; every primitive word and the end "
                    "word must be exactly one token (try a leading space or another word, or let "
                    "LMStrategyPolicy.from_tokenizer choose them)"
                )
            ids.append(t[0])
        prompt_ids = tokenizer(prompt)["input_ids"]
        policy = cls(model, len(words), max_len, token_ids=ids, prompt_ids=prompt_ids)
        policy.words = [*words, end]
        return policy

    @classmethod
    def from_tokenizer(cls, model, tokenizer, n_prims: int, max_len: int, prompt: str = "Strategy:",
                       end: str | None = " end") -> LMStrategyPolicy:  # fmt: skip
        """``n_prims`` primitive words chosen from ``tokenizer``: the words of `WORDS` that are one token with a
        leading space (or, for a word-level tokenizer, without one), then other single-token alphabetic words of
        its vocabulary in id order; ``end`` is the stop word if it is one token and not a primitive, else the next
        such word. The chosen words are in ``policy.words``."""
        words = choose_words(tokenizer, n_prims + 1, first=[end] if end else [])
        return cls.from_words(model, tokenizer, words[1:], words[0], prompt, max_len)

    @property
    def end(self) -> int:
        return self.n_prims

    def _action_logits(self, actions: torch.Tensor) -> torch.Tensor:
        """(n, t) actions so far -> (n, t + 1, n_prims + 1) logits at the allowed tokens for positions 0..t."""
        n = actions.shape[0]
        x = torch.cat([self.prompt.expand(n, -1), self.ids[actions]], 1)
        logits = self.model(input_ids=x).logits  # (n, P + t, vocab)
        p = self.prompt.numel()
        return logits[:, p - 1 :, :][..., self.ids].float()

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None, temperature: float = 1.0) -> torch.Tensor:
        """(n, max_len + 1) action ids (primitives, end = n_prims); everything after the first end is end."""
        out = torch.full((n, self.max_len + 1), self.end)
        done = torch.zeros(n, dtype=torch.bool)
        for t in range(self.max_len + 1):
            z = constrain(self._action_logits(out[:, :t])[:, t], t, self.end, self.max_len)
            p = check_probs(torch.softmax(z / temperature, -1), f"sampling position {t}")
            x = torch.multinomial(p, 1, generator=generator).squeeze(1)
            out[:, t] = torch.where(done, torch.full_like(x, self.end), x)
            done |= out[:, t] == self.end
            if done.all():
                break
        return out

    def log_prob(self, tokens: torch.Tensor) -> torch.Tensor:
        """(n,) log-probability of each action row up to and including its first end (one forward pass)."""
        z = self._action_logits(tokens[:, : self.max_len])  # positions 0..max_len
        total = torch.zeros(tokens.shape[0], device=z.device)
        alive = torch.ones(tokens.shape[0], dtype=torch.bool)
        for t in range(self.max_len + 1):
            lp = torch.log_softmax(constrain(z[:, t], t, self.end, self.max_len), -1)
            lp = lp.gather(1, tokens[:, t : t + 1]).squeeze(1)
            total = total + torch.where(alive, lp, torch.zeros_like(lp))
            alive = alive & (tokens[:, t] != self.end)
        return total


def _one_token(tokenizer, text: str) -> int | None:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids[0] if len(ids) == 1 else None


def choose_words(tokenizer, n: int, first: list[str] = ()) -> list[str]:
    """``n`` distinct words, each a single token of ``tokenizer`` (distinct ids): ``first`` (kept when one token),
    then `WORDS` with a leading space (or bare, for a word-level tokenizer), then single-token alphabetic words of the
    vocabulary in id order. A clear error when the tokenizer has fewer."""
    out, seen = [], set()

    def take(word: str) -> bool:
        tid = _one_token(tokenizer, word)
        special = (tokenizer.eos_token_id, tokenizer.bos_token_id, tokenizer.unk_token_id, tokenizer.pad_token_id)
        if tid is None or tid in seen or tid in special:
            return False
        out.append(word)
        seen.add(tid)
        return len(out) >= n

    for w in first:
        if take(w):
            return out
    for w in WORDS:
        if take(" " + w) or (_one_token(tokenizer, " " + w) is None and take(w)):
            return out
    for tid in range(len(tokenizer)):
        text = tokenizer.decode([tid])
        if text.strip().isalpha() and text.strip().isascii() and take(text):
            return out
    raise ValueError(f"the tokenizer has only {len(out)} single-token words; {n} are needed (fewer n_prims?)")
