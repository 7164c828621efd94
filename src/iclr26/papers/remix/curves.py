"""Rollouts (or seconds) an arm needs to reach an accuracy level, read from its evaluation curve (pure numpy).

VERSION 1 of the card measured ReMix's speed-up as GRPO's whole budget over the first point at which a *single
noisy* evaluation of ReMix reached the mean of GRPO's last two evaluations, floored at 1. That is biased upwards: a
first crossing of noisy points comes early, GRPO was never put through the same rule, and the floor cuts off every
seed where ReMix is slower (a simulation with ReMix's curve equal to GRPO's gives 1.33x on average; see the tests).

Since VERSION 2 both arms go through one rule:

1. each curve of (rollouts, accuracy) points is smoothed by a centred moving average over ``window`` evaluations
   (the window shrinks at the ends); the first point, the SFT policy at 0 rollouts (shared by every arm), is kept as
   measured, so that smoothing never lets an arm "reach" a level before its first update;
2. one level for both arms: ``sft + q * (final − sft)`` with ``final`` the last point of GRPO's smoothed curve
   (q = 0.9: 90 % of GRPO's final gain, so that GRPO's own noisy curve crosses it at a well-defined point);
3. each arm's cost is the first crossing of that level on its smoothed curve, linearly interpolated between points
   (``inf`` when it never gets there);
4. the speed-up is GRPO's cost over the arm's cost, without a floor (0 when the arm never reaches the level, NaN when
   GRPO's smoothed curve does not rise above the SFT policy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def smooth(values: Sequence[float], window: int = 3) -> np.ndarray:
    """Centred moving average over ``window`` (odd) consecutive points; the window shrinks at both ends."""
    v = np.asarray(values, dtype=float)
    if window < 1 or window % 2 == 0:
        raise ValueError(f"window must be an odd number >= 1, got {window!r}")
    if v.ndim != 1 or not len(v) or not np.isfinite(v).all():
        raise ValueError(f"values must be a non-empty 1-D sequence of finite numbers, got {values!r}")
    h = window // 2
    return np.array([v[max(0, i - h) : i + h + 1].mean() for i in range(len(v))])


def first_crossing(xs: Sequence[float], ys: Sequence[float], level: float) -> float:
    """The smallest x at which the piecewise-linear curve (xs, ys) reaches ``level`` (inf if it never does)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or not len(x):
        raise ValueError(f"xs and ys must be 1-D of the same non-zero length, got {x.shape} and {y.shape}")
    if np.any(np.diff(x) < 0):
        raise ValueError("xs must be non-decreasing (cumulative rollouts or seconds)")
    if y[0] >= level:
        return float(x[0])
    for i in range(1, len(x)):
        if y[i] >= level:  # y[i - 1] < level <= y[i]
            return float(x[i - 1] + (level - y[i - 1]) / (y[i] - y[i - 1]) * (x[i] - x[i - 1]))
    return math.inf


def smooth_curve(values: Sequence[float], window: int = 3) -> np.ndarray:
    """`smooth` of every point but the first (the SFT policy's, at 0 rollouts), which is kept as measured."""
    v = np.asarray(values, dtype=float)
    return v.copy() if len(v) < 2 else np.concatenate([v[:1], smooth(v[1:], window)])


def level_for(ref_acc: Sequence[float], sft_acc: float, q: float = 0.9, window: int = 3) -> float:
    """The common level: ``sft + q (final − sft)``, ``final`` the last point of the smoothed reference curve (NaN when
    the reference does not end above the SFT policy: there is no gain to reach)."""
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must be in (0, 1], got {q!r}")
    final = float(smooth_curve(ref_acc, window)[-1])
    return sft_acc + q * (final - sft_acc) if final > sft_acc else math.nan


def cost_to(points: Sequence[Sequence[float]], level: float, x: int = 0, window: int = 3) -> float:
    """First crossing of ``level`` by the smoothed accuracy of ``points`` (rows: rollouts, acc, length, seconds),
    read on column ``x`` (0: rollouts, 3: training seconds)."""
    pts = np.asarray(points, dtype=float)
    return first_crossing(pts[:, x], smooth_curve(pts[:, 1], window), level)


def speedup(ref_cost: float, cost: float) -> float:
    """ref_cost / cost with no floor: 0 when the arm never reached the level, NaN when the reference never did."""
    if not math.isfinite(ref_cost):
        return math.nan
    if not math.isfinite(cost):
        return 0.0
    return ref_cost / max(cost, 1e-9)


def legacy_speedup(ref_points, points, budget: int) -> float:
    """VERSION 1's biased rule, kept for the tests that show its bias: budget / first single evaluation reaching the
    mean of the reference's last two evaluations, 1 when never."""
    target = float(np.mean([p[1] for p in ref_points[-2:]]))
    reach = next((p for p in points if p[1] >= target), None)
    return 1.0 if reach is None else budget / max(reach[0], 1)
