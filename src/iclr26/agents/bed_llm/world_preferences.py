"""Preference elicitation with exact ground truth: users with hidden taste vectors over item features.

Items ("movies") have `n_features` binary features (genres, eras, ...). A user is a weight vector w ~ N(0, I); their
utility for item i is w · f_i. Questions and the exact probability of a "yes":

- pairwise ("do you prefer item i to item j?"):  σ(β · w · (f_i − f_j)), a logistic choice model;
- feature ("do you like feature f?"):            σ(β · w_f).

Pairs of similar items give answers close to a coin flip for every user (high predictive entropy, little
information). After the questions the questioner predicts the user's top-k items; the metric is hit-rate@k, the
overlap of the predicted and the true top-k divided by k.

Questions are integers: pairs [0, P) in `self.pairs` order, then features [P, P + d). Hypotheses are indices into a
fixed pool of `n_pool` prior user profiles (what a questioner can imagine); true users are fresh draws.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class PreferenceWorld:
    def __init__(self, n_items: int = 40, n_features: int = 12, beta: float = 1.5, n_pool: int = 2000, seed: int = 0):
        if n_items < 2 or n_features < 1 or n_pool < 1:
            raise ValueError(f"need n_items ≥ 2, n_features ≥ 1, n_pool ≥ 1; got {n_items}, {n_features}, {n_pool}")
        if beta <= 0:
            raise ValueError(f"beta (answer sharpness) must be > 0, got {beta!r}")
        rng = np.random.default_rng([seed, 4242])
        self.seed, self.beta = seed, beta
        self.features = (rng.random((n_items, n_features)) < 0.35).astype(float)  # [I, d]
        self.pairs = list(combinations(range(n_items), 2))
        diffs = np.array([self.features[i] - self.features[j] for i, j in self.pairs])  # [P, d]
        self.design = np.concatenate([diffs, np.eye(n_features)])  # [Q, d]: question q asks about w · design[q]
        self.n_questions = len(self.design)
        self.pool = rng.standard_normal((n_pool, n_features))  # the hypothesis space
        self.pool_p_yes = self.p_yes(self.pool)  # [n_pool, Q]

    def p_yes(self, users: np.ndarray) -> np.ndarray:
        """Exact p(yes) of every question for each user, [n_users, Q]."""
        return _sigmoid(self.beta * np.atleast_2d(users) @ self.design.T)

    def text(self, q: int) -> str:
        if q < len(self.pairs):
            i, j = self.pairs[q]
            return f"Do you prefer movie {i} to movie {j}?"
        return f"Do you like feature {q - len(self.pairs)}?"

    def sample_users(self, n: int, seed: int) -> np.ndarray:
        return np.random.default_rng([seed, 99]).standard_normal((n, self.features.shape[1]))

    def answer(self, user: np.ndarray, q: int, rng: np.random.Generator) -> int:
        return int(rng.random() < _sigmoid(self.beta * user @ self.design[q]))

    def top_k(self, w: np.ndarray, k: int = 5) -> np.ndarray:
        return np.argsort(-(self.features @ w), kind="stable")[:k]

    def hit_rate(self, w_pred: np.ndarray, w_true: np.ndarray, k: int = 5) -> float:
        """|top-k(pred) ∩ top-k(true)| / k."""
        return len(set(self.top_k(w_pred, k).tolist()) & set(self.top_k(w_true, k).tolist())) / k
