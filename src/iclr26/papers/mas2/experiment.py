"""MAS² reproduction: CTO-trained meta-agents vs single-backbone, self-consistency, fixed-template, generate-once,
unscaled-DPO and random baselines in the symbolic agent-system world (protocol in the card's docstring)."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import lru_cache

import numpy as np
from threadpoolctl import threadpool_limits

from iclr26.agents.mas2.cto import CTOConfig, build_dataset
from iclr26.agents.mas2.dpo import DPOConfig
from iclr26.agents.mas2.policies import MetaAgents
from iclr26.agents.mas2.system import (
    MAS2,
    FixedMAS,
    MAS2Config,
    MixedMAS,
    RandomMAS,
    backbone_prob,
    backbone_share,
    evaluate,
    retry_rule,
    train_cto,
)
from iclr26.agents.mas2.world import (
    DIFFICULTIES,
    POOL,
    TYPES,
    UNSEEN_USEFUL,
    UNSEEN_USELESS,
    AgentSystemsWorld,
    Task,
    WorldConfig,
    sample_tasks,
)
from iclr26.core.threads import torch_threads
from iclr26.core.tuning import tune_on_grid

from . import Cfg

_CLASSES = [Task(k, d) for k in range(len(TYPES)) for d in DIFFICULTIES]
_FAMILIES = {
    "single": lambda s: s.template == "single",
    "sc": lambda s: s.template in ("sc3", "sc5"),
    "fixed": lambda s: True,
}


def _world(cfg: Cfg) -> AgentSystemsWorld:
    return AgentSystemsWorld(POOL, WorldConfig(tool_fail=cfg.tool_fail))


def _tasks(cfg: Cfg, seed: int):
    return (
        sample_tasks(cfg.n_train, (seed, 0)),
        sample_tasks(cfg.n_val, (seed, 1)),
        sample_tasks(cfg.n_test, (seed, 2)),
    )


def _mas2_cfg(cfg: Cfg, beta: float, value_scaled: bool) -> MAS2Config:
    return MAS2Config(
        cto=CTOConfig(K=cfg.K, N=cfg.N, B=cfg.B, rollouts=cfg.rollouts),
        dpo=DPOConfig(beta=beta, lr=cfg.lr, value_scaled=value_scaled),
        max_epochs=cfg.max_epochs,
        patience=cfg.patience,
    )


@lru_cache(maxsize=4)
def _trees(cfg: Cfg, seed: int):
    """Training and validation preference pairs from CTO trees of the initial (uniform) meta-agents."""
    world = _world(cfg)
    train, val, _ = _tasks(cfg, seed)
    c, init = _mas2_cfg(cfg, 0.1, True).cto, MetaAgents.init(seed, 128)
    prefs, stats = build_dataset(train, world, init, c, seed)
    return prefs, build_dataset(val, world, init, c, seed + 10_007)[0], stats


@lru_cache(maxsize=4)
def _tune_beta(cfg: Cfg, value_scaled: bool) -> tuple[float, dict]:
    """β by validation utility on the development seed, by the project's one rule (`tune_on_grid`): the grid grows
    by its own ratio past any edge pick (ties go to the value evaluated first, so a plateau stops on an interior
    value after one extension)."""
    world, s = _world(cfg), cfg.tune_seed
    train, val, _ = _tasks(cfg, s)
    prefs, _, _ = _trees(cfg, s)

    def evaluate(beta: float):
        return train_cto(train, val, world, _mas2_cfg(cfg, beta, value_scaled), s, prefs=prefs)[1]["val_utility"], None

    res = tune_on_grid(evaluate, cfg.beta_grid, max_extensions=3 if len(cfg.beta_grid) > 1 else 0)
    return res.best, res.scores


@lru_cache(maxsize=4)
def _spec_table(cfg: Cfg):
    """Exact success and expected cost of every fixed spec on every task class: [n_specs, 15] each."""
    world = _world(cfg)
    specs = world.all_specs()
    S = np.array([[world.exact_success_cost(t, s)[0] for t in _CLASSES] for s in specs])
    C = np.array([[world.exact_success_cost(t, s)[1] for t in _CLASSES] for s in specs])
    return specs, S, C


def _class_weights(tasks) -> np.ndarray:
    w = np.zeros(len(_CLASSES))
    for t in tasks:
        w[_CLASSES.index(t)] += 1
    return w / w.sum()


def _best(S: np.ndarray, C: np.ndarray, idx: list[int]) -> int:
    """Best validation success (ties within 1e-9 → cheaper) among `idx`."""
    return max(idx, key=lambda i: (round(S[i], 9), -C[i]))


def _frontier(S: np.ndarray, C: np.ndarray, idx: list[int], cap: float) -> tuple[int, int, float]:
    """The family's best success at validation cost exactly `cap`: a member, or a mixture (a, b, λ) of a member
    cheaper and one dearer than `cap` (the upper convex hull of the family's (cost, success) points). When every
    member costs more than `cap`, the cheapest one (λ = 1)."""
    lo = [i for i in idx if C[i] <= cap]
    if not lo:
        i = min(idx, key=lambda i: (C[i], -S[i]))
        return i, i, 1.0
    best = (S[_best(S, C, lo)], _best(S, C, lo), _best(S, C, lo), 1.0)
    for a in lo:
        for b in (i for i in idx if C[i] > cap and S[i] > S[a]):
            lam = (C[b] - cap) / (C[b] - C[a])  # λ·C_a + (1 − λ)·C_b = cap
            val = lam * S[a] + (1 - lam) * S[b]
            if val > best[0] + 1e-12:
                best = (val, a, b, lam)
    return best[1], best[2], best[3]


def _put(out: dict, name: str, r: dict) -> None:
    out[f"success_{name}"], out[f"cost_{name}"], out[f"utility_{name}"] = r["success"], r["cost"], r["utility"]


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads(1), threadpool_limits(limits=1):
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    world = _world(cfg)
    train, val, test = _tasks(cfg, seed)
    beta_s, scores_s = _tune_beta(cfg, True)
    beta_u, scores_u = _tune_beta(cfg, False)
    ctx.log(f"β (dev seed {cfg.tune_seed}): value-scaled {beta_s} {scores_s}; unscaled {beta_u} {scores_u}")
    t0 = time.perf_counter()
    prefs, val_prefs, stats = _trees(cfg, seed)
    agents, info = train_cto(train, val, world, _mas2_cfg(cfg, beta_s, True), seed, prefs, val_prefs)
    train_seconds = time.perf_counter() - t0
    # budget parity: plain DPO trains for exactly the epochs the value-scaled arm ran (no early stop of its own), and
    # keeps its best-validation-utility checkpoint among them, as the value-scaled arm does
    epochs = len(info["curve"])
    cfg_u = replace(_mas2_cfg(cfg, beta_u, False), max_epochs=max(epochs, 1), patience=max(epochs, 1) + 1)
    agents_u, info_u = train_cto(train, val, world, cfg_u, seed, prefs, val_prefs)
    ctx.log(f"CTO trees: {stats}; epochs kept {info['best_epoch']} (scaled), {info_u['best_epoch']} (unscaled)")

    out: dict[str, float] = {"beta_mas2": beta_s, "beta_unscaled": beta_u, "epochs_mas2": info["best_epoch"]}
    out["pairs"], out["train_seconds"] = len(prefs), train_seconds
    out["epochs_run_mas2"], out["epochs_run_unscaled"] = len(info["curve"]), len(info_u["curve"])
    out["epochs_ratio"] = out["epochs_run_mas2"] / out["epochs_run_unscaled"]
    mas2 = MAS2(agents, world)
    arms = {
        "mas2": mas2,
        "once": MAS2(agents, world, rectify=False),
        "unscaled": MAS2(agents_u, world),
        "random": RandomMAS(world, seed),
    }
    for name, system in arms.items():
        _put(out, name, evaluate(system, test, seed))

    # MAS²'s Generator and Implementer with the one-line retry rule instead of the trained Rectifier (control)
    _put(out, "mas2_retry", evaluate(MAS2(agents, world, rule=retry_rule), test, seed))

    # Fixed baselines, each given the retry rule: chosen on the validation tasks by simulation (same run seeds as
    # MAS²'s validation runs), scored by simulation on the test tasks.
    specs = world.all_specs()
    val_runs = [evaluate(FixedMAS(world, s, retry_rule), val, seed) for s in specs]
    Sv, Cv = np.array([r["success"] for r in val_runs]), np.array([r["cost"] for r in val_runs])
    cap = evaluate(mas2, val, seed)["cost"]
    out["cost_mas2_val"] = cap
    picks = {}
    for fam, member in _FAMILIES.items():
        idx = [i for i, s in enumerate(specs) if member(s)]
        i = _best(Sv, Cv, idx)
        picks[f"{fam}_best"] = str(specs[i])
        _put(out, f"{fam}_best", evaluate(FixedMAS(world, specs[i], retry_rule), test, seed))
        a, b, lam = _frontier(Sv, Cv, idx, cap)
        picks[f"{fam}_frontier"] = f"{lam:.3f}·{specs[a]} + {1 - lam:.3f}·{specs[b]}"
        _put(out, f"{fam}_frontier", evaluate(MixedMAS(world, specs[a], specs[b], lam, retry_rule), test, seed))
        out[f"cost_ratio_{fam}_frontier"] = out[f"cost_{fam}_frontier"] / out["cost_mas2"]
    # per-task oracles from the exact (no-rectifier) values: utility-optimal and success-optimal specs per task class
    specs0, S, C = _spec_table(cfg)
    ref = np.array([world.reference_cost(t) for t in _CLASSES])
    oracle = {t: specs0[int(np.argmax(S[:, j] * ref[j] / C[:, j]))] for j, t in enumerate(_CLASSES)}
    _put(out, "oracle", evaluate(FixedMAS(world, oracle), test, seed))
    _put(out, "oracle_retry", evaluate(FixedMAS(world, oracle, retry_rule), test, seed))
    ceiling = {t: specs0[int(np.argmax(S[:, j] - 1e-9 * C[:, j]))] for j, t in enumerate(_CLASSES)}
    _put(out, "ceiling", evaluate(FixedMAS(world, ceiling, retry_rule), test, seed))
    # the same per-task oracle with the unseen useful backbone in the pool (headroom of the generalisation claim)
    plus_world = world.with_pool(POOL + (UNSEEN_USEFUL,))
    plus_specs = plus_world.all_specs()
    oracle_plus = {}
    for t in _CLASSES:
        sc = [plus_world.exact_success_cost(t, sp) for sp in plus_specs]
        oracle_plus[t] = plus_specs[int(np.argmax([s_ * world.reference_cost(t) / c_ for s_, c_ in sc]))]
    out["utility_oracle_plus_useful"] = evaluate(FixedMAS(plus_world, oracle_plus), test, seed)["utility"]

    # Rectifier control: the same agents without injected failures.
    world0 = world.with_config(tool_fail=0.0)
    out["success_mas2_nofail"] = evaluate(MAS2(agents, world0), test, seed)["success"]
    out["success_once_nofail"] = evaluate(MAS2(agents, world0, rectify=False), test, seed)["success"]
    out["success_mas2_retry_nofail"] = evaluate(MAS2(agents, world0, rule=retry_rule), test, seed)["success"]
    out["rect_gain_fail"] = out["success_mas2"] - out["success_once"]
    out["rect_gain_nofail"] = out["success_mas2_nofail"] - out["success_once_nofail"]

    # Unseen backbones added at test time, no retraining.
    plus = MAS2(agents, world.with_pool(POOL + (UNSEEN_USEFUL,)))
    r = evaluate(plus, test, seed)
    out["utility_mas2_plus_useful"], out["success_mas2_plus_useful"] = r["utility"], r["success"]
    out["cost_mas2_plus_useful"] = r["cost"]
    out["share_useful_code"] = backbone_share(plus, test, UNSEEN_USEFUL.name, kind=TYPES.index("code"))
    out["share_useful"] = backbone_share(plus, test, UNSEEN_USEFUL.name)
    minus = MAS2(agents, world.with_pool(POOL + (UNSEEN_USELESS,)))
    out["utility_mas2_plus_useless"] = evaluate(minus, test, seed)["utility"]
    out["share_useless"] = backbone_share(minus, test, UNSEEN_USELESS.name)
    out["prob_useless"] = backbone_prob(minus, test, UNSEEN_USELESS.name)
    out["prob_useful_code"] = backbone_prob(plus, test, UNSEEN_USEFUL.name, kind=TYPES.index("code"))

    ctx.log(
        "success/cost: "
        + ", ".join(
            f"{a} {out[f'success_{a}']:.3f}/{out[f'cost_{a}']:.2f}"
            for a in ("mas2", "mas2_retry", "once", "unscaled", "random", "oracle_retry")
        )
        + " | "
        + ", ".join(f"{k} {out[f'success_{k}']:.3f}/{out[f'cost_{k}']:.2f}" for k in picks)
    )
    ctx.log(f"picks: {picks}; plans: " + "; ".join(f"{t}: {mas2.plan(t)}" for t in _CLASSES))
    wt = _class_weights(test)
    ctx.save_artifact(
        f"seed-{seed}",
        {
            "arms": {
                k: [out[f"cost_{k}"], out[f"success_{k}"]]
                for k in ("mas2", "mas2_retry", "once", "unscaled", "random", "oracle", "oracle_retry", *picks)
            },
            "cloud": np.stack([C @ wt, S @ wt], 1).round(5).tolist(),
            "picks": picks,
            "curve_scaled": info["curve"],
            "curve_unscaled": info_u["curve"],
            "plans": {f"{TYPES[t.kind]}-{t.difficulty}": str(mas2.plan(t)) for t in _CLASSES},
        },
    )
    return out


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    arts = [json.loads(p.read_text()) for p in sorted((run_dir / "artifacts").glob("seed-*.json"))]
    if not arts:
        return []
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    cloud = np.array(arts[0]["cloud"])
    ax.scatter(cloud[:, 0], cloud[:, 1], s=6, color="0.75", label="every fixed spec (exact)")
    for i, name in enumerate(arts[0]["arms"]):
        pts = np.array([a["arms"][name] for a in arts])
        ax.scatter(pts[:, 0], pts[:, 1], s=18, color=f"C{i % 10}", marker="o" if i < 10 else "x", label=name)
    ax.set(xscale="log", xlabel="mean cost per task", ylabel="success rate", title="MAS² vs baselines (each seed)")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return [("pareto", fig)]
