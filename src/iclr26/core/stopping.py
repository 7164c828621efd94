"""Early stopping, one rule for the training loops that share it: keep the best validation score and the state that
reached it, stop after ``patience`` scores without improvement, never before ``min_steps`` steps.

A learner on a plateau must be given the time to leave it (``min_steps``); the best state, not the last, is what the
caller restores, so a run that overshoots is not penalised for the evaluations it spent finding out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


class EarlyStopping:
    """``update(step, score, snapshot)`` after each evaluation; True when training should stop.

    ``higher_is_better`` picks the direction (accuracy: True; loss or perplexity: False). A NaN score never improves.
    ``state`` is what ``snapshot()`` returned at the best score (None until a score improves), ``best_step`` its step,
    ``scores`` / ``steps`` every evaluation in order."""

    def __init__(self, patience: int, min_steps: int = 0, higher_is_better: bool = True):
        if patience < 1 or min_steps < 0:
            raise ValueError(f"patience must be ≥ 1 and min_steps ≥ 0, got {patience} and {min_steps}")
        self.patience, self.min_steps, self.higher = patience, min_steps, higher_is_better
        self.best = -math.inf if higher_is_better else math.inf
        self.best_step, self.bad, self.state = 0, 0, None
        self.scores: list[float] = []
        self.steps: list[int] = []

    def update(self, step: int, score: float, snapshot: Callable[[], Any] | None = None) -> bool:
        self.scores.append(score)
        self.steps.append(step)
        if score > self.best if self.higher else score < self.best:
            self.best, self.best_step, self.bad = score, step, 0
            if snapshot is not None:
                self.state = snapshot()
        else:
            self.bad += 1
        return self.bad >= self.patience and step >= self.min_steps
