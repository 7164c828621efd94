"""The gf-screen reproduction: `run` (imported only to run; the light card is `__init__.py`).

Shared by the seeds of one config (built once per process, the two Focus models also cached on disk): the training and
validation volumes, the Focus and its shuffled-label control, their validation window outputs and voxel thresholds.
Per seed: the test volumes, three Glance models trained to convergence against the fixed Focus, the tuned Glance
thresholds, the screening metrics of every method and the measured time per volume.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

import numpy as np
import torch

from iclr26.core.cache import read_checked, read_tensors, write_checked, write_tensors
from iclr26.core.locks import file_lock
from iclr26.core.paths import trained_cache_dir
from iclr26.core.threads import run_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.science.gf_screen import (
    GlanceSpec,
    GRLConfig,
    ScreenConfig,
    TrainConfig,
    aggregate,
    make_focus,
    make_glance,
    screen,
    segment_all,
    summarize,
    tile_windows,
    train_focus,
    train_glance,
    volume_metrics,
    window_auroc,
    window_outputs,
    window_scores,
)
from iclr26.science.gf_screen.screen import timed
from iclr26.science.gf_screen.world import CTWorldConfig, make_ct_dataset

from . import Cfg

FOCUS_VERSION = 1  # bump when the cached Focus models' recipe changes
TRAIN0, VAL0, TEST0 = 100_000, 200_000, 300_000  # disjoint world seeds: training, validation, test (+1000·seed)
FG_ODDS = (1 / 3, 1, 3, 9, 27, 81)  # Focus voxel threshold t through its odds t/(1 − t): 0.25 … 0.988
GLANCE_INV_ODDS = (1 / 9, 1 / 3, 1, 3, 9)  # Glance threshold t through (1 − t)/t: 0.9 … 0.1 (ties → higher t)
KINDS = {"f1": "f1", "fpr": "fpr", "dice": "dice", "sens": "sensitivity", "recall": "lesion_recall",
         "fp": "fp_per_scan"}  # fmt: skip
OP_KINDS = ("fpr", "fp", "sens", "f1")  # reported at the operating point of the target FPR too (`*_op`)
_SHARED: dict = {}


def _world(cfg: Cfg) -> CTWorldConfig:
    return CTWorldConfig(size=tuple(cfg.size), radius=tuple(cfg.radius), hypo_hu=tuple(cfg.hypo_hu),
                         hyper_hu=tuple(cfg.hyper_hu))  # fmt: skip


def _key(cfg: Cfg, *names) -> str:
    d = {n: getattr(cfg, n) for n in names}
    return hashlib.sha1(json.dumps([FOCUS_VERSION, d], sort_keys=True).encode()).hexdigest()[:12]


def _focus_cfg(cfg: Cfg) -> TrainConfig:
    """The Focus recipe (docs, "Reproduction protocol"): weighted CE 20 → 3, no Dice, hard negatives, context 1.5."""
    return TrainConfig(steps=cfg.focus_steps, fg_class_weight=cfg.fg_weight, fg_class_weight_final=cfg.fg_weight_final,
                       hard_neg=cfg.hard_neg, dice_weight=0.0, context=cfg.context, focus_lr=cfg.focus_lr)  # fmt: skip


def _screen_cfg(cfg: Cfg) -> ScreenConfig:
    return ScreenConfig(roi=(16, 16, 16), overlap=cfg.overlap)


def _score(m: dict) -> float:
    """The one tuning criterion: (scan F1 + Dice) / 2 on the validation volumes."""
    return (m["f1"] + float(np.nan_to_num(m["dice"]))) / 2


def _summ(maps, labels, t: float) -> dict:
    return summarize([volume_metrics(p > t, lab[0]) for p, lab in zip(maps, labels)])


def _trained_focus(cfg: Cfg, kind: str, data, log):
    """The Focus ('real') or its shuffled-label control ('shuf'): same initialisation, recipe and early stopping,
    trained once per config and cached under ``trained_cache_dir()/gf_screen``."""
    key = _key(
        cfg,
        "n_train",
        "n_val",
        "size",
        "radius",
        "hypo_hu",
        "hyper_hu",
        "focus_channels",
        "focus_steps",
        "focus_eval_every",
        "focus_patience",
        "focus_lr",
        "fg_weight",
        "fg_weight_final",
        "hard_neg",
        "context",
    )
    path = trained_cache_dir() / "gf_screen" / f"focus-{kind}-{key}.pt"
    torch.manual_seed(0)  # focus_seed = 0: the same initial weights for the real and the shuffled-label model
    focus = make_focus("unet_bn", tuple(cfg.focus_channels))
    focus.roi = (16, 16, 16)
    with file_lock(path.with_suffix(".lock"), f"the gf-screen {kind} Focus"):
        blob = read_checked(path, read_tensors)  # weights and numbers only (no pickle); a damaged file is rebuilt
        if blob is not None:
            focus.load_state_dict(blob["state"])
            return focus.eval(), blob["hist"]
        tr_im, tr_lab, va_im, va_lab = data
        labels = tr_lab if kind == "real" else np.roll(tr_lab, 1, axis=0)  # control: another volume's lesion mask
        cpu = time.process_time()
        hist = train_focus(tr_im, labels, focus, (va_im, va_lab), _focus_cfg(cfg), seed=0,
                           eval_every=cfg.focus_eval_every, patience=cfg.focus_patience, progress=True)  # fmt: skip
        log(f"{kind} Focus: {len(hist['seg_loss'])} steps in {time.process_time() - cpu:.0f} CPU s, best step "
            f"{hist['best_step'][0]}, validation "
            f"{[round(s, 3) for s in hist['val_score']]}")  # fmt: skip
        write_checked(path, {"state": focus.state_dict(), "hist": hist}, write_tensors)
    return focus.eval(), hist


def _tune_fg(maps, labels) -> float:
    """Focus voxel threshold by the tuning rule (odds grid, ties → the lower threshold)."""
    res = tune_on_grid(lambda o: (_score(_summ(maps, labels, o / (1 + o))), None), FG_ODDS)
    return res.best / (1 + res.best)


def _fpr_threshold(maps, labels, target: float) -> tuple[float, float]:
    """The baseline's operating point at a target FPR: the lowest voxel threshold on the odds grid (extended by ×3 up
    to odds 3^10) whose validation FPR is at most ``target``; if none reaches it, the one with the lowest FPR (ties →
    the lower threshold). Returns (threshold, its validation FPR)."""
    best = None
    for odds in (*FG_ODDS, *(81 * 3.0**k for k in range(1, 7))):
        t = odds / (1 + odds)
        fpr = _summ(maps, labels, t)["fpr"]
        if fpr <= target:
            return t, fpr
        if best is None or fpr < best[1]:
            best = (t, fpr)
    return best


def _shared(cfg: Cfg, log) -> dict:
    """Data, Focus models, validation windows and voxel thresholds of one config (built once per process)."""
    k = json.dumps(dataclasses.asdict(dataclasses.replace(cfg, seeds=())), sort_keys=True)
    if k in _SHARED:
        return _SHARED[k]
    w = _world(cfg)
    tr_im, tr_lab, _ = make_ct_dataset(range(TRAIN0, TRAIN0 + cfg.n_train), w)
    va_im, va_lab, _ = make_ct_dataset(range(VAL0, VAL0 + cfg.n_val), w)
    data = (tr_im, tr_lab, va_im, va_lab)
    focus, f_hist = _trained_focus(cfg, "real", data, log)
    ctrl, c_hist = _trained_focus(cfg, "shuf", data, log)
    scfg = _screen_cfg(cfg)
    val = [window_outputs(torch.from_numpy(x[None]), focus, {}, scfg, lab) for x, lab in zip(va_im, va_lab)]
    maps = [aggregate(c, np.ones(len(c.slices), bool)) for c in val]
    ctrl_maps = [segment_all(torch.from_numpy(x[None]), ctrl, scfg).numpy() for x in va_im]
    windows, has, _ = tile_windows(va_im, va_lab, scfg)
    out = dict(tr=(tr_im, tr_lab), va=(va_im, va_lab), focus=focus, ctrl=ctrl, val=val, windows=windows, has=has,
               fg_t=_tune_fg(maps, va_lab), ctrl_t=_tune_fg(ctrl_maps, va_lab),
               fg_op=_fpr_threshold(maps, va_lab, cfg.target_fpr),
               f_best=f_hist["best_step"][0], c_best=c_hist["best_step"][0])  # fmt: skip
    log(f"Focus voxel threshold {out['fg_t']:.3f} (control {out['ctrl_t']:.3f}); Focus best step {out['f_best']}, "
        f"control {out['c_best']}")  # fmt: skip
    _SHARED[k] = out
    return out


def _glances(cfg: Cfg, seed: int) -> dict[str, GlanceSpec]:
    specs = {}
    for name, grl in (("gf", GRLConfig()), ("sup", None), ("dice", GRLConfig(reward="dice"))):
        torch.manual_seed(1000 + seed)  # the three Glance models start from the same weights
        specs[name] = GlanceSpec(make_glance(tuple(cfg.glance_widths)), grl)
    return specs


def _split(scores: np.ndarray, caches) -> list[np.ndarray]:
    return np.split(scores, np.cumsum([len(c.slices) for c in caches])[:-1])


def _tune_glance(caches, scores, labels, fg_t: float) -> float:
    """Glance threshold by the tuning rule (grid on the inverse odds, ties → the higher, cheaper threshold)."""

    def ev(v):
        t = 1 / (1 + v)
        maps = [aggregate(c, s > t) for c, s in zip(caches, scores)]
        return _score(_summ(maps, labels, fg_t)), None

    return 1 / (1 + tune_on_grid(ev, GLANCE_INV_ODDS).best)


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    sh = _shared(cfg, ctx.log)
    focus, scfg, fg_t = sh["focus"], _screen_cfg(cfg), sh["fg_t"]
    m: dict[str, float] = {"fg_thresh": fg_t, "fg_thresh_ctrl": sh["ctrl_t"], "focus_best_step": sh["f_best"],
                           "ctrl_best_step": sh["c_best"], "fg_thresh_op": sh["fg_op"][0],
                           "val_fpr_op": sh["fg_op"][1]}  # fmt: skip
    # Glance models: one stream, one early-stopping rule (validation window AUROC), best weights kept
    specs = _glances(cfg, seed)
    gcfg = dataclasses.replace(
        _focus_cfg(cfg), steps=cfg.glance_steps, lr=cfg.glance_lr, uniform_neg=cfg.glance_uniform_neg
    )
    hist = train_glance(*sh["tr"], focus, specs, (sh["windows"], sh["has"]), gcfg, seed=seed,
                        eval_every=cfg.glance_eval_every, patience=cfg.glance_patience, progress=True,
                        min_steps=int(cfg.glance_min_frac * cfg.glance_steps))  # fmt: skip
    m["train_reward"] = hist["_reward"]["detect_on_lesion_crops"]
    glances = {n: s.model for n, s in specs.items()}
    thresh = {}
    for n, g in glances.items():
        val_scores = _split(window_scores(g, sh["windows"]), sh["val"])
        thresh[n] = _tune_glance(sh["val"], val_scores, sh["va"][1], fg_t)
        m.update({f"thresh_{n}": thresh[n], f"val_auroc_{n}": hist[n]["best"], f"best_step_{n}": hist[n]["best_step"],
                  f"steps_{n}": hist[n]["steps"]})  # fmt: skip
    ctx.save_artifact(f"glance_history_seed{seed}", {n: hist[n] for n in glances})
    # test volumes: every window's Focus output and Glance scores once, then each method's selection
    te_im, te_lab, _ = make_ct_dataset(range(TEST0 + 1000 * seed, TEST0 + 1000 * seed + cfg.n_test), _world(cfg))
    xs = [torch.from_numpy(x[None]) for x in te_im]
    caches = [window_outputs(x, focus, glances, scfg, lab) for x, lab in zip(xs, te_lab)]
    rng = np.random.default_rng(50_000 + seed)
    sel = {"all": [np.ones(len(c.slices), bool) for c in caches], "oracle": [c.has_lesion for c in caches],
           "sup05": [c.scores["sup"] > 0.5 for c in caches]}  # fmt: skip
    for n in glances:
        sel[n] = [c.scores[n] > thresh[n] for c in caches]
    sel["random"] = [np.isin(np.arange(len(c.slices)), rng.choice(len(c.slices), int(s.sum()), replace=False))
                     for c, s in zip(caches, sel["gf"])]  # fmt: skip
    for name, s in sel.items():
        maps = [aggregate(c, si) for c, si in zip(caches, s)]
        res = _summ(maps, te_lab, fg_t)
        m.update({f"{k}_{name}": res[v] for k, v in KINDS.items()})
        op = _summ(maps, te_lab, sh["fg_op"][0])  # the baseline's operating point at the target FPR, same selection
        m.update({f"{k}_{name}_op": op[KINDS[k]] for k in OP_KINDS})
        m[f"ratio_{name}"] = float(np.mean([si.mean() for si in s]))
    res = _summ([segment_all(x, sh["ctrl"], scfg).numpy() for x in xs], te_lab, sh["ctrl_t"])
    m.update({f"{k}_ctrl": res[v] for k, v in KINDS.items()}, ratio_ctrl=1.0)
    has = np.concatenate([c.has_lesion for c in caches])
    for n in glances:
        m[f"test_auroc_{n}"] = window_auroc(np.concatenate([c.scores[n] for c in caches]), has)
    m.update(_timing(cfg, xs, caches, focus, glances["gf"], thresh["gf"], sel["gf"]))
    ctx.save_artifact(f"slices_seed{seed}", _slice_record(te_im, te_lab, caches, sel, fg_t))
    ctx.log(
        " | ".join(
            f"{n}: F1 {m[f'f1_{n}']:.2f} Dice {m[f'dice_{n}']:.2f} FPR {m[f'fpr_{n}']:.2f} FP "
            f"{m[f'fp_{n}']:.1f} win {m[f'ratio_{n}']:.2f}"
            for n in ("all", "gf", "sup", "sup05", "dice", "random", "oracle", "ctrl")
        )
    )
    ctx.log(
        f"Glance val AUROC gf {m['val_auroc_gf']:.3f} (step {m['best_step_gf']}/{m['steps_gf']}), sup "
        f"{m['val_auroc_sup']:.3f} ({m['best_step_sup']}/{m['steps_sup']}), dice {m['val_auroc_dice']:.3f} "
        f"({m['best_step_dice']}/{m['steps_dice']}); thresholds {thresh}; speed-up {m['speedup_gf']:.2f}"
    )
    return m


def _timing(cfg: Cfg, xs, caches, focus, glance, t_gf: float, sel_gf) -> dict[str, float]:
    """Seconds per volume of segment_all and of screen (interleaved, the minimum of repeats per volume), and a check
    that the timed GF-Screen output equals the cached evaluation."""
    n = min(cfg.n_timed, len(xs))
    best_all, best_gf = np.full(n, np.inf), np.full(n, np.inf)
    match = True
    gcfg = dataclasses.replace(_screen_cfg(cfg), select_thresh=t_gf)
    for _ in range(cfg.time_repeats):
        for i in range(n):
            _, t_a = timed(segment_all, xs[i], focus, _screen_cfg(cfg))
            (p, _), t_g = timed(screen, xs[i], focus, glance, gcfg)
            best_all[i], best_gf[i] = min(best_all[i], t_a), min(best_gf[i], t_g)
            match &= float(np.abs(p.numpy() - aggregate(caches[i], sel_gf[i])).max()) < 1e-4
    sec_all, sec_gf = float(best_all.mean()), float(best_gf.mean())
    return {"sec_all": sec_all, "sec_gf": sec_gf, "speedup_gf": sec_all / sec_gf, "screen_matches_cache": float(match)}


def _slice_record(images, labels, caches, sel, fg_t: float, n: int = 2) -> list[dict]:
    """For the figure: the axial slice through the largest lesion of the first ``n`` lesion-positive test volumes,
    with the true mask, the every-window prediction, GF-Screen's prediction and the windows GF-Screen selected."""
    out = []
    for i in [i for i, lab in enumerate(labels) if lab.any()][:n]:
        z = int(labels[i][0].sum(axis=(0, 1)).argmax())
        pred = {k: (aggregate(caches[i], sel[k][i]) > fg_t)[..., z] for k in ("all", "gf")}
        boxes = [[sl[0].start, sl[0].stop, sl[1].start, sl[1].stop] for sl, on in
                 zip(caches[i].slices, sel["gf"][i]) if on and sl[2].start <= z < sl[2].stop]  # fmt: skip
        out.append({"volume": i, "z": z, "image": np.round(images[i][0][..., z], 1).tolist(),
                    "label": labels[i][0][..., z].astype(int).tolist(), "pred_all": pred["all"].astype(int).tolist(),
                    "pred_gf": pred["gf"].astype(int).tolist(), "gf_windows": boxes,
                    "ratio_gf": float(sel["gf"][i].mean())})  # fmt: skip
    return out


