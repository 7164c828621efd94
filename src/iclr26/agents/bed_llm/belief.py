"""Belief states over the target θ: sample-then-filter (BED-LLM) and the in-context baseline.

BED-LLM does not trust the LLM's in-context update alone: an LLM asked for hypotheses given the history often
proposes some that contradict earlier answers. The paper's belief p_f(θ; h_t) is built by *sampling then
filtering*: keep the previous hypotheses that agree with the newest answer, top the set up with fresh samples from the
in-context sampler q(θ | h_t), and keep a sample only if the answer model says it would have given every observed
answer with probability at least τ:

    keep θ  ⇔  min_s p(y_s | θ, x_s) ≥ τ          (τ = 0.5 for yes/no: "would more likely have answered this way")

The belief is uniform over the distinct survivors (the paper's p_f). If nothing survives, the in-context samples are
used unfiltered (and `fallbacks` counts it), so a game never stalls.

`InContextBelief` is the ablation "EIG with in-context belief": each turn, fresh samples from q(θ | h_t), no check.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from .interfaces import AnswerModel, History, HypothesisSampler


def answer_likelihoods(answer_model: AnswerModel, hypotheses: Sequence[Hashable], history: History) -> np.ndarray:
    """p(y_s | θ_n, x_s) of each observed answer, shape [N, S]."""
    if not history:
        return np.ones((len(hypotheses), 0))
    questions = [q for q, _ in history]
    ans = np.array([a for _, a in history])
    p = answer_model.probs(list(hypotheses), questions)  # [N, S, Y]
    return p[:, np.arange(len(history)), ans]


def consistent(
    answer_model: AnswerModel, hypotheses: Sequence[Hashable], history: History, threshold: float
) -> np.ndarray:
    """Boolean mask: hypotheses whose likelihood of every observed answer is ≥ `threshold` (the filter)."""
    if len(hypotheses) == 0:
        return np.zeros(0, dtype=bool)
    return (answer_likelihoods(answer_model, hypotheses, history) >= threshold).all(axis=1)


def _dedupe(items) -> list:
    return list(dict.fromkeys(items))


class FilteredBelief:
    """Sample-then-filter particle belief (uniform over distinct hypotheses consistent with the history)."""

    def __init__(
        self,
        sampler: HypothesisSampler,
        answer_model: AnswerModel,
        n: int = 30,
        threshold: float = 0.5,
        refill_rounds: int = 5,
    ):
        if n < 1:
            raise ValueError(f"n (number of hypotheses) must be ≥ 1, got {n!r}")
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold τ must be in (0, 1), got {threshold!r}")
        if refill_rounds < 1:
            raise ValueError(f"refill_rounds must be ≥ 1, got {refill_rounds!r}")
        self.sampler, self.answer_model = sampler, answer_model
        self.n, self.threshold, self.refill_rounds = n, threshold, refill_rounds
        self.hypotheses: list = []
        self.fallbacks = 0

    @property
    def weights(self) -> np.ndarray:
        return np.full(len(self.hypotheses), 1.0 / max(1, len(self.hypotheses)))

    def reset(self) -> None:
        self.hypotheses = []

    def update(self, history: History, rng: np.random.Generator) -> None:
        # 1. drop the current hypotheses that contradict the newest answer (older ones were checked before)
        if history and self.hypotheses:
            keep = consistent(self.answer_model, self.hypotheses, history[-1:], self.threshold)
            self.hypotheses = [h for h, k in zip(self.hypotheses, keep) if k]
        # 2. top up with fresh in-context samples that pass the filter on the *whole* history
        have = set(self.hypotheses)
        last_samples: list = []
        for _ in range(self.refill_rounds):
            need = self.n - len(self.hypotheses)
            if need <= 0:
                break
            last_samples = _dedupe(self.sampler.sample(history, self.n, rng))
            new = [h for h in last_samples if h not in have]
            ok = consistent(self.answer_model, new, history, self.threshold)
            for h in (h for h, k in zip(new, ok) if k):
                if len(self.hypotheses) < self.n:
                    self.hypotheses.append(h)
                    have.add(h)
        # 3. nothing consistent: fall back to the unfiltered in-context samples rather than stall
        if not self.hypotheses:
            self.fallbacks += 1
            self.hypotheses = last_samples[: self.n] or _dedupe(self.sampler.sample(history, self.n, rng))[: self.n]


class InContextBelief:
    """The in-context baseline: each turn, the distinct samples of q(θ | h_t), uniform, never checked."""

    def __init__(self, sampler: HypothesisSampler, n: int = 30):
        if n < 1:
            raise ValueError(f"n (number of hypotheses) must be ≥ 1, got {n!r}")
        self.sampler, self.n = sampler, n
        self.hypotheses: list = []
        self.fallbacks = 0

    @property
    def weights(self) -> np.ndarray:
        return np.full(len(self.hypotheses), 1.0 / max(1, len(self.hypotheses)))

    def reset(self) -> None:
        self.hypotheses = []

    def update(self, history: History, rng: np.random.Generator) -> None:
        self.hypotheses = _dedupe(self.sampler.sample(history, self.n, rng))[: self.n]
