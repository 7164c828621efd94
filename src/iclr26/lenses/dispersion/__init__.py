"""Representation dispersion (Li et al., ICLR 2026, https://arxiv.org/abs/2506.24106).

The idea: take the hidden vectors a model produces for one text segment and measure how spread out they are, as the
mean pairwise cosine distance. Text the model predicts well (low perplexity) is embedded more spread out, so
dispersion is a label-free signal of how well a model handles text: it ranks segments, layers, datastore keys for a
kNN-LM, and it can be raised directly with a "push-away" training term.

    D = 1/C(N,2) · Σ_{i<j} (1 − cos(E_i, E_j))                                    (the paper's dispersion)

is computed in O(N d) with the identity Σ_{i≠j} ûᵢ·ûⱼ = ‖Σᵢ ûᵢ‖² − N for unit vectors ûᵢ.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from iclr26.lm.adapters import ModelAdapter
from iclr26.lm.hooks import capture


def dispersion(h: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean pairwise cosine distance of the rows of ``h`` ([N, d]); rows where ``mask`` is False are left out."""
    if h.dim() != 2:
        raise ValueError(f"dispersion takes one segment's vectors as [N, d], got shape {tuple(h.shape)}")
    if mask is not None:
        h = h[mask.bool()]
    n = h.shape[0]
    if n < 2:
        raise ValueError(f"dispersion needs at least 2 vectors, got {n}")
    u = F.normalize(h.float(), dim=-1)
    s = u.sum(0)
    mean_cos = (s @ s - n) / (n * (n - 1))  # mean over ordered pairs i ≠ j = mean over i < j
    return 1.0 - mean_cos


def dispersion_pairwise(h: torch.Tensor) -> torch.Tensor:
    """The O(N² d) definition, upper triangle of 1 − cos (reference for tests)."""
    u = F.normalize(h.float(), dim=-1)
    c = u @ u.T
    i, j = torch.triu_indices(len(u), len(u), offset=1)
    return (1 - c[i, j]).mean()


