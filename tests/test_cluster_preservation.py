"""Tests of the subspace-cluster-preservation measures and bound, and a smoke run of the reproduction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr26.theory.cluster_preservation import (
    ClusterConfig,
    UoSConfig,
    affinity_preservation,
    clustering_accuracy,
    layer_report,
    make_union_of_subspaces,
    mean_affinity,
    rank_fit,
    self_expression,
    subspace_affinity,
    subspace_cluster,
    subspace_preserving_error,
    wedin_bound,
)


@pytest.fixture(scope="module")
def uos():
    rng = np.random.default_rng(0)
    X, y, bases = make_union_of_subspaces(
        UoSConfig(ambient_dim=30, n_clusters=3, subspace_dim=3, n_per_cluster=40, noise=0.0), rng
    )
    return X, y, bases


def test_generator_puts_each_cluster_on_its_subspace(uos):
    X, y, bases = uos
    for k, U in enumerate(bases):
        Xk = X[y == k]
        np.testing.assert_allclose(Xk - Xk @ U @ U.T, 0, atol=1e-10)
        np.testing.assert_allclose(np.linalg.norm(Xk, axis=1), 1, atol=1e-10)
    assert rank_fit(X, y, 3) == pytest.approx(1.0)


def test_cone_generator_respects_the_angle():
    rng = np.random.default_rng(1)
    X, y, bases = make_union_of_subspaces(
        UoSConfig(ambient_dim=10, n_clusters=2, subspace_dim=3, n_per_cluster=200, noise=0.0, cone_angle=40.0), rng
    )
    for k in range(2):
        Xk = X[y == k]
        cos = Xk @ Xk.T
        assert np.min(cos) >= np.cos(np.deg2rad(40.0)) - 1e-9  # any two points within the cone's full angle


def test_measures_are_one_for_identity_and_orthogonal_maps_and_drop_when_merged(uos):
    X, y, bases = uos
    Q = np.linalg.qr(np.random.default_rng(2).standard_normal((30, 30)))[0]
    assert affinity_preservation(X, X, y, 3) == pytest.approx(1.0)
    assert affinity_preservation(X, X @ Q, y, 3) == pytest.approx(1.0, abs=1e-9)
    assert rank_fit(X @ Q, y, 3) == pytest.approx(1.0)
    assert mean_affinity(X @ Q, y, 3) == pytest.approx(mean_affinity(X, y, 3), abs=1e-9)
    # a map that sends every subspace into span(U_0) merges the clusters
    P = bases[0] @ bases[0].T
    assert affinity_preservation(X, X @ P, y, 3) < 0.05
    acc_id = clustering_accuracy(subspace_cluster(X, 3, ClusterConfig(method="lsr")), y)
    acc_orth = clustering_accuracy(subspace_cluster(X @ Q, 3, ClusterConfig(method="lsr")), y)
    acc_merged = clustering_accuracy(subspace_cluster(X @ P, 3, ClusterConfig(method="lsr")), y)
    assert acc_id == 1.0 and acc_orth == 1.0 and acc_merged < 0.8


def test_subspace_affinity_closed_forms():
    e = np.eye(4)
    assert subspace_affinity(e[:, :2], e[:, :2]) == pytest.approx(1.0)
    assert subspace_affinity(e[:, :2], e[:, 2:]) == pytest.approx(0.0, abs=1e-12)
    # one shared direction out of two: √(1/2)
    assert subspace_affinity(e[:, :2], e[:, [1, 2]]) == pytest.approx(math.sqrt(0.5))


@pytest.mark.parametrize("method", ["ssc", "lsr", "tsc"])
def test_self_expression_is_subspace_preserving_on_independent_subspaces(uos, method):
    X, y, _ = uos
    C = self_expression(X, ClusterConfig(method=method))
    assert np.allclose(np.diag(C), 0)
    assert subspace_preserving_error(C, y) < 0.05
    assert clustering_accuracy(subspace_cluster(X, 3, ClusterConfig(method=method)), y) == 1.0


def test_ssc_reconstructs_points_from_their_own_subspace(uos):
    X, y, _ = uos
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    C = self_expression(X, ClusterConfig(method="ssc", ssc_iters=500))
    resid = np.linalg.norm(Xn - C.T @ Xn, axis=1)
    assert np.median(resid) < 0.1  # λ = 20/μ leaves a small residual


def test_clustering_accuracy_is_permutation_invariant():
    true = np.array([0, 0, 1, 1, 2, 2])
    assert clustering_accuracy(np.array([2, 2, 0, 0, 1, 1]), true) == 1.0
    assert clustering_accuracy(np.array([0, 1, 1, 1, 2, 2]), true) == pytest.approx(5 / 6)


def test_consistent_relu_layer_is_exactly_linear_on_the_cluster(uos):
    X, y, _ = uos
    rng = np.random.default_rng(3)
    W = rng.standard_normal((50, 30)) / np.sqrt(30)
    b = np.where(rng.random(50) < 0.5, 10.0, -10.0)  # |b| > ‖Wx‖ for unit x: every unit always on or always off
    rep = layer_report(X, W, b, y, 3)
    np.testing.assert_allclose(rep["kappa"], 1.0)
    np.testing.assert_allclose(rep["consistent"], 1.0)
    np.testing.assert_allclose(rep["err"], 0.0, atol=1e-12)
    assert np.all(rep["margin"] > 0) and np.all(rep["sin"] < 1e-6)
    Y = np.maximum(X @ W.T + b, 0)
    assert rank_fit(Y, y, 4) == pytest.approx(1.0)  # an affine image of an r-dim subspace spans ≤ r + 1 dims


def test_bias_free_unit_cannot_be_consistent_on_a_whole_subspace(uos):
    X, y, _ = uos
    W = np.random.default_rng(4).standard_normal((40, 30))
    rep = layer_report(X, W, None, y, 3)
    assert np.all(rep["consistent"] == 0)  # ±c both in the cluster: every hyperplane through 0 cuts it


def test_perturbation_equals_flipped_preactivations():
    rng = np.random.default_rng(5)
    X, y, _ = make_union_of_subspaces(
        UoSConfig(ambient_dim=12, n_clusters=1, subspace_dim=2, n_per_cluster=50, noise=0.0), rng
    )
    W, b = rng.standard_normal((8, 12)), 0.3 * rng.standard_normal(8)
    Z = X @ W.T + b
    majority = (Z > 0).mean(0) >= 0.5
    E = np.maximum(Z, 0) - Z * majority
    flipped = (Z > 0) != majority
    np.testing.assert_allclose(np.abs(E), np.abs(Z) * flipped)


@pytest.mark.parametrize("seed", range(12))
def test_wedin_bound_holds_on_random_instances(seed):
    rng = np.random.default_rng(100 + seed)
    n, m, r = rng.integers(20, 60), rng.integers(5, 30), rng.integers(1, 4)
    Y_ideal = rng.standard_normal((n, r)) @ rng.standard_normal((r, m)) + 0.05 * rng.standard_normal((n, m))
    Y = Y_ideal + rng.uniform(0.01, 2.0) * rng.standard_normal((n, m))
    sin, bound, gamma = wedin_bound(Y_ideal, Y, int(r))
    assert sin <= bound + 1e-12
    if gamma > 0:
        assert bound < 1


@pytest.mark.parametrize("seed", range(6))
def test_layer_report_bound_holds_for_random_relu_layers(seed):
    rng = np.random.default_rng(200 + seed)
    X, y, _ = make_union_of_subspaces(
        UoSConfig(
            ambient_dim=20,
            n_clusters=3,
            subspace_dim=3,
            n_per_cluster=40,
            noise=0.01,
            cone_angle=[30.0, 90.0, 360.0][seed % 3],
        ),
        rng,
    )
    W = rng.standard_normal((64, 20)) * np.sqrt(2 / 20)
    rep = layer_report(X, W, rng.uniform(0, 3) * rng.standard_normal(64), y, 3)
    assert np.all(rep["sin"] <= rep["bound"] + 1e-12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: UoSConfig(subspace_dim=60, ambient_dim=60), "subspace_dim"),
        (lambda: UoSConfig(noise=-1), "noise"),
        (lambda: UoSConfig(shared=1.0), "shared"),
        (lambda: UoSConfig(cone_angle=0), "cone_angle"),
        (lambda: ClusterConfig(method="kmeans"), "method"),
        (lambda: ClusterConfig(ssc_alpha=0.5), "ssc_alpha"),
        (lambda: subspace_cluster(np.ones(5), 2), "2-D"),
        (lambda: subspace_cluster(np.ones((3, 4)), 5), "cannot form"),
        (lambda: subspace_cluster(np.full((6, 4), np.nan), 2), "NaN"),
        (lambda: clustering_accuracy([0, 1], [0, 1, 1]), "same shape"),
        (lambda: rank_fit(np.ones((4, 3)), [0, 0, 1], 1), "labels has 3"),
        (lambda: layer_report(np.ones((4, 3)), np.ones((2, 5)), None, [0, 0, 1, 1], 1), "W must be"),
        (lambda: wedin_bound(np.ones((3, 3)), np.ones((3, 4)), 1), "same shape"),
        (lambda: mean_affinity(np.ones((4, 3)), [0, 0, 0, 0], 1), "two clusters"),
        (lambda: mean_affinity(np.eye(4), [0, 0, 1, 1], {0: 1}), "no entry"),
    ],
)
def test_bad_arguments_raise_clear_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_smoke_run_through_harness(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("cluster-preservation", scale="smoke", out=tmp_path, quiet=True)
    verdicts = ("reproduced", "not reproduced", "inconclusive", "not testable")
    assert res.verdicts and all(v["verdict"] in verdicts for v in res.verdicts)
    nan_ok = ("acc_drop_when_condition_holds", "acc_input_when_condition_holds")  # no instance meets it at smoke
    for metrics in res.per_seed.values():
        finite = [v for k, v in metrics.items() if k not in nan_ok]
        assert finite and all(math.isfinite(v) for v in finite)
    assert (res.run_dir / "plots").exists()
