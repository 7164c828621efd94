"""ReST-KV: KV-cache eviction by layer-wise output reconstruction with spatial-temporal smoothing.

Paper: An et al., "ReST-KV: Robust KV Cache Eviction with Layer-wise Output Reconstruction and Spatial-Temporal
Smoothing", ICLR 2026 (https://arxiv.org/abs/2605.08840, https://openreview.net/forum?id=PhEHuo7oMm).

Attention-weight scores (H2O, SnapKV, PyramidKV) keep the tokens a query looks at most, but deleting a token hands its
softmax mass to the others, so what matters is how much the *layer output* moves when the token goes. For one head with
weights ``A[n]``, output ``o = Σ A[n] v_n`` and output projection slice ``W_O^h``, deleting token ``n`` renormalises
the softmax to ``o' = (o − A[n] v_n)/(1 − A[n])``; hence ``o − o' = A[n]/(1 − A[n]) · (v_n − o)`` exactly and the
layer-wise output reconstruction (LOR) score is

    I_t[n] = A_t[n] / (1 − A_t[n]) · ‖(o_t − v_n) W_O^h‖        (Eq. 7)

for each query ``t`` of the observation window (the last ``S_w`` prompt tokens). The scores of the window queries are
smoothed in time by an exponential moving average (EMA) and in position by an adaptive window (AWS) whose width and
offset follow how far the important region drifts between the front and the rear half of the window. Each layer and KV
head keeps its top-``B`` tokens plus the window; decoding then runs on the shrunk cache.

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

from .common import AdapterHooks, check_budget, head_dims, keep_top, n_kept, output_projection, window_attention


def lor_scores(attn: torch.Tensor, values: torch.Tensor, w_o: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Eq. 7 for every window query and token: ``A/(1 − A) · ‖(o − v_n) W_O^h‖``.

    attn: ``[b, H, w, T]`` softmax weights (rows sum to 1, zero where the causal mask hides a token);
    values: ``[b, H, T, d]`` (already repeated to the query heads); w_o: ``[D, H·d]`` output projection.
    Returns ``[b, H, w, T]``.
    """
    b, n_heads, w, t = attn.shape
    d = values.shape[-1]
    dt = torch.promote_types(attn.dtype, torch.float32)  # at least float32 for the score arithmetic
    attn, v = attn.to(dt), values.to(dt)
    o = attn @ v  # o_t = Σ_n A_t[n] v_n
    # ‖u W_O^h‖² = u G_h uᵀ with the per-head Gram matrix G_h = W_O^hᵀ W_O^h (d × d), so no [w, T, D] tensor is built
    w_heads = w_o.to(dt).view(w_o.shape[0], n_heads, d).transpose(0, 1)  # [H, D, d]
    gram = w_heads.transpose(1, 2) @ w_heads  # [H, d, d]
    og = o @ gram
    dist2 = (og * o).sum(-1, keepdim=True) - 2 * og @ v.transpose(-1, -2) + ((v @ gram) * v).sum(-1).unsqueeze(-2)
    amplification = attn / (1 - attn).clamp_min(eps)  # attention mass redistributed when token n is deleted
    return amplification * dist2.clamp_min(0).sqrt()


def ema_weights(n: int, alpha: float, device=None) -> torch.Tensor:
    """Weights of ``e_t = α x_t + (1 − α) e_{t−1}`` (``e_0 = x_0``) unrolled: ``e_{n−1} = Σ_t w_t x_t``."""
    w = alpha * (1 - alpha) ** torch.arange(n - 1, -1, -1, dtype=torch.float32, device=device)
    w[0] = (1 - alpha) ** (n - 1)
    return w


def ema(scores: torch.Tensor, alpha: float) -> torch.Tensor:
    """EMA over the query axis (−2) in time order: ``[..., w, T] → [..., T]`` (Sec. 3.3, temporal smoothing)."""
    return torch.einsum("...wt,w->...t", scores, ema_weights(scores.shape[-2], alpha, scores.device))


