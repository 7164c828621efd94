"""The three LLM roles of BED-LLM as small interfaces a user fills with their own model.

- `AnswerModel`: the likelihood p(y | θ, x): how an answerer who knows the target θ would answer question x, as
  probabilities over a finite answer set (for 20 Questions ("No", "Yes")). Read from next-token probabilities of the
  answer tokens (`iclr26.agents.bed_llm.hf.HFAnswerModel`) or from any callable (`CallableAnswerModel`).
- `HypothesisSampler`: q(θ | h_t), candidate targets given the history, e.g. an LLM prompted in context with the
  question-answer pairs so far ("list animals consistent with: ...").
- `QuestionProposer`: candidate questions given the history and the current hypotheses (the paper's
  hypothesis-conditioned generation: "ask a yes/no question that splits these candidates").

Hypotheses and questions are any hashable values (strings for an LLM, integers for a simulated world); an answer is
the index of an entry of `AnswerModel.answers`. A history is a sequence of (question, answer index) pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

History = Sequence[tuple[Hashable, int]]


@runtime_checkable
class AnswerModel(Protocol):
    answers: tuple[str, ...]

    def probs(self, hypotheses: Sequence[Hashable], questions: Sequence[Hashable]) -> np.ndarray:
        """p(y | θ_n, x_k) as an array [len(hypotheses), len(questions), len(answers)], rows summing to one."""
        ...


@runtime_checkable
class HypothesisSampler(Protocol):
    def sample(self, history: History, n: int, rng: np.random.Generator) -> list[Hashable]:
        """Up to `n` candidate targets given the history (duplicates allowed; the belief deduplicates)."""
        ...


@runtime_checkable
class QuestionProposer(Protocol):
    def propose(
        self,
        history: History,
        hypotheses: Sequence[Hashable],
        weights: np.ndarray,
        k: int,
        rng: np.random.Generator,
    ) -> list[Hashable]:
        """Up to `k` candidate questions (not yet asked) given the history and the current belief."""
        ...


class CallableAnswerModel:
    """A yes/no answer model from any callable `p_yes(hypothesis, question) -> float`, with a cache.

    The callable is the `Answerer` of the issue notes: p(yes | entity, question). Values are clipped to [eps, 1 − eps]
    so that no answer is impossible (a single surprising answer then filters a hypothesis out, but never gives −∞).
    """

    answers = ("No", "Yes")

    def __init__(self, p_yes: Callable[[Hashable, Hashable], float], eps: float = 1e-4):
        if not 0 <= eps < 0.5:
            raise ValueError(f"eps must be in [0, 0.5), got {eps!r}")
        self.p_yes, self.eps, self._cache = p_yes, eps, {}

    def probs(self, hypotheses, questions) -> np.ndarray:
        out = np.empty((len(hypotheses), len(questions), 2))
        for i, h in enumerate(hypotheses):
            for j, q in enumerate(questions):
                key = (h, q)
                if key not in self._cache:
                    p = float(self.p_yes(h, q))
                    if not 0.0 <= p <= 1.0:
                        raise ValueError(f"p_yes({h!r}, {q!r}) = {p!r}; expected a probability in [0, 1]")
                    self._cache[key] = min(max(p, self.eps), 1 - self.eps)
                out[i, j, 1] = self._cache[key]
        out[..., 0] = 1 - out[..., 1]
        return out
