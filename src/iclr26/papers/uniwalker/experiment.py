"""The Uni-Walker reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import dataclasses
import time

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from iclr26.core.threads import run_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.embodied.uniwalker import (
    TARGETS,
    HydraLoRA,
    IndependentLoRA,
    NavPolicy,
    OLoRA,
    PeftLoRA,
    PolicyConfig,
    SDLoRA,
    TrainConfig,
    UniWalker,
    UniWalkerConfig,
    forgetting,
    rollout,
    to_batch,
    train_task,
)
from iclr26.embodied.uniwalker.lifelong import fisher_batches, task_features, val_nll
from iclr26.embodied.uniwalker.methods import Learner
from iclr26.embodied.uniwalker.world import N_THOUGHT, PALETTE, STYLES, WORDS, LifelongNavEnv, demos, make_scene

from . import ABLATIONS, Cfg


def _concat(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _task(scene, style, seed0: int, cfg: Cfg) -> dict:
    return {
        "scene": scene,
        "style": style,
        "train": demos(scene, style, range(seed0, seed0 + cfg.n_train)),
        "val": demos(scene, style, range(seed0 + 10_000, seed0 + 10_000 + cfg.n_val)),
        "test": list(range(seed0 + 20_000, seed0 + 20_000 + cfg.n_test)),
    }


def _pretrain(tasks: list[dict], cfg: Cfg, rng) -> NavPolicy:
    """W0: every parameter trained on the pre-training scenes (all styles), with and without the thought."""
    model = NavPolicy(PolicyConfig(n_words=len(WORDS), n_thought=N_THOUGHT, hidden=cfg.hidden))
    train, val = _concat([t["train"] for t in tasks]), _concat([t["val"] for t in tasks])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    best, state, bad = np.inf, None, 0
    for step in range(1, cfg.pretrain_steps + 1):
        b = to_batch(train, rng.integers(len(train["action"]), size=128))
        a_t, t_logits = model(b, thought=b["thought"])
        a_0, _ = model(b, use_thought=False)
        loss = F.cross_entropy(a_t, b["action"]) + F.cross_entropy(t_logits, b["thought"])
        loss = loss + F.cross_entropy(a_0, b["action"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == cfg.pretrain_steps:  # the last step too: a cap below 100 still validates
            v = val_nll(model, val, True) + val_nll(model, val, False)
            if v < best - 1e-4:
                best, state, bad = v, copy.deepcopy(model.state_dict()), 0
            elif (bad := bad + 1) >= 3:
                break
    model.load_state_dict(state)
    return model


def _learner(arm: str, cfg: Cfg, rng, lam: float | None = None) -> Learner:
    """The learner of an arm; ``lam``: its tuned regulariser weight (Uni-Walker's lambda_ssc, O-LoRA's lambda)."""
    kw = {"r": cfg.r, "alpha": 2.0 * cfg.r}
    if arm == "seqft":
        return PeftLoRA(name=arm, **kw)
    if arm == "joint":  # the upper bound gets the adapter size of all experts together
        r = cfg.r * (cfg.joint_rank_factor or cfg.n_tasks)
        return PeftLoRA(name=arm, r=r, alpha=2.0 * r)
    if arm == "hydra":
        return HydraLoRA(n_heads=cfg.hydra_heads, **kw)
    if arm == "olora":
        return OLoRA(**kw, lambda_orth=cfg.lambda_orth if lam is None else lam)
    if arm == "sdlora":
        return SDLoRA(**kw)
    if arm == "indep":
        return IndependentLoRA(**kw)
    off = {f: False for f in ABLATIONS if arm == f"uw_no_{f}"}
    ssc = cfg.lambda_ssc if lam is None else lam
    ucfg = UniWalkerConfig(r=cfg.r, alpha=2.0 * cfg.r, snapshot_a=arm == "uw_code", lambda_ssc=ssc, **off)
    return UniWalker(ucfg, name=arm)


def _eval(model, learner, task: dict, keep_paths=False, oracle: int | None = None) -> dict:
    """Test episodes of a task, routed by the learner (or by the true task id ``oracle``: the ceiling)."""
    envs = [LifelongNavEnv(task["scene"], task["style"]) for _ in task["test"]]
    learner.oracle_task = oracle
    try:
        return rollout(model, learner, envs, task["test"], keep_paths=keep_paths)
    finally:
        learner.oracle_task = None


def _val_score(model, learner, life) -> float:
    """The tuning criterion after the last task: minus the mean validation action NLL over the lifelong tasks, each
    task with its own training context active (validation data are training-time data: no test episode is used)."""
    out = []
    for j, task in enumerate(life):
        learner.activate(j)
        out.append(val_nll(model, task["val"], learner.uses_thought))
    return -float(np.mean(out))


def _joint(base, life, cfg: Cfg, seed: int, tcfg: TrainConfig, ctx):
    """The multi-task upper bound: one LoRA on every lifelong task at once; its learning rate is chosen on the
    validation NLL from `cfg.joint_lrs`, extended downwards while the smallest wins (at most twice)."""
    data = {"train": _concat([t["train"] for t in life]), "val": _concat([t["val"] for t in life])}
    cap = dataclasses.replace(tcfg, max_steps=tcfg.max_steps * len(life) // 3)
    grid, fits = sorted(cfg.joint_lrs), {}
    while True:
        for lr in grid:
            if lr not in fits:
                rng = np.random.default_rng(seed * 7919 + 1)
                torch.manual_seed(seed * 7919 + 5)
                model, learner = copy.deepcopy(base), _learner("joint", cfg, rng)
                learner.setup(model, TARGETS)
                n = train_task(model, learner, data["train"], data["val"], dataclasses.replace(cap, lr=lr), rng)
                fits[lr] = (val_nll(model, data["val"], False), n, model, learner)
        best = min(grid, key=lambda lr: fits[lr][0])
        if best == grid[0] and len(grid) < len(cfg.joint_lrs) + 2:
            grid = [grid[0] / 3] + grid
            continue
        ctx.log(f"seed {seed} joint: lr {[f'{lr:g}:{fits[lr][0]:.3f}' for lr in grid]} -> {best:g}")
        return best, fits[best][1], fits[best][2], fits[best][3]


def _train_lifelong(base, arm, life, cfg: Cfg, seed: int, tcfg: TrainConfig, lam=None):
    """One learner through the task sequence; returns (model, learner, steps, results right after each task)."""
    rng = np.random.default_rng(seed * 7919 + sum(map(ord, arm)))
    torch.manual_seed(seed * 7919 + len(arm))
    model, learner = copy.deepcopy(base), _learner(arm, cfg, rng, lam)
    learner.setup(model, TARGETS)
    first, steps = {}, []
    for t, task in enumerate(life):
        ins, ob = task_features(model, task["train"])
        learner.begin_task(t, task["style"], np.concatenate([ins.mean(0), ob.mean(0)]))
        steps.append(train_task(model, learner, task["train"], task["val"], tcfg, rng))
        learner.end_task(t, fisher_batches(model, learner, task["train"], tcfg, rng), ins, ob)
        first[t] = _eval(model, learner, task, oracle=t if arm == "indep" else None)
    return model, learner, steps, first


def _tuned(base, arm, grid, life, cfg: Cfg, seed: int, tcfg: TrainConfig, ctx):
    """The arm's regulariser weight by the house rule (`core.tuning.tune_on_grid`, the grid extended past a chosen
    edge) on the validation criterion `_val_score`; returns (weight, the chosen run)."""

    def evaluate(lam):
        run = _train_lifelong(base, arm, life, cfg, seed, tcfg, lam)
        return _val_score(run[0], run[1], life), run

    res = tune_on_grid(evaluate, grid, max_extensions=cfg.tune_extensions)
    ctx.log(f"seed {seed} {arm}: weight {[f'{g:g}:{res.scores[g]:.4f}' for g in res.grid]} -> {res.best:g}"
            + (" (at an edge)" if res.at_edge else ""))  # fmt: skip
    return res.best, res.payload, len(res.grid)


def _lifelong(base, arm, life, unseen, cfg: Cfg, seed: int, tcfg: TrainConfig, ctx, lam=None):
    m = {}
    if arm == "joint":
        lr, n, model, learner = _joint(base, life, cfg, seed, tcfg, ctx)
        steps, first = [n], {}
        m["joint_lr"] = lr
    elif arm in cfg.tune and lam is None:
        lam, (model, learner, steps, first), n_fits = _tuned(base, arm, cfg.tune[arm], life, cfg, seed, tcfg, ctx)
        m[f"{arm}_weight"], m[f"{arm}_tuning_fits"] = lam, float(n_fits)
    else:
        model, learner, steps, first = _train_lifelong(base, arm, life, cfg, seed, tcfg, lam)
    oracle = arm == "indep"
    last = {j: _eval(model, learner, task, oracle=j if oracle else None) for j, task in enumerate(life)}
    m[f"{arm}_steps"] = float(np.mean(steps))
    for k in ("sr", "spl", "osr"):
        m[f"{arm}_avg_{k}"] = float(np.mean([last[j][k].mean() for j in last]))
        for s in STYLES:
            m[f"{arm}_{k}_{s}"] = float(np.mean([last[j][k].mean() for j in last if life[j]["style"] == s]))
        if arm != "joint":
            m[f"{arm}_{k}_f"] = forgetting({j: r[k].mean() for j, r in first.items()},
                                           {j: r[k].mean() for j, r in last.items()})  # fmt: skip
    if not oracle:  # unseen scenes have no task id
        new = {j: _eval(model, learner, task) for j, task in enumerate(unseen)}
        for k in ("sr", "spl", "osr"):
            m[f"{arm}_unseen_{k}"] = float(np.mean([new[j][k].mean() for j in new]))
    if isinstance(learner, UniWalker):
        m[f"{arm}_taka_acc"] = float(np.mean([np.mean(np.array(r["ctx"]) == j) for j, r in last.items()]))
        unseen_style = [np.mean([life[c]["style"] == task["style"] for c in new[j]["ctx"]]) for j, task in
                        enumerate(unseen)]  # fmt: skip
        m[f"{arm}_unseen_style_acc"] = float(np.mean(unseen_style))
    ctx.log(
        f"seed {seed} {arm}: SR {m[f'{arm}_avg_sr']:.3f} SPL {m[f'{arm}_avg_spl']:.3f} "
        f"SR-F {m.get(f'{arm}_sr_f', float('nan')):.3f} unseen SR {m.get(f'{arm}_unseen_sr', float('nan')):.3f}"
    )
    return m, model, learner, lam


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    base_s = 1_000 * (seed + 1)
    pal = PALETTE if cfg.shared_palette else None
    pre = [_task(make_scene(base_s + i, pal), s, base_s * 100 + 10 * i + k, cfg)
           for i in range(cfg.n_pretrain_scenes) for k, s in enumerate(STYLES)]  # fmt: skip
    life = [_task(make_scene(base_s + 100 + i, pal), STYLES[i % 3], base_s * 100 + 5000 + 10 * i, cfg)
            for i in range(cfg.n_tasks)]  # fmt: skip
    unseen = [_task(make_scene(base_s + 200 + i, pal), s, base_s * 100 + 9000 + 10 * i, cfg)
              for i, s in enumerate(STYLES)]  # fmt: skip
    base = _pretrain(pre, cfg, rng)
    tcfg = TrainConfig(lr=cfg.lr, max_steps=cfg.max_steps, eval_every=25, early_stop=cfg.early_stop)

    # the testbed: the scripted expert solves every task, the frozen base W0 (control) does not
    m["expert_sr"] = float(np.mean([_expert_sr(t) for t in life + unseen]))
    m["base_avg_sr"] = float(np.mean([_eval(base, Learner(), t)["sr"].mean() for t in life]))
    m["base_unseen_sr"] = float(np.mean([_eval(base, Learner(), t)["sr"].mean() for t in unseen]))
    keep, lam_uw = {}, None
    for arm in tqdm(cfg.arms, desc=f"uniwalker seed {seed}", disable=ctx.quiet):
        # the ablations of Uni-Walker keep its tuned lambda_ssc (tuned once, on the full method)
        lam = lam_uw if arm.startswith("uw_") and arm != "uw_no_ssc" and lam_uw is not None else None
        res, model, learner, chosen = _lifelong(base, arm, life, unseen, cfg, seed, tcfg, ctx, lam)
        m.update(res)
        if arm == "uw":
            lam_uw = chosen
        if arm in ("uw", "seqft"):
            keep[arm] = (model, learner)
    if "uw" in keep:  # Uni-Walker with the true task id (ceiling of retrieval) and with a random seen task (control)
        model, learner = keep["uw"]
        m["uw_oracle_avg_sr"] = float(np.mean([_eval(model, learner, t, oracle=j)["sr"].mean()
                                               for j, t in enumerate(life)]))  # fmt: skip
        learner.rng = np.random.default_rng(seed + 17)
        m["uw_random_avg_sr"] = float(np.mean([_eval(model, learner, t)["sr"].mean() for t in life]))
        learner.rng = None
    m.update(_derived(m, cfg))
    if seed == cfg.seeds[0] and keep:
        ctx.save_artifact("rollouts", _paths(keep, life, unseen))
    m["seconds"] = time.time() - t0
    ctx.log(f"seed {seed}: {m['seconds']:.1f}s")
    return m


def _expert_sr(task) -> float:
    env, ok = LifelongNavEnv(task["scene"], task["style"]), []
    for s in task["test"]:
        env.reset(seed=s)
        for a in env.plan:
            env.step((0, 1, 2)[a])
        ok.append(env.step(6)[4]["success"])
    return float(np.mean(ok))


def _derived(m: dict, cfg: Cfg) -> dict:
    out = {}
    steps = [m[f"{a}_steps"] for a in cfg.arms if a != "joint" and f"{a}_steps" in m]
    if steps:  # budget parity: mean training steps per task of every lifelong arm
        out["steps_spread"] = max(steps) / min(steps) - 1
    if "uw_avg_sr" not in m:
        return out
    base = [a for a in ("seqft", "olora", "sdlora", "hydra") if f"{a}_avg_sr" in m]
    if base:
        out["best_baseline_avg_sr"] = max(m[f"{a}_avg_sr"] for a in base)
        out["best_baseline_avg_spl"] = max(m[f"{a}_avg_spl"] for a in base)
        out["min_baseline_sr_f"] = min(m[f"{a}_sr_f"] for a in base)
    drops = {f: m["uw_avg_sr"] - m[f"uw_no_{f}_avg_sr"] for f in ABLATIONS if f"uw_no_{f}_avg_sr" in m}
    for f, d in drops.items():
        out[f"drop_{f}"] = d
    if {"nscot", "ecas"} <= set(drops) and len(drops) > 2:
        out["drop_nscot_ecas_min"] = min(drops["nscot"], drops["ecas"])
        out["drop_other_max"] = max(d for f, d in drops.items() if f not in ("nscot", "ecas"))
    return out


def _paths(keep, life, unseen) -> dict:
    """Paths of one test episode of the first task (after the last task) and of an unseen task, per kept arm."""
    out = {}
    for arm, (model, learner) in keep.items():
        for name, task in (("first", life[0]), ("unseen", unseen[0])):
            one = dict(task, test=task["test"][:1])
            r = _eval(model, learner, one, keep_paths=True)
            out[f"{arm}/{name}"] = {"scene": task["scene"].seed, "style": task["style"], "reset": task["test"][0],
                                    "path": r["paths"][0], "success": float(r["sr"][0])}  # fmt: skip
            env = LifelongNavEnv(task["scene"], task["style"])
            env.reset(seed=task["test"][0])
            out[f"{arm}/{name}"]["goal"] = [list(map(int, c[:2])) for c in env.goal_cells]
    return out


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    arms = [a for a in cfg.arms if all(f"{a}_avg_sr" in s for s in seeds)]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.4))
    for i, (k, title) in enumerate((("avg_sr", "avg SR after the last task"), ("sr_f", "SR forgetting"))):
        vals = [[s.get(f"{a}_{k}", np.nan) for s in seeds] for a in arms]
        ax[i].bar(range(len(arms)), [np.nanmean(v) for v in vals], yerr=[np.nanstd(v) for v in vals], color="C0")
        ax[i].set_xticks(range(len(arms)), arms, rotation=60, fontsize=7)
        ax[i].set_title(title, fontsize=9)
    fig.tight_layout()
    out = [("sr_and_forgetting", fig)]
    path = run_dir / "artifacts" / "rollouts.json"
    if not path.exists():
        path = next(iter(run_dir.glob("**/rollouts*.json")), path)
    if path.exists():
        out.append(("rollouts", _rollout_figure(json.loads(path.read_text()))))
    return out


def _rollout_figure(paths: dict):
    import matplotlib.pyplot as plt

    keys = sorted(paths)
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.4))
    for ax, k in zip(np.atleast_1d(axes), keys):
        p = paths[k]
        env = LifelongNavEnv(make_scene(p["scene"]), p["style"])
        env.reset(seed=p["reset"])
        img = env.get_frame(highlight=False, tile_size=16)
        ax.imshow(img)
        xy = np.array([q[:2] for q in p["path"]]) * 16 + 8
        ax.plot(xy[:, 0], xy[:, 1], "-o", color="white", ms=3, lw=2)
        goal = np.array(p.get("goal", [])).reshape(-1, 2) * 16 + 8
        ax.plot(goal[:, 0], goal[:, 1], "*", color="gold", ms=12, mec="black")
        ax.set_title(f"{k}: {'success' if p['success'] else 'failure'}\n{env.mission}", fontsize=6)
        ax.axis("off")
    fig.tight_layout()
    return fig