def window_mean(scores: torch.Tensor, radius: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``out[n] = mean(scores[m])`` over ``m ∈ [n − shift − radius, n − shift + radius]`` clipped to the sequence.

    scores ``[b, h, P]``; radius, shift ``[b, h]`` integers (per head).
    """
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
    per layer and head, window included)."""

    compression_ratio: float = field(default=0.0, metadata={"help": "fraction of the KV pairs evicted, in [0, 1)"})
    budget: int | None = field(
        default=None, metadata={"help": "fixed KV pairs kept per layer and head (window included); overrides the ratio"}
    )
    window_size: int = field(
        default=32,
        metadata={
            "help": "observation window S_w: last prompt tokens used as queries, always kept; "
            "not stated in the material we could read; SnapKV's 32"
        },
    )
    alpha: float = field(default=0.3, metadata={"help": "EMA coefficient α (Sec. 3.3); value not stated; our choice"})
    beta: float = field(
        default=4.0, metadata={"help": "AWS scale β: window W_s = 2⌊|ΔD|/β⌋ + 1 (Sec. 3.4); value not stated; ours"}
    )
    max_window: int = field(default=31, metadata={"help": "largest AWS window (odd); not stated; our choice"})
    use_lor: bool = field(
        default=True, metadata={"help": "ablation: False scores by attention weight A instead of Eq. 7"}
    )
    use_ema: bool = field(default=True, metadata={"help": "ablation: False averages the window queries (SnapKV-style)"})
    use_aws: bool = field(default=True, metadata={"help": "ablation: False applies no spatial smoothing"})
    eps: float = field(default=1e-6, metadata={"help": "floor of 1 − A in Eq. 7"})

    def __post_init__(self):
        if self.budget is not None:
            check_budget(None, self.budget)
        else:
            check_budget(self.compression_ratio, None)
        if self.window_size < 1:
            raise ValueError(f"window_size must be ≥ 1, got {self.window_size}")
        if self.use_aws and self.window_size < 2:
            raise ValueError(
                "adaptive-window smoothing splits the window in two halves: window_size must be ≥ 2 "
                "(or set use_aws=False)"
            )
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha (EMA coefficient) must be in (0, 1], got {self.alpha}")
        if not self.beta > 0:
            raise ValueError(f"beta (AWS scale) must be > 0, got {self.beta}")
        if self.max_window < 1 or self.max_window % 2 == 0:
            raise ValueError(f"max_window must be an odd int ≥ 1, got {self.max_window}")

    def n_kept(self, k_len: int) -> int:
        return n_kept(k_len, None if self.budget is not None else self.compression_ratio, self.budget)

    def token_scores(
        self, module: nn.Module, hidden_states: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, kwargs: dict
    ) -> torch.Tensor:
        """Per-query scores ``[b, H_kv, w, T]`` (Eq. 7, or A for the no-LOR ablation), averaged over each GQA group."""
        n_heads, n_kv, _ = head_dims(module)
        w = min(self.window_size, keys.shape[2])
        attn = window_attention(module, hidden_states, keys, kwargs, w)  # [b, H, w, T]
        if self.use_lor:
            s = lor_scores(attn, repeat_kv(values, n_heads // n_kv), output_projection(module), self.eps)
        else:
            s = attn
        b, _, _, t = s.shape
        return s.view(b, n_kv, n_heads // n_kv, w, t).mean(2)  # GQA: mean over the query heads of a group

    def score(self, module, hidden_states, keys, values, attentions, kwargs) -> torch.Tensor:
        t = keys.shape[2]
        per_query = self.token_scores(module, hidden_states, keys, values, kwargs)
        w = per_query.shape[-2]
        prefix = per_query[..., : t - w]  # tokens outside the observation window compete for the budget
        # temporal smoothing (EMA over the window queries in time order), or the plain mean for the ablation
        smooth = ema(prefix, self.alpha) if self.use_ema else prefix.mean(-2)
        if self.use_aws and w >= 2 and t - w > 1:
            smooth = self.spatial_smoothing(prefix, smooth, max(1, self.n_kept(t) - w))
        # the window is always kept: Ω above every prefix score, later tokens first if the budget is below S_w
        top = smooth.amax().clamp_min(0) + 1 if smooth.numel() else torch.tensor(1.0)
        omega = top + torch.arange(w, device=keys.device, dtype=smooth.dtype) / w
        return torch.cat([smooth, omega.expand(*smooth.shape[:-1], w)], dim=-1)

    def spatial_smoothing(self, prefix: torch.Tensor, smooth: torch.Tensor, k: int) -> torch.Tensor:
        """Adaptive-window smoothing (Sec. 3.4): drift ΔD between the mean positions of the top-k tokens of the rear
        and front half of the window sets the window width ``W_s = 2⌊|ΔD|/β⌋ + 1`` and its offset."""
        half = prefix.shape[-2] // 2
        agg = (lambda x: ema(x, self.alpha)) if self.use_ema else (lambda x: x.mean(-2))
        k = min(k, prefix.shape[-1])
        d_front = agg(prefix[..., :half, :]).topk(k, dim=-1).indices.float().mean(-1)
        d_rear = agg(prefix[..., half:, :]).topk(k, dim=-1).indices.float().mean(-1)
        drift = d_rear - d_front  # ΔD > 0: later queries look at later positions
        radius = (drift.abs() / self.beta).floor().long().clamp(max=(self.max_window - 1) // 2)
        # offset: half the drift in window units, towards where importance is heading, at most the half-width so the
        # window around n always contains n (not stated; our choice)
        shift = (drift.sign() * (drift.abs() / (2 * self.beta)).floor()).long()
        shift = torch.maximum(torch.minimum(shift, radius), -radius)
        return window_mean(smooth, radius, shift)

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        k = self.n_kept(keys.shape[2])
        if k >= keys.shape[2]:  # ratio 0 or a budget above the context: nothing to evict
            return keys, values
        return keep_top(keys, values, self.score(module, hidden_states, keys, values, attentions, kwargs), k)
