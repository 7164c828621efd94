"""Bad inputs to the cluster-preservation measures give clear errors (issue 45): empty or 2-D labels, NaN blocks,
out-of-range subspace dimensions, single points; and the Wedin bound counts the SVD's own rounding as perturbation
(so a rank-deficient block with an undetermined top-r subspace is not reported as a violated theorem)."""

from __future__ import annotations

import numpy as np
import pytest

from iclr26.theory.cluster_preservation import (
    ClusterConfig,
    clustering_accuracy,
    layer_report,
    mean_affinity,
    principal_subspace,
    rank_fit,
    self_expression,
    subspace_preserving_error,
    wedin_bound,
)

NAN = float("nan")
X = np.random.default_rng(0).standard_normal((20, 5))
Y = np.repeat([0, 1], 10)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: clustering_accuracy([], []), "non-empty 1-D label arrays"),
        (lambda: clustering_accuracy(np.zeros((2, 2)), np.zeros((2, 2))), "non-empty 1-D label arrays"),
        (lambda: subspace_preserving_error(np.full((2, 2), NAN), [0, 1]), "finite n × n"),
        (lambda: subspace_preserving_error(np.zeros((0, 0)), []), "finite n × n"),
        (lambda: principal_subspace(np.full((3, 3), NAN), 1), "finite 2-D array"),
        (lambda: layer_report(X, np.full((4, 5), NAN), np.zeros(4), Y, 2), "W and b must be finite"),
        (lambda: layer_report(X, np.ones((4, 5)), np.zeros(4), Y, 0), "integers ≥ 1"),
        (lambda: wedin_bound(np.full((3, 3), NAN), np.ones((3, 3)), 1), "must be finite"),
        (lambda: wedin_bound(np.ones((3, 3)), np.ones((3, 3)), 5), r"r must be in \[1, 3\]"),
        (lambda: rank_fit(X, Y, 0), "integers ≥ 1"),
        (lambda: mean_affinity(X, Y, 2.5), "integers ≥ 1"),
        (lambda: self_expression(np.ones((1, 3)), ClusterConfig(method="tsc")), "at least 2 points"),
        (lambda: self_expression(np.zeros((0, 3))), "at least 2 points"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_wedin_bound_on_an_unperturbed_rank_deficient_block_is_not_violated():
    """Y = Y* of rank 2 asked for its top-4 subspace: σ₃ = σ₄ = 0 up to rounding, so the subspace is arbitrary; the
    bound must then be trivial (1), not 0 (which a measured ‖sin Θ‖ of rounding noise would 'violate')."""
    rng = np.random.default_rng(1)
    Yk = rng.standard_normal((12, 2)) @ rng.standard_normal((2, 8))
    sin, bound, gamma = wedin_bound(Yk, Yk.copy(), 4)
    assert sin <= bound and bound == 1.0 and gamma <= 0
    # a well-determined subspace (r = the rank) keeps a zero bound for zero perturbation
    sin, bound, _ = wedin_bound(Yk, Yk.copy(), 2)
    assert sin < 1e-10 and bound < 1e-10


def test_the_random_step_control_moves_each_parameter_as_far_as_training_did():
    import torch

    from iclr26.papers.cluster_preservation.experiment import _mlp, _random_step

    init, trained = _mlp([6, 8, 3], 0), _mlp([6, 8, 3], 0)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    moved = _random_step(init, trained, seed=1)
    for p0, p1, p in zip(init.parameters(), trained.parameters(), moved.parameters()):
        assert torch.allclose((p - p0).norm(), (p1 - p0).norm(), rtol=1e-5)  # the same length ...
        assert not torch.allclose(p, p1)  # ... in another direction
