"""Synthetic fMRI voxels generated from known transformer-block states (ground truth for MindTransformer's pipeline).

Every voxel ``v`` belongs to a region, and every region names the block state ``s`` and layer ``l`` that generates it:

    y_v(t) = ρ_v · z[ HRF * (X_{s,l} w_v) ](t) + √(1 − ρ_v²) · ε_v(t),      ε_v ~ N(0, 1) i.i.d. over TRs

with ``X_{s,l}`` the word-level state (``[n_words, dim]``), ``w_v`` Gaussian weights on a random subset of
``k_features`` coordinates, ``z[·]`` z-scoring over the run, and ``ρ_v ~ U(rho_min, rho_max)`` the correlation a
perfect model could reach (the noise ceiling). A region with ``state=None`` is pure noise (for a noise floor).

Regions generated from ``per_head_q_rope`` / ``per_head_k_rope`` depend on each word's *position* (RoPE rotates the
content by a position-dependent angle); regions generated from ``per_head_q`` / ``per_head_k`` do not. That is the
position-dependent variant the RoPE contrast needs.

The world's HRF is deliberately *not* the analysis HRF: it is the SPM canonical double gamma (peak 6 s, undershoot
16 s, ratio 1/6), while the pipeline assumes Glover's, so the analysis never sees its own generative model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Region:
    """A group of voxels driven by one block state of one layer (``state=None``: noise only)."""

    name: str
    state: str | None
    layer: int = 0
    n_voxels: int = 50

    def __post_init__(self):
        if self.n_voxels < 1:
            raise ValueError(f"Region {self.name!r}: n_voxels must be >= 1, got {self.n_voxels}")


def word_timings(
    n_words: int, seed: int, gap: float = 0.33, jitter: float = 0.1, duration: float = 0.2, lead: float = 2.0
):
    """Onsets and offsets (s) of ``n_words`` spoken words: mean gap ``gap`` ± uniform ``jitter``, after ``lead`` s."""
    if n_words < 1 or not 0 <= jitter < gap or not 0 < duration <= gap - jitter:
        raise ValueError(
            "need n_words >= 1, 0 <= jitter < gap and 0 < duration <= gap - jitter (words must not overlap)"
        )
    rng = np.random.default_rng(seed)
    onsets = lead + np.cumsum(np.r_[0.0, gap + rng.uniform(-jitter, jitter, n_words - 1)])
    return onsets, onsets + duration


def n_scans_for(offsets: np.ndarray, tr: float, tail: float = 16.0) -> int:
    """Scans that cover the run until ``tail`` seconds after the last word (the HRF's decay)."""
    return int(np.ceil((float(np.max(offsets)) + tail) / tr))


def _spm_design(onsets, offsets, n_scans, tr):
    """``[n_scans, n_words]``: word boxcars integrated against the SPM canonical HRF, sampled at ``i·TR + TR/2``."""
    g1, g2, r = stats.gamma(6.0), stats.gamma(16.0), 1.0 / 6.0
    cdf = lambda t: (g1.cdf(t) - r * g2.cdf(t)) / (1 - r)  # noqa: E731
    t = (np.arange(n_scans) * tr + tr / 2)[:, None]
    return cdf(t - np.asarray(onsets)[None]) - cdf(t - np.asarray(offsets)[None])


def _z(x):
    sd = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


class VoxelWorld:
    """Synthetic voxel responses for several runs from word-level block states with known generators.

    ``features[(state, layer)]`` is a list over runs of ``[n_words, dim]`` arrays; ``onsets``/``offsets`` per run.
    ``responses()`` gives ``[n_scans, n_voxels]`` per run; ``region_of``/``generator_of``/``rho`` label the voxels.
    """

    def __init__(
        self,
        features: Mapping[tuple[str, int], Sequence[np.ndarray]],
        onsets: Sequence[np.ndarray],
        offsets: Sequence[np.ndarray],
        regions: Sequence[Region],
        tr: float = 2.0,
        k_features: int = 16,
        rho: tuple[float, float] = (0.1, 0.5),
        seed: int = 0,
    ):
        if not 0 < rho[0] <= rho[1] < 1:
            raise ValueError(f"rho must satisfy 0 < rho_min <= rho_max < 1, got {rho}")
        if k_features < 1:
            raise ValueError(f"k_features must be >= 1, got {k_features}")
        if len(onsets) != len(offsets) or not len(onsets):
            raise ValueError("give one onset and one offset array per run (at least one run)")
        for reg in regions:
            if reg.state is not None and (reg.state, reg.layer) not in features:
                raise ValueError(f"region {reg.name!r} needs features of ({reg.state!r}, layer {reg.layer}), not given")
        self.regions, self.tr, self.seed = list(regions), tr, seed
        rng = np.random.default_rng(seed)
        self.region_of = np.concatenate([[i] * reg.n_voxels for i, reg in enumerate(self.regions)])
        self.rho = rng.uniform(rho[0], rho[1], len(self.region_of))
        self.n_scans = [n_scans_for(off, tr) for off in offsets]
        designs = [_spm_design(on, off, n, tr) for on, off, n in zip(onsets, offsets, self.n_scans)]
        signals = []  # per region: list over runs of [n_scans, n_voxels_region] clean signals
        for reg in self.regions:
            if reg.state is None:
                signals.append([np.zeros((n, reg.n_voxels)) for n in self.n_scans])
                continue
            runs = features[reg.state, reg.layer]
            dim = runs[0].shape[1]
            w = np.zeros((dim, reg.n_voxels))
            for v in range(reg.n_voxels):  # sparse random weights on k features
                idx = rng.choice(dim, size=min(k_features, dim), replace=False)
                w[idx, v] = rng.normal(size=len(idx))
            mu, sd = np.concatenate(runs).mean(0), np.concatenate(runs).std(0) + 1e-8  # features on one scale
            signals.append([_z(designs[i] @ (((runs[i] - mu) / sd) @ w)) for i in range(len(onsets))])
        self._clean = [np.concatenate([s[i] for s in signals], axis=1) for i in range(len(onsets))]
        self._noise = [rng.normal(size=c.shape) for c in self._clean]

    @property
    def generator_of(self) -> list[tuple[str | None, int]]:
        """(state, layer) that generated each voxel (``(None, ·)`` for noise voxels)."""
        return [(self.regions[i].state, self.regions[i].layer) for i in self.region_of]

    def responses(self) -> list[np.ndarray]:
        """``[n_scans, n_voxels]`` per run: ``ρ·signal + √(1−ρ²)·noise`` (noise voxels: pure noise)."""
        noise_only = np.array([self.regions[i].state is None for i in self.region_of])
        rho = np.where(noise_only, 0.0, self.rho)
        return [rho * c + np.sqrt(1 - rho**2) * e for c, e in zip(self._clean, self._noise)]

    def mask(self, name: str) -> np.ndarray:
        """Boolean mask of the voxels of region ``name``."""
        names = [r.name for r in self.regions]
        if name not in names:
            raise KeyError(f"no region {name!r}; regions: {', '.join(names)}")
        return self.region_of == names.index(name)
