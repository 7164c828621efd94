"""Bad inputs to the kernel-surrogate library give clear errors (issue 45), and the shuffled-gradient control of
the gradient estimator keeps everything but the example–gradient link."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.theory.kernel_surrogate import (
    KernelSurrogate,
    LinearSurrogate,
    influence_scores,
    loo_scores,
    sample_subsets,
    second_order_linear_coefficients,
    select_subset,
)
from iclr26.theory.kernel_surrogate.gradient import GradientEstimator, GradientEstimatorConfig, finetune
from iclr26.theory.kernel_surrogate.tasks import WeightedLogistic, make_tasks

NAN = float("nan")
PROBLEM = make_tasks(0, 10, 20)
WL = WeightedLogistic(PROBLEM, 20)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: KernelSurrogate().fit(np.eye(3), [1, 2, 3]).predict([[NAN, 1, 1]]), "subsets contain NaN"),
        (lambda: LinearSurrogate().fit(np.eye(3), [1, 2, 3]).predict([[NAN, 1, 1]]), "subsets contain NaN"),
        (lambda: KernelSurrogate().fit(np.eye(3), [1, 2, 3]).predict(np.ones((2, 2, 3))), "2-D array"),
        (lambda: sample_subsets(3.5, 2), "n_tasks must be an integer"),
        (lambda: loo_scores(lambda S: S.sum(1), 0), "n_tasks must be an integer >= 1"),
        (lambda: select_subset(lambda S: S.sum(1), 0), "n_tasks must be an integer >= 1"),
        (lambda: select_subset(lambda S: np.ones(3), 3), "one score per subset"),
        (lambda: select_subset(lambda S: np.full(len(S), NAN), 3), "NaN or inf scores"),
        (lambda: second_order_linear_coefficients(np.array([NAN, 1.0]), np.eye(2), 0.5), "finite vector"),
        (
            lambda: influence_scores(
                torch.zeros(2, dtype=torch.float64), lambda t: t**2 + 1, lambda t: t.sum(), damping=NAN
            ),
            "damping must be finite",
        ),  # fmt: skip
        (
            lambda: influence_scores(
                torch.zeros(2, dtype=torch.float64), lambda t: t**2 + 1, lambda t: t.sum(), weights=[1, 1, 1]
            ),
            "one entry per task",
        ),  # fmt: skip
        (lambda: finetune(torch.nn.Linear(2, 1), np.ones((2, 2)), np.ones(2), NAN), "l2 must be finite"),
        (lambda: finetune(torch.nn.Linear(2, 1), np.full((2, 2), NAN), np.ones(2), 0.1), "must be finite"),
        (lambda: finetune(torch.nn.Linear(2, 1), np.ones((2, 2)), np.ones(3), 0.1), "one label per input"),
        (lambda: WL.F(np.full(PROBLEM.n_tasks, NAN)), "finite and ≥ 0"),
        (lambda: WL.F(-np.ones(PROBLEM.n_tasks)), "finite and ≥ 0"),
        (lambda: WeightedLogistic(PROBLEM, 20, l2=NAN), "l2 finite and > 0"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_shuffled_estimator_permutes_gradients_and_keeps_the_base():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    est = GradientEstimator(model, PROBLEM.X_tasks, PROBLEM.y_tasks, PROBLEM.X_target, PROBLEM.y_target,
                            GradientEstimatorConfig(proj_dim=8))  # fmt: skip
    junk = est.shuffled(3)
    assert junk.base_loss() == est.base_loss()
    assert sorted(map(tuple, junk._G.round(12))) == sorted(map(tuple, est._G.round(12)))  # same rows
    assert not np.allclose(junk._G, est._G)  # in another order
    s = np.ones(PROBLEM.n_tasks)
    assert est.estimate(s) != junk.estimate(s) and np.allclose(est._G, est.shuffled(3)._G[np.argsort(
        np.random.default_rng(3).permutation(len(est._G)))])  # fmt: skip