def cross_dispersion(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Mean cosine distance between every row of ``a`` and every row of ``b`` (the cross-domain term)."""
    ua, ub = F.normalize(a.float(), dim=-1), F.normalize(b.float(), dim=-1)
    return 1.0 - (ua.sum(0) @ ub.sum(0)) / (len(ua) * len(ub))


@torch.no_grad()
def segment_stats(model, ids: torch.Tensor, skip_first: bool = True) -> dict[str, np.ndarray]:
    """Per segment (rows of ``ids``, no padding): perplexity and the dispersion of every layer's hidden states.

    Returns ``ppl`` [B] and ``disp`` [B, L+1] (index 0 = embeddings, -1 = last layer as HF reports it, i.e. the
    last block's output *after* the final norm, the vectors of the official script).
    ``skip_first`` leaves out position 0, whose vector (after BOS) dominates cosine statistics. The official script
    (``rep_dispersion``) keeps every position of a 512-token chunk; at our 128-token segments the first vector would
    weigh 4× more, so we leave it out by default (``skip_first=False`` gives the official pooling).
    """
    if ids.dim() != 2 or ids.shape[1] < (3 if skip_first else 2):
        raise ValueError(
            f"segment_stats needs ids of shape [batch, ≥{3 if skip_first else 2} tokens], got {tuple(ids.shape)}"
        )
    out = model(input_ids=ids, output_hidden_states=True)
    logits = out.logits.float()
    nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none").mean(1)
    start = 1 if skip_first else 0
    disp = torch.stack(
        [torch.stack([dispersion(h[b, start:]) for b in range(ids.shape[0])]) for h in out.hidden_states], dim=1
    )
    return {"ppl": torch.exp(nll).numpy(), "disp": disp.numpy()}


def binned_pearson(ppl: np.ndarray, disp: np.ndarray, n_bins: int = 10) -> float:
    """The paper's curve statistic: sort segments by perplexity, cut into ``n_bins`` equal-count bins, Pearson r
    between bin-mean perplexity and bin-mean dispersion."""
    ppl, disp = np.asarray(ppl, float), np.asarray(disp, float)
    if len(ppl) < 2 * n_bins:
        raise ValueError(f"{len(ppl)} segments are too few for {n_bins} bins (need ≥ {2 * n_bins})")
    order = np.argsort(ppl)
    bins = np.array_split(order, n_bins)
    x = np.array([ppl[b].mean() for b in bins])
    y = np.array([disp[b].mean() for b in bins])
    return float(stats.pearsonr(x, y)[0])


@dataclass
class PushAwayConfig:
    lam: float = field(
        default=0.1,
        metadata={
            "help": "weight λ of L_aux; paper: 0.1 single-domain (lr 5e-4), "
            "0.01 cross-domain (lr 7e-4), range [0.001, 0.1]"
        },
    )
    mode: str = field(
        default="single",
        metadata={
            "help": "'single': L_aux = −d_avg over the batch; 'cross': L_aux = −d between the two domains' vectors"
        },
    )
    max_vectors: int = field(
        default=512, metadata={"help": "vectors sampled per batch (not stated; our choice, keeps the cost small)"}
    )
    layer: int = field(
        default=-1,
        metadata={
            "help": "block index (0-based, negative counts from the end: -1 = the last block) whose output — the "
            "residual stream leaving the block, before any final norm — gives the vectors (not stated; our choice). "
            "Not an index into HF's hidden_states, whose last entry is already normed"
        },
    )

    def __post_init__(self):
        if self.lam < 0:
            raise ValueError(f"PushAwayConfig.lam must be ≥ 0, got {self.lam}")
        if self.mode not in ("single", "cross"):
            raise ValueError(f"PushAwayConfig.mode must be 'single' or 'cross', got {self.mode!r}")
        if self.max_vectors < 2:
            raise ValueError(f"PushAwayConfig.max_vectors must be ≥ 2, got {self.max_vectors}")


def resolve_block(model, layer: int) -> int:
    """The 0-based block index that ``layer`` (negative = from the end) names in ``model``, with a clear error."""
    n = ModelAdapter(model).n_layers
    if not -n <= layer < n:
        raise ValueError(f"block index {layer} is out of range for a model with {n} blocks; expected -{n}..{n - 1}")
    return layer % n


@torch.no_grad()
def block_dispersion(model, ids: torch.Tensor, layer: int = -1, skip_first: bool = True) -> np.ndarray:
    """Per segment (rows of ``ids``), the dispersion of block ``layer``'s output before any final norm ([B])."""
    b = resolve_block(model, layer)
    with capture(model, [("resid", b)]) as acts:
        model(input_ids=ids)
    h = acts["resid", b]
    start = 1 if skip_first else 0
    return torch.stack([dispersion(h[i, start:]) for i in range(ids.shape[0])]).numpy()


class PushAway:
    """The auxiliary loss ``λ·L_aux`` as an ``extra_loss`` for :func:`iclr26.lm.train.train_lm`.

    single: L_aux = −d_avg, d_avg = 1/(B(B−1)) Σ_{i≠j} (1 − h̃ᵢ·h̃ⱼ);  cross: L_aux = −1/(|A||B|) Σ_{i∈A,j∈B} (1 − h̃ᵢ·h̃ⱼ).
    ``domain_of_row`` ([batch] of 0/1) marks each sequence's domain for the cross mode.

    The vectors are block ``cfg.layer``'s output (before the final norm), recorded with gradients by a hook; train
    inside ``with push.track(model): ...`` so that every forward pass records them::

        push = PushAway(PushAwayConfig(lam=0.1))
        with push.track(model):
            train_lm(model, tok, texts, TrainConfig(), extra_loss=push)
    """

    def __init__(self, cfg: PushAwayConfig, generator: torch.Generator | None = None):
        self.cfg = cfg
        self.gen = generator
        self._acts: dict | None = None
        self._block: int | None = None

    @contextmanager
    def track(self, model):
        """Record block ``cfg.layer``'s output (keeping the graph) on every forward pass of ``model``."""
        self._block = resolve_block(model, self.cfg.layer)
        with capture(model, [("resid", self._block)], detach=False) as acts:
            self._acts = acts
            try:
                yield self
            finally:
                self._acts, self._block = None, None

    def vectors(self, out=None) -> torch.Tensor:
        """The tracked block output of the last forward pass ([B, T, d])."""
        if self._acts is None:
            raise RuntimeError(
                "PushAway needs the block's output: run the forward pass inside `with push.track(model):`"
            )
        if ("resid", self._block) not in self._acts:
            raise RuntimeError("no forward pass of the tracked model happened inside `push.track(model)`")
        return self._acts["resid", self._block]

    def aux(self, h: torch.Tensor, domain: torch.Tensor | None = None) -> torch.Tensor:
        if self.cfg.mode == "single":
            return -dispersion(h)
        if domain is None:
            raise ValueError("cross-domain push-away needs the domain of each vector")
        a, b = h[domain == 0], h[domain == 1]
        if len(a) == 0 or len(b) == 0:
            return h.sum() * 0.0
        return -cross_dispersion(a, b)

    def __call__(self, model, ids, mask, out, domain_of_row: torch.Tensor | None = None) -> torch.Tensor:
        if self.cfg.lam == 0:
            return out.loss * 0.0
        hs = self.vectors(out)  # [B, T, d]: the chosen block's output, before the final norm
        B, T, d = hs.shape
        flat = hs[:, 1:].reshape(-1, d)  # position 0 left out, as in the dispersion metric
        rows = torch.arange(B).repeat_interleave(T - 1)
        if mask is not None:
            keep = mask[:, 1:].reshape(-1).bool()
            flat, rows = flat[keep], rows[keep]
        if len(flat) > self.cfg.max_vectors:
            idx = torch.randperm(len(flat), generator=self.gen)[: self.cfg.max_vectors]
            flat, rows = flat[idx], rows[idx]
        dom = None if domain_of_row is None else domain_of_row[rows]
        return self.cfg.lam * self.aux(flat, dom)


def dispersion_gap(unembedding: torch.Tensor, domain_ids, general_ids) -> float:
    """G = within(T) + between(T, T̄) over output-embedding rows (model selection from weights alone)."""
    e = unembedding.float()
    t, g = e[list(domain_ids)], e[list(general_ids)]
    return float(dispersion(t) + cross_dispersion(t, g))


def knn_neighbours(keys: torch.Tensor, queries: torch.Tensor, k: int = 64, chunk: int = 512):
    """Brute-force L2 neighbours: ``(d², index)`` of the ``k`` nearest keys of every query ([Q, k] each, nearest
    first). Computed once, they serve every (λ, temperature) of a tuning grid (:func:`knn_lm_mix`)."""
    if keys.dim() != 2 or queries.dim() != 2 or keys.shape[1] != queries.shape[1]:
        raise ValueError(
            f"keys [N, d] and queries [Q, d] must share d; got {tuple(keys.shape)} and {tuple(queries.shape)}"
        )
    if k < 1 or len(keys) == 0:
        raise ValueError(f"need k ≥ 1 and a non-empty datastore, got k={k} and {len(keys)} keys")
    dists, idxs = [], []
    for i in range(0, len(queries), chunk):
        d2 = torch.cdist(queries[i : i + chunk].float(), keys.float()).pow(2)
        dist, idx = d2.topk(min(k, len(keys)), largest=False)
        dists.append(dist)
        idxs.append(idx)
    return torch.cat(dists), torch.cat(idxs)


def knn_lm_mix(
    dist: torch.Tensor,
    idx: torch.Tensor,
    values: torch.Tensor,
    targets: torch.Tensor,
    lm_logprobs: torch.Tensor,
    lam: float = 0.25,
    temperature: float = 1.0,
) -> torch.Tensor:
    """log[λ p_kNN(target) + (1−λ) p_LM(target)] from precomputed neighbours (:func:`knn_neighbours`).

    p_kNN(w|c) ∝ Σ_{(kᵢ,vᵢ) ∈ kNN(q)} 1[vᵢ = w] exp(−d²ᵢ / T)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"the kNN-LM weight λ must be in [0, 1], got {lam}")
    if not temperature > 0:
        raise ValueError(f"the kNN-LM temperature must be > 0, got {temperature}")
    w = torch.softmax(-dist / temperature, dim=-1)
    hit = (values[idx] == targets[:, None]).float()
    p_knn = (w * hit).sum(-1)
    return torch.log(lam * p_knn + (1 - lam) * lm_logprobs.exp() + 1e-12)


def knn_lm_logprobs(
    keys: torch.Tensor,
    values: torch.Tensor,
    queries: torch.Tensor,
    targets: torch.Tensor,
    lm_logprobs: torch.Tensor,
    k: int = 64,
    lam: float = 0.25,
    temperature: float = 1.0,
    chunk: int = 512,
) -> torch.Tensor:
    """kNN-LM (Khandelwal et al.): log[λ p_kNN(w|c) + (1−λ) p_LM(w|c)] of each query's target token.

    p_kNN(w|c) ∝ Σ_{(kᵢ,vᵢ) ∈ kNN(q)} 1[vᵢ = w] exp(−‖q − kᵢ‖² / T), with brute-force L2 neighbours.
    ``lm_logprobs`` is log p_LM(target) per query.
    """
    dist, idx = knn_neighbours(keys, queries, k, chunk)
    return knn_lm_mix(dist, idx, values, targets, lm_logprobs, lam, temperature)
