"""Tests of Meta-Router (causal routing): the CATE learners' mathematics, agreement with econml, label correction,
the efficiency curves on hand-built cases, the routing world, bad arguments, and a smoke run."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from iclr26.agents.causal_router import (
    CateConfig,
    DRLearner,
    ForestConfig,
    MetaRouter,
    MetaRouterConfig,
    RLearner,
    SourceRouter,
    SourceRouterConfig,
    curve_mean,
    dr_pseudo_outcome,
    efficiency_curve,
    efficiency_gain,
    normalized_gain,
    route,
    total_efficiency,
)
from iclr26.agents.causal_router.learners import folds
from iclr26.agents.causal_router.world import digits_routing, synthetic_delta, synthetic_eta, synthetic_routing

SMALL = ForestConfig(n_estimators=20, max_depth=8)
CATE = ForestConfig(n_estimators=30, max_depth=8, min_samples_leaf=20, min_samples_split=40)


def _rct(n=1500, p=0.3, effect=lambda X: np.full(len(X), 0.4), seed=0):
    """Y(0) = sin(2x₁) + noise, Y(1) = Y(0) + δ(x) + noise, T ~ Bernoulli(p) independent of X."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    T = (rng.uniform(size=n) < p).astype(float)
    Y = np.sin(2 * X[:, 0]) + T * effect(X) + 0.1 * rng.standard_normal(n)
    return X, Y, T


# -- the CATE learners ------------------------------------------------------------------------------------------------


def test_r_learner_minimises_the_r_loss_exactly():
    # With a linear final model the R-learner's δ̂ must be the exact minimiser of Σ[(Y − m̂) − (T − ê)(a + bᵀx)]²
    # given its own cross-fitted nuisances: a closed-form weighted least-squares problem.
    X, Y, T = _rct(600, effect=lambda X: 0.3 + 0.5 * X[:, 1])
    lrn = RLearner(CateConfig(nuisance=SMALL, crossfit=3, propensity_clip=0.0), cate_model=LinearRegression())
    lrn.fit(X, Y, T)
    m, e = lrn.nuisances_["m"], lrn.nuisances_["e"]
    r = T - e
    A = r[:, None] * np.column_stack([np.ones(len(X)), X])  # (T − ê)·[1, x]
    coef = np.linalg.lstsq(A, Y - m, rcond=None)[0]
    Xq = np.random.default_rng(1).uniform(-1, 1, (50, 3))
    assert np.allclose(lrn.predict(Xq), coef[0] + Xq @ coef[1:], atol=1e-8)
    # the naive "difference of means" (no residualisation) is a different number: the test can fail
    naive = Y[T == 1].mean() - Y[T == 0].mean()
    assert abs(lrn.predict(Xq).mean() - naive) > 1e-3


def test_dr_pseudo_outcome_hand_values_and_unbiasedness():
    # φ = (T − e)/(e(1 − e))·(Y − μ_T) + μ₁ − μ₀, by hand on four points
    Y, T = np.array([1.0, 2.0, 0.5, -1.0]), np.array([1.0, 0.0, 1.0, 0.0])
    e, mu0, mu1 = np.array([0.5, 0.5, 0.25, 0.8]), np.array([0.0, 1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0, 1.0])
    want = [1.0, -2.0, 2.0, 6.0]  # e.g. the last: −(Y − μ₀)/(1 − e) + μ₁ − μ₀ = 1/0.2 + 1
    assert np.allclose(dr_pseudo_outcome(Y, T, e, mu0, mu1), want)
    # simulated RCT, e = 0.5 known, μ deliberately wrong (0): E[φ] is still the effect (double robustness)
    rng = np.random.default_rng(0)
    n = 200_000
    T = (rng.uniform(size=n) < 0.5).astype(float)
    Y = 1.0 + 0.7 * T + rng.standard_normal(n)
    phi = dr_pseudo_outcome(Y, T, np.full(n, 0.5), np.zeros(n), np.zeros(n))
    assert abs(phi.mean() - 0.7) < 0.03


