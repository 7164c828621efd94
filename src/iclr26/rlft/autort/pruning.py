"""Dynamic strategy pruning (DSP; early-terminated exploration, ETE, in the paper's v1).

Eq. 2 asks for the most successful strategies under two constraints: f_1, the strategy's largest similarity to the
pool of strategies already found, must stay below c_1 (diversity), and f_2, the rephrased query's loss of intent, must
be zero (consistency). Eq. 3 replaces the constrained problem by an early-terminated one,

    J(theta) = E[ R(a, y) prod_i 1(f_i <= c_i) + sum_i C(f_i, c_i) 1(f_i > c_i) ],   C < 0,

checked in pipeline order: the diversity check first (before any rephrasing), then the consistency judge; the first
failure ends the episode with its penalty and the target is never queried (the query saving the paper exploits).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def multi_hot(strategy, n_prims: int) -> np.ndarray:
    """The toy embedding: multi-hot over primitives (paper: a sentence embedding of the strategy text)."""
    v = np.zeros(n_prims, np.float32)
    v[list(strategy)] = 1.0
    return v


class DynamicStrategyPruner:
    """Sequential first-failure checks of Eq. 3 with a growing pool of discovered strategies."""

    def __init__(self, embed: Callable, sim_threshold: float = 0.85, div_penalty: float = -1.0, cons_penalty=-1.0):
        if not 0 < sim_threshold <= 1:
            raise ValueError(f"sim_threshold must lie in (0, 1], got {sim_threshold!r}")
        if div_penalty >= 0 or cons_penalty >= 0:
            raise ValueError(f"penalties must be < 0, got {div_penalty!r}, {cons_penalty!r}")
        self.embed, self.c1 = embed, sim_threshold
        self.div_penalty, self.cons_penalty = div_penalty, cons_penalty
        self._pool: list[np.ndarray] = []
        self.pool: list = []
        self.pruned = {"diversity": 0, "consistency": 0}

    def max_similarity(self, strategy) -> float:
        """f_1: largest cosine between the strategy and the pool (0 for an empty pool)."""
        if not self._pool:
            return 0.0
        v = self.embed(strategy)
        v = v / max(float(np.linalg.norm(v)), 1e-12)
        return float(np.max(np.stack(self._pool) @ v))

    def add(self, strategy) -> None:
        """Put a strategy that broke the target into the pool (the threshold then bites harder)."""
        v = self.embed(strategy)
        self._pool.append(v / max(float(np.linalg.norm(v)), 1e-12))
        self.pool.append(tuple(strategy))

    def check(self, strategy, consistent: Callable[[], bool]) -> float | None:
        """The penalty of the first violated constraint, or None if the strategy passes both.

        ``consistent`` is called only if the diversity check passes (the rephraser and judge are not run otherwise).
        """
        if self.max_similarity(strategy) > self.c1:  # f_1 > c_1
            self.pruned["diversity"] += 1
            return self.div_penalty
        if not consistent():  # f_2 > c_2 = 0
            self.pruned["consistency"] += 1
            return self.cons_penalty
        return None
