"""The Activation Difference Lens (ADL): narrow finetuning leaves readable traces in activation differences.

Minder et al., ICLR 2026, https://arxiv.org/abs/2510.13900 (code: github.com/science-of-finetuning/diffing-toolkit).
Run a base model and its narrowly finetuned version on the *first few tokens of unrelated text* and average the
difference of their residual streams per position ``j`` at layer ``ℓ``:

    δ̄_{ℓ,j} = (1/N) Σ_n ( h^ft_{ℓ,j}(x_n) − h^base_{ℓ,j}(x_n) )

The difference is a static bias that encodes the finetuning domain. It is read (i) through the logit lens,
``softmax(W_U norm_f(δ̄))``, (ii) through a Patchscope: the (norm-matched, scaled) vector replaces the residual at the
last token of an identity prompt (``cat → cat; 1135 → 1135; hello → hello; ?``) and the next-token distribution is
read, intersecting the top tokens over several prompts, and (iii) by steering: ``α δ̄`` is added at every position of
layer ``ℓ`` while the finetuned model generates, with the largest ``α`` that keeps the text coherent (binary search).
The causal test replaces the finetuned activation's component along ``δ̄`` by the base model's:

    h̃^ft = P h^base + (I − P) h^ft,     P = δ̄ δ̄ᵀ / ‖δ̄‖²

which should raise the loss on finetuning data and lower it on pretraining data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from ..lm.adapters import ModelAdapter
from ..lm.hooks import capture, intervene
from .logit_lens import lens_logits

IDENTITY_PROMPTS = (
    "cat → cat; 1135 → 1135; hello → hello; ?",
    "dog → dog; 42 → 42; yes → yes; ?",
    "tree → tree; 7 → 7; blue → blue; ?",
)


@dataclass
class ADLConfig:
    relative_layer: float = field(default=0.5, metadata={"help": "layer as a fraction of depth (paper: 0.5, middle)"})
    n_positions: int = field(default=5, metadata={"help": "first positions analysed (paper: 5; toolkit stores 20)"})
    n_samples: int = field(default=10_000, metadata={"help": "generic texts averaged (paper: 10,000 fineweb samples)"})
    top_k: int = field(default=20, metadata={"help": "tokens read per lens (paper: top-20 graded)"})
    intersect_k: int = field(default=100, metadata={"help": "Patchscope: intersect top-100 across prompts (toolkit)"})
    scales: tuple[float, ...] = field(
        default=(0.25, 0.5, 1.0, 2.0, 4.0),
        metadata={
            "help": "Patchscope scales of the norm-matched vector; the paper lets an LLM pick one, we pick the "
            "scale whose top tokens agree most across prompts (not stated; our unsupervised choice)"
        },
    )
    max_strength: float = field(default=100.0, metadata={"help": "largest steering strength searched (toolkit: 100)"})
    search_steps: int = field(default=10, metadata={"help": "binary-search steps for the steering strength (toolkit)"})
    coherence_threshold: float = field(
        default=0.75, metadata={"help": "coherence needed to accept a strength (toolkit: 75/100 by an LLM grader)"}
    )

    def __post_init__(self):
        if not 0.0 <= self.relative_layer <= 1.0:
            raise ValueError(f"ADLConfig.relative_layer must be in [0, 1], got {self.relative_layer}")
        for name in ("n_positions", "n_samples", "top_k", "intersect_k", "search_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"ADLConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if not self.scales or min(self.scales) <= 0:
            raise ValueError("ADLConfig.scales must be a non-empty tuple of positive numbers")
        if not 0.0 < self.coherence_threshold <= 1.0:
            raise ValueError(f"ADLConfig.coherence_threshold must be in (0, 1], got {self.coherence_threshold}")

    def layer(self, n_layers: int) -> int:
        return min(n_layers - 1, int(self.relative_layer * n_layers))


@dataclass
class ActivationDifference:
    layer: int
    diff: torch.Tensor  # [n_positions, d]: δ̄_{ℓ,j}
    mean_base: torch.Tensor  # [n_positions, d]: baseline 1
    mean_ft: torch.Tensor  # [n_positions, d]: baseline 2
    act_norm: float  # mean ‖h^ft_{ℓ,j}‖ over positions ≥ 1 (BOS excluded), for norm matching
    n: int


@torch.no_grad()
def activation_difference(base, ft, input_ids: torch.Tensor, layer: int, batch_size: int = 64) -> ActivationDifference:
    """Mean difference ``δ̄_{ℓ,j}`` of the residual after block ``layer`` over the rows of ``input_ids [N, n_pos]``.

    ``input_ids`` are the first tokens of generic texts, identical for both models (same tokenizer).
    """
    if input_ids.dim() != 2 or input_ids.shape[0] == 0:
        raise ValueError("input_ids must be [N, n_positions] with N ≥ 1: the first tokens of N generic texts")
    for m in (base, ft):
        ModelAdapter(m).block(layer)  # raises a clear IndexError for a bad layer
    sb = torch.zeros(input_ids.shape[1], ModelAdapter(base).d_model, dtype=torch.float64)
    sf = torch.zeros_like(sb)
    norm, count = 0.0, 0
    for i in range(0, input_ids.shape[0], batch_size):
        ids = input_ids[i : i + batch_size]
        hs = []
        for m in (base, ft):
            with capture(m, [("resid", layer)]) as acts:
                m(input_ids=ids)
            hs.append(acts["resid", layer].double())
        sb += hs[0].sum(0)
        sf += hs[1].sum(0)
        if ids.shape[1] > 1:
            norm += hs[1][:, 1:].norm(dim=-1).sum().item()
            count += hs[1][:, 1:].shape[0] * hs[1][:, 1:].shape[1]
    n = input_ids.shape[0]
    mb, mf = (sb / n).float(), (sf / n).float()
    # δ̄ = mean(h^ft − h^base) = mean(h^ft) − mean(h^base)
    return ActivationDifference(layer, mf - mb, mb, mf, norm / max(count, 1), n)


def logit_lens_tokens(model, vec: torch.Tensor, k: int = 20) -> list[int]:
    """Top-``k`` token ids of ``softmax(W_U norm_f(vec))``."""
    return lens_logits(model, vec).topk(k).indices.tolist()


@torch.no_grad()
def patchscope_tokens(
    model,
    tok,
    vec: torch.Tensor,
    layer: int,
    act_norm: float,
    cfg: ADLConfig | None = None,
    prompts: Sequence[str] = IDENTITY_PROMPTS,
) -> tuple[list[int], float]:
    """Patchscope readout: (top-``k`` token ids, chosen scale).

    For each scale λ the vector, rescaled to λ·``act_norm``, replaces the residual after block ``layer`` at the last
    prompt token; tokens in the top-``intersect_k`` of every prompt are ranked by mean probability.
    """
    cfg = cfg or ADLConfig()
    if vec.norm() == 0:
        raise ValueError("cannot patch a zero vector: the two models do not differ on this input")
    unit = vec / vec.norm()
    dtype = ModelAdapter(model).embed.weight.dtype
    encoded = [tok(p, return_tensors="pt")["input_ids"] for p in prompts]
    if len({e.shape[1] for e in encoded}) == 1:
        encoded = [torch.cat(encoded)]  # equal lengths: one batched forward per scale
    best: tuple[int, float, list[int]] | None = None
    for scale in cfg.scales:
        patched = (scale * act_norm * unit).to(dtype)

        def edit(a, patched=patched):
            a = a.clone()
            a[:, -1] = patched  # the patched vector replaces the last token's residual
            return a

        probs = []
        with intervene(model, {("resid", layer): edit}):
            for ids in encoded:
                probs.append(torch.softmax(model(input_ids=ids).logits[:, -1].float(), -1))
        probs = torch.cat(probs)
        tops = [set(p.topk(cfg.intersect_k).indices.tolist()) for p in probs]
        common = set.intersection(*tops)
        mean = probs.mean(0)
        ranked = sorted(common, key=lambda t: -mean[t].item())[: cfg.top_k]
        if best is None or len(common) > best[0]:
            best = (len(common), scale, ranked)
    return best[2], best[1]


@contextmanager
def steering(model, vec: torch.Tensor, layer: int, alpha: float):
    """Add ``alpha · vec`` to the residual after block ``layer`` at every position, inside the ``with`` body."""
    v = (alpha * vec).to(ModelAdapter(model).embed.weight.dtype)
    with intervene(model, {("resid", layer): lambda a: a + v}):
        yield


def find_max_coherent_alpha(
    coherence_at: Callable[[float], float], max_strength: float = 100.0, steps: int = 10, threshold: float = 0.75
) -> float:
    """Largest α in [0, max_strength] with ``coherence_at(α) ≥ threshold``, by binary search (toolkit: 10 steps)."""
    lo, hi = 0.0, float(max_strength)
    if coherence_at(hi) >= threshold:
        return hi
    for _ in range(steps):
        mid = (lo + hi) / 2
        if coherence_at(mid) >= threshold:
            lo = mid
        else:
            hi = mid
    return lo


def remove_projection(h_ft: torch.Tensor, h_base: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    """``h̃ = P h^base + (I − P) h^ft`` with ``P = v vᵀ / ‖v‖²`` (projection replacement)."""
    if vec.norm() == 0:
        return h_ft
    u = (vec / vec.norm()).to(h_ft.dtype)
    return h_ft + ((h_base - h_ft) @ u).unsqueeze(-1) * u


@torch.no_grad()
def projection_delta_ce(
    base, ft, vec: torch.Tensor, layer: int, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> float:
    """``ΔL_CE`` of the finetuned model when its component along ``vec`` at ``layer`` (all positions) is the base's."""
    mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask

    def ce(logits):
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].float().transpose(1, 2), input_ids[:, 1:], reduction="none"
        )
        m = mask[:, 1:].float()
        return ((nll * m).sum() / m.sum()).item()

    with capture(base, [("resid", layer)]) as acts:
        base(input_ids=input_ids, attention_mask=attention_mask)
    h_base = acts["resid", layer]
    plain = ce(ft(input_ids=input_ids, attention_mask=attention_mask).logits)
    with intervene(ft, {("resid", layer): lambda a: remove_projection(a, h_base, vec)}):
        replaced = ce(ft(input_ids=input_ids, attention_mask=attention_mask).logits)
    return replaced - plain