@pytest.mark.parametrize("learner", [RLearner, DRLearner])
def test_learners_recover_a_constant_bias(learner):
    X, Y, T = _rct(1500, effect=lambda X: np.full(len(X), 0.4))
    delta = learner(CateConfig(nuisance=SMALL, cate=CATE, crossfit=3)).fit(X, Y, T).predict(X)
    assert abs(delta.mean() - 0.4) < 0.05 and delta.std() < 0.1
    # corrected "PB" labels (T = 0) have mean error ≈ 0 against their (known) GS counterparts; raw ones are off by 0.4
    pb = T == 0
    err_corrected = (Y[pb] + delta[pb]) - (Y[pb] + 0.4)
    assert abs(err_corrected.mean()) < 0.05


@pytest.mark.parametrize("learner", [RLearner, DRLearner])
def test_learners_recover_a_linear_cate(learner):
    X, Y, T = _rct(2000, p=0.4, effect=lambda X: 0.6 * X[:, 1])
    delta = learner(CateConfig(nuisance=SMALL, cate=CATE, crossfit=3)).fit(X, Y, T).predict(X)
    assert np.corrcoef(delta, 0.6 * X[:, 1])[0, 1] > 0.85
    assert np.sqrt(np.mean((delta - 0.6 * X[:, 1]) ** 2)) < 0.12
    # with a linear final model the slope itself is recovered
    lin = learner(CateConfig(nuisance=SMALL, crossfit=3), cate_model=LinearRegression()).fit(X, Y, T)
    assert abs(lin.cate_model_.coef_[1] - 0.6) < 0.08 and abs(lin.cate_model_.coef_[0]) < 0.08


@pytest.mark.filterwarnings("ignore:A regressor was passed to model_propensity")
def test_agreement_with_econml():
    econml = pytest.importorskip("econml")  # noqa: F841
    from econml.dml import NonParamDML
    from econml.dr import DRLearner as EconDR

    X, Y, T = _rct(800, p=0.3, effect=lambda X: 0.3 + 0.5 * X[:, 1], seed=3)
    splits = folds(len(X), 3, seed=0)
    cfg = CateConfig(nuisance=SMALL, cate=CATE, crossfit=3, propensity_clip=0.01, clip_effect=100.0)
    Xq = np.random.default_rng(9).uniform(-1, 1, (200, 3))
    # R-learner = econml's NonParamDML (residual-on-residual with weights T_res², continuous T, same folds/forests)
    ours_r = RLearner(cfg).fit(X, Y, T, seed=0)
    their_r = NonParamDML(
        model_y=SMALL.make(), model_t=SMALL.make(), model_final=CATE.make(), discrete_treatment=False, cv=splits
    ).fit(Y, T, X=X)
    # econml does not clip ê for a continuous treatment: compare with ours unclipped
    ours_r0 = RLearner(CateConfig(nuisance=SMALL, cate=CATE, crossfit=3, propensity_clip=0.0, clip_effect=100.0))
    ours_r0.fit(X, Y, T, seed=0)
    assert np.allclose(ours_r0.predict(Xq), their_r.effect(Xq), atol=1e-8)
    assert np.corrcoef(ours_r.predict(Xq), their_r.effect(Xq))[0, 1] > 0.95
    # DR-learner = econml's DRLearner (same pseudo-outcome; μ̂ on [X, T]; ê clipped at min_propensity)
    ours_dr = DRLearner(cfg).fit(X, Y, T, seed=0)
    their_dr = EconDR(
        model_propensity=SMALL.make(),
        model_regression=SMALL.make(),
        model_final=CATE.make(),
        cv=splits,
        min_propensity=0.01,
    ).fit(Y, T, X=X)
    assert np.allclose(ours_dr.predict(Xq), their_dr.effect(Xq), atol=1e-8)


# -- the router -------------------------------------------------------------------------------------------------------


