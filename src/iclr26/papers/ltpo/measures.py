"""Measurements both halves of the LTPO reproduction use (the world's reasoner and SmolLM2): the embedding scale, the
initial reward R̄0, correlation and AUROC of the reward with correctness, and the cached-prefix speed-up."""

from __future__ import annotations

import time

import numpy as np

from iclr26.latent.ltpo import LatentScorer


def _rms(model) -> float:
    return float(model.get_input_embeddings().weight.float().pow(2).mean().sqrt())


def mean_initial_reward(model, groups, top_k: int) -> float:
    """R̄0: the mean reward of the placeholder thoughts over validation problems (sets η = step·σ0²/R̄0)."""
    vals = []
    for lps in groups:
        sc = LatentScorer(model, lps)
        vals.extend(sc.reward(sc.h0, top_k).tolist())
    return float(np.mean(vals))


def pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.std() == 0 or y.std() == 0:
        return 0.0  # undefined (e.g. every answer wrong): no evidence of a correlation
    return float(np.corrcoef(x, y)[0, 1])


def auroc(score, label) -> float:
    """P(score of a correct answer > score of a wrong one), ties count half (Mann-Whitney)."""
    score, label = np.asarray(score, float), np.asarray(label, bool)
    pos, neg = score[label], score[~label]
    if len(pos) == 0 or len(neg) == 0:
        return 0.5
    return float(((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (len(pos) * len(neg)))


def cache_speedup(model, lps, steps: int, top_k: int, reps: int = 2) -> tuple[float, float]:
    """(naive time / cached-prefix time of ``steps`` reward passes, best of ``reps``, the cached loop paying its
    prefix pass; the largest |reward difference| between the two loops on the same thoughts)."""
    times, rewards = {}, {}
    for use_cache in (True, False):
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            sc = LatentScorer(model, lps, use_cache=use_cache)  # the cached loop pays its prefix pass here
            h = sc.h0.clone()
            for _ in range(steps):
                r = sc.reward(h, top_k)
            best = min(best, time.perf_counter() - t0)
        times[use_cache], rewards[use_cache] = best, r
    return times[False] / times[True], float((rewards[True] - rewards[False]).abs().max())
