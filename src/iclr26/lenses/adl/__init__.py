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

from iclr26.lenses.logit_lens import lens_logits
from iclr26.lm.adapters import ModelAdapter
from iclr26.lm.hooks import capture, intervene

# The toolkit's three identity prompts (nnterp's repeat_prompt with " -> "): the next token after "?" copies
# whatever the patched last position holds.
IDENTITY_PROMPTS = (
    "man -> man\n1135 -> 1135\nhello -> hello\n?",
    "bear -> bear\n42 -> 42\nblue -> blue\n?",
    "921 -> 921\ntarget -> target\nanna -> anna\n?",
)
# The toolkit's Patchscope scale grid (auto_patch_scope.py): 0.5 … 2.0 by 0.1, 3, 4, 5, 10, 20, then 20 … 200.
TOOLKIT_SCALES = tuple(
    sorted(
        {
            round(x, 1)
            for x in [0.5 + 0.1 * i for i in range(16)]
            + [3.0, 4.0, 5.0, 10.0, 20.0]
            + [20.0 + 20.0 * i for i in range(10)]
        }
    )
)
SCALE_RULES = ("coherence", "agreement")


@dataclass
class ADLConfig:
    relative_layer: float = field(
        default=0.5, metadata={"help": "layer as a fraction of depth, block int(f·(n−1)) (paper/toolkit: 0.5)"}
    )
    n_positions: int = field(default=5, metadata={"help": "first positions analysed (paper: 5; toolkit stores 20)"})
    n_samples: int = field(default=10_000, metadata={"help": "generic texts averaged (paper: 10,000 fineweb samples)"})
    norm_skip: int = field(
        default=5,
        metadata={
            "help": "norm matching averages ‖h^ft‖ over positions ≥ norm_skip of the generic windows (toolkit: skips "
            "the first 5 tokens of 128-token windows, to avoid BOS effects)"
        },
    )
    top_k: int = field(default=20, metadata={"help": "tokens read per lens (paper: top-20 graded; toolkit tokens_k)"})
    intersect_k: int = field(
        default=16_384,
        metadata={
            "help": "Patchscope: a token must be in the top-k of every prompt (toolkit 2025 config: 16,384; earlier "
            "100); clamped to the vocabulary size"
        },
    )
    scales: tuple[float, ...] = field(
        default=TOOLKIT_SCALES, metadata={"help": "Patchscope scales of the norm-matched vector (toolkit's grid)"}
    )
    scale_rule: str = field(
        default="coherence",
        metadata={
            "help": "how the Patchscope scale is chosen. The toolkit asks an LLM grader for the scale with the most "
            "coherent tokens; we have none, so 'coherence' takes the scale whose top tokens are most similar to each "
            "other in the model's own input embedding (mean pairwise cosine; our unsupervised stand-in), "
            "'agreement' the one whose top tokens agree most across prompts (our earlier rule; it drifts to the "
            "largest scale, where the patch drowns the prompt)"
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
        if self.norm_skip < 0:
            raise ValueError(f"ADLConfig.norm_skip must be ≥ 0, got {self.norm_skip}")
        if not self.scales or min(self.scales) <= 0:
            raise ValueError("ADLConfig.scales must be a non-empty tuple of positive numbers")
        if self.scale_rule not in SCALE_RULES:
            raise ValueError(f"ADLConfig.scale_rule must be one of {SCALE_RULES}, got {self.scale_rule!r}")
        if not 0.0 < self.coherence_threshold <= 1.0:
            raise ValueError(f"ADLConfig.coherence_threshold must be in (0, 1], got {self.coherence_threshold}")

    def layer(self, n_layers: int) -> int:
        """The analysed block: ``int(relative_layer · (n_layers − 1))``, as the toolkit's ``get_layer_indices``."""
        if n_layers < 1:
            raise ValueError(f"a model needs at least one block, got n_layers={n_layers}")
        return int(self.relative_layer * (n_layers - 1))


@dataclass
class ActivationDifference:
    layer: int
    diff: torch.Tensor  # [n_positions, d]: δ̄_{ℓ,j}
    mean_base: torch.Tensor  # [n_positions, d]: baseline 1
    mean_ft: torch.Tensor  # [n_positions, d]: baseline 2
    act_norm: float  # mean ‖h^ft_{ℓ,j}‖ over positions ≥ norm_skip (toolkit: ≥ 5), for norm matching
    n: int


def check_pair(base, ft, layer: int) -> None:
    """Base and finetuned model must share the residual width, depth and vocabulary; ``layer`` must exist."""
    a, b = ModelAdapter(base), ModelAdapter(ft)
    if a.d_model != b.d_model:
        raise ValueError(
            f"the models have different residual widths ({a.d_model} vs {b.d_model}): ADL compares a model with its "
            "own finetuned version, which must keep the architecture"
        )
    if a.n_layers != b.n_layers:
        raise ValueError(f"the models have different numbers of blocks ({a.n_layers} vs {b.n_layers})")
    va, vb = a.lm_head.weight.shape[0], b.lm_head.weight.shape[0]
    if va != vb:
        raise ValueError(f"the models have different vocabularies ({va} vs {vb} tokens); they must share a tokenizer")
    if not 0 <= layer < a.n_layers:
        raise ValueError(f"layer {layer} does not exist: the models have blocks 0..{a.n_layers - 1}")


@torch.no_grad()
def activation_difference(
    base,
    ft,
    input_ids: torch.Tensor,
    layer: int,
    batch_size: int = 64,
    n_positions: int | None = None,
    norm_skip: int = 5,
) -> ActivationDifference:
    """Mean difference ``δ̄_{ℓ,j}`` of the residual after block ``layer`` over the rows of ``input_ids [N, T]``.

    ``input_ids`` are the first T tokens of generic texts, identical for both models (same tokenizer). The difference
    is kept for the first ``n_positions`` positions (default: all T); the norm used for norm matching is the mean
    ‖h^ft‖ over positions ``norm_skip … T−1``, as the toolkit (it skips the first 5 tokens of its 128-token windows,
    whose norms are dominated by BOS effects), so T must exceed ``norm_skip``.
    """
    if input_ids.dim() != 2 or input_ids.shape[0] == 0:
        raise ValueError("input_ids must be [N, n_positions] with N ≥ 1: the first tokens of N generic texts")
    T = input_ids.shape[1]
    n_pos = T if n_positions is None else n_positions
    if not 1 <= n_pos <= T:
        raise ValueError(f"n_positions must be in 1..{T} (the window length), got {n_positions}")
    if not 0 <= norm_skip < T:
        raise ValueError(
            f"norm matching averages positions ≥ norm_skip={norm_skip}, but the windows have only {T} tokens: give "
            f"longer windows (the toolkit uses 128 tokens) or a smaller norm_skip"
        )
    check_pair(base, ft, layer)
    sb = torch.zeros(n_pos, ModelAdapter(base).d_model, dtype=torch.float64)
    sf = torch.zeros_like(sb)
    norm, count = 0.0, 0
    for i in range(0, input_ids.shape[0], batch_size):
        ids = input_ids[i : i + batch_size]
        hs = []
        for m in (base, ft):
            with capture(m, [("resid", layer)]) as acts:
                m(input_ids=ids)
            hs.append(acts["resid", layer].double())
        sb += hs[0][:, :n_pos].sum(0)
        sf += hs[1][:, :n_pos].sum(0)
        tail = hs[1][:, norm_skip:]
        norm += tail.norm(dim=-1).sum().item()
        count += tail.shape[0] * tail.shape[1]
    n = input_ids.shape[0]
    mb, mf = (sb / n).float(), (sf / n).float()
    # δ̄ = mean(h^ft − h^base) = mean(h^ft) − mean(h^base)
    return ActivationDifference(layer, mf - mb, mb, mf, norm / count, n)


def logit_lens_tokens(model, vec: torch.Tensor, k: int = 20) -> list[int]:
    """Top-``k`` token ids of ``softmax(W_U norm_f(vec))``."""
    return lens_logits(model, vec).topk(k).indices.tolist()


def embedding_coherence(model, token_ids: Sequence[int]) -> float:
    """Mean pairwise cosine similarity of the tokens' input-embedding rows (−inf for fewer than 2 tokens)."""
    if len(token_ids) < 2:
        return float("-inf")
    e = torch.nn.functional.normalize(ModelAdapter(model).embed.weight.detach()[list(token_ids)].float(), dim=-1)
    n = len(token_ids)
    s = e.sum(0)
    return float((s @ s - n) / (n * (n - 1)))


@dataclass
class PatchscopeReadout:
    tokens: list[int]  # top tokens at the chosen scale
    scale: float  # the chosen scale
    per_scale: dict[float, dict]  # scale -> {"tokens": [...], "n_common": int, "score": float}


@torch.no_grad()
def patchscope_scan(
    model,
    tok,
    vec: torch.Tensor,
    layer: int,
    act_norm: float,
    cfg: ADLConfig | None = None,
    prompts: Sequence[str] = IDENTITY_PROMPTS,
) -> PatchscopeReadout:
    """Patchscope readout at every scale of ``cfg.scales`` and the scale chosen by ``cfg.scale_rule``.

    For each scale λ the vector, rescaled to λ·``act_norm``, replaces the residual after block ``layer`` at the last
    prompt token; tokens in the top-``intersect_k`` of every prompt are ranked by mean probability (as the toolkit's
    ``patchscope_lens``), and the first ``top_k`` are kept.
    """
    cfg = cfg or ADLConfig()
    if vec.norm() == 0:
        raise ValueError("cannot patch a zero vector: the two models do not differ on this input")
    if not prompts:
        raise ValueError("give at least one identity prompt")
    ad = ModelAdapter(model)
    if vec.shape != (ad.d_model,):
        raise ValueError(f"vec must have shape ({ad.d_model},) (the residual width), got {tuple(vec.shape)}")
    if not 0 <= layer < ad.n_layers:
        raise ValueError(f"layer {layer} does not exist: the model has blocks 0..{ad.n_layers - 1}")
    unit = vec / vec.norm()
    dtype = ad.embed.weight.dtype
    encoded = [tok(p, return_tensors="pt")["input_ids"] for p in prompts]
    if len({e.shape[1] for e in encoded}) == 1:
        encoded = [torch.cat(encoded)]  # equal lengths: one batched forward per scale
    per_scale: dict[float, dict] = {}
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
        k = min(cfg.intersect_k, probs.shape[-1])
        common = set.intersection(*[set(p.topk(k).indices.tolist()) for p in probs])
        mean = probs.mean(0)
        ranked = sorted(common, key=lambda t: -mean[t].item())[: cfg.top_k]
        score = len(common) if cfg.scale_rule == "agreement" else embedding_coherence(model, ranked)
        per_scale[float(scale)] = {"tokens": ranked, "n_common": len(common), "score": float(score)}
    # the best score; ties go to the smallest scale (the least intrusive patch)
    best = max(per_scale, key=lambda s: (per_scale[s]["score"], -s))
    return PatchscopeReadout(per_scale[best]["tokens"], best, per_scale)


def patchscope_tokens(
    model,
    tok,
    vec: torch.Tensor,
    layer: int,
    act_norm: float,
    cfg: ADLConfig | None = None,
    prompts: Sequence[str] = IDENTITY_PROMPTS,
) -> tuple[list[int], float]:
    """Patchscope readout: (top-``k`` token ids, chosen scale); see :func:`patchscope_scan`."""
    r = patchscope_scan(model, tok, vec, layer, act_norm, cfg, prompts)
    return r.tokens, r.scale


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
