"""The LLM roles of BED-LLM, simulated from a table of exact answer probabilities p_yes[hypothesis, question].

The simulated "LLM" knows how each hypothesis answers each question (its answer model is the table) but, like the real
LLMs of the paper, its *in-context* hypothesis sampler is not coherent with the history and collapses onto popular
answers: each sampling call forgets every past answer with probability `forget` (dossier: a sampler that ignores 30 %
of the history) and its prior is Zipfian over a fixed random ranking of the hypotheses (`popularity`). Its question
proposer is hypothesis-conditioned: it proposes questions on which the current hypotheses' *most likely* answers
disagree, so a subjective question ("is it cute?") looks as good a split to it as a factual one, and it adds "is it
θ?" guesses for the top hypotheses. Questions [0, n_open) are open questions; n_open + θ is the guess "is it θ?".
"""

from __future__ import annotations

import numpy as np


class TableAnswerModel:
    """p(y | θ, x) = table[θ, x]; `blind=True` replaces every row by the mean row (a likelihood that ignores θ)."""

    answers = ("No", "Yes")

    def __init__(self, p_yes: np.ndarray, blind: bool = False):
        p = np.asarray(p_yes, dtype=float)
        self.table = np.repeat(p.mean(0, keepdims=True), len(p), 0) if blind else p

    def probs(self, hypotheses, questions) -> np.ndarray:
        p = self.table[np.ix_(np.asarray(hypotheses, dtype=int), np.asarray(questions, dtype=int))]
        return np.stack([1 - p, p], axis=-1)


class TableSampler:
    """q(θ | h_t): posterior of a random subset of the history (each answer kept w.p. 1 − forget), Zipf prior."""

    def __init__(self, p_yes: np.ndarray, forget: float = 0.3, popularity: float = 1.0, seed: int = 0):
        if not 0 <= forget < 1:
            raise ValueError(f"forget must be in [0, 1), got {forget!r}")
        if popularity < 0:
            raise ValueError(f"popularity must be ≥ 0, got {popularity!r}")
        p = np.asarray(p_yes, dtype=float)
        self.n, self.forget = len(p), forget
        self.log_p = np.log(np.clip(np.stack([1 - p, p], -1), 1e-9, None))  # [H, Q, 2]
        self.log_prior = -popularity * np.log1p(np.random.default_rng([seed, 11]).permutation(self.n))

    def log_posterior(self, history, rng=None) -> np.ndarray:
        lp = self.log_prior.copy()
        for q, a in history:
            if rng is None or rng.random() >= self.forget:
                lp += self.log_p[:, q, a]
        return lp

    def sample(self, history, n, rng) -> list[int]:
        lp = self.log_posterior(history, rng)
        p = np.exp(lp - lp.max())
        return rng.choice(self.n, size=n, p=p / p.sum()).tolist()


class TableProposer:
    """Candidate questions that split the hypotheses (by their most likely answers) plus guesses of the top ones.

    `conditional=False` proposes random unasked open questions (the unconstrained proposer of the paper's ablation).
    """

    def __init__(self, p_yes: np.ndarray, n_open: int | None = None, n_guesses: int = 2, conditional: bool = True):
        p = np.asarray(p_yes)
        self.n_open = p.shape[1] if n_open is None else n_open
        self.likely_yes = (p[:, : self.n_open] > 0.5).astype(float)
        self.n_guesses = n_guesses if self.n_open < p.shape[1] else 0
        self.conditional = conditional

    def propose(self, history, hypotheses, weights, k, rng) -> list[int]:
        asked = {q for q, _ in history}
        hyps = np.asarray(hypotheses, dtype=int)
        w = np.asarray(weights, dtype=float) / np.sum(weights)
        order = rng.permutation(len(hyps))
        top = hyps[order][np.argsort(-w[order], kind="stable")]
        guesses = [int(q) for q in (self.n_open + top) if q not in asked][: self.n_guesses]
        open_q = np.array([q for q in range(self.n_open) if q not in asked], dtype=int)
        m = max(0, k - len(guesses))
        pick: list = []
        if self.conditional and len(hyps) > 1 and len(open_q):
            share = w @ self.likely_yes[hyps][:, open_q]  # weighted share of hypotheses whose likely answer is yes
            split = np.minimum(share, 1 - share)
            good = open_q[split > 0]
            take = min(m, len(good))
            if take:
                pick = list(rng.choice(good, size=take, replace=False, p=split[split > 0] / split.sum()))
        rest = np.setdiff1d(open_q, pick)
        pick += list(rng.choice(rest, size=min(m - len(pick), len(rest)), replace=False))
        return [int(q) for q in pick] + guesses


class ExactBelief:
    """The oracle's belief: the exact posterior over every hypothesis under the true likelihood (testbed check)."""

    def __init__(self, p_yes: np.ndarray):
        self.sampler = TableSampler(p_yes, forget=0.0, popularity=0.0)
        self.hypotheses = list(range(self.sampler.n))
        self.fallbacks = 0
        self._w = np.full(self.sampler.n, 1.0 / self.sampler.n)

    @property
    def weights(self) -> np.ndarray:
        return self._w

    def reset(self) -> None:
        self._w = np.full(self.sampler.n, 1.0 / self.sampler.n)

    def update(self, history, rng) -> None:
        lp = self.sampler.log_posterior(history)
        w = np.exp(lp - lp.max())
        self._w = w / w.sum()
