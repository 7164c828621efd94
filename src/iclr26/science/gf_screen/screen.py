"""Glance-and-focus inference and the screening metrics (GF-Screen, https://arxiv.org/abs/2601.19103).

Inference (official ``valid``): tile the volume into overlapping windows, let the Glance model score every window,
run the Focus segmenter only on windows with p(select) > threshold, average the Focus probabilities over the selected
windows covering each voxel (a count map of *selected* windows only) and call everything else background.

We run this through MONAI's ``sliding_window_inference`` with a gated predictor: for a batch of windows it returns the
channels (p_bg · s, p_fg · s, s), with s ∈ {0, 1} the selection. MONAI averages every channel over all windows; the
ratio channel-1 / channel-2 is then exactly the average of p_fg over the selected windows. With every window selected
the result equals plain sliding-window inference of the Focus network (the nnU-Net-like baseline, ``segment_all``),
which ``tests/test_gf_screen.py`` checks.

For tuning thresholds without re-running the networks, ``window_outputs`` records every window's Focus probabilities
and Glance scores once, and ``aggregate`` rebuilds the screened map for any selection (same arithmetic).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import ndimage


@dataclass(frozen=True)
class ScreenConfig:
    roi: tuple[int, int, int] = field(default=(16, 16, 16), metadata={"help": "window size (paper: 96×96×64)"})
    overlap: float = field(default=0.5, metadata={"help": "window overlap (paper: 0.75; ours 0.5 for CPU)"})
    select_thresh: float = field(default=0.9, metadata={"help": "select if p(select) > this (code `valid`: 0.9)"})
    fg_thresh: float = field(default=0.5, metadata={"help": "lesion if averaged p_fg > this (code: argmax = 0.5)"})
    sw_batch_size: int = field(default=32, metadata={"help": "windows per network call (code: 4; memory only)"})

    def __post_init__(self):
        if len(self.roi) != 3 or min(self.roi) < 4:
            raise ValueError(f"ScreenConfig.roi must be 3 sides >= 4, got {self.roi!r}")
        if not 0 <= self.overlap < 1:
            raise ValueError(f"ScreenConfig.overlap must lie in [0, 1), got {self.overlap!r}")
        if not 0 <= self.select_thresh <= 1 or not 0 <= self.fg_thresh < 1:
            raise ValueError(f"ScreenConfig thresholds must lie in [0, 1], got {self.select_thresh!r}, "
                             f"{self.fg_thresh!r}")  # fmt: skip
        if self.sw_batch_size < 1:
            raise ValueError(f"ScreenConfig.sw_batch_size must be >= 1, got {self.sw_batch_size!r}")


def _check_image(image: torch.Tensor) -> None:
    if not isinstance(image, torch.Tensor) or image.dim() != 5 or image.shape[:2] != (1, 1):
        raise ValueError(f"image must be a torch tensor [1, 1, X, Y, Z], got {getattr(image, 'shape', type(image))}")
    lo, hi = float(image.min()), float(image.max())
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo < -1e-3 or hi > 1 + 1e-3:
        raise ValueError(f"image must be a CT windowed to [0, 1] (values {lo:.4g} to {hi:.4g}): raw HU values are "
                         "not accepted; window it first, e.g. iclr26.science.gf_screen.world.window(hu)")  # fmt: skip


def glance_scores(glance: torch.nn.Module, windows: torch.Tensor) -> torch.Tensor:
    """p(select) of each window [N, 1, ...] -> [N]."""
    return torch.softmax(glance(windows).float(), dim=1)[:, 1]


@torch.no_grad()
def screen(
    image: torch.Tensor,
    focus: torch.nn.Module,
    glance: torch.nn.Module | None = None,
    cfg: ScreenConfig = ScreenConfig(),
    selector: Callable[[torch.Tensor, list], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GF-Screen inference on one volume: returns (p_fg map [X, Y, Z], stats). The Focus network runs only on the
    windows the Glance model (p(select) > ``cfg.select_thresh``) or a custom ``selector(windows, slices) -> bool``
    selects; with neither, every window is selected (the sliding-window baseline)."""
    from monai.inferers import sliding_window_inference

    _check_image(image)
    counts = {"windows": 0, "selected": 0}

    def gated(win: torch.Tensor, slices) -> torch.Tensor:
        if selector is not None:
            sel = selector(win, slices).bool()
        elif glance is not None:
            sel = glance_scores(glance, win) > cfg.select_thresh
        else:
            sel = torch.ones(win.shape[0], dtype=torch.bool)
        out = torch.zeros((win.shape[0], 3, *win.shape[2:]), dtype=torch.float32)
        if sel.any():  # Focus only on the selected windows
            out[sel, :2] = torch.softmax(focus(win[sel]).float(), dim=1)
        out[sel, 2] = 1.0
        counts["windows"] += win.shape[0]
        counts["selected"] += int(sel.sum())
        return out

    agg = sliding_window_inference(image, cfg.roi, cfg.sw_batch_size, gated, overlap=cfg.overlap, with_coord=True)
    den = agg[0, 2]
    p_fg = torch.where(den > 0, agg[0, 1] / den.clamp_min(1e-12), torch.zeros_like(den))
    return p_fg, {**counts, "ratio": counts["selected"] / max(counts["windows"], 1)}


