"""The SPWOOD reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

import numpy as np
import torch

from iclr26.core.cache import cached_tensors
from iclr26.core.paths import trained_cache_dir
from iclr26.vision.spwood import (
    SPWOODConfig,
    TinyRotatedFCOS,
    make_instances,
    point_segments,
    predict,
    rotated_map,
    sparse_partial_split,
    train_spwood,
    weaken_labels,
)
from iclr26.vision.spwood.targets import assign, cat_instances
from iclr26.vision.spwood.train import burn_in_key
from iclr26.vision.spwood.world import CLASSES, make_scenes

from . import Cfg

NC = len(CLASSES)
ANGLE_ARMS = ("full", "spwood_b1", "spwood_hbox", "spwood_hbox_noss", "spwood_mixed")


def _world(cfg: Cfg, seed: int):
    tr = make_scenes(cfg.n_train, seed * 1000 + 1)
    va = make_scenes(cfg.n_val, seed * 1000 + 2)
    te = make_scenes(cfg.n_test, seed * 1000 + 3)
    return tr, va, te


def _gts(w):
    return list(zip(w["boxes"], w["labels"]))


def _insts(tr, keep, types=None, seed=0):
    """Instance dicts of the kept labels; types per kept instance (default RBox); segments for point labels."""
    out = []
    rng = np.random.default_rng(seed)
    for i, (b, lab, k) in enumerate(zip(tr["boxes"], tr["labels"], keep)):
        t = np.zeros(int(k.sum()), np.int64) if types is None else types[i]
        segs = None
        if (t == 2).any():
            pts = b[k][:, :2] + rng.normal(0, 0.5, (int(k.sum()), 2))  # annotator's point: centre + jitter
            segs = point_segments(tr["images"][i], pts)
            bb = b[k].copy()
            bb[:, :2] = np.where((t == 2)[:, None], pts, bb[:, :2])
            out.append(make_instances(bb, lab[k], t, segs))
            continue
        out.append(make_instances(b[k], lab[k], t, segs))
    return out


TAU_GRID = (0.0025, 0.005, 0.01, *np.round(np.arange(0.02, 0.62, 0.02), 2))  # extended down: v1 picked 0.02


def tune_fixed_threshold(model, images, gts, grid=TAU_GRID) -> float:
    """Semi baseline's threshold: the grid value whose thresholded confidences (class x centerness) best match the
    validation ground-truth locations (F1), measured on the burn-in model (one stated rule, on validation data)."""
    insts = [make_instances(b, lab, np.zeros(len(lab))) for b, lab in gts]
    pts, strd, lv = model.points(images.shape[-1])
    with torch.no_grad():
        o = model.eval()(images)
    conf = (torch.sigmoid(o["cls"]) * torch.sigmoid(o["ctr"])[..., None]).max(-1).values
    flat, img = cat_instances(insts)
    gt = assign(flat, img, len(images), pts, strd, lv) >= 0
    f1 = []
    for t in grid:
        sel = conf > t
        tp = float((sel & gt).sum())
        f1.append(2 * tp / max(float(sel.sum()) + float(gt.sum()), 1.0))
    return float(grid[int(np.argmax(f1))])


def ship_angle_error(dets, gts, ship: int = CLASSES.index("ship"), radius: float = 4.0) -> float:
    """Median |angle error| in degrees (period 180) of ships: for each ground-truth ship, the highest-scoring ship
    detection whose centre lies within `radius` px (ships are the elongated class, where the angle matters most)."""
    errs = []
    for (db, ds, dl), (gb, gl) in zip(dets, gts):
        db, ds, dl = (torch.as_tensor(x) for x in (db, ds, dl))
        for g in torch.as_tensor(gb)[torch.as_tensor(gl) == ship]:
            near = (dl == ship) & ((db[:, :2] - g[:2]).norm(dim=1) < radius) if len(db) else torch.zeros(0).bool()
            if near.any():
                d = db[near][ds[near].argmax()]
                errs.append(abs(float((d[4] - g[4] + np.pi / 2) % np.pi - np.pi / 2)))
    return float(np.degrees(np.median(errs))) if errs else 90.0


def _digest(*arrays) -> str:
    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()[:16]


def cached_burn_in(X, insts, lab, val, c: SPWOODConfig, seed: int, ctx=None, tag: str = "") -> dict:
    """The converged supervised burn-in (`train_spwood`'s phase 1) for these data, labels and burn-in settings, on
    disk under ``trained_cache_dir()/spwood_burnin`` (keyed by a digest of the images, labels and `burn_in_key`; the
    folder by torch's thread count; written and verified by `iclr26.core.cache`), so that arms sharing a burn-in
    (supervised-only, semi, PWOOD-like, plain-focal SPWOOD) and later runs reuse it."""
    blob = json.dumps(
        {
            "v": 3,
            "seed": seed,
            "key": list(burn_in_key(c)),
            "lab": np.asarray(lab).tolist(),
            "data": _digest(X.numpy(), val[0].numpy()),
            "insts": _digest(*[v for ins in insts for v in (ins["rbox"], ins["cls"], ins["type"])]),
        }
    )
    path = trained_cache_dir() / "spwood_burnin" / f"{hashlib.sha1(blob.encode()).hexdigest()[:16]}.pt"

    def build() -> dict:
        t = time.time()
        _, info = train_spwood(X, insts, lab, val, NC, dataclasses.replace(c, filter="none"), seed=seed)
        init = info["burn_in"]
        if ctx is not None:
            ctx.log(f"burn-in {tag}: val {init['val']:.3f} after {init['steps']} steps ({time.time() - t:.0f} s)")
        return {**init, "key": list(init["key"])}

    return cached_tensors(path, f"the SPWOOD burn-in {tag}", build, quiet=True)


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0 = time.time()
    tr, va, te = _world(cfg, seed)
    X, Xv, Xt = (torch.as_tensor(w["images"]) for w in (tr, va, te))
    val, gt_test = (Xv, _gts(va)), _gts(te)
    base = SPWOODConfig(burn_in=cfg.burn_in, max_steps=cfg.max_extra, eval_every=cfg.eval_every,
                        patience=cfg.patience, batch=cfg.batch, unsup_batch=cfg.batch, width=cfg.width)  # fmt: skip
    out: dict[str, float] = {}
    dets_plot = {}

    def test(model, name):
        dets = predict(model, Xt, base.score_thr, base.nms_iou)
        out[f"map_{name}"] = rotated_map(dets, gt_test, NC)[0]
        if name in ANGLE_ARMS:
            out[f"angerr_{name}"] = ship_angle_error(dets, gt_test)
        dets_plot[name] = dets[:4]
        return out[f"map_{name}"]

    def fit(name, insts, lab, **kw):
        """Every arm: the converged burn-in for its labels and loss (cached), then (mean-teacher arms) self-training
        to convergence from it; both phases early-stopped on validation mAP."""
        c = dataclasses.replace(base, **kw)
        init = cached_burn_in(X, insts, lab, val, c, seed, ctx, f"{name} seed {seed}")
        t = time.time()
        model, info = train_spwood(X, insts, lab, val, NC, c, seed=seed, init=init)
        m = test(model, name)
        out[f"steps_{name}"] = float(info["steps"])
        out[f"burnin_steps_{name}"] = float(info["burn_in_steps"])
        out[f"gain_val_{name}"] = info["best_val"] - info["start_val"]
        ctx.log(f"{name}: test mAP {m:.3f} (val {info['start_val']:.3f} after the {info['burn_in_steps']}-step "
                f"burn-in -> {info['best_val']:.3f} at step {info['best_step']} of {info['steps']} more; "
                f"{info['n_pseudo']:.0f} pseudo-label locations; {time.time() - t:.0f} s)")  # fmt: skip
        if c.filter != "none":  # the test mAP of its starting point (the burn-in teacher): did self-training help?
            start = TinyRotatedFCOS(NC, cfg.width)
            start.load_state_dict(init["teacher"])
            out[f"map0_{name}"] = rotated_map(predict(start.eval(), Xt, base.score_thr, base.nms_iou), gt_test, NC)[0]
        return model

    torch.manual_seed(seed)
    test(TinyRotatedFCOS(NC, cfg.width).eval(), "untrained")
    all_keep = [np.ones(len(lab), bool) for lab in tr["labels"]]
    fit("full", _insts(tr, all_keep), np.arange(cfg.n_train), filter="none", sparse_focal=False,
        burn_in=cfg.full_steps)  # fmt: skip
    for bname, (ir, sr) in (("b1", cfg.budget1), ("b2", cfg.budget2)):
        lab, keep = sparse_partial_split(tr["labels"], ir, sr, seed)
        out[f"n_lab_inst_{bname}"] = float(sum(int(k.sum()) for k in keep))
        insts = _insts(tr, keep)
        sup = fit(f"sup_{bname}", insts, lab, filter="none", sparse_focal=False)  # the plain burn-in (EMA weights)
        tau = tune_fixed_threshold(sup, Xv, _gts(va))
        out[f"tau_semi_{bname}"] = tau
        fit(f"semi_{bname}", insts, lab, sparse_focal=False, filter="fixed", fixed_thr=tau)
        fit(f"pwood_{bname}", insts, lab, sparse_focal=False, filter="global")
        fit(f"spwood_{bname}", insts, lab)
        if bname == "b1" and cfg.ablate_gmm:
            fit("spwood_global_b1", insts, lab, filter="global")
        if bname == "b1" and cfg.ablate_focal:
            fit("plainfocal_b1", insts, lab, sparse_focal=False, filter="level")
        if bname == "b1" and cfg.label_types:
            hb = [np.ones(int(k.sum()), np.int64) for k in keep]
            insts_h = _insts(tr, keep, hb)
            fit("spwood_hbox", insts_h, lab)
            fit("spwood_hbox_noss", insts_h, lab, orientation_ss=False)
            n = int(sum(int(k.sum()) for k in keep))
            t_all = weaken_labels(n, ("rbox", "hbox", "point"), (1, 1, 1), seed)
            cuts = np.cumsum([int(k.sum()) for k in keep])[:-1]
            fit("spwood_mixed", _insts(tr, keep, np.split(t_all, cuts), seed), lab)
    ctx.save_artifact(f"dets_seed{seed}", {
        "images": np.round(te["images"][:4], 3).tolist(),
        "gt": [[b.tolist(), lab.tolist()] for b, lab in gt_test[:4]],
        "dets": {k: [[d[0].tolist(), d[1].tolist(), d[2].tolist()] for d in v] for k, v in dets_plot.items()},
    })  # fmt: skip
    ctx.log(f"seed {seed} done in {time.time() - t0:.0f} s")
    return out


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    from iclr26.vision.spwood.world import rbox_corners

    figs = []
    seed = min(per_seed)
    path = run_dir / "artifacts" / f"dets_seed{seed}.json"
    if path.exists():
        a = json.loads(path.read_text())
        arms = [k for k in ("full", "sup_b1", "spwood_b1", "spwood_hbox") if k in a["dets"]]
        fig, axes = plt.subplots(len(a["images"]), len(arms) + 1, figsize=(2.4 * (len(arms) + 1), 2.4 * 4))
        axes = np.atleast_2d(axes)
        cols = ("C0", "C1", "C3")
        for r, img in enumerate(a["images"]):
            for c, arm in enumerate(["ground truth", *arms]):
                ax = axes[r, c]
                ax.imshow(np.asarray(img).transpose(1, 2, 0))
                boxes, labels = a["gt"][r] if c == 0 else a["dets"][arm][r][::2]
                scores = [1.0] * len(boxes) if c == 0 else a["dets"][arm][r][1]
                for b, lab, s in zip(boxes, labels, scores):
                    if s < 0.1:
                        continue
                    p = rbox_corners(np.asarray(b))[0]
                    p = np.vstack([p, p[:1]])
                    ax.plot(p[:, 0], p[:, 1], color=cols[int(lab)], lw=1.0)
                size = np.asarray(img).shape[-1]
                ax.set_xlim(0, size), ax.set_ylim(size, 0), ax.set_xticks([]), ax.set_yticks([])
                if r == 0:
                    ax.set_title(arm, fontsize=8)
        fig.suptitle(f"test scenes, seed {seed}: ground truth vs detections (score >= 0.1); "
                     "colour = class (plane, ship, vehicle)", fontsize=8)  # fmt: skip
        fig.tight_layout()
        figs.append(("detections", fig))
    seeds = list(per_seed.values())
    names = [k for k in ("untrained", "sup_b1", "semi_b1", "pwood_b1", "spwood_b1", "spwood_global_b1",
                         "plainfocal_b1", "spwood_hbox", "spwood_hbox_noss", "spwood_mixed", "sup_b2", "semi_b2",
                         "pwood_b2", "spwood_b2", "full") if f"map_{k}" in seeds[0]]  # fmt: skip
    fig, ax = plt.subplots(figsize=(10, 3.4))
    vals = [[s[f"map_{k}"] for s in seeds] for k in names]
    ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="C0")
    ax.set_xticks(range(len(names)), names, rotation=40, fontsize=7, ha="right")
    ax.set_ylabel("test rotated mAP@0.5")
    ax.set_title("arms (mean ± sd over seeds)", fontsize=9)
    fig.tight_layout()
    figs.append(("arms", fig))
    return figs
