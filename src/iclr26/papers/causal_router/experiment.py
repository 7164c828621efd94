"""The Meta-Router reproduction: every arm on every setting, tuned by one rule on a validation split."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from iclr26.agents.causal_router import (
    CateConfig,
    ForestConfig,
    MetaRouter,
    MetaRouterConfig,
    SourceRouter,
    SourceRouterConfig,
    curve_mean,
    normalized_gain,
)
from iclr26.agents.causal_router.learners import with_leaf
from iclr26.agents.causal_router.world import RoutingData, digits_routing, synthetic_routing
from iclr26.core.tuning import tune_on_grid

from . import Cfg


def _forests(cfg: Cfg, seed: int) -> tuple[ForestConfig, ForestConfig]:
    base = ForestConfig(n_estimators=cfg.n_trees, random_state=seed)
    cate = ForestConfig(n_estimators=cfg.n_trees_cate, max_depth=30, min_samples_split=5, min_samples_leaf=2)
    return base, replace(cate, random_state=seed)


def _val_mse(router, data: RoutingData) -> float:
    return float(np.mean((router.predict_gain(data.X_val) - data.y_val) ** 2))


def _score(router, data: RoutingData, leaf, out: dict, name: str, tag: str) -> None:
    pred = router.predict_gain(data.X_test)
    out[f"auc_{name}_{tag}"] = curve_mean(normalized_gain(pred, data.eta_test))
    out[f"rmse_{name}_{tag}"] = float(np.sqrt(np.mean((pred - data.eta_test) ** 2)))
    out[f"leaf_{name}_{tag}"] = float(leaf)


def _tune_leaf(fit, grid):
    """The project's grid rule (`tune_on_grid`) on a leaf size: the grid grows past an edge pick (never below 1)."""
    res = tune_on_grid(lambda leaf: fit(int(leaf)), grid, max_extensions=3, lower=1, integer=True)
    return res.payload, int(res.best)


def _tuned_source(source, X_gs, y_gs, X_pb, y_pb, data, cfg, final):
    """The tuning rule for a single-forest arm: min_samples_leaf by validation MSE against GS labels."""

    def fit(leaf):
        r = SourceRouter(SourceRouterConfig(source, with_leaf(final, leaf))).fit(X_gs, y_gs, X_pb, y_pb)
        return -_val_mse(r, data), r

    return _tune_leaf(fit, cfg.leaf_grid)


def _tuned_meta(learner, cate_cfg, X_gs, y_gs, X_pb, y_pb, data, cfg, final, cate_forest, seed):
    """The same rule for a meta-router, nested: for each δ̂ leaf the best η̂ leaf, the δ̂ leaf by that best score.
    Nuisances are fitted once; both grids grow past edge picks, so the costly small δ̂ leaves run only when needed."""
    mcfg = MetaRouterConfig(
        learner,
        replace(cate_cfg, cate=with_leaf(cate_forest, int(cfg.cate_leaf_grid[0]))),
        with_leaf(final, int(cfg.leaf_grid[0])),
        seed=seed,
    )
    base = MetaRouter(mcfg).fit(X_gs, y_gs, X_pb, y_pb)

    def fit_cate(cl):
        with_cate = base if cl == cfg.cate_leaf_grid[0] else base.refit(cate=with_leaf(cate_forest, cl))

        def fit_final(leaf):
            r = with_cate if leaf == cfg.leaf_grid[0] else with_cate.refit(final=with_leaf(final, leaf))
            return -_val_mse(r, data), r

        r, leaf = _tune_leaf(fit_final, cfg.leaf_grid)
        return -_val_mse(r, data), (r, leaf)

    (r, leaf), cl = _tune_leaf(fit_cate, cfg.cate_leaf_grid)
    return r, leaf, cl


