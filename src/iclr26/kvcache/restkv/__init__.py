"""ReST-KV: KV-cache eviction by layer-wise output reconstruction with spatial-temporal smoothing.

Paper: An et al., "ReST-KV: Robust KV Cache Eviction with Layer-wise Output Reconstruction and Spatial-Temporal
Smoothing", ICLR 2026 (https://arxiv.org/abs/2605.08840, https://openreview.net/forum?id=PhEHuo7oMm). Official code:
https://github.com/an-yongqi/rest-kv (``restkv/restkv_utils.py``, ``RestKVCluster``); the defaults below are its
published configuration (``scripts/longbench/run_*.sh``: ``--use_wo --use_ema --alpha 0.3 --metric_mode after
--pooling adaptive --scale 2000``, window 32, kernel 5).

Attention-weight scores (H2O, SnapKV, PyramidKV) keep the tokens a query looks at most, but deleting a token hands its
softmax mass to the others, so what matters is how much the *layer output* moves when the token goes. For one head with
weights ``A[n]``, output ``o = Σ A[n] v_n`` and output projection slice ``W_O^h``, deleting token ``n`` renormalises
the softmax to ``o' = (o − A[n] v_n)/(1 − A[n])``; hence ``o − o' = A[n]/(1 − A[n]) · (v_n − o)`` exactly and the
layer-wise output reconstruction (LOR) score is

    I_t[n] = A_t[n] / (1 − A_t[n]) · ‖(o_t − v_n) W_O^h‖        (Eq. 7)

Two ways to combine it with the temporal smoothing (EMA over the observation window, Sec. 3.3), both in the official
code: ``metric_mode="after"`` (the published configuration) smooths the window's *attention* first,
``Ā = EMA_t(A_t)``, and applies Eq. 7 once to ``Ā`` with ``ō = Σ_n Ā[n] v_n`` over the evicted region;
``metric_mode="before"`` applies Eq. 7 per window query and smooths the scores. Spatial smoothing (AWS, Sec. 3.4):
the official code measures the drift ``t`` = mean position of the top ``B − S_w`` tokens of the front half of the
window minus that of the rear half, and average-pools the scores with kernel ``max(5, 2⌊|t|/scale⌋ + 1)``, replicate
padding and an offset of ``⌊t/scale⌋`` positions. Each layer and KV head keeps its top-``B`` tokens plus the window;
decoding then runs on the shrunk cache.

Usage (kvpress style)::

    with ReSTKVPress(compression_ratio=0.75)(model):
        model.generate(input_ids, max_new_tokens=20)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from kvpress import ScorerPress
from torch import nn
from transformers.models.llama.modeling_llama import repeat_kv

from iclr26.kvcache.common import (
    AdapterHooks,
    check_budget,
    head_dims,
    keep_top,
    n_kept,
    output_projection,
    window_attention,
)

METRIC_MODES = ("after", "before")
POOLINGS = ("adaptive", "legacy", "none")


def _head_gram(w_o: torch.Tensor, n_heads: int, d: int, dt) -> torch.Tensor:
    """Per-head Gram matrices ``G_h = W_O^hᵀ W_O^h`` ``[H, d, d]``: ``‖u W_O^h‖² = u G_h uᵀ``."""
    w_heads = w_o.to(dt).view(w_o.shape[0], n_heads, d).transpose(0, 1)  # [H, D, d]
    return w_heads.transpose(1, 2) @ w_heads


def lor_scores(attn: torch.Tensor, values: torch.Tensor, w_o: torch.Tensor | None, eps: float = 1e-6) -> torch.Tensor:
    """Eq. 7 for every window query and token: ``A/(1 − A) · ‖(o − v_n) W_O^h‖`` (``metric_mode="before"``).

    attn: ``[b, H, w, T]`` softmax weights (rows sum to 1, zero where the causal mask hides a token);
    values: ``[b, H, T, d]`` (already repeated to the query heads); w_o: ``[D, H·d]`` output projection, or None for
    the distance in value space (the official ``use_wo=False``). Returns ``[b, H, w, T]``.
    """
    b, n_heads, w, t = attn.shape
    d = values.shape[-1]
    dt = torch.promote_types(attn.dtype, torch.float32)  # at least float32 for the score arithmetic
    attn, v = attn.to(dt), values.to(dt)
    o = attn @ v  # o_t = Σ_n A_t[n] v_n
    gram = _head_gram(w_o, n_heads, d, dt) if w_o is not None else torch.eye(d, dtype=dt, device=v.device)
    og = o @ gram
    dist2 = (og * o).sum(-1, keepdim=True) - 2 * og @ v.transpose(-1, -2) + ((v @ gram) * v).sum(-1).unsqueeze(-2)
    amplification = attn / (1 - attn).clamp_min(eps)  # attention mass redistributed when token n is deleted
    return amplification * dist2.clamp_min(0).sqrt()


def lor_after(attn_bar: torch.Tensor, values: torch.Tensor, w_o: torch.Tensor | None, eps: float = 1e-6):
    """Eq. 7 applied once to the smoothed window attention ``Ā`` ``[b, H, P]`` (``metric_mode="after"``, the official
    default): ``ō = Σ_{n<P} Ā[n] v_n`` (evicted region only, as the official code), then
    ``Ā/(1 − Ā)·‖(ō − v_n)W_O^h‖``."""
    dt = torch.promote_types(attn_bar.dtype, torch.float32)
    a = attn_bar.to(dt)
    v = values[..., : a.shape[-1], :].to(dt)  # [b, H, P, d]
    o = (a.unsqueeze(-2) @ v).squeeze(-2)  # [b, H, d]
    diff = o.unsqueeze(-2) - v
    if w_o is not None:
        gram = _head_gram(w_o, a.shape[1], v.shape[-1], dt)
        dist2 = ((diff @ gram) * diff).sum(-1)
    else:
        dist2 = (diff * diff).sum(-1)
    return a / (1 - a).clamp_min(eps) * dist2.clamp_min(0).sqrt()


def ema_weights(n: int, alpha: float, device=None) -> torch.Tensor:
    """Weights of ``e_t = α x_t + (1 − α) e_{t−1}`` (``e_0 = x_0``) unrolled: ``e_{n−1} = Σ_t w_t x_t``."""
    w = alpha * (1 - alpha) ** torch.arange(n - 1, -1, -1, dtype=torch.float32, device=device)
    w[0] = (1 - alpha) ** (n - 1)
    return w


def ema(scores: torch.Tensor, alpha: float) -> torch.Tensor:
    """EMA over the query axis (−2) in time order: ``[..., w, T] → [..., T]`` (Sec. 3.3, temporal smoothing)."""
    return torch.einsum("...wt,w->...t", scores, ema_weights(scores.shape[-2], alpha, scores.device).to(scores.dtype))


def drift(attn: torch.Tensor, k: int) -> torch.Tensor:
    """Official AWS drift ``t`` ``[b, H]``: mean position of the top-``k`` tokens of each front-half window query minus
    that of each rear-half query (attention over all ``T`` columns, window included; front = first ``⌊w/2⌋``
    queries)."""
    w, t = attn.shape[-2:]
    half, k = w // 2, max(1, min(k, t))
    front = attn[..., :half, :].topk(k, dim=-1).indices.float().mean((-1, -2))
    rear = attn[..., half:, :].topk(k, dim=-1).indices.float().mean((-1, -2))
    return front - rear


def shifted_avg_pool(scores: torch.Tensor, kernel: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Per-head ``F.avg_pool1d(F.pad(s, (k//2 − shift, k//2 + shift), mode="replicate"), k, stride=1)`` (official AWS):
    ``out[n] = mean_{j<k} s[clamp(n − k//2 + shift + j, 0, P − 1)]``. scores ``[b, h, P]``; kernel (odd), shift
    ``[b, h]`` integers. Negative padding crops, as ``F.pad`` does."""
    p = scores.shape[-1]
    cs = torch.nn.functional.pad(scores.cumsum(-1), (1, 0))
    n = torch.arange(p, device=scores.device)
    lo = n - (kernel // 2 - shift).unsqueeze(-1)  # first index of the window (may be < 0)
    hi = lo + kernel.unsqueeze(-1) - 1  # last index (may be ≥ P)
    a, bnd = lo.clamp(0, p), (hi + 1).clamp(0, p)
    inner = torch.where(bnd > a, cs.gather(-1, bnd) - cs.gather(-1, a.clamp(max=p)), torch.zeros_like(scores))
    k = kernel.unsqueeze(-1)
    n_left, n_right = (-lo).clamp(0).minimum(k), (hi - (p - 1)).clamp(0).minimum(k)  # replicated edge values
    return (inner + n_left * scores[..., :1] + n_right * scores[..., -1:]) / k


def adaptive_pool(scores: torch.Tensor, attn: torch.Tensor, k_top: int, scale: float, min_kernel: int):
    """Official adaptive spatial smoothing: kernel ``max(min_kernel, 2⌊|t|/scale⌋ + 1)`` and offset ``⌊t/scale⌋``
    (``⌊t/scale⌋ + 1`` for ``t ≤ 0``, exactly as ``RestKVCluster``) from the drift ``t`` of :func:`drift`."""
    t = drift(attn, k_top)
    q = torch.floor(t / scale)
    kernel = torch.clamp(2 * torch.floor(t.abs() / scale) + 1, min=min_kernel).long()
    shift = torch.where(t > 0, q, q + 1).long()
    return shifted_avg_pool(scores, kernel, shift)


def window_mean(scores: torch.Tensor, radius: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``out[n] = mean(scores[m])`` over ``m ∈ [n − shift − radius, n − shift + radius]`` clipped to the sequence
    (the earlier, non-official window rule, ``pooling="legacy"``). scores ``[b, h, P]``; radius, shift ``[b, h]``."""
    p = scores.shape[-1]
    cs = torch.nn.functional.pad(scores.cumsum(-1), (1, 0))
    centre = torch.arange(p, device=scores.device) - shift.unsqueeze(-1)
    lo = (centre - radius.unsqueeze(-1)).clamp(0, p)
    hi = (centre + radius.unsqueeze(-1) + 1).clamp(0, p)
    total = cs.gather(-1, hi) - cs.gather(-1, lo)
    return torch.where(hi > lo, total / (hi - lo).clamp_min(1), torch.zeros_like(total))


@dataclass
class ReSTKVPress(AdapterHooks, ScorerPress):
    """ReST-KV as a kvpress scorer press. Budget: ``compression_ratio`` (fraction evicted) or ``budget`` (KV pairs kept
    per layer and head, window included). Defaults = the official published configuration."""

    compression_ratio: float = field(default=0.0, metadata={"help": "fraction of the KV pairs evicted, in [0, 1)"})
    budget: int | None = field(
        default=None, metadata={"help": "fixed KV pairs kept per layer and head (window included); overrides the ratio"}
    )
    window_size: int = field(
        default=32,
        metadata={
            "help": "observation window S_w: last prompt tokens used as queries, always kept "
            "(official scripts: --window_size 32)"
        },
    )
    alpha: float = field(default=0.3, metadata={"help": "EMA coefficient α (official scripts: --alpha 0.3)"})
    metric_mode: str = field(
        default="after",
        metadata={
            "help": "'after': EMA of the window attention, then Eq. 7 once (official scripts); "
            "'before': Eq. 7 per window query, then EMA of the scores (official option)"
        },
    )
    use_wo: bool = field(
        default=True, metadata={"help": "distance through W_O^h (official --use_wo); False: in value space"}
    )
    pooling: str = field(
        default="adaptive",
        metadata={
            "help": "'adaptive': official AWS (kernel max(kernel_size, 2⌊|t|/scale⌋+1), replicate padding, "
            "offset ⌊t/scale⌋); 'legacy': this library's earlier window rule (β, max_window); 'none'"
        },
    )
    scale: float = field(
        default=2000.0, metadata={"help": "AWS scale (official scripts: --scale 2000; paper swept 200–3,000)"}
    )
    kernel_size: int = field(default=5, metadata={"help": "smallest AWS kernel (official --kernel_sizes default 5)"})
    beta: float = field(default=4.0, metadata={"help": "legacy window rule only: W_s = 2⌊|ΔD|/β⌋ + 1; our old choice"})
    max_window: int = field(default=31, metadata={"help": "legacy window rule only: largest window (odd)"})
    use_lor: bool = field(
        default=True, metadata={"help": "ablation: False scores by the (smoothed) attention weight instead of Eq. 7"}
    )
    use_ema: bool = field(
        default=True, metadata={"help": "ablation: False averages the window queries (official use_ema=False)"}
    )
    use_aws: bool = field(default=True, metadata={"help": "ablation: False applies no spatial smoothing"})
    eps: float = field(default=1e-6, metadata={"help": "floor of 1 − A in Eq. 7 (numerical guard; official: none)"})

    def __post_init__(self):
        if self.budget is not None:
            check_budget(None, self.budget)
        else:
            check_budget(self.compression_ratio, None)
        if not isinstance(self.window_size, int) or self.window_size < 1:
            raise ValueError(f"window_size must be an int ≥ 1, got {self.window_size!r}")
        if self.use_aws and self.pooling != "none" and self.window_size < 2:
            raise ValueError(
                "adaptive spatial smoothing splits the window in two halves: window_size must be ≥ 2 "
                "(or set use_aws=False)"
            )
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha (EMA coefficient) must be in (0, 1], got {self.alpha}")
        if self.metric_mode not in METRIC_MODES:
            raise ValueError(f"metric_mode must be one of {METRIC_MODES}, got {self.metric_mode!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if not self.scale > 0:
            raise ValueError(f"scale (AWS) must be > 0, got {self.scale}")
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be an odd int ≥ 1, got {self.kernel_size}")
        if not self.beta > 0:
            raise ValueError(f"beta (legacy AWS scale) must be > 0, got {self.beta}")
        if self.max_window < 1 or self.max_window % 2 == 0:
            raise ValueError(f"max_window must be an odd int ≥ 1, got {self.max_window}")

    def n_kept(self, k_len: int) -> int:
        return n_kept(k_len, None if self.budget is not None else self.compression_ratio, self.budget)

    def token_scores(
        self, module: nn.Module, hidden_states: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, kwargs: dict
    ) -> torch.Tensor:
        """Per-query scores ``[b, H_kv, w, T]`` (Eq. 7 per query, or A for the no-LOR ablation), averaged over each GQA
        group (the ``metric_mode="before"`` quantities, for inspection)."""
        n_heads, n_kv, _ = head_dims(module)
        w = min(self.window_size, keys.shape[2])
        attn = window_attention(module, hidden_states, keys, kwargs, w)  # [b, H, w, T]
        w_o = output_projection(module) if self.use_wo else None
        s = lor_scores(attn, repeat_kv(values, n_heads // n_kv), w_o, self.eps) if self.use_lor else attn
        b, _, _, t = s.shape
        return s.view(b, n_kv, n_heads // n_kv, w, t).mean(2)

    def prefix_scores(self, attn: torch.Tensor, values: torch.Tensor, w_o: torch.Tensor | None, k_top: int):
        """Smoothed scores of the ``P = T − w`` tokens outside the window, per query head ``[b, H, P]``, from the window
        attention ``[b, H, w, T]`` and the values repeated to the query heads (the official ``update_kv`` core)."""
        w, t = attn.shape[-2:]
        p = t - w
        agg = (lambda x: ema(x, self.alpha)) if self.use_ema else (lambda x: x.mean(-2))
        if self.metric_mode == "after":  # official default: smooth the attention in time, then Eq. 7 once
            a_bar = agg(attn[..., :p])
            s = lor_after(a_bar, values, w_o, self.eps) if self.use_lor else a_bar
        else:  # Eq. 7 per window query, then smooth the scores in time
            per_query = lor_scores(attn, values, w_o, self.eps) if self.use_lor else attn
            s = agg(per_query[..., :p])
        if not self.use_aws or self.pooling == "none" or p < 1:
            return s
        if self.pooling == "adaptive":
            return adaptive_pool(s, attn, k_top, self.scale, self.kernel_size)
        per_query = lor_scores(attn, values, w_o, self.eps)[..., :p] if self.use_lor else attn[..., :p]
        return self.legacy_smoothing(per_query, s, k_top) if p > 1 else s

    def score(self, module, hidden_states, keys, values, attentions, kwargs) -> torch.Tensor:
        n_heads, n_kv, _ = head_dims(module)
        t = keys.shape[2]
        w = min(self.window_size, t)
        attn = window_attention(module, hidden_states, keys, kwargs, w)  # [b, H, w, T], causal inside the window
        w_o = output_projection(module) if self.use_wo else None
        k_top = max(1, self.n_kept(t) - w)  # official: max_capacity_prompt − window_size tokens outside the window
        s = self.prefix_scores(attn, repeat_kv(values, n_heads // n_kv), w_o, k_top)
        b = s.shape[0]
        smooth = s.view(b, n_kv, n_heads // n_kv, t - w).mean(2)  # GQA: mean over the query heads of a group
        # the window is always kept: Ω above every prefix score, later tokens first if the budget is below S_w
        top = smooth.amax().clamp_min(0) + 1 if smooth.numel() else torch.tensor(1.0)
        omega = top + torch.arange(w, device=keys.device, dtype=smooth.dtype) / w
        return torch.cat([smooth, omega.expand(*smooth.shape[:-1], w)], dim=-1)

    def legacy_smoothing(self, prefix: torch.Tensor, smooth: torch.Tensor, k: int) -> torch.Tensor:
        """The library's earlier AWS reading (opt-in, ``pooling="legacy"``): drift ΔD between the mean positions of
        the top-k tokens of the rear and front half of the window sets ``W_s = 2⌊|ΔD|/β⌋ + 1`` (≤ max_window) and an
        offset ``sign(ΔD)⌊|ΔD|/(2β)⌋`` clamped to the half-width; windows clipped at the ends."""
        half = prefix.shape[-2] // 2
        agg = (lambda x: ema(x, self.alpha)) if self.use_ema else (lambda x: x.mean(-2))
        k = min(k, prefix.shape[-1])
        d_front = agg(prefix[..., :half, :]).topk(k, dim=-1).indices.float().mean(-1)
        d_rear = agg(prefix[..., half:, :]).topk(k, dim=-1).indices.float().mean(-1)
        dd = d_rear - d_front  # ΔD > 0: later queries look at later positions
        radius = (dd.abs() / self.beta).floor().long().clamp(max=(self.max_window - 1) // 2)
        shift = (dd.sign() * (dd.abs() / (2 * self.beta)).floor()).long()
        shift = torch.maximum(torch.minimum(shift, radius), -radius)
        return window_mean(smooth, radius, shift)

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        k = self.n_kept(keys.shape[2])
        if k >= keys.shape[2]:  # ratio 0 or a budget above the context: nothing to evict
            return keys, values
        return keep_top(keys, values, self.score(module, hidden_states, keys, values, attentions, kwargs), k)
