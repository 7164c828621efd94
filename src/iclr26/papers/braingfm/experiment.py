"""The BrainGFM reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import time
from functools import partial

import numpy as np
import torch

from iclr26.core.threads import run_threads
from iclr26.science.braingfm import (
    FitConfig,
    MetaConfig,
    VanillaGCN,
    adapt_curve,
    auc,
    encode_text,
    finetune,
    fit,
    make_classifier,
    meta_train_prompt,
    predict,
    sample_shots,
)
from iclr26.science.braingfm.world import DISORDERS, BrainWorld

from . import Cfg
from . import backbones as units
from .backbones import initial_backbone, upper, world_and_corpora


def _grid_search(train_fn, grid, ctx, label):
    """One rule for every arm: try each lr of the grid, extend the grid by x3 past an edge that wins strictly over its
    neighbour (at most 3 extensions), keep the lr with the best validation AUC (ties: the smaller lr)."""
    grid, res, ext = sorted(grid), {}, 0
    while True:
        for lr in grid:
            if lr not in res:
                res[lr] = train_fn(lr)
        best = max(grid, key=lambda lr: (res[lr][0], -lr))
        if ext < 3 and best == grid[0] and len(grid) > 1 and res[grid[0]][0] > res[grid[1]][0] and grid[0] > 1e-5:
            grid, ext = [grid[0] / 3, *grid], ext + 1
        elif ext < 3 and best == grid[-1] and len(grid) > 1 and res[grid[-1]][0] > res[grid[-2]][0] and grid[-1] < 0.3:
            grid, ext = [*grid, grid[-1] * 3], ext + 1
        else:
            break
    ctx.log(f"  {label}: lr {' '.join(f'{lr:g}:{res[lr][0]:.3f}' for lr in grid)} -> {best:g}")
    return best, res[best]


def _fitcfg(cfg: Cfg, lr: float) -> FitConfig:
    return FitConfig(lr=lr, max_epochs=cfg.max_epochs, patience=cfg.patience)


def _ft(backbone, tr, va, text, mode, cfg: Cfg, seed: int, lr: float):
    clf, v = finetune(
        backbone, tr, va, text, mode, FitConfig(lr=lr, max_epochs=cfg.max_epochs, patience=cfg.patience), seed
    )
    return v, clf


def _gcn(tr, va, hidden: int, cfg: Cfg, seed: int, lr: float):
    torch.manual_seed(seed)
    g = VanillaGCN(int(tr.n[0]), hidden=hidden)
    return fit(
        g, tr, va, None, list(g.parameters()), FitConfig(lr=lr, max_epochs=cfg.max_epochs, patience=cfg.patience), seed
    ), g


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    torch.manual_seed(seed)
    _, data, _, _ = world_and_corpora(cfg, seed)  # the corpora are the data stream's first draws
    tgt = cfg.target_atlas
    names = sorted({*cfg.ft_disorders, *cfg.meta_disorders, *cfg.unseen, "U3", "V"})
    emb = dict(zip(names, encode_text([DISORDERS[d].text for d in names])))
    emb = {k: v[None] for k, v in emb.items()}

    # ---------------------------------------------------------------- pre-training (claim 1): cached units
    init = initial_backbone(cfg, seed, len(data.names))
    bcfg = init.cfg
    backbones = {"scratch": init}
    for name, unit in units.backbones(cfg, seed, log=ctx.log).items():
        backbones[name] = copy.deepcopy(init)
        backbones[name].load_state_dict(unit["state"])
        m[f"pt_steps_{name}"] = float(unit["steps"])
        ctx.log(f"seed {seed}: pretrain {name} ({units.variants(cfg)[name]}, {unit['graphs']} graphs): "
                f"{unit['steps']} steps, val loss {unit['best_val']:.4f}; {time.time() - t0:.0f}s")  # fmt: skip
    # a later seed's backbones, built while no worker is free for that seed yet
    units.prepare(cfg, seed, getattr(ctx, "seeds", (seed,)), log=ctx.log)

    # ---------------------------------------------------------------- fine-tuning on seen disorders (claim 1)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    arms = [a for a in ("scratch", "single", "multi", "multi_gcl", "multi_gmae") if a in backbones]
    per = {a: [] for a in [*arms, "gcn", "shuffled", "oracle"] + (["prompt"] if cfg.prompt_arm else [])}
    for d in cfg.ft_disorders:
        n = cfg.n_train + cfg.n_val + cfg.n_test
        gs = data.graphs(n, d, [tgt])[tgt]
        tr, va, te = gs[: cfg.n_train], gs[cfg.n_train : cfg.n_train + cfg.n_val], gs[cfg.n_train + cfg.n_val :]
        x_or, y_or = data.fc(400, d, tgt)
        lr_or = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=2000)).fit(x_or, y_or)
        per["oracle"].append(auc(te.y.numpy(), lr_or.decision_function(upper(te))))
        for a in arms + (["prompt"] if cfg.prompt_arm else []):
            bb, mode = (backbones["multi"], "prompt") if a == "prompt" else (backbones[a], "full")
            lr, (_, clf) = _grid_search(partial(_ft, bb, tr, va, emb[d], mode, cfg, seed), cfg.lr_grid, ctx, f"{d} {a}")
            per[a].append(auc(te.y.numpy(), predict(clf, te, emb[d])))
            if a == "multi":
                shuf = copy.deepcopy(tr)
                shuf.y = shuf.y[torch.randperm(len(shuf), generator=torch.Generator().manual_seed(seed))]
                _, c2 = _ft(bb, shuf, va, emb[d], "full", cfg, seed, lr)
                per["shuffled"].append(auc(te.y.numpy(), predict(c2, te, emb[d])))

        _, (_, g) = _grid_search(partial(_gcn, tr, va, bcfg.hidden, cfg, seed), cfg.lr_grid, ctx, f"{d} gcn")
        per["gcn"].append(auc(te.y.numpy(), predict(g, te, None)))
        for a in (*arms, "gcn"):
            if a in ("scratch", "gcn", "single", "multi"):
                m[f"auc_{a}_{d}"] = per[a][-1]
        ctx.log(f"seed {seed}: {d}: " + " ".join(f"{a} {v[-1]:.3f}" for a, v in per.items()) +
                f"; {time.time() - t0:.0f}s")  # fmt: skip
    for a, v in per.items():
        m["oracle_auc" if a == "oracle" else f"auc_{a}"] = float(np.mean(v))

    # ---------------------------------------------------------------- meta-learned prompts (claims 2, 3)
    clf0 = make_classifier(backbones["multi"], seed)
    tasks = []
    for d in cfg.meta_disorders:
        for gs in data.graphs(cfg.n_meta, d).values():
            tasks.append((gs, emb[d]))
    clf_meta = copy.deepcopy(clf0)
    hist = meta_train_prompt(
        clf_meta,
        tasks,
        MetaConfig(
            iters=cfg.meta_iters, k_shot=cfg.k_shot, inner_steps=cfg.meta_inner_steps, outer_lr=cfg.meta_outer_lr
        ),
        seed=seed,
    )
    ctx.log(f"seed {seed}: meta-learning query loss {np.mean(hist[:10]):.3f} -> {np.mean(hist[-10:]):.3f}; "
            f"{time.time() - t0:.0f}s")  # fmt: skip

    pools = {}
    for d in [*cfg.unseen, "U3", "V"]:
        gs = data.graphs(cfg.n_val + cfg.n_test, d, [tgt])[tgt]
        pools[d] = (gs[: cfg.n_val], gs[cfg.n_val :])
    zs = {d: auc(pools[d][1].y.numpy(), predict(clf_meta, pools[d][1], emb[d])) for d in pools}
    swapped = [auc(pools[u][1].y.numpy(), predict(clf_meta, pools[u][1], emb[cfg.unseen[(i + 1) % len(cfg.unseen)]]))
               for i, u in enumerate(cfg.unseen)]  # fmt: skip
    untrained = [auc(pools[u][1].y.numpy(), predict(clf0, pools[u][1], emb[u])) for u in cfg.unseen]
    m["zs_auc"] = float(np.mean([zs[u] for u in cfg.unseen]))
    m["zs_auc_swapped"], m["zs_auc_untrained"] = float(np.mean(swapped)), float(np.mean(untrained))
    m["zs_auc_unseen_words"], m["zs_auc_val"] = zs["U3"], zs["V"]
    for u in cfg.unseen:
        m[f"zs_auc_{u}"] = zs[u]
    ctx.log(f"seed {seed}: zero-shot {zs}, swapped {swapped}, untrained {untrained}")

    # ---------------------------------------------------------------- few-shot (claim 2)
    fs_arms = {"prompt_meta": (clf_meta, "prompt"), "finetune": (clf0, "full"), "finetune_meta": (clf_meta, "full"),
               "prompt_random": (clf0, "prompt"), "linear": (clf0, "linear")}  # fmt: skip

    def curves(clf, mode, lr, d, reps, gen, steps):
        sup_pool, query = pools[d]
        out = [adapt_curve(clf, sample_shots(sup_pool, cfg.k_shot, gen)[0], emb[d], query, mode, lr, steps)
               for _ in range(reps)]  # fmt: skip
        return {s: float(np.mean([o[s] for o in out])) for s in steps}

    for arm, (clf, mode) in fs_arms.items():

        def tune(lr, clf=clf, mode=mode):  # validation disorder V: best steps for this lr, grid doubled past its edge
            steps = tuple(cfg.adapt_steps)
            for _ in range(3):
                c = curves(clf, mode, lr, "V", cfg.shot_reps, torch.Generator().manual_seed(seed), steps)
                s = max(steps, key=lambda k: (c[k], -k))
                if s != steps[-1] or len(steps) < 2 or c[steps[-1]] <= c[steps[-2]]:
                    break
                steps = (*steps, 2 * steps[-1])
            return c[s], s

        lr, (_, s) = _grid_search(tune, cfg.adapt_lrs, ctx, f"few-shot {arm}")
        gen = torch.Generator().manual_seed(seed + 1)
        m[f"fs_{arm}"] = float(np.mean([curves(clf, mode, lr, u, cfg.shot_reps, gen, (s,))[s] for u in cfg.unseen]))
        m[f"fs_{arm}_lr"], m[f"fs_{arm}_steps"] = lr, float(s)
    ctx.log(f"seed {seed}: few-shot " + " ".join(f"{a} {m[f'fs_{a}']:.3f}" for a in fs_arms) +
            f"; total {time.time() - t0:.0f}s")  # fmt: skip
    return m


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    from iclr26.science.braingfm import build_brain_graph
    from iclr26.science.braingfm.world import NETWORKS

    seeds = list(per_seed.values())
    figs = []
    # brain graphs of a control and a U1 patient on the target atlas (parcels at their centroids)
    world = BrainWorld(seed=0, n_timepoints=cfg.n_timepoints)
    lab = world.parcels[cfg.target_atlas]
    k = int(lab.max()) + 1
    xy = np.array([world.coords[lab == p][:, 1:].mean(0) for p in range(k)])  # sagittal view (y, z)
    net = np.array([np.bincount(world.network[lab == p], minlength=len(NETWORKS)).argmax() for p in range(k)])
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.4))
    for ax, (title, dis) in zip(axes, (("control", None), ("U1 patient: " + DISORDERS["U1"].text, DISORDERS["U1"]))):
        rng = np.random.default_rng(1)
        ts = world.timeseries(world._one(rng, dis, 1.0, 0), rng) @ world.averaging(cfg.target_atlas)
        _, a = build_brain_graph(ts)
        for i, j in zip(*np.nonzero(np.triu(a, 1))):
            ax.plot(xy[[i, j], 0], xy[[i, j], 1], color="0.6", lw=0.5, zorder=1)
        sc = ax.scatter(xy[:, 0], xy[:, 1], c=net, cmap="tab10", vmin=0, vmax=9, s=40, zorder=2)
        ax.set_title(title if len(title) < 40 else title[:60] + "\n" + title[60:], fontsize=8)
        ax.set_aspect("equal"), ax.set_xticks([]), ax.set_yticks([])
    handles = [plt.Line2D([], [], marker="o", ls="", color=sc.cmap(sc.norm(i))) for i in range(len(NETWORKS))]
    fig.legend(handles, NETWORKS, loc="lower center", ncol=4, fontsize=7)
    fig.suptitle(f"brain graphs on {cfg.target_atlas} (edges: z-scored FC > 0.6), world seed 0", fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    figs.append(("brain_graphs", fig))

    # AUC per arm (mean +- std over seeds)
    groups = [
        ("fine-tuning (seen)", ["oracle_auc", "auc_gcn", "auc_scratch", "auc_single", "auc_multi", "auc_prompt"]),
        ("few-shot (unseen)", ["fs_prompt_meta", "fs_finetune", "fs_finetune_meta", "fs_prompt_random", "fs_linear"]),
        ("zero-shot (unseen)", ["zs_auc", "zs_auc_swapped", "zs_auc_untrained", "zs_auc_unseen_words"]),
    ]
    groups[0][1].append("auc_shuffled")
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
    for ax, (title, keys) in zip(axes, groups):
        keys = [key for key in keys if all(key in s for s in seeds)]
        vals = [[s[key] for s in seeds] for key in keys]
        ax.bar(range(len(keys)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="tab:blue")
        ax.axhline(0.5, color="gray", ls=":")
        ax.set_xticks(range(len(keys)), [key.replace("auc_", "").replace("fs_", "") for key in keys], rotation=40,
                      ha="right", fontsize=7)  # fmt: skip
        ax.set_title(title, fontsize=9), ax.set_ylim(0.3, 1.02)
    axes[0].set_ylabel("test AUC")
    fig.tight_layout()
    figs.append(("auc_by_arm", fig))
    return figs