@torch.no_grad()
def segment_all(image: torch.Tensor, focus: torch.nn.Module, cfg: ScreenConfig = ScreenConfig()) -> torch.Tensor:
    """The baseline: MONAI sliding-window inference of the Focus network over every window, softmax p_fg."""
    from monai.inferers import sliding_window_inference

    _check_image(image)
    out = sliding_window_inference(
        image, cfg.roi, cfg.sw_batch_size, lambda w: torch.softmax(focus(w).float(), 1), overlap=cfg.overlap
    )
    return out[0, 1]


@dataclass
class WindowCache:
    """Every window of one volume: its spatial slices, the Focus p_fg inside it and each Glance model's p(select)."""

    shape: tuple[int, int, int]
    slices: list
    p_fg: np.ndarray  # [W, *roi] float32
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [W]
    has_lesion: np.ndarray | None = None  # [W] bool, from the label (for oracle/diagnostics)


@torch.no_grad()
def window_outputs(
    image: torch.Tensor, focus: torch.nn.Module, glances: dict, cfg: ScreenConfig = ScreenConfig(), label=None
) -> WindowCache:
    """Run the Focus network and every Glance model on every window once (MONAI's tiling) and record the outputs."""
    from monai.inferers import sliding_window_inference

    _check_image(image)
    rec = {"slices": [], "p": [], **{k: [] for k in glances}}

    def record(win, slices):
        p = torch.softmax(focus(win).float(), 1)
        rec["slices"] += [tuple(s[2:]) for s in slices]
        rec["p"].append(p[:, 1].numpy())
        for k, g in glances.items():
            rec[k].append(glance_scores(g, win).numpy())
        return p

    sliding_window_inference(image, cfg.roi, cfg.sw_batch_size, record, overlap=cfg.overlap, with_coord=True)
    cache = WindowCache(tuple(image.shape[2:]), rec["slices"], np.concatenate(rec["p"]))
    cache.scores = {k: np.concatenate(rec[k]) for k in glances}
    if label is not None:
        lab = np.asarray(label).reshape(cache.shape)
        cache.has_lesion = np.array([bool(lab[s].any()) for s in cache.slices])
    return cache


def aggregate(cache: WindowCache, selected: np.ndarray) -> np.ndarray:
    """p_fg map of the screened volume for a window selection (average over selected windows, else background)."""
    num, den = np.zeros(cache.shape, np.float32), np.zeros(cache.shape, np.float32)
    for s, p, keep in zip(cache.slices, cache.p_fg, np.asarray(selected, bool)):
        if keep:
            num[s] += p
            den[s] += 1.0
    return np.where(den > 0, num / np.maximum(den, 1e-12), 0.0)


def volume_metrics(pred: np.ndarray, label: np.ndarray) -> dict[str, float]:
    """Detection and segmentation of one volume: any predicted component overlapping a lesion (``detected``), the
    number of false-positive components, lesions hit / total, and the Dice (MONAI ``compute_dice``, foreground)."""
    from monai.metrics import compute_dice

    pred, label = np.asarray(pred, bool), np.asarray(label, bool)
    comps, n_comp = ndimage.label(pred)
    hit = np.unique(comps[label & pred])
    n_fp = n_comp - int((hit > 0).sum())
    les, n_les = ndimage.label(label)
    les_hit = len(np.unique(les[label & pred]))
    out = {"positive": float(label.any()), "detected": float(len(hit) > 0), "any_pred": float(n_comp > 0)}
    out.update(fp_components=float(n_fp), lesions=float(n_les), lesions_hit=float(les_hit))
    if label.any():
        y = torch.from_numpy(np.stack([~label, label])[None].astype(np.float32))
        yp = torch.from_numpy(np.stack([~pred, pred])[None].astype(np.float32))
        out["dice"] = float(compute_dice(yp, y, include_background=False)[0, 0])
    return out


def summarize(per_volume: list[dict]) -> dict[str, float]:
    """Scan-level F1 and FPR, mean Dice over lesion-positive scans, lesion recall and FP components per scan."""
    pos = [m for m in per_volume if m["positive"]]
    neg = [m for m in per_volume if not m["positive"]]
    tp = sum(m["detected"] for m in pos)
    fn = len(pos) - tp
    fp = sum(m["any_pred"] for m in neg)
    return {
        "f1": 2 * tp / max(2 * tp + fp + fn, 1e-9),
        "fpr": fp / max(len(neg), 1),
        "sensitivity": tp / max(len(pos), 1),
        "dice": float(np.mean([m["dice"] for m in pos])) if pos else float("nan"),
        "lesion_recall": sum(m["lesions_hit"] for m in pos) / max(sum(m["lesions"] for m in pos), 1),
        "fp_per_scan": float(np.mean([m["fp_components"] for m in per_volume])),
    }


def timed(fn, *args, **kwargs):
    """(result, seconds) of one call: the measured wall-clock time, not a FLOP estimate."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t