def test_corrected_labels_are_pb_plus_estimated_bias():
    d = synthetic_routing(0, n_gold=60, n_pool=500, n_val=50, n_test=100, d=6)
    for learner in ("r", "dr"):
        cfg = MetaRouterConfig(learner, CateConfig(nuisance=SMALL, cate=CATE, crossfit=2), final=SMALL)
        mr = MetaRouter(cfg).fit(d.X_gs, d.y_gs, d.X_pb, d.y_pb)
        assert np.allclose(mr.corrected_pb_, d.y_pb + mr.predict_bias(d.X_pb))
        assert np.abs(mr.bias_pb_).max() > 0.01  # a real correction, not a no-op
        # the final η̂ forest was trained on GS ∪ corrected PB: refitting it by hand gives the same predictions
        Xa, ya = np.vstack([d.X_gs, d.X_pb]), np.concatenate([d.y_gs, mr.corrected_pb_])
        eta = SMALL.make().fit(Xa, ya, sample_weight=np.ones(len(ya)))  # λ = 1
        assert np.allclose(mr.predict_gain(d.X_test), eta.predict(d.X_test))


def test_meta_router_removes_a_constant_judge_bias_that_pooling_keeps():
    d = synthetic_routing(1, n_gold=300, n_pool=1500, n_val=50, n_test=400, d=6, bias="constant")
    cfg = MetaRouterConfig("r", CateConfig(nuisance=SMALL, cate=CATE, crossfit=3), final=SMALL)
    mr = MetaRouter(cfg).fit(d.X_gs, d.y_gs, d.X_pb, d.y_pb)
    pooled = SourceRouter(SourceRouterConfig("pooled", SMALL)).fit(d.X_gs, d.y_gs, d.X_pb, d.y_pb)
    bias_meta = np.mean(mr.predict_gain(d.X_test) - d.eta_test)
    bias_pooled = np.mean(pooled.predict_gain(d.X_test) - d.eta_test)
    assert abs(bias_meta) < 0.04 < 0.1 < -bias_pooled  # pooled inherits most of the judge's −0.15


# -- evaluation -------------------------------------------------------------------------------------------------------


def test_efficiency_curve_on_a_hand_built_case():
    pred = np.array([0.5, -0.1, 0.3, 0.2])
    true = np.array([1.0, 5.0, -2.0, 3.0])
    ratios, total = efficiency_curve(pred, true)
    # order by η̂: 0, 2, 3 (query 1 has η̂ < 0 and is never routed); cumulative true gain 0, 1, −1, 2
    assert np.allclose(ratios, [0, 0.25, 0.5, 0.75]) and np.allclose(total, [0, 1, -1, 2])
    te = total_efficiency(pred, true, ratios=[0.25, 0.375, 0.5, 1.0])
    assert np.allclose(te, [1, 0, -1, 2])  # interpolated between counts; flat beyond the positives
    gain = efficiency_gain(pred, true, ratios=[0.5, 1.0])
    assert np.allclose(gain, [-1 - 0.5 * 7, 2 - 7])  # random routing: ρ·Σ true = ρ·7
    # oracle at ρ = 0.5 routes queries 1 and 3: 8, i.e. 8 − 3.5 = 4.5 over random; normalised: −4.5/4.5 = −1
    assert np.allclose(normalized_gain(pred, true, ratios=[0.5]), [-1.0])


def test_oracle_is_one_and_random_is_zero():
    rng = np.random.default_rng(0)
    eta = rng.normal(size=2000)
    r = np.linspace(0.2, 0.8, 61)
    assert np.allclose(normalized_gain(eta, eta, r), 1.0)
    assert curve_mean(normalized_gain(eta, eta, r), r) == pytest.approx(1.0)
    rand = np.mean([curve_mean(normalized_gain(rng.uniform(0.1, 1, 2000), eta, r), r) for _ in range(20)])
    assert abs(rand) < 0.03
    assert curve_mean(np.full(61, 0.3), r) == pytest.approx(0.3)


def test_route_sends_the_budgeted_number_of_queries():
    g = np.array([0.9, -0.2, 0.1, 0.5, 0.3, -0.4, 0.7, 0.2])
    mask = route(g, usage_ratio=0.5)
    assert mask.sum() == 4 and set(np.flatnonzero(mask)) == {0, 3, 4, 6}
    assert route(g, usage_ratio=1.0).sum() == 6  # never a query with η̂ ≤ 0
    assert route(g).sum() == 6 and route(g, threshold=0.4).sum() == 3


# -- the world --------------------------------------------------------------------------------------------------------


