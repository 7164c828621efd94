"""`core.stopping.EarlyStopping`, the rule MBOK's distillation and PERK's outer loop share."""

from __future__ import annotations

import math

import pytest

from iclr26.core.stopping import EarlyStopping


def run(rule, scores, every=10):
    """Feed scores every ``every`` steps; the step at which the rule says stop (None: never)."""
    for i, s in enumerate(scores):
        if rule.update((i + 1) * every, s, snapshot=lambda s=s: f"state@{s}"):
            return (i + 1) * every
    return None


def test_patience_best_state_and_direction():
    rule = EarlyStopping(patience=2)
    assert run(rule, [0.1, 0.5, 0.4, 0.3, 0.9]) == 40  # two scores without improvement after the best (step 20)
    assert rule.best == 0.5 and rule.best_step == 20 and rule.state == "state@0.5" and rule.steps == [10, 20, 30, 40]
    low = EarlyStopping(patience=2, higher_is_better=False)  # perplexity: lower is better
    assert run(low, [30.0, 29.0, 29.5, 28.0, 28.5, 28.1]) == 60
    assert low.best == 28.0 and low.state == "state@28.0"


def test_min_steps_and_nan():
    rule = EarlyStopping(patience=1, min_steps=50)
    assert run(rule, [0.5, 0.4, 0.4, 0.4, 0.4, 0.4]) == 50  # would have stopped at 20 without the floor
    nan = EarlyStopping(patience=2)
    assert run(nan, [math.nan, math.nan]) == 20 and nan.state is None  # a NaN never counts as an improvement
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(patience=0)