def _setting(data: RoutingData, cfg: Cfg, seed: int, tag: str, ctx, shuffle=False, released=False, allgold=True):
    out: dict[str, float] = {}
    final, cate_forest = _forests(cfg, seed)
    X_gs, y_gs, X_pb, y_pb = data.X_gs, data.y_gs, data.X_pb, data.y_pb
    if shuffle:  # control: the mechanism labels T are permuted among the training queries (labels stay put)
        X, y = np.vstack([X_gs, X_pb]), np.concatenate([y_gs, y_pb])
        perm = np.random.default_rng([seed, 7]).permutation(len(y))
        g, p = perm[: len(y_gs)], perm[len(y_gs) :]
        X_gs, y_gs, X_pb, y_pb = X[g], y[g], X[p], y[p]
    else:
        for name, source in (("golden", "golden"), ("pref", "preference"), ("pooled", "pooled")):
            r, leaf = _tuned_source(source, X_gs, y_gs, X_pb, y_pb, data, cfg, final)
            _score(r, data, leaf, out, name, tag)
        if allgold:
            X_all, y_all = np.vstack([X_gs, X_pb]), np.concatenate([y_gs, data.y_pb_gold])
            r, leaf = _tuned_source("golden", X_all, y_all, None, None, data, cfg, final)
            _score(r, data, leaf, out, "allgold", tag)
        rng = np.random.default_rng([seed, 3])
        out[f"auc_random_{tag}"] = curve_mean(normalized_gain(rng.uniform(0.1, 1.0, len(data.eta_test)), data.eta_test))
    variants = [("r", "r", CateConfig(crossfit=cfg.crossfit, propensity_clip=cfg.propensity_clip))]
    variants.append(("dr", "dr", CateConfig(crossfit=cfg.crossfit, propensity_clip=cfg.propensity_clip)))
    if released:
        variants += [("rcode", "r", CateConfig.released_code("r")), ("drcode", "dr", CateConfig.released_code("dr"))]
    for name, learner, cate_cfg in variants:
        cate_cfg = replace(cate_cfg, nuisance=final)
        r, leaf, cl = _tuned_meta(learner, cate_cfg, X_gs, y_gs, X_pb, y_pb, data, cfg, final, cate_forest, seed)
        _score(r, data, leaf, out, name, tag)
        if not shuffle:
            out[f"bias_rmse_{name}_{tag}"] = float(np.sqrt(np.mean((r.bias_pb_ - data.delta_pb) ** 2)))
        out[f"cate_leaf_{name}_{tag}"] = float(cl)
        if name in ("r", "dr") and not shuffle:
            best = max(out[f"auc_{b}_{tag}"] for b in ("golden", "pref", "pooled"))
            out[f"adv_{name}_{tag}"] = out[f"auc_{name}_{tag}"] - best
            out[f"vs_pooled_{name}_{tag}"] = out[f"auc_{name}_{tag}"] - out[f"auc_pooled_{tag}"]
    keys = [k for k in ("golden", "pref", "pooled", "r", "dr", "allgold") if f"auc_{k}_{tag}" in out]
    ctx.log(f"{tag}: " + " ".join(f"{k} {out[f'auc_{k}_{tag}']:.3f}" for k in keys))
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    out: dict[str, float] = {}
    jobs = [
        (f"n{n}", lambda n=n: synthetic_routing(seed, n, cfg.n_pool, cfg.n_val, cfg.n_test, cfg.d), {})
        for n in cfg.n_golds
    ]
    if cfg.digits:
        jobs.append(("digits", lambda: digits_routing(seed, 100, cfg.n_val, cfg.n_test), {}))
    if cfg.controls:

        def syn100(bias="heterogeneous"):
            return synthetic_routing(seed, 100, cfg.n_pool, cfg.n_val, cfg.n_test, cfg.d, bias)

        jobs.append(("nobias", lambda: syn100("none"), {"allgold": False}))
        jobs.append(("shuffled", syn100, {"shuffle": True}))
    with threadpool_limits(limits=1):
        for tag, make, kw in tqdm(jobs, desc=f"causal-router seed {seed}", leave=False, disable=ctx.quiet):
            released = cfg.released_code_arms and tag == "n100"
            out.update(_setting(make(), cfg, seed, tag, ctx, released=released, **kw))
    data = synthetic_routing(seed, 100, cfg.n_pool, cfg.n_val, cfg.n_test, cfg.d)
    out["auc_oracle"] = curve_mean(normalized_gain(data.eta_test, data.eta_test))
    return out


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    figs = []
    arms = ("golden", "pref", "pooled", "r", "dr", "allgold")
    labels = ("Golden-only", "Preference-only", "Pooled", "R-learner", "DR-learner", "All-golden")
    tags = [f"n{n}" for n in cfg.n_golds] + (["digits"] if cfg.digits else [])
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / len(arms)
    for i, (arm, lab) in enumerate(zip(arms, labels)):
        vals = [[m[f"auc_{arm}_{t}"] for m in per_seed.values() if f"auc_{arm}_{t}" in m] for t in tags]
        ax.bar(
            np.arange(len(tags)) + i * width,
            [np.mean(v) for v in vals],
            width,
            yerr=[np.std(v) for v in vals],
            label=lab,
        )
    ax.set_xticks(np.arange(len(tags)) + 0.4 - width / 2, tags)
    ax.set_ylabel("normalised efficiency gain (mean ρ ∈ [0.2, 0.8])")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("Meta-Router: routing quality by arm and setting")
    fig.tight_layout()
    figs.append(("efficiency_gain", fig))
    return figs
