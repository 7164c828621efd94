"""Forward passes of [E(x); H; E(g)] for a batch of problems, with the prompt prefix encoded once.

The prefix E(x) never changes during the optimisation, so its keys and values are computed once (``use_cache=True``)
and every step runs only the K + |g| suffix positions on that cache, whose prefix tensors are put back after the pass
(plain ``DynamicLayer`` caches; a deep copy per step for any other cache type): a cache must not keep what a step
appended, or the next step would see the previous step's thoughts. ``use_cache=False`` runs the whole sequence every
step (the naive loop); both give the same logits up to float rounding (a test).

Problems of different prompt lengths share a batch by left-padding the prefixes (masked out); with rotary position
embeddings (llama, qwen2) this changes nothing but float rounding, as every real token keeps its relative positions.
The thoughts and the suffix must have equal lengths in a batch.
"""

from __future__ import annotations

import copy

import torch

from .problem import LatentProblem
from .reward import confidence_reward


class LatentScorer:
    """Logits, confidence rewards and answers of a frozen model for thoughts ``H`` of shape [B, K, d]."""

    def __init__(self, model, problems: list[LatentProblem], use_cache: bool = True, include_next: bool = True):
        if not problems:
            raise ValueError("LatentScorer needs at least one problem")
        shapes = {(len(p.suffix_ids), p.num_thoughts) for p in problems}
        if len(shapes) != 1:
            raise ValueError(f"problems in one batch need equal suffix and thought lengths, got {shapes}")
        self.model, self.use_cache = model, use_cache
        self.n_suffix, self.k = shapes.pop()
        self.n_prefix = max(len(p.prefix_ids) for p in problems)
        ids = torch.stack([torch.cat([p.prefix_ids[:1].expand(self.n_prefix - len(p.prefix_ids)), p.prefix_ids])
                           for p in problems])  # fmt: skip
        self.prefix_mask = None  # left padding, only where prompt lengths differ
        if any(len(p.prefix_ids) != self.n_prefix for p in problems):
            self.prefix_mask = (torch.arange(self.n_prefix)[None] >= torch.tensor(
                [self.n_prefix - len(p.prefix_ids) for p in problems])[:, None]).long()  # fmt: skip
        emb = model.get_input_embeddings()
        with torch.no_grad():
            self.prefix = emb(ids)  # [B, n, d]
            self.suffix = emb(torch.stack([p.suffix_ids for p in problems]))  # [B, m, d]
            self.h0 = emb(torch.tensor([[p.placeholder_id] * p.num_thoughts for p in problems]))  # H^0 = E([THINK])×K
        self.cache = None
        if use_cache:
            with torch.no_grad():
                self.cache = model(inputs_embeds=self.prefix, attention_mask=self.prefix_mask,
                                   use_cache=True).past_key_values  # fmt: skip
        self._prefix_kv = None  # the prefix's own key/value tensors, put back after every pass
        layers = getattr(self.cache, "layers", None)
        if layers and all(type(layer).__name__ == "DynamicLayer" for layer in layers):
            self._prefix_kv = [(layer.keys, layer.values) for layer in layers]
        # Reward positions P: the K thought positions, plus the one after the last thought (official code).
        self.positions = list(range(self.k + (1 if include_next and self.n_suffix > 0 else 0)))
        self.n_forward = 0

    def logits(self, h: torch.Tensor, extra: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, K + m (+ extra), vocab] at the thought, suffix (and ``extra`` embedded) positions."""
        if h.shape != self.h0.shape:
            raise ValueError(f"thoughts must have shape {tuple(self.h0.shape)}, got {tuple(h.shape)}")
        tail = [h.to(self.prefix.dtype), self.suffix] + ([extra] if extra is not None else [])
        x = torch.cat(tail, dim=1)
        self.n_forward += 1
        mask = self.attention_mask(x.shape[1])
        if self.use_cache:
            if self._prefix_kv is None:  # a cache type we cannot reset: a fresh copy every step
                return self.model(inputs_embeds=x, past_key_values=copy.deepcopy(self.cache), attention_mask=mask,
                                  use_cache=True).logits  # fmt: skip
            try:
                return self.model(inputs_embeds=x, past_key_values=self.cache, attention_mask=mask,
                                  use_cache=True).logits  # fmt: skip
            finally:  # back to the prompt prefix (the same tensors, not a copy: cheaper than a deep copy per step)
                for layer, (k, v) in zip(self.cache.layers, self._prefix_kv):
                    layer.keys, layer.values = k, v
        out = self.model(inputs_embeds=torch.cat([self.prefix, x], dim=1), attention_mask=mask, use_cache=False)
        return out.logits[:, self.n_prefix :]

    def attention_mask(self, n_after: int) -> torch.Tensor | None:
        """Mask over [prefix; n_after positions] (None without padding: the exact unpadded path)."""
        if self.prefix_mask is None:
            return None
        return torch.cat([self.prefix_mask, torch.ones(len(self.prefix_mask), n_after, dtype=torch.long)], dim=1)

    def reward(self, h: torch.Tensor, k: int = 10) -> torch.Tensor:
        """R(H) per problem [B] (Eq. 5), differentiable in ``h`` when grad is enabled."""
        return confidence_reward(self.logits(h), self.positions, k)

    def answer_logits(self, h: torch.Tensor) -> torch.Tensor:
        """Next-token logits [B, vocab] after the suffix: the first answer token's distribution."""
        return self.logits(h)[:, self.k + self.n_suffix - 1]

    def gold_logprob(self, h: torch.Tensor, answer_ids: torch.Tensor) -> torch.Tensor:
        """log p(answer | x, H, g) per problem [B] (teacher forcing): the gold-label oracle's objective."""
        answer_ids = answer_ids.reshape(len(self.h0), -1)
        extra = self.model.get_input_embeddings()(answer_ids[:, :-1]) if answer_ids.shape[1] > 1 else None
        logits = self.logits(h, extra)[:, self.k + self.n_suffix - 1 :]
        logp = torch.log_softmax(logits.float(), -1).gather(-1, answer_ids[..., None])[..., 0]
        return logp.sum(-1)

    def embeds(self, h: torch.Tensor) -> torch.Tensor:
        """The full input [E(x); H; E(g)] of shape [B, n + K + m, d] (for ``generate(inputs_embeds=...)``)."""
        return torch.cat([self.prefix, h.to(self.prefix.dtype), self.suffix], dim=1)