def test_world_is_deterministic_and_exact():
    a, b = (
        synthetic_routing(4, 50, n_pool=400, n_val=30, n_test=60),
        synthetic_routing(4, 50, n_pool=400, n_val=30, n_test=60),
    )
    for k in a.__dataclass_fields__:
        assert np.array_equal(getattr(a, k), getattr(b, k))
    c = synthetic_routing(5, 50, n_pool=400, n_val=30, n_test=60)
    assert not np.array_equal(a.X_test, c.X_test)
    assert np.allclose(a.eta_test, synthetic_eta(a.X_test)) and np.allclose(a.delta_pb, synthetic_delta(a.X_pb))
    # paired across n_gold: the same pool, only the GS / PB split moves
    d = synthetic_routing(4, 100, n_pool=400, n_val=30, n_test=60)
    assert np.array_equal(a.X_test, d.X_test) and np.array_equal(
        np.vstack([a.X_gs, a.X_pb]), np.vstack([d.X_gs, d.X_pb])
    )
    none = synthetic_routing(4, 50, n_pool=400, n_val=30, n_test=60, bias="none")
    assert np.all(none.delta_pb == 0) and abs(np.mean(none.y_pb - none.y_pb_gold)) < 0.05
    assert np.mean(a.y_pb_gold - a.y_pb) == pytest.approx(np.mean(a.delta_pb), abs=0.04)
    g = digits_routing(0, 100)
    assert g.X_test.shape == (500, 20) and len(g.y_gs) == 100 and len(g.y_pb) == 1797 - 500 - 300 - 100


def test_bad_arguments_are_named():
    X, Y, T = _rct(50)
    with pytest.raises(ValueError, match="both gold-standard"):
        RLearner().fit(X, Y, np.ones(50))
    with pytest.raises(ValueError, match="crossfit"):
        CateConfig(crossfit=1)
    with pytest.raises(ValueError, match="learner"):
        MetaRouterConfig(learner="x")
    with pytest.raises(ValueError, match="usage_ratio"):
        route(np.ones(3), usage_ratio=1.5)
    with pytest.raises(ValueError, match="n_gold"):
        synthetic_routing(0, n_gold=0)
    with pytest.raises(ValueError, match="trim"):  # the released code's trimming with cross-fitted ê: nothing left
        DRLearner(CateConfig(nuisance=SMALL, cate=CATE, crossfit=2, propensity_clip=0.01, trim=0.2)).fit(
            X, Y, (np.arange(50) < 2).astype(float)
        )


