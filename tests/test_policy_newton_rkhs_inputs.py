"""Bad inputs to the Policy-Newton-in-RKHS library give clear errors naming the problem (issue 45), never a raw
numpy/torch error or a silent NaN; and the Hessian-free control step of the reproduction is what it says."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.theory.policy_newton import (
    PolicyNewtonConfig,
    RKHSGradientConfig,
    exact_cubic_newton,
    exact_gradient_ascent,
)
from iclr26.theory.policy_newton.cubic import cubic_model, cubic_subproblem
from iclr26.theory.policy_newton.episodes import returns_to_go
from iclr26.theory.policy_newton.policies import RKHSSoftmaxPolicy, rbf_kernel, trajectory_derivatives
from iclr26.theory.policy_newton.world import ExactObjective, investment_mdp

NAN = float("nan")
B, Q = np.ones(3), -np.eye(3)


def _f(x):
    return -(x**2).sum()


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: cubic_subproblem(B, Q, 1.0, np.full((3, 3), NAN)), "norm matrix N must be finite"),
        (lambda: cubic_subproblem(B, Q, float("inf")), "M must be finite and > 0"),
        (lambda: cubic_subproblem(B, Q, 1.0, np.eye(3), rank_tol=NAN), "rank_tol"),
        (lambda: cubic_model(np.ones(2), B, Q, 1.0), "beta and b of length n"),
        (lambda: exact_cubic_newton(_f, [NAN, 0.0], 1.0, 2), "x0 must be a finite"),
        (lambda: exact_cubic_newton(_f, [1.0, 0.0], 1.0, 2.5), "iters must be an integer"),
        (lambda: exact_gradient_ascent(_f, [1.0, 0.0], NAN, 2), "lr must be finite"),
        (lambda: exact_gradient_ascent(_f, [1.0, 0.0], 1.0, 2, metric=np.eye(3)), r"metric must be a finite \(2, 2\)"),
        (
            lambda: exact_cubic_newton(
                _f, [1.0, 0.0], 1.0, 2, noise_std=0.1, rng=np.random.default_rng(0), noise_map=np.eye(3)
            ),
            "noise_map must be",
        ),  # fmt: skip
        (lambda: PolicyNewtonConfig(prune_tol=NAN), "prune_tol must be finite"),
        (lambda: RKHSGradientConfig(prune_tol=-1.0), "prune_tol must be finite"),
        (lambda: returns_to_go(np.array([1.0, NAN, 1.0]), 0.9), "rewards must be a finite 1-D"),
        (lambda: returns_to_go(np.ones((3, 2)), 0.9), "rewards must be a finite 1-D"),
        (lambda: RKHSSoftmaxPolicy(2, 4).probs(np.full((2, 4), NAN)), "observations contain NaN"),
        (lambda: RKHSSoftmaxPolicy(2, 4).probs(np.ones((2, 3))), "4 columns"),
        (lambda: RKHSSoftmaxPolicy(2, 4).add_centres(np.full((1, 8), NAN), [1.0]), "must be finite"),
        (lambda: RKHSSoftmaxPolicy(2, 4).add_centres(np.ones((1, 5)), [1.0]), r"\(n, 8\) state–action features"),
        (lambda: RKHSSoftmaxPolicy(2, 4).prune(0.0, 0), "max_centres >= 1"),
        (lambda: rbf_kernel(np.ones((2, 2)), np.ones((2, 2)), NAN), "kernel gamma must be finite"),
        (
            lambda: trajectory_derivatives(np.ones((2, 2, 3)), np.full((2, 2), 0.5), [0, 5], [1.0, 1.0]),
            r"actions must lie in \[0, 2\)",
        ),
        (
            lambda: trajectory_derivatives(np.ones((2, 2, 3)), np.full((2, 2), 0.5), [0, 1], [1.0, NAN]),
            "weights must be finite",
        ),
        (
            lambda: trajectory_derivatives(np.ones((2, 2, 3)), np.full((2, 2), 0.9), [0, 1], [1.0, 1.0]),
            "rows that sum to 1",
        ),
        (lambda: investment_mdp(2.5), "n_levels"),
        (lambda: ExactObjective(investment_mdp(2), np.full((18, 18), NAN)), "finite, invertible Gram"),
        (lambda: ExactObjective(investment_mdp(2), np.zeros((18, 18))), "finite, invertible Gram"),
        (lambda: ExactObjective(investment_mdp(2), np.eye(18), reg=NAN), "reg must be finite"),
        (
            lambda: ExactObjective(investment_mdp(2), np.eye(18)).of_coefficients(torch.zeros(5, dtype=torch.float64)),
            "length S·A = 18",
        ),
        (
            lambda: ExactObjective(investment_mdp(2), np.eye(18)).of_coefficients(
                torch.full((18,), NAN, dtype=torch.float64)
            ),
            "NaN or inf",
        ),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_the_hessian_free_control_step_is_the_cubic_step_of_the_gradient_alone():
    """use_hessian=False: Δ maximises gᵀΔ − (M/6)‖Δ‖³, i.e. Δ = √(2‖g‖/M) g/‖g‖ (closed form), while the Newton step
    on a quadratic with M → 0 lands on the optimum; both start from the same point."""
    x0, M = np.array([1.0, -2.0]), 0.5
    g = -2 * x0  # ∇(−‖x‖²)
    step = exact_cubic_newton(_f, x0, M, 1, use_hessian=False)[1] - x0
    assert np.allclose(step, np.sqrt(2 * np.linalg.norm(g) / M) * g / np.linalg.norm(g), rtol=1e-8)
    newton = exact_cubic_newton(_f, x0, 1e-9, 1)[1]
    assert np.allclose(newton, 0.0, atol=1e-3)


def test_the_order_estimator_gives_two_for_quadratic_and_one_for_linear_convergence():
    from iclr26.papers.policy_newton_rkhs.experiment import _order

    quad = [0.3]
    while quad[-1] > 1e-9:
        quad.append(quad[-1] ** 2 / 0.5)  # e_{k+1} = 2 e_k²: order exactly 2
    quad += [1e-11, 1e-11]  # the floor set by h*'s precision
    assert abs(_order(np.array(quad), newton=True) - 2.0) < 1e-6
    lin = 0.2 * 0.5 ** np.arange(20)
    assert abs(_order(lin, newton=False) - 1.0) < 1e-9
    # one iterate starting between 0.1 and 0.5 (the VERSION 2 window missed it): still estimated
    start = [0.45, 0.45**2 / 0.5, (0.45**2 / 0.5) ** 2 / 0.5, 1e-12]
    assert np.isfinite(_order(np.array(start), newton=True))
