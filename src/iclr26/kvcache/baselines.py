"""The eviction baselines ReST-KV is compared with, as kvpress presses, under one budget interface.

kvpress already has StreamingLLM (sinks + recent tokens), SnapKV (window attention, pooled), TOVA (last query's
attention), PyramidKV (SnapKV scores with budgets that shrink with depth) and random eviction; we use those presses'
own ``score``. Two pieces are added in the kvpress style:

- :class:`AccumulatedAttentionPress`, H2O-style accumulated attention. kvpress's ``ObservedAttentionPress`` needs the
  attention matrix that only ``attn_implementation="eager"`` returns; this subclass recomputes it (in query chunks)
  when the layer ran with SDPA, then applies kvpress's own normalised sum.
- :class:`BudgetPress`, which runs any scorer press under a *fixed number of tokens per head* (kvpress only takes a
  compression ratio) and registers its hooks through the model adapters (:class:`AdapterHooks`), so the budget is
  exact in every layer and head.

``make_press("snapkv", budget=64)`` builds any method of the reproduction by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from kvpress import (
    BasePress,
    ObservedAttentionPress,
    PyramidKVPress,
    RandomPress,
    ScorerPress,
    SnapKVPress,
    StreamingLLMPress,
    TOVAPress,
)
from transformers.models.llama.modeling_llama import repeat_kv

from ..lm.adapters import UnsupportedModelError
from .common import AdapterHooks, attn_scaling, check_budget, head_dims, keep_top, n_kept, ratio_for, window_queries
from .restkv import ReSTKVPress


@dataclass
class AccumulatedAttentionPress(ObservedAttentionPress):
    """H2O-style heavy hitters: mean attention each token receives from all later prompt queries (kvpress's
    ObservedAttentionPress), with the column sums accumulated chunk by chunk when the layer did not return the
    attention matrix (memory ``[b, H, chunk, T]``, never ``[b, H, T, T]``)."""

    chunk: int = 512

    def score(self, module, hidden_states, keys, values, attentions, kwargs):
        if attentions is not None:
            return super().score(module, hidden_states, keys, values, attentions, kwargs)
        b, n_kv, t, _ = keys.shape
        col_sums = attention_column_sums(module, hidden_states, keys, kwargs, self.chunk)  # [b, H, T]
        # kvpress's normalisation: token n is seen by the T − n queries at or after it; then mean over a GQA group
        scores = col_sums / torch.arange(t, 0, -1, device=keys.device, dtype=col_sums.dtype)
        return scores.view(b, n_kv, -1, t).mean(2)


def attention_column_sums(module, hidden_states, keys, kwargs, chunk: int = 512) -> torch.Tensor:
    """``Σ_q A[q, n]`` over every prompt query of the causal attention, ``[b, H, T]``, accumulated ``chunk`` queries
    at a time (the attention matrix is never held whole)."""
    n_heads, n_kv, _ = head_dims(module)
    t = keys.shape[2]
    q = window_queries(module, hidden_states, kwargs, t).float()
    k = repeat_kv(keys, n_heads // n_kv).float().transpose(-1, -2)
    out = torch.zeros(q.shape[0], n_heads, t, dtype=torch.float32, device=keys.device)
    pos = torch.arange(t, device=keys.device)
    for s in range(0, t, chunk):
        logits = q[:, :, s : s + chunk] @ k * attn_scaling(module)
        hidden = pos.unsqueeze(0) > pos[s : s + chunk].unsqueeze(1)
        out += torch.softmax(logits.masked_fill(hidden, float("-inf")), dim=-1).sum(-2)
    return out


_NEEDS_LLAMA_QUERIES = (SnapKVPress, TOVAPress)  # kvpress reads q_proj + RoPE: llama-likes only


@dataclass
class BudgetPress(AdapterHooks, BasePress):
    """Run ``press`` (a kvpress ScorerPress) with a fixed ``budget`` of KV pairs per layer and head, or a
    ``compression_ratio``. PyramidKV keeps its own per-layer split of the same total (its average is the budget)."""

    press: ScorerPress = field(default_factory=SnapKVPress)
    budget: int | None = None
    compression_ratio: float | None = None
    # evaluation speed-up: scores of one prefill memoised per layer and reused across budgets (only for presses whose
    # scores do not depend on the budget; StreamingLLM and PyramidKV never use it)
    score_cache: dict | None = None

    def __post_init__(self):
        if not isinstance(self.press, ScorerPress):
            raise TypeError(f"BudgetPress wraps a kvpress ScorerPress, got {type(self.press).__name__}")
        if self.budget is None and self.compression_ratio is None:
            self.compression_ratio = 0.0
        check_budget(self.compression_ratio, self.budget)

    def post_init_from_model(self, model):
        if model.config.model_type == "gpt2" and isinstance(self.press, _NEEDS_LLAMA_QUERIES):
            raise UnsupportedModelError(
                f"kvpress's {type(self.press).__name__} reads q_proj and RoPE embeddings, which GPT-2 lacks; use it on "
                "llama/qwen2/mistral, or use ReSTKVPress / StreamingLLM / random / H2O-style presses on GPT-2"
            )
        self.press.post_init_from_model(model)

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        t = keys.shape[2]
        k = n_kept(t, self.compression_ratio, self.budget)
        if k >= t:
            return keys, values
        # kvpress presses read their own ratio (StreamingLLM's recent span, PyramidKV's layer budgets): set it so that
        # kvpress's own count (int, and PyramidKV's round) gives exactly k
        self.press.compression_ratio = ratio_for(k, t)
        if isinstance(self.press, PyramidKVPress):
            return self.press.compress(module, hidden_states, keys, values, attentions, kwargs)
        window = getattr(self.press, "window_size", 0)
        if window and t <= window:  # SnapKV needs more tokens than its window: keep the most recent ones
            return keys[:, :, -k:].contiguous(), values[:, :, -k:].contiguous()
        memo = self.score_cache if not isinstance(self.press, StreamingLLMPress) else None
        if memo is not None and module.layer_idx in memo:
            scores = memo[module.layer_idx]
        else:
            scores = self.press.score(module, hidden_states, keys, values, attentions, kwargs)
            if memo is not None:
                memo[module.layer_idx] = scores
        return keep_top(keys, values, scores, k)


METHODS = (
    "full",
    "streaming_llm",
    "h2o",
    "tova",
    "snapkv",
    "pyramidkv",
    "random",
    "restkv",
    "restkv_no_lor",
    "restkv_no_ema",
    "restkv_no_aws",
    "restkv_legacy",
)


def make_press(
    method: str,
    *,
    budget: int | None = None,
    compression_ratio: float | None = None,
    window_size: int = 32,
    kernel_size: int = 5,
    n_sink: int = 4,
    seed: int = 0,
    score_cache: dict | None = None,
    **restkv_kwargs,
):
    """The press of ``method`` (one of :data:`METHODS`) at the given budget; ``full`` returns None (no press).

    ``score_cache``: one dict per (prefill, method) lets budget-independent baselines score each layer once."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    check_budget(compression_ratio, budget)
    if method == "full":
        return None
    if method.startswith("restkv"):
        ablation = {"restkv_no_lor": "use_lor", "restkv_no_ema": "use_ema", "restkv_no_aws": "use_aws"}.get(method)
        if ablation:
            restkv_kwargs[ablation] = False
        if method == "restkv_legacy":  # this library's earlier reading: Eq. 7 per query, then its own window rule
            restkv_kwargs = {"metric_mode": "before", "pooling": "legacy", **restkv_kwargs}
        kw = {"budget": budget} if budget is not None else {"compression_ratio": compression_ratio or 0.0}
        return ReSTKVPress(window_size=window_size, **kw, **restkv_kwargs)
    inner = {
        "streaming_llm": lambda: StreamingLLMPress(n_sink=n_sink),
        "h2o": lambda: AccumulatedAttentionPress(),
        "tova": lambda: TOVAPress(),
        "snapkv": lambda: SnapKVPress(window_size=window_size, kernel_size=kernel_size),
        "pyramidkv": lambda: PyramidKVPress(window_size=window_size, kernel_size=kernel_size),
        "random": lambda: RandomPress(seed=seed),
    }[method]()
    return BudgetPress(press=inner, budget=budget, compression_ratio=compression_ratio, score_cache=score_cache)
