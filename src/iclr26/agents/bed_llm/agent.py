"""The sequential BED-LLM loop and its baselines.

Each turn (paper §3, the four-step loop):

1. propose K candidate questions, conditioned on the current hypotheses (`QuestionProposer`);
2. score each by its Rao-Blackwellised EIG under the prior × likelihood model (`eig.eig_rb`);
3. ask the argmax and observe the answer;
4. update the belief by sample-then-filter (`belief.FilteredBelief`).

`BEDConfig(selection=..., belief=...)` also gives the ablations the paper compares against: `selection="entropy"`
(predictive-answer entropy only, uncertainty sampling), `selection="random"`, and `belief="in_context"` (EIG with the
in-context belief, no filter). `NaiveQuestioner` is direct prompting: the LLM asks about its current favourite
hypothesis and guesses once it is confident.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from .belief import FilteredBelief, InContextBelief
from .eig import eig_rb, predictive_entropy
from .interfaces import AnswerModel, HypothesisSampler, QuestionProposer

SELECTIONS = ("eig", "entropy", "random")
BELIEFS = ("filter", "in_context")


@dataclass(frozen=True)
class BEDConfig:
    n_hypotheses: int = field(default=30, metadata={"help": "particles in the belief (not stated; dossier 20-50)"})
    n_candidates: int = field(default=15, metadata={"help": "candidate questions per turn (not stated; dossier 10-20)"})
    filter_threshold: float = field(
        default=0.5, metadata={"help": "τ: keep θ iff p(y_s | θ, x_s) ≥ τ for every past answer (not stated; 0.5)"}
    )
    refill_rounds: int = field(default=5, metadata={"help": "sampling calls to top the belief up (not stated; 5)"})
    guess_threshold: float = field(
        default=0.5,
        metadata={"help": "guess the top hypothesis once its belief mass reaches this (dossier's loop; value ours)"},
    )
    selection: str = field(default="eig", metadata={"help": "eig (BED-LLM) | entropy | random"})
    belief: str = field(default="filter", metadata={"help": "filter (BED-LLM, sample-then-filter) | in_context"})

    def __post_init__(self):
        if self.n_hypotheses < 1:
            raise ValueError(f"n_hypotheses must be ≥ 1, got {self.n_hypotheses!r}")
        if self.n_candidates < 1:
            raise ValueError(f"n_candidates must be ≥ 1, got {self.n_candidates!r}")
        if not 0.0 < self.filter_threshold < 1.0:
            raise ValueError(f"filter_threshold must be in (0, 1), got {self.filter_threshold!r}")
        if self.refill_rounds < 1:
            raise ValueError(f"refill_rounds must be ≥ 1, got {self.refill_rounds!r}")
        if not 0.0 < self.guess_threshold <= 1.0:
            raise ValueError(f"guess_threshold must be in (0, 1], got {self.guess_threshold!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        if self.belief not in BELIEFS:
            raise ValueError(f"belief must be one of {BELIEFS}, got {self.belief!r}")


def _argmax(scores: np.ndarray, rng: np.random.Generator) -> int:
    best = np.flatnonzero(scores >= scores.max() - 1e-12)
    return int(rng.choice(best))  # ties broken at random, never by candidate order


class BEDAgent:
    """BED-LLM questioner: `reset()`, then alternate `next_question()` and `observe(question, answer)`.

    `guess_question(θ)` (optional) makes the question "is it θ?"; the agent asks it for its top hypothesis once that
    holds `cfg.guess_threshold` of the belief (a final answer, as in 20 Questions); otherwise the best candidate.
    """

    def __init__(
        self,
        sampler: HypothesisSampler,
        answer_model: AnswerModel,
        proposer: QuestionProposer,
        cfg: BEDConfig = BEDConfig(),
        seed: int | None = None,
        guess_question: Callable[[Hashable], Hashable] | None = None,
    ):
        self.sampler, self.answer_model, self.proposer, self.cfg = sampler, answer_model, proposer, cfg
        self.guess_question = guess_question
        self.rng = np.random.default_rng(seed)
        self.history: list[tuple[Hashable, int]] = []
        self.last_scores: dict = {}
        if cfg.belief == "filter":
            self.belief = FilteredBelief(
                sampler, answer_model, cfg.n_hypotheses, cfg.filter_threshold, cfg.refill_rounds
            )
        else:
            self.belief = InContextBelief(sampler, cfg.n_hypotheses)

    def reset(self, rng: np.random.Generator | None = None) -> None:
        if rng is not None:
            self.rng = rng
        self.history = []
        self.belief.reset()
        self.belief.update(self.history, self.rng)

    @property
    def hypotheses(self) -> list:
        return self.belief.hypotheses

    @property
    def weights(self) -> np.ndarray:
        return self.belief.weights

    def score(self, questions: list) -> np.ndarray:
        """The selection criterion of each question under the current belief."""
        probs = self.answer_model.probs(self.hypotheses, questions)  # [N, K, Y]
        if self.cfg.selection == "eig":
            return eig_rb(probs, self.weights)  # Eq. EIG = H[p(y|x,h)] − E_θ H[p(y|θ,x)]
        if self.cfg.selection == "entropy":
            return predictive_entropy(probs, self.weights)  # H[p(y|x,h)] only
        return np.zeros(len(questions))  # random: every candidate ties

    def next_question(self) -> Hashable:
        if not self.hypotheses:
            raise RuntimeError("the belief is empty; call reset() first (the sampler returned no hypotheses)")
        w = self.weights
        if self.guess_question is not None and w.max() >= self.cfg.guess_threshold:
            guess = self.guess_question(self.map_hypothesis())
            if guess not in {q for q, _ in self.history}:
                return guess
        cands = self.proposer.propose(self.history, self.hypotheses, self.weights, self.cfg.n_candidates, self.rng)
        if not cands:
            raise RuntimeError("the question proposer returned no candidates")
        scores = self.score(list(cands))
        self.last_scores = dict(zip(cands, scores.tolist()))
        return cands[_argmax(scores, self.rng)]

    def observe(self, question: Hashable, answer: int) -> None:
        self.history.append((question, int(answer)))
        self.belief.update(self.history, self.rng)

    def map_hypothesis(self) -> Hashable:
        """The most probable hypothesis (uniform belief: a random survivor)."""
        w = self.weights
        return self.hypotheses[_argmax(w, self.rng)]


class NaiveQuestioner:
    """Direct prompting (the paper's Naive QA), simulated with the same LLM parts.

    The LLM conditioned on the history has a favourite hypothesis (the mode of `n_samples` in-context samples). If
    its share of the samples reaches `confidence` the questioner guesses it (`guess_question(θ)`; None: never);
    otherwise it asks the proposed question its favourite would most surely answer "yes" to — a confirmatory
    question, as LLMs do.
    """

    def __init__(
        self,
        sampler: HypothesisSampler,
        answer_model: AnswerModel,
        proposer: QuestionProposer,
        guess_question: Callable[[Hashable], Hashable] | None,
        confidence: float = 0.5,
        n_samples: int = 30,
        n_candidates: int = 15,
        seed: int | None = None,
    ):
        if not 0.0 < confidence <= 1.0:
            raise ValueError(f"confidence must be in (0, 1], got {confidence!r}")
        self.sampler, self.answer_model, self.proposer = sampler, answer_model, proposer
        self.guess_question, self.confidence = guess_question, confidence
        self.n_samples, self.n_candidates = n_samples, n_candidates
        self.rng = np.random.default_rng(seed)
        self.history: list[tuple[Hashable, int]] = []

    def reset(self, rng: np.random.Generator | None = None) -> None:
        if rng is not None:
            self.rng = rng
        self.history = []

    def next_question(self) -> Hashable:
        samples = self.sampler.sample(self.history, self.n_samples, self.rng)
        values, counts = np.unique(np.array(samples, dtype=object), return_counts=True)
        order = self.rng.permutation(len(values))  # random tie-break
        top = values[order][np.argmax(counts[order])]
        asked = {q for q, _ in self.history}
        guess = None if self.guess_question is None else self.guess_question(top)  # None: nothing to guess
        if guess is not None and counts.max() / len(samples) >= self.confidence and guess not in asked:
            return guess
        cands = [q for q in self.proposer.propose(self.history, [top], np.ones(1), self.n_candidates, self.rng)]
        cands = [q for q in cands if q != guess] or [guess]
        p_yes = self.answer_model.probs([top], cands)[0, :, -1]
        return cands[_argmax(p_yes, self.rng)]

    def observe(self, question: Hashable, answer: int) -> None:
        self.history.append((question, int(answer)))


def play(
    questioner,
    answer: Callable[[Hashable, np.random.Generator], int],
    is_win: Callable[[Hashable, int], bool],
    max_turns: int = 20,
    rng: np.random.Generator | None = None,
) -> int | None:
    """One game: ask up to `max_turns` questions; return the turn (1-based) of the winning guess, or None."""
    rng = np.random.default_rng(rng)
    questioner.reset(rng)
    for t in range(1, max_turns + 1):
        q = questioner.next_question()
        a = answer(q, rng)
        if is_win(q, a):
            return t
        questioner.observe(q, a)
    return None
