"""The WinT3R reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import json
import time

import numpy as np
import torch

from iclr26.core.threads import run_threads
from iclr26.vision.wint3r import evaluate, reconstruct, trivial_baseline
from iclr26.vision.wint3r.geometry import umeyama
from iclr26.vision.wint3r.train import frames_per_second, gt_world
from iclr26.vision.wint3r.world import make_streams

from . import ARMS, Cfg, units


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    data, _ = units.train_val(cfg, seed)
    test = make_streams(cfg.n_test, cfg.test_len, 1000 * seed + 3, texture_mix=cfg.texture_mix)
    ctx.log(f"seed {seed}: data {time.time() - t0:.1f}s")
    for k, v in trivial_baseline(data, test, seed=seed).items():
        if k in ("chamfer_overall", "ate", "rra15", "auc30", "absrel", "delta1"):
            m[f"{k.replace('_overall', '')}_trivial"] = v
    models = {}
    log = None if ctx.quiet else ctx.log
    for arm, info in units.trained_arms(cfg, seed, log=log).items():  # cached units, trained by one rule
        model = units.new_model(cfg, seed, arm)
        model.load_state_dict(info["state"])
        r = evaluate(model, test, seed=seed)
        m[f"chamfer_{arm}"], m[f"acc_{arm}"], m[f"comp_{arm}"] = (r["chamfer_overall"], r["chamfer_acc"],
                                                                   r["chamfer_comp"])  # fmt: skip
        for k in ("ate", "rra15", "rta15", "rra30", "rta30", "auc30", "absrel", "delta1"):
            m[f"{k}_{arm}"] = r[k]
        m[f"steps_{arm}"], m[f"val_{arm}"] = float(info["steps"]), float(info["best_val"])
        m[f"early_{arm}"] = float(info["steps"] < cfg.max_steps)
        m[f"best_step_{arm}"] = float(info["best_step"])
        models[arm] = model
        ctx.log(f"  {arm}: {info['steps']} steps (best {info['best_step']}, {info['seconds']:.0f}s, val "
                f"{info['best_val']:.3f}); Chamfer {r['chamfer_overall']:.4f} ATE {r['ate']:.4f} RRA15 "
                f"{r['rra15']:.3f} RTA15 {r['rta15']:.3f} AUC30 {r['auc30']:.3f}")  # fmt: skip
    m["params"] = float(sum(p.numel() for p in models["full"].parameters()))
    # throughput, interleaved over the arms (best of 3 rounds) so that machine load hits every arm alike
    stream = torch.as_tensor(test["images"][0])
    fps = {a: 0.0 for a in ARMS}
    for _ in range(3):
        for a in ARMS:
            fps[a] = max(fps[a], frames_per_second(models[a], stream, repeats=1))
    for a in ARMS:
        m[f"fps_{a}"] = fps[a]
    m["fps_ratio_window"], m["fps_ratio_pool"] = fps["full"] / fps["nowindow"], fps["full"] / fps["nopool"]
    m["chamfer_gain_trivial"] = 1 - m["chamfer_full"] / m["chamfer_trivial"]
    ctx.save_artifact(f"stream_seed{seed}", _artifact(models, test))
    ctx.log(f"seed {seed}: trivial Chamfer {m['chamfer_trivial']:.4f} ATE {m['ate_trivial']:.4f}; FPS "
            + ", ".join(f"{a} {fps[a]:.0f}" for a in ARMS) + f"; {time.time() - t0:.0f}s")  # fmt: skip
    # a later seed's arms, trained while no worker is free for that seed yet
    units.prepare(cfg, seed, getattr(ctx, "seeds", (seed,)), log=log)
    return m


def _artifact(models: dict, test: dict) -> dict:
    """Test stream 0: GT and each arm's camera centres (Sim(3)-aligned to GT), and a horizontal slice of the full
    arm's aligned point cloud next to the GT's."""
    gt_poses, gt_pts = gt_world(test["pts_local"][0], test["poses"][0])
    out = {"gt": gt_poses[:, :3, 3].round(4).tolist()}
    for arm, model in models.items():
        rec = reconstruct(model, torch.as_tensor(test["images"][0]))
        c = torch.as_tensor(rec["poses"][:, :3, 3])
        r, t, s = umeyama(c, torch.as_tensor(gt_poses[:, :3, 3]))
        out[arm] = (s * c @ r.T + t).numpy().round(4).tolist()
        if arm == "full":
            a = torch.as_tensor(rec["world"].reshape(-1, 3))
            r, t, s = umeyama(a, torch.as_tensor(gt_pts.reshape(-1, 3)))
            pw = (s * a @ r.T + t).numpy()
            g = gt_pts.reshape(-1, 3)
            sl = np.abs(g[:, 1]) < 0.15  # a slice around the first camera's height
            out["slice_gt"] = g[sl][:, [0, 2]][::3].round(3).tolist()
            out["slice_full"] = pw[sl][:, [0, 2]][::3].round(3).tolist()
    return out


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    figs = []
    seed = min(per_seed)
    path = run_dir / "artifacts" / f"stream_seed{seed}.json"
    if path.exists():
        a = json.loads(path.read_text())
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
        gt = np.array(a["gt"])
        axes[0].plot(gt[:, 0], gt[:, 2], "k-o", ms=3, lw=2, label="ground truth")
        for arm, col in zip(("full", "nooverlap", "nowindow", "nopool"), ("C0", "C1", "C2", "C3")):
            p = np.array(a[arm])
            axes[0].plot(p[:, 0], p[:, 2], "-", color=col, lw=1.2, label=arm)
        axes[0].set_title(f"camera centres (top view, Sim(3)-aligned), test stream 0, seed {seed}", fontsize=9)
        axes[0].legend(fontsize=8), axes[0].set_aspect("equal")
        sg, sf = np.array(a["slice_gt"]), np.array(a["slice_full"])
        axes[1].scatter(sg[:, 0], sg[:, 1], s=2, c="k", label="ground truth")
        axes[1].scatter(sf[:, 0], sf[:, 1], s=2, c="C0", alpha=0.5, label="WinT3R (full), aligned")
        axes[1].plot(gt[:, 0], gt[:, 2], "r-", lw=1, label="camera path")
        axes[1].set_title("point cloud slice (|y| < 0.15 around the first camera's height), top view", fontsize=9)
        axes[1].legend(fontsize=8, markerscale=4), axes[1].set_aspect("equal")
        fig.tight_layout()
        figs.append(("trajectories", fig))
    seeds = list(per_seed.values())
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    for ax, met in zip(axes, ("chamfer", "ate", "auc30", "fps")):
        names = list(ARMS) + (["trivial"] if met in ("chamfer", "ate", "auc30") else [])
        vals = [[s[f"{met}_{n}"] for s in seeds] for n in names]
        ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals],
               color=["C0", "C1", "C2", "C3", "0.7"][: len(names)])  # fmt: skip
        ax.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
        ax.set_title(f"{met} (mean ± sd over seeds)", fontsize=9)
    fig.tight_layout()
    figs.append(("arms", fig))
    return figs
