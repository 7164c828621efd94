"""Routing evaluation: total efficiency over primary-model usage ratios and the efficiency gain over random routing.

A router ranks queries by predicted quality gain η̂(x) of the primary model M_p over the alternative M_a and sends
the top ones to M_p, never one with η̂ ≤ 0 (the released code stops its curve at the last positive prediction). The
*total efficiency* at usage ratio ρ is the summed true gain of the routed queries,

    TE(ρ) = Σ_{i among the top ⌊ρn⌋ by η̂, η̂ᵢ > 0} gᵢ,

linearly interpolated between integer counts (as the code's `np.interp`). Where ρn exceeds the number of positive
predictions the router does not spend the rest of its budget, so TE stays flat (the code instead drops such runs from
its median: with one run per seed that would leave a hole). Random routing of ⌊ρn⌋ queries has expected total
efficiency ρ·Σᵢ gᵢ (the code draws one permutation; the expectation is the noiseless version). The *efficiency gain*
is TE(ρ) − TE_random(ρ); we also report it normalised by the oracle's (ranking by the true gain), so that Random = 0
and Oracle = 1 at every ρ, and its mean over ρ ∈ [0.2, 0.8] (the paper's range; a normalised area under the curve).
"""

from __future__ import annotations

import numpy as np

RATIOS = np.linspace(0.2, 0.8, 61)  # the released code's grid of usage ratios


def route(gain_pred, usage_ratio: float | None = None, threshold: float = 0.0) -> np.ndarray:
    """Boolean mask of the queries sent to the primary model: the top round(ρ·n) by η̂ among those with η̂ > threshold
    (all of those when `usage_ratio` is None)."""
    g = np.asarray(gain_pred, dtype=float).reshape(-1)
    if not np.all(np.isfinite(g)):
        raise ValueError("gain_pred holds NaN or inf: a router must predict a finite gain for every query")
    eligible = g > threshold
    if usage_ratio is None:
        return eligible
    if not 0.0 <= usage_ratio <= 1.0:
        raise ValueError(f"usage_ratio must be in [0, 1], got {usage_ratio!r}")
    k = min(int(round(usage_ratio * len(g))), int(eligible.sum()))
    mask = np.zeros(len(g), dtype=bool)
    mask[np.argsort(-g, kind="stable")[:k]] = True
    return mask


def efficiency_curve(gain_pred, gain_true, threshold: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(ratios, total efficiency): ratios k/n for k = 0..n_pos, total = Σ of true gains of the top-k by η̂."""
    p, y = np.asarray(gain_pred, float).reshape(-1), np.asarray(gain_true, float).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"gain_pred and gain_true must have the same length, got {p.shape} and {y.shape}")
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(y))):
        raise ValueError("gain_pred and gain_true must be finite (NaN or inf found)")
    order = np.argsort(-p, kind="stable")
    n_pos = int((p > threshold).sum())
    total = np.concatenate([[0.0], np.cumsum(y[order][:n_pos])])
    return np.arange(n_pos + 1) / len(y), total


def total_efficiency(gain_pred, gain_true, ratios=RATIOS, threshold: float = 0.0) -> np.ndarray:
    """TE(ρ) on a grid of usage ratios (flat beyond the last positive prediction)."""
    r, t = efficiency_curve(gain_pred, gain_true, threshold)
    return np.interp(np.asarray(ratios, float), r, t)


def random_efficiency(gain_true, ratios=RATIOS) -> np.ndarray:
    """Expected TE(ρ) of routing ρ·n queries chosen uniformly at random: ρ·Σ g."""
    return np.asarray(ratios, float) * float(np.sum(gain_true))


def efficiency_gain(gain_pred, gain_true, ratios=RATIOS) -> np.ndarray:
    """TE_method(ρ) − TE_random(ρ) (the paper's efficiency gain, before the code's constant normalisation)."""
    return total_efficiency(gain_pred, gain_true, ratios) - random_efficiency(gain_true, ratios)


def normalized_gain(gain_pred, gain_true, ratios=RATIOS) -> np.ndarray:
    """Efficiency gain as a fraction of the oracle's (ranking by the true gain): 0 = random, 1 = oracle."""
    oracle = efficiency_gain(gain_true, gain_true, ratios)
    if np.any(oracle <= 0):
        raise ValueError("the oracle does not beat random routing at some ratio (all true gains equal?)")
    return efficiency_gain(gain_pred, gain_true, ratios) / oracle


def curve_mean(values, ratios=RATIOS) -> float:
    """Mean of a curve over its ratio range (trapezoid area / width)."""
    r = np.asarray(ratios, float)
    v = np.asarray(values, float)
    return float(np.sum((v[1:] + v[:-1]) * np.diff(r)) / 2 / (r[-1] - r[0]))