def test_smoke_run(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("causal-router", scale="smoke", out=tmp_path, quiet=True)
    m = res.per_seed[0]
    for key in ("auc_r_n100", "auc_dr_n100", "auc_pooled_n100", "auc_allgold_n100", "auc_dr_shuffled", "adv_r_n50"):
        assert np.isfinite(m[key])
    assert m["auc_oracle"] == pytest.approx(1.0)
    assert {v["id"] for v in res.verdicts} >= {"beats-baselines", "control-no-bias", "control-shuffled-mechanism"}


def test_csv_loader_reads_the_released_layout(tmp_path):
    from iclr26.agents.causal_router.world import csv_routing

    rng = np.random.default_rng(0)
    path = tmp_path / "data.csv"
    lines = [",".join([f"embd.PC{i}" for i in range(1, 4)] + ["GL", "PL"])]
    lines += [",".join(f"{v:.6f}" for v in (*rng.normal(size=3), i / 100, i / 200)) for i in range(60)]
    path.write_text("\n".join(lines) + "\n")
    d = csv_routing(path, seed=1, n_gold=10, n_val=5, n_test=20)
    assert d.X_gs.shape == (10, 3) and len(d.y_pb) == 25 and len(d.eta_test) == 20
    assert np.allclose(d.y_pb_gold - d.y_pb, d.delta_pb) and np.allclose(d.y_pb_gold, 2 * d.y_pb)


# -- controls the meta-routers must face, the confounded world, defaults, bad input ----------------------------------


def test_t_learner_and_constant_shift_by_hand():
    from iclr26.agents.causal_router import ConstantShift, TLearner

    X, Y, T = _rct(800, effect=lambda X: 0.3 + 0.5 * X[:, 1])
    cfg = CateConfig(nuisance=SMALL)
    t = TLearner(cfg).fit(X, Y, T)
    Xq = np.random.default_rng(3).uniform(-1, 1, (40, 3))
    # δ̂ = μ̂₁ − μ̂₀ with μ̂ₜ the outcome forest on the rows with T = t (refitted here by hand)
    mu1 = SMALL.make().fit(X[T == 1], Y[T == 1]).predict(Xq)
    mu0 = SMALL.make().fit(X[T == 0], Y[T == 0]).predict(Xq)
    assert np.allclose(t.predict(Xq), np.clip(mu1 - mu0, -1.2, 1.2))
    s = ConstantShift(cfg).fit(X, Y, T)
    mu0_gs = SMALL.make().fit(X[T == 0], Y[T == 0]).predict(X[T == 1])
    assert s.predict(Xq) == pytest.approx(np.full(40, np.mean(Y[T == 1] - mu0_gs)))
    assert abs(s.shift_ - 0.3) < 0.08  # the average effect (E[0.3 + 0.5 x₂] = 0.3)
    assert np.corrcoef(t.predict(Xq), 0.5 * Xq[:, 1])[0, 1] > 0.5  # the T-learner sees the heterogeneity
    with pytest.raises(ValueError, match="no final"):
        s.refit_final(SMALL.make())
    r = MetaRouter(MetaRouterConfig("shift", cfg, SMALL)).fit(X[T == 1], Y[T == 1], X[T == 0], Y[T == 0])
    assert np.allclose(r.corrected_pb_, Y[T == 0] + s.shift_)


def test_confounded_assignment_shifts_the_gold_queries_and_keeps_the_pool():
    rnd = synthetic_routing(2, 100, n_pool=800, n_val=0, n_test=100)
    conf = synthetic_routing(2, 100, n_pool=800, n_val=0, n_test=100, confounding=1.0)
    assert len(conf.y_gs) == 100 and len(conf.y_pb) == 700
    assert np.array_equal(rnd.X_test, conf.X_test)  # the same queries, only who gets a gold label moves
    pool = lambda d: np.sort(np.vstack([d.X_gs, d.X_pb]), axis=0)  # noqa: E731
    assert np.allclose(pool(rnd), pool(conf))
    assert conf.X_gs[:, 0].mean() > 0.6 > abs(rnd.X_gs[:, 0].mean())  # GS labels go to large x₁
    # the naive mean difference is confounded there; the regression-adjusted shift is not (δ's mean at PB queries)
    naive = conf.y_gs.mean() - conf.y_pb.mean()
    assert abs(naive - conf.delta_pb.mean()) > 0.05
    with pytest.raises(ValueError, match="confounding"):
        synthetic_routing(0, 50, n_pool=300, confounding=-1.0)


def test_library_default_cate_forest_is_regularised_and_released_code_keeps_leaf_two():
    from iclr26.agents.causal_router import CATE_FOREST, CATE_FOREST_CODE

    assert CateConfig().cate.min_samples_leaf == CATE_FOREST.min_samples_leaf == 50
    assert CateConfig.released_code("r").cate == CATE_FOREST_CODE and CATE_FOREST_CODE.min_samples_leaf == 2


def test_non_finite_inputs_are_named():
    X, Y, T = _rct(60)
    Y[3] = np.nan
    with pytest.raises(ValueError, match="Y holds NaN or inf"):
        RLearner().fit(X, Y, T)
    Xb = X.copy()
    Xb[0, 0] = np.inf
    with pytest.raises(ValueError, match="X holds NaN or inf"):
        SourceRouter(SourceRouterConfig("golden", SMALL)).fit(Xb, np.zeros(60))
    with pytest.raises(ValueError, match="y holds NaN"):
        MetaRouter().fit(X[:10], np.full(10, np.nan), X[10:], np.zeros(50))
    with pytest.raises(ValueError, match="gain_pred holds NaN"):
        route(np.array([0.1, np.nan]), usage_ratio=0.5)
    with pytest.raises(ValueError, match="finite"):
        normalized_gain(np.array([0.1, np.nan]), np.array([0.2, 0.1]))
    with pytest.raises(ValueError, match="learner"):
        MetaRouterConfig(learner="s")