def plots(run_dir, per_seed, cfg):
    """CT slices with masks (seed 0's first lesion-positive test volumes): the slice, the true lesion mask, the Focus
    on every window, GF-Screen (the Glance-selected windows outlined); and the methods' test metrics."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    figs = []
    f = run_dir / "artifacts" / f"slices_seed{min(per_seed)}.json"
    recs = json.loads(f.read_text()) if f.exists() else []
    if recs:
        fig, axes = plt.subplots(len(recs), 3, figsize=(10, 3.4 * len(recs)), squeeze=False)
        for row, r in zip(axes, recs):
            img, lab = np.array(r["image"]), np.array(r["label"])
            for ax, key, title in zip(row, ("label", "pred_all", "pred_gf"),
                                      ("true lesion mask", "Focus on every window", "GF-Screen")):  # fmt: skip
                ax.imshow(img.T, cmap="gray", origin="lower")
                ax.contour(lab.T, levels=[0.5], colors="lime", linewidths=1.0)
                if key != "label":
                    ax.imshow(np.ma.masked_equal(np.array(r[key]).T, 0), cmap="autumn", alpha=0.6, origin="lower")
                if key == "pred_gf":
                    for y0, y1, x0, x1 in r["gf_windows"]:
                        ax.add_patch(Rectangle((y0 - 0.5, x0 - 0.5), y1 - y0, x1 - x0, fill=False, ec="cyan", lw=0.5))
                    title += f" ({100 * r['ratio_gf']:.0f} % of windows)"
                ax.set_title(f"volume {r['volume']}, z {r['z']}: {title}" if key == "label" else title, fontsize=8)
                ax.set_axis_off()
        fig.suptitle("green: true lesion; red/orange: predicted lesion voxels; cyan: windows given to the Focus")
        figs.append(("ct_slices", fig))
    names = [n for n in ("all", "gf", "sup", "sup05", "dice", "random", "oracle", "ctrl")
             if all(f"f1_{n}" in m for m in per_seed.values())]  # fmt: skip
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    for ax, k in zip(axes, ("f1", "dice", "fpr", "ratio")):
        vals = [[m[f"{k}_{n}"] for m in per_seed.values()] for n in names]
        ax.bar(range(len(names)), [np.nanmean(v) for v in vals], yerr=[np.nanstd(v) for v in vals], capsize=2)
        ax.set_xticks(range(len(names)), names, rotation=45, fontsize=7)
        ax.set_title({"f1": "scan F1", "dice": "Dice", "fpr": "FPR (lesion-free scans)",
                      "ratio": "share of windows to Focus"}[k], fontsize=9)  # fmt: skip
    fig.tight_layout()
    figs.append(("methods", fig))
    return figs
