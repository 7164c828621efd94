"""The Meta-Router reproduction: every arm on every setting, each with the same n_G gold-standard labels."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from iclr26.agents.causal_router import (
    CATE_FOREST,
    CateConfig,
    ForestConfig,
    MetaRouter,
    MetaRouterConfig,
    SourceRouter,
    SourceRouterConfig,
    curve_mean,
    normalized_gain,
)
from iclr26.agents.causal_router.learners import folds, with_leaf
from iclr26.agents.causal_router.world import RoutingData, digits_routing, synthetic_routing
from iclr26.core.tuning import tune_on_grid

from . import BASELINES, Cfg

META = ("r", "dr", "t", "shift")  # the paper's two meta-routers and the two corrections they must also beat


def _forests(cfg: Cfg, seed: int) -> tuple[ForestConfig, ForestConfig]:
    final = ForestConfig(n_estimators=cfg.n_trees, random_state=seed)  # η̂ and nuisance forests (code values)
    cate = replace(CATE_FOREST, n_estimators=cfg.n_trees_cate, random_state=seed)  # the library default δ̂ forest
    return final, cate


def _score(router, data: RoutingData, out: dict, name: str, tag: str, gold: int) -> None:
    pred = router.predict_gain(data.X_test)
    out[f"auc_{name}_{tag}"] = curve_mean(normalized_gain(pred, data.eta_test))
    out[f"rmse_{name}_{tag}"] = float(np.sqrt(np.mean((pred - data.eta_test) ** 2)))
    out[f"gold_{name}_{tag}"] = float(gold)  # gold-standard labels the arm used, for training and for tuning


def _cv_source(source: str, data: RoutingData, cfg: Cfg, final: ForestConfig, seed: int):
    """A single-forest baseline whose η̂ leaf is chosen by K-fold cross-validation on the n_G gold labels only (the
    project's grid rule, `tune_on_grid`); then refitted on everything. Returns (router, leaf)."""
    X_gs, y_gs, X_pb, y_pb = data.X_gs, data.y_gs, data.X_pb, data.y_pb
    splits = folds(len(y_gs), cfg.cv_folds, seed)

    def fit(leaf, Xg, yg):
        return SourceRouter(SourceRouterConfig(source, with_leaf(final, leaf))).fit(Xg, yg, X_pb, y_pb)

    def score(leaf):
        leaf = int(leaf)
        if source == "preference":  # trained on PB labels only: every gold label is held out already
            return -float(np.mean((fit(leaf, X_gs, y_gs).predict_gain(X_gs) - y_gs) ** 2)), None
        err = sum(float(np.sum((fit(leaf, X_gs[tr], y_gs[tr]).predict_gain(X_gs[te]) - y_gs[te]) ** 2))
                  for tr, te in splits)  # fmt: skip
        return -err / len(y_gs), None

    res = tune_on_grid(score, cfg.leaf_grid, max_extensions=3, lower=1, integer=True)
    return fit(int(res.best), X_gs, y_gs), int(res.best)


def _meta(learner: str, data: RoutingData, cfg: Cfg, final, cate, seed: int, released: bool = False) -> MetaRouter:
    if released:  # the released script's constants: in-sample nuisances, its clips and trims, δ̂ leaf 2
        cate_cfg = replace(CateConfig.released_code(learner), nuisance=final)
        cate_cfg = replace(cate_cfg, cate=replace(cate_cfg.cate, n_estimators=cfg.n_trees_cate, random_state=seed))
    else:
        cate_cfg = CateConfig(nuisance=final, cate=cate, crossfit=cfg.crossfit, propensity_clip=cfg.propensity_clip)
    mcfg = MetaRouterConfig(learner, cate_cfg, with_leaf(final, cfg.final_leaf), seed=seed)
    return MetaRouter(mcfg).fit(data.X_gs, data.y_gs, data.X_pb, data.y_pb)


def _shuffled(data: RoutingData, seed: int) -> RoutingData:
    """Control: the mechanism labels T permuted among the training queries (each label stays with its query)."""
    X, y = np.vstack([data.X_gs, data.X_pb]), np.concatenate([data.y_gs, data.y_pb])
    perm = np.random.default_rng([seed, 7]).permutation(len(y))
    g, p = perm[: len(data.y_gs)], perm[len(data.y_gs) :]
    return replace(data, X_gs=X[g], y_gs=y[g], X_pb=X[p], y_pb=y[p])


def _setting(data: RoutingData, cfg: Cfg, seed: int, tag: str, ctx, arms, released=False):
    out: dict[str, float] = {}
    final, cate = _forests(cfg, seed)
    n_gold = len(data.y_gs)
    if tag == "shuffled":
        data = _shuffled(data, seed)
    for name, source in (("golden", "golden"), ("pref", "preference"), ("pooled", "pooled")):
        if name in arms:
            r, leaf = _cv_source(source, data, cfg, final, seed)
            _score(r, data, out, name, tag, n_gold)
            out[f"leaf_{name}_{tag}"] = float(leaf)
    if "allgold" in arms:  # the ceiling: every training query with its GS label (more gold labels by design)
        X_all, y_all = np.vstack([data.X_gs, data.X_pb]), np.concatenate([data.y_gs, data.y_pb_gold])
        r = SourceRouter(SourceRouterConfig("golden", with_leaf(final, cfg.final_leaf))).fit(X_all, y_all)
        _score(r, data, out, "allgold", tag, len(y_all))
    for name in [a for a in META if a in arms] + (["rcode", "drcode"] if released else []):
        learner = {"rcode": "r", "drcode": "dr"}.get(name, name)
        r = _meta(learner, data, cfg, final, cate, seed, released=name.endswith("code"))
        _score(r, data, out, name, tag, n_gold)
        if tag != "shuffled":
            out[f"bias_rmse_{name}_{tag}"] = float(np.sqrt(np.mean((r.bias_pb_ - data.delta_pb) ** 2)))
    if tag != "shuffled":
        rng = np.random.default_rng([seed, 3])
        out[f"auc_random_{tag}"] = curve_mean(normalized_gain(rng.uniform(0.1, 1.0, len(data.eta_test)), data.eta_test))
        base = [b for b in BASELINES if b in arms]
        for m in ("r", "dr"):
            out[f"adv_{m}_{tag}"] = out[f"auc_{m}_{tag}"] - max(out[f"auc_{b}_{tag}"] for b in base)
            out[f"vs_pooled_{m}_{tag}"] = out[f"auc_{m}_{tag}"] - out[f"auc_pooled_{tag}"]
    budgets = [out[f"gold_{a}_{tag}"] for a in (*BASELINES, *META) if f"gold_{a}_{tag}" in out]
    out[f"gold_parity_{tag}"] = max(budgets) / min(budgets) - 1.0  # 0: every compared arm had the same gold labels
    keys = [k for k in (*BASELINES, *META, "allgold") if f"auc_{k}_{tag}" in out]
    ctx.log(f"{tag}: " + " ".join(f"{k} {out[f'auc_{k}_{tag}']:.3f}" for k in keys))
    return out


ALL = ("golden", "pref", "pooled", "allgold", *META)


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    out: dict[str, float] = {}

    def syn(n=100, bias="heterogeneous", confounding=0.0):
        return synthetic_routing(seed, n, cfg.n_pool, 0, cfg.n_test, cfg.d, bias, confounding=confounding)

    jobs = [(f"n{n}", lambda n=n: syn(n), ALL) for n in cfg.n_golds]
    if cfg.digits:
        jobs.append(("digits", lambda: digits_routing(seed, 100, 0, cfg.n_test), ALL))
    if cfg.controls:
        jobs.append(("nobias", lambda: syn(bias="none"), ("golden", "pref", "pooled", "r", "dr")))
        jobs.append(("shuffled", syn, ("r", "dr")))
    if cfg.confounding:
        jobs.append(("confounded", lambda: syn(confounding=cfg.confounding), ALL))
    with threadpool_limits(limits=1):
        for tag, make, arms in tqdm(jobs, desc=f"causal-router seed {seed}", leave=False, disable=ctx.quiet):
            released = cfg.released_code_arms and tag == "n100"
            out.update(_setting(make(), cfg, seed, tag, ctx, arms, released=released))
    data = syn()
    out["auc_oracle"] = curve_mean(normalized_gain(data.eta_test, data.eta_test))
    return out


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    figs = []
    arms = ("golden", "pref", "pooled", "shift", "t", "r", "dr", "allgold")
    labels = ("Golden-only", "Preference-only", "Pooled", "Constant shift", "T-learner", "R-learner", "DR-learner",
              "All-golden")  # fmt: skip
    tags = (
        [f"n{n}" for n in cfg.n_golds]
        + (["digits"] if cfg.digits else [])
        + (["confounded"] if cfg.confounding else [])
    )
    fig, ax = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / len(arms)
    for i, (arm, lab) in enumerate(zip(arms, labels)):
        vals = [[m[f"auc_{arm}_{t}"] for m in per_seed.values() if f"auc_{arm}_{t}" in m] for t in tags]
        ax.bar(np.arange(len(tags)) + i * width, [np.mean(v) if v else np.nan for v in vals], width,
               yerr=[np.std(v) if v else 0 for v in vals], label=lab)  # fmt: skip
    ax.set_xticks(np.arange(len(tags)) + 0.4 - width / 2, tags)
    ax.set_ylabel("normalised efficiency gain (mean ρ ∈ [0.2, 0.8])")
    ax.legend(fontsize=7, ncol=4)
    ax.set_title("Meta-Router: routing quality by arm and setting (same gold labels for every arm but All-golden)")
    fig.tight_layout()
    figs.append(("efficiency_gain", fig))
    return figs
