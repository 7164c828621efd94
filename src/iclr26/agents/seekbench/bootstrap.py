"""The bootstrap clustered by question, on per-cluster sums.

A statistic maps (W, S) to B values, where S is the C × F table of per-cluster sums (one row per question) and W the
B × C matrix of how often each cluster is drawn in each of B resamples (rows of W sum to C). Resampling whole clusters
keeps the dependence between the steps and traces of one question inside the resample (the official analysis code
clusters by (dataset, question_id)); ``clusters=None`` in ``clustered_bootstrap`` gives the naive row-level bootstrap
for comparison. Intervals are percentile intervals (official: 2.5 and 97.5 percentiles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (weights B×C, cluster table C×F) -> B values


@dataclass(frozen=True)
class CI:
    point: float
    lo: float
    hi: float
    se: float = math.nan  # standard deviation of the bootstrap distribution

    def z(self, cap: float = 50.0) -> float:
        """point / se (0 when both are 0; ±cap when only se is 0): a continuous measure of separation from 0."""
        if self.point == 0 or math.isnan(self.point):
            return 0.0
        if not self.se > 0:
            return math.copysign(cap, self.point)
        return float(np.clip(self.point / self.se, -cap, cap))

    def excludes(self, value: float = 0.0) -> bool:
        return bool(self.lo > value or self.hi < value)


def bootstrap_weights(n_clusters: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """B × C counts: how often each cluster is drawn in each of B resamples of C clusters with replacement."""
    if n_clusters < 1 or n_boot < 1:
        raise ValueError(f"need ≥ 1 cluster and ≥ 1 resample, got {n_clusters} clusters and n_boot={n_boot}")
    idx = np.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))
    w = np.zeros((n_boot, n_clusters))
    np.add.at(w, (np.repeat(np.arange(n_boot), n_clusters), idx.ravel()), 1.0)
    return w


def bootstrap_ci(statistic: Statistic, table: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> CI:
    """Point estimate and percentile interval of ``statistic`` over cluster resamples of ``table`` (C × F)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    point = float(statistic(np.ones((1, len(table))), table)[0])
    samples = statistic(bootstrap_weights(len(table), n_boot, seed), table)
    if np.all(np.isnan(samples)):
        return CI(point, math.nan, math.nan)
    q = 100 * (1 - level) / 2
    lo, hi = float(np.nanpercentile(samples, q)), float(np.nanpercentile(samples, 100 - q))
    return CI(point, lo, hi, float(np.nanstd(samples, ddof=1)) if np.sum(~np.isnan(samples)) > 1 else math.nan)


def clustered_bootstrap(
    rows: np.ndarray,
    clusters: Sequence | None,
    statistic: Statistic,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> CI:
    """Bootstrap CI for per-row data (rows: N × F sums, e.g. steps): rows are summed within their cluster and whole
    clusters are resampled. ``clusters=None`` resamples single rows (the naive step-level bootstrap)."""
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    if rows.shape[0] == 0:
        raise ValueError("clustered_bootstrap needs at least one row")
    if clusters is None:
        return bootstrap_ci(statistic, rows, n_boot, seed, level)
    if len(clusters) != len(rows):
        raise ValueError(f"clusters has {len(clusters)} labels for {len(rows)} rows; expected one label per row")
    keys = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    table = np.zeros((len(keys), rows.shape[1]))
    np.add.at(table, [keys[c] for c in clusters], rows)
    return bootstrap_ci(statistic, table, n_boot, seed, level)


def paired_difference(
    statistic_a: Statistic, table_a: np.ndarray, statistic_b: Statistic, table_b: np.ndarray, **kw
) -> CI:
    """CI of statistic(A) − statistic(B) when A and B answered the same questions (tables aligned by cluster):
    each resample draws the same questions for both, as the paired comparison needs."""
    if table_a.shape[0] != table_b.shape[0]:
        raise ValueError(f"paired tables need the same clusters, got {table_a.shape[0]} and {table_b.shape[0]} rows")
    f = table_a.shape[1]
    both = np.concatenate([table_a, table_b], 1)
    return bootstrap_ci(lambda w, s: statistic_a(w, s[:, :f]) - statistic_b(w, s[:, f:]), both, **kw)
