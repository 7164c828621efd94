"""Bad inputs to the FSL / batch-schedule library give clear errors naming the problem (issue 45): a learning-rate
list of the wrong length, 2-D schedules, zero or NaN rates, non-integer batches, empty schedules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.theory.bss_fsl import FSLCurve, PowerLawTask, fit_fsl
from iclr26.theory.bss_fsl.schedule import (
    BatchSizeSchedule,
    accumulation_plan,
    optimal_schedule,
    train_with_batch_schedule,
)

NAN = float("nan")
TASK = PowerLawTask(d=20)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: TASK.exact_risk([4, 4, 4], [0.1, 0.1]), r"one learning rate or one per step: got shape \(2,\) for 3"),
        (lambda: TASK.exact_risk([4, 4, 4], np.full((3, 3), 0.1)), "one learning rate or one per step"),
        (lambda: TASK.exact_risk(np.full((2, 2), 4), 0.1), "non-empty 1-D array"),
        (lambda: TASK.sgd_risk([4, 4, 4], [0.1, 0.1], np.random.default_rng(0)), "one learning rate or one per step"),
        (lambda: TASK.sgd_risk([4, 4], 0.1, np.random.default_rng(0), record_every=0), "record_every"),
        (lambda: TASK.fsl_risk([4, 4, 4], [0.1, 0.1]), "one learning rate or one per step"),
        (lambda: FSLCurve(0.1, 1, 0.5, 1, 0.1, 2.0).predict([4, 4, 4], [0.1, 0.2]), "one learning rate or one"),
        (lambda: TASK.stationary_risk(NAN, 4), "lr and batch_size must be finite"),
        (lambda: TASK.stationary_risk(0.1, -4), "lr and batch_size must be finite"),
        (lambda: TASK.max_stable_lr(0), "batch_size must be finite and > 0"),
        (lambda: TASK.signal(NAN), "intrinsic times"),
        (lambda: fit_fsl([(np.full(10, 4), 0.1, np.arange(1, 5), np.array([1, NAN, 0.5, 0.4]))]), "NaN or inf"),
        (lambda: fit_fsl([(np.full(10, 4), 0.1, np.arange(1, 5), np.array([1, 0.5, 0.4]))]), "same non-zero length"),
        (lambda: BatchSizeSchedule.two_stage(4, 64, 0.5).batch_size_at(NAN), r"must be in \[0, 1\]"),
        (lambda: BatchSizeSchedule.two_stage(4, 64, 0.5)(3, 0), "data_budget must be > 0"),
        (lambda: accumulation_plan([4.5], 2), "integers ≥ 1"),
        (lambda: accumulation_plan([-4], 2), "integers ≥ 1"),
        (lambda: accumulation_plan([4], 2.5), "micro_batch must be an integer"),
        (lambda: optimal_schedule(TASK, 1000, 0.1, 1, 8, 2, fixed_point_iters=0), "fixed_point_iters"),
        (
            lambda: train_with_batch_schedule(torch.nn.Linear(1, 1), None, lambda a, b: 0, []),
            "non-empty 1-D array",
        ),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_per_step_rates_of_the_right_length_are_used_step_by_step():
    """A list with one rate per step equals running the steps with those rates (the check does not reject it)."""
    bs, lrs = np.array([4, 8, 8]), np.array([0.3, 0.1, 0.05])
    r = TASK.exact_risk(bs, lrs)
    r2 = TASK.exact_risk(bs[:2], lrs[:2])
    assert np.allclose(r[:3], r2) and r.shape == (4,)
