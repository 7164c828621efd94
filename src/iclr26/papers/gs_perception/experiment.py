"""The gs-perception reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import kornia
import numpy as np
import torch

from iclr26.core.cache import cached_json, cached_tensors
from iclr26.core.paths import trained_cache_dir
from iclr26.core.threads import run_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.vision.gs_perception import (
    CenterNetDetector,
    FitConfig,
    GaussianScene3D,
    GridDetector,
    box_iou,
    consistency,
    detect,
    fit,
    mean_ap,
    recall,
    train_detector,
)
from iclr26.vision.gs_perception import world_street as street
from iclr26.vision.gs_perception import world_street3d as street3d

from . import ARMS, VERSION, Cfg

_CACHE: dict = {}
ARM_LOSSES = {
    "visual": ("visual",),
    "perc": ("visual", "perception"),
    "vis": ("visual", "visibility"),
    "both": ("visual", "perception", "visibility"),
    "ctrl": ("visual", "perception"),
    "visrand": ("visual", "visibility"),
}


def _world(cfg: Cfg):
    """The 2D street world (quick) or the ray-cast 3D street world (full)."""
    return street3d if cfg.world == "3d" else street


def make_frames(cfg: Cfg, seed: int, n: int):
    return _world(cfg).make_frames(seed, n, cfg.height, cfg.width)


def make_sequence(cfg: Cfg, seed: int):
    return _world(cfg).make_sequence(seed, cfg.n_frames, cfg.height, cfg.width)


def _key(cfg: Cfg, *names) -> str:
    d = {n: getattr(cfg, n) for n in names}
    return hashlib.sha1(json.dumps([VERSION, d], sort_keys=True).encode()).hexdigest()[:10]


def _detectors(cfg: Cfg, log):
    """Guidance and unseen detectors, trained once per configuration from their own seeds (initialisation included,
    so every worker process builds the same weights), under a file lock and cached in memory and on disk
    (`iclr26.core.cache`: atomic, digest-checked when read)."""
    key = _key(cfg, "world", "height", "width", "n_det_train", "n_det_val", "det_epochs")
    if key in _CACHE:
        return _CACHE[key]
    out = {}
    for name, cls, data_seed in (("guide", CenterNetDetector, 11), ("unseen", GridDetector, 22)):
        path = trained_cache_dir() / "gs_perception" / f"{name}-{key}.pt"

        def build(cls=cls, data_seed=data_seed, name=name) -> dict:
            with torch.random.fork_rng([]):
                torch.manual_seed(data_seed)  # the initial weights: not the calling seed's random stream
                det = cls()
                tr = make_frames(cfg, data_seed, cfg.n_det_train)
                va = make_frames(cfg, data_seed + 1, cfg.n_det_val)
                info = train_detector(det, tr, va, epochs=cfg.det_epochs, seed=data_seed)
            log(f"{name} detector ({cls.__name__}): {info['epochs']} epochs, val loss {info['val_loss']:.3f}")
            return det.state_dict()

        with torch.random.fork_rng([]):
            det = cls()
        det.load_state_dict(cached_tensors(path, f"the gs-perception {name} detector", build))
        out[name] = det.eval()
    _CACHE[key] = out
    return out


def _fit_cfg(cfg: Cfg, seed: int, **kw) -> FitConfig:
    return FitConfig(n_gaussians=cfg.n_gaussians, iters=cfg.iters, seed=seed, **kw)


def _evaluate(clips, renders, dets, arm: str = "") -> dict[str, float]:
    """Consistency per detector (clips pooled), global SSIM / PSNR, Obj SSIM inside the guidance detections; metric
    names as in METRICS (``map_<arm>_<detector>``, ``ssim_<arm>``)."""
    m, a = {}, f"_{arm}" if arm else ""
    x = torch.cat([torch.as_tensor(c.frames) for c in clips])
    r = torch.cat(renders)
    for name, det in dets.items():
        c = consistency(detect(det, x), detect(det, r))
        for k, v in c.items():
            m[f"{k}{a}_{name}"] = v
    smap = kornia.metrics.ssim(r, x, 11).mean(1)
    m[f"ssim{a}"] = float(smap.mean())
    m[f"psnr{a}"] = float(kornia.metrics.psnr(r, x, 1.0))
    zones = [smap[k, int(b[1]):math.ceil(b[3]), int(b[0]):math.ceil(b[2])].mean()
             for k, d in enumerate(detect(dets["guide"], x)) for b in d["boxes"].tolist()]  # fmt: skip
    m[f"objssim{a}"] = float(torch.stack(zones).mean()) if zones else float("nan")
    return m


def _random_zones(boxes, h: int, w: int, rng) -> torch.Tensor:
    """The same boxes moved to random places that do not touch any of them (the visibility control's zones)."""
    out = []
    for b in boxes.tolist():
        bw, bh = b[2] - b[0], b[3] - b[1]
        for _ in range(100):
            x1, y1 = rng.uniform(0, max(w - bw, 1)), rng.uniform(0, max(h - bh, 1))
            cand = torch.tensor([[x1, y1, x1 + bw, y1 + bh]])
            if len(boxes) == 0 or float(box_iou(cand, boxes).max()) == 0.0:
                break
        out.append(cand[0])
    return torch.stack(out) if out else torch.zeros(0, 4)


def _scene(clip, fcfg: FitConfig):
    """3D clips (they carry camera poses) get 3D Gaussians at their LiDAR-like points; 2D clips the fitter's default."""
    if not hasattr(clip, "rot"):
        return None
    return GaussianScene3D.from_sequence(clip, fcfg.n_gaussians, fcfg.dynamic_frac, fcfg.seed)


def _fit_arm(clips, arm, dets, fcfg, seed: int = 0):
    """One arm's fits. Controls: "ctrl" = L_perc of the trained guidance detector with its reference detections moved
    to random places (same sizes, classes and weight: the loss's gradient scale, the wrong targets); "visrand" =
    L_obj-vis on zones of the same sizes at random places (no object knowledge)."""
    h, w = clips[0].frames.shape[2:]
    zones, move = [None] * len(clips), None
    if arm == "visrand":
        rng = np.random.default_rng(20_000 + seed)
        zones = [[_random_zones(d["boxes"], h, w, rng) for d in detect(dets["guide"], c.frames, fcfg.conf)]
                 for c in clips]  # fmt: skip
    if arm == "ctrl":
        rng = np.random.default_rng(30_000 + seed)

        def move(boxes):
            return [_random_zones(b, h, w, rng) for b in boxes]

    res = [fit(c.frames, dets["guide"], ARM_LOSSES[arm], fcfg, boxes=z, scene=_scene(c, fcfg), move_refs=move)
           for c, z in zip(clips, zones)]  # fmt: skip
    return [r.renders for r in res], sum(r.seconds for r in res)


def _tune(cfg: Cfg, dets, log):
    """λ_perc and λ_obj on the validation clips: maximise the guidance detector's mAP minus 10 × the relative SSIM
    drop beyond ssim_tol (the paper's constrained objective, Eq. 3), grids extended past an edge pick. Once per
    configuration, shared by every seed and worker (cached on disk under a lock)."""
    key = _key(cfg, *[f.name for f in dataclasses.fields(cfg) if f.name != "seeds"])
    if key in _CACHE:
        return _CACHE[key]

    def compute():
        val = [make_sequence(cfg, 50_000 + i) for i in range(cfg.n_val_clips)]
        ren, _ = _fit_arm(val, "visual", dets, _fit_cfg(cfg, 0))
        ssim0 = _evaluate(val, ren, dets)["ssim"]

        def score(arm, **kw):
            def f(lam):
                ren, _ = _fit_arm(val, arm, dets, _fit_cfg(cfg, 0, **{k: lam for k in kw}))
                e = _evaluate(val, ren, dets)
                drop = (ssim0 - e["ssim"]) / ssim0
                s = e["map_guide"] - 10 * max(0.0, drop - cfg.ssim_tol)
                log(f"  tune {arm} λ={lam:g}: val mAP {e['map_guide']:.3f}, SSIM drop {drop:+.4f} -> score {s:.3f}")
                return s, None

            return f

        rp = tune_on_grid(score("perc", lambda_perc=1), cfg.perc_grid, max_extensions=cfg.max_ext)
        ro = tune_on_grid(score("vis", lambda_obj=1), cfg.obj_grid, max_extensions=cfg.max_ext)
        log(f"tuned λ_perc {rp.best:g}, λ_obj {ro.best:g} (edge pick left: {rp.at_edge or ro.at_edge}); "
            f"validation SSIM visual {ssim0:.4f}")  # fmt: skip
        return {"lambda_perc": rp.best, "lambda_obj": ro.best, "at_edge": rp.at_edge or ro.at_edge,
                "perc_scores": {f"{k:g}": v for k, v in rp.scores.items()},
                "obj_scores": {f"{k:g}": v for k, v in ro.scores.items()}}  # fmt: skip

    path = trained_cache_dir() / "gs_perception" / f"tuning-{key}.json"
    d = cached_json(path, "the gs-perception λ tuning", compute)
    _CACHE[key] = out = (d["lambda_perc"], d["lambda_obj"], d["at_edge"])
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    torch.manual_seed(seed)
    dets = _detectors(cfg, ctx.log)
    m = {}
    # testbed: the detectors find the true objects on held-out original frames
    x, b, lab = make_frames(cfg, 7000 + seed, cfg.n_eval)
    for name, det in dets.items():
        d = detect(det, x)
        m[f"recall_{name}"] = recall(d, b, lab)
        m[f"map_{name}_true"] = mean_ap([{"boxes": torch.as_tensor(bb), "labels": torch.as_tensor(ll)}
                                         for bb, ll in zip(b, lab)], d)  # fmt: skip
    lam_p, lam_o, _ = _tune(cfg, dets, ctx.log)
    m["lambda_perc"], m["lambda_obj"] = lam_p, lam_o
    clips = [make_sequence(cfg, 1000 * seed + i) for i in range(cfg.n_clips)]
    renders = {}
    for arm in ARMS:
        fcfg = _fit_cfg(cfg, seed, lambda_perc=lam_p, lambda_obj=lam_o)
        renders[arm], sec = _fit_arm(clips, arm, dets, fcfg, seed)
        m.update(_evaluate(clips, renders[arm], dets, arm))
        m[f"sec_{arm}"] = sec
        ctx.log(f"seed {seed} {arm:6s}: mAP guide {m[f'map_{arm}_guide']:.3f} unseen {m[f'map_{arm}_unseen']:.3f}, "
                f"IoU {m[f'iou_{arm}_guide']:.3f}/{m[f'iou_{arm}_unseen']:.3f}, miss {m[f'miss_{arm}_guide']:.2f}/"
                f"{m[f'miss_{arm}_unseen']:.2f}, SSIM {m[f'ssim_{arm}']:.4f}, PSNR {m[f'psnr_{arm}']:.2f}, "
                f"Obj SSIM {m[f'objssim_{arm}']:.3f}, {sec:.1f}s")  # fmt: skip
    for arm in ARMS[1:]:
        m[f"ssim_drop_{arm}"] = (m["ssim_visual"] - m[f"ssim_{arm}"]) / m["ssim_visual"]
    m["time_ratio_perc"] = m["sec_perc"] / m["sec_visual"]
    m["time_ratio_vis"] = m["sec_vis"] / m["sec_visual"]
    np.savez_compressed(ctx.artifact_path(f"renders_seed{seed}.npz"), original=clips[0].frames,
                        **{a: renders[a][0].numpy() for a in ("visual", "perc", "vis", "both")})  # fmt: skip
    return m


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    figs = []
    seed = min(per_seed)
    path = run_dir / "artifacts" / f"renders_seed{seed}.npz"
    if path.exists():
        z = np.load(path)
        dets = _detectors(cfg, lambda s: None)
        cols = [("original", "original x"), ("visual", "visual only"), ("perc", "+ perception"),
                ("both", "+ perception + visibility")]  # fmt: skip
        n = z["original"].shape[0]
        fig, axes = plt.subplots(n, len(cols), figsize=(14, 2.6 * n), squeeze=False)
        for f in range(n):
            for j, (key, title) in enumerate(cols):
                img = torch.as_tensor(z[key][f : f + 1])
                ax = axes[f, j]
                ax.imshow(img[0].permute(1, 2, 0).clamp(0, 1).numpy(), interpolation="nearest")
                for name, colour in (("guide", "red"), ("unseen", "cyan")):
                    for b in detect(dets[name], img)[0]["boxes"].tolist():  # pixel i spans [i - 0.5, i + 0.5]
                        xy, w, h = (b[0] - 0.5, b[1] - 0.5), b[2] - b[0], b[3] - b[1]
                        ax.add_patch(plt.Rectangle(xy, w, h, fill=False, ec=colour, lw=0.8))
                ax.set_title(f"{title} (frame {f})", fontsize=8)
                ax.set_xticks([]), ax.set_yticks([])
        fig.suptitle(f"seed {seed}: reconstructions with detections (red: guidance, cyan: unseen detector)", fontsize=9)
        fig.tight_layout()
        figs.append(("reconstructions", fig))
    seeds = list(per_seed.values())
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.2))
    for ax, (met, title) in zip(axes, (("map_{}_guide", "mAP, guidance"), ("map_{}_unseen", "mAP, unseen"),
                                       ("ssim_{}", "global SSIM"))):  # fmt: skip
        vals = [[s[met.format(a)] for s in seeds] for a in ARMS]
        ax.bar(range(len(ARMS)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals],
               color=["0.6", "C0", "C1", "C2", "0.85", "0.85"])  # fmt: skip
        ax.set_xticks(range(len(ARMS)), ARMS, fontsize=8)
        ax.set_title(f"{title} (mean ± sd over seeds)", fontsize=9)
    fig.tight_layout()
    figs.append(("arms", fig))
    return figs
