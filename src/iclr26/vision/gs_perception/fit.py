"""`fit(frames, detector, losses=...)`: a perception-aware Gaussian splatting fit of a short clip (paper Eq. 7).

    L_total = λ_visual · L_visual + λ_perc · L_perc + λ_obj · L_obj-vis

The detector is the user's own frozen torch module (see `PerceptionLoss` for the protocol); its detections on the
original frames are computed once, before training (pseudo-labels for L_perc, boxes / mask for L_obj-vis). As in the
paper, the coarse stage uses the visual loss only and the perception losses join in the fine stage.

    from iclr26.vision.gs_perception import FitConfig, fit
    res = fit(frames, detector, losses=("visual", "perception", "visibility"), cfg=FitConfig(n_gaussians=200))
    res.renders            # (F, 3, H, W) reconstruction; res.scene is the GaussianScene; res.seconds the wall time

For posed 3D clips pass ``scene=GaussianScene3D.from_sequence(seq, n)``: the same losses then fit 3D Gaussians rendered
through the EWA projection (`scene3d`, `ewa`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from .losses import PerceptionLoss, visibility_loss, visual_loss
from .render import GaussianScene

LOSSES = ("visual", "perception", "visibility")


@dataclass
class FitConfig:
    n_gaussians: int = field(default=200, metadata={"help": "splat budget, equal for every arm (not stated; ours)"})
    dynamic_frac: float = field(default=0.25, metadata={"help": "share of dynamic splats (per-frame offsets; ours)"})
    iters: int = field(default=400, metadata={"help": "optimisation steps (paper: 5k coarse + 30k fine; ours)"})
    coarse_frac: float = field(default=0.3, metadata={"help": "share of steps with L_visual only (paper: 5k of 35k)"})
    lambda_visual: float = field(default=1.0, metadata={"help": "λ_visual (paper: 1)"})
    lambda_perc: float = field(default=1.0, metadata={"help": "λ_perc (paper: 1; official OmniRe config: 0.3 × 1e-3)"})
    lambda_obj: float = field(default=1.0, metadata={"help": "λ_obj-vis (paper: 1; official OmniRe config: 0.5)"})
    box_weight: float = field(default=1.0, metadata={"help": "λ_box inside L_perc (paper: 1)"})
    cls_weight: float = field(default=1.0, metadata={"help": "λ_cls inside L_perc (paper: 1)"})
    conf: float = field(default=0.3, metadata={"help": "pseudo-label confidence threshold (not stated; code 0.5)"})
    l1_weight: float = field(default=0.8, metadata={"help": "L1 weight of the photometric loss (3DGS / OmniRe: 0.8)"})
    ssim_weight: float = field(default=0.2, metadata={"help": "1 − SSIM weight (3DGS / OmniRe: 0.2)"})
    ssim_window: int = field(default=11, metadata={"help": "SSIM window of L_visual (3DGS: 11)"})
    obj_window: int = field(default=5, metadata={"help": "SSIM window of L_obj-vis (official code: 9; ours, small "
                                                         "objects)"})  # fmt: skip
    lr_means: float = field(default=0.3, metadata={"help": "Adam lr of the means, pixels (ours)"})
    lr_shape: float = field(default=0.03, metadata={"help": "Adam lr of log-scales and angles (ours)"})
    lr_colour: float = field(default=0.05, metadata={"help": "Adam lr of colour and opacity logits (ours)"})
    tile: int = field(default=8, metadata={"help": "rasteriser tile size in pixels; 0 = dense (exact)"})
    seed: int = field(default=0, metadata={"help": "initialisation seed"})

    def __post_init__(self):
        if self.n_gaussians < 1 or self.iters < 1:
            raise ValueError(f"FitConfig: n_gaussians and iters must be >= 1, got {self.n_gaussians}, {self.iters}")
        if not 0.0 <= self.coarse_frac <= 1.0 or not 0.0 <= self.dynamic_frac < 1.0:
            raise ValueError(f"FitConfig: coarse_frac in [0, 1] and dynamic_frac in [0, 1) required, got "
                             f"{self.coarse_frac!r}, {self.dynamic_frac!r}")  # fmt: skip
        for name in ("lambda_visual", "lambda_perc", "lambda_obj", "box_weight", "cls_weight", "l1_weight",
                     "ssim_weight", "lr_means", "lr_shape", "lr_colour"):  # fmt: skip
            if getattr(self, name) < 0:
                raise ValueError(f"FitConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.ssim_window % 2 == 0 or self.obj_window % 2 == 0:
            raise ValueError(f"FitConfig: SSIM windows must be odd, got {self.ssim_window}, {self.obj_window}")


@dataclass
class FitResult:
    scene: torch.nn.Module  # GaussianScene or GaussianScene3D
    renders: torch.Tensor  # (F, 3, H, W), detached, clamped to [0, 1]
    seconds: float
    history: list = field(default_factory=list)  # (step, total loss)


def _moved_refs(refs, move_refs) -> list:
    if refs is None or not all(isinstance(r, dict) for r in refs):
        raise ValueError("fit: move_refs needs the perception loss with a detector that has `decode` / `assigned`")
    ref_boxes = move_refs([r["boxes"] for r in refs])
    if len(ref_boxes) != len(refs):
        raise ValueError(f"fit: move_refs returned {len(ref_boxes)} box lists for {len(refs)} frames")
    out = []
    for k, (r, b) in enumerate(zip(refs, ref_boxes)):
        b = torch.as_tensor(b, dtype=torch.float32).reshape(-1, 4)
        if len(b) != len(r["boxes"]):
            raise ValueError(f"fit: move_refs gave frame {k} {len(b)} boxes, the reference has {len(r['boxes'])}")
        out.append({**r, "boxes": b})
    return out


def fit(frames, detector=None, losses=("visual",), cfg: FitConfig | None = None, boxes: list | None = None,
        progress: bool = False, scene=None, move_refs=None) -> FitResult:  # fmt: skip
    """Fit a `GaussianScene` of ``cfg.n_gaussians`` splats to ``frames`` (F, 3, H, W) in [0, 1].

    ``losses``: any of "visual", "perception", "visibility". "perception" needs ``detector``; "visibility" needs
    ``detector`` or ``boxes`` (per frame (n, 4) boxes of the object zones). ``scene``: a ready scene to fit instead
    of the 2D one (e.g. `GaussianScene3D.from_sequence(seq, n)` for posed 3D clips; it has its own budget).
    ``move_refs``: a function of the per-frame boxes of L_perc's reference detections returning per-frame boxes of the
    same counts that replace them (their class probabilities are kept): a control that keeps the trained detector's
    gradient scale but puts its targets at the wrong places."""
    cfg = cfg or FitConfig()
    unknown = set(losses) - set(LOSSES)
    if unknown or not losses:
        raise ValueError(f"fit: losses must be a non-empty subset of {LOSSES}, got {tuple(losses)!r}")
    x = torch.as_tensor(frames, dtype=torch.float32)
    if x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"fit: frames must have shape (F, 3, H, W), got {tuple(x.shape)}")
    if ("perception" in losses or ("visibility" in losses and boxes is None)) and detector is None:
        raise ValueError("fit: the perception and visibility losses need a detector (or boxes= for visibility)")
    perc = PerceptionLoss(detector, cfg.conf, cfg.box_weight, cfg.cls_weight) if detector is not None else None
    if "visibility" in losses and boxes is None and not perc.dense:
        raise ValueError("fit: the visibility loss needs boxes= (per-frame zones) when the detector has no `decode`")
    refs = perc.reference(x) if perc is not None and "perception" in losses else None  # offline, once
    if move_refs is not None:
        refs = _moved_refs(refs, move_refs)
    if "visibility" in losses and boxes is None:  # M(x): P(x)'s boxes, offline
        with torch.no_grad():
            boxes = [d["boxes"] for d in perc.det.decode(perc.det(x.clamp(0, 1)), cfg.conf)]
    torch.manual_seed(cfg.seed)
    if scene is None:
        scene = GaussianScene(cfg.n_gaussians, len(x), x.shape[2], x.shape[3], cfg.dynamic_frac, x, cfg.seed,
                              tile=cfg.tile)  # fmt: skip
    elif (scene.n_frames, scene.height, scene.width) != (len(x), x.shape[2], x.shape[3]):
        raise ValueError(f"fit: the scene renders {scene.n_frames} frames of {scene.height} × {scene.width}, the clip "
                         f"has {len(x)} of {x.shape[2]} × {x.shape[3]}; build the scene for this clip")  # fmt: skip
    opt = torch.optim.Adam(scene.param_groups(cfg.lr_means, cfg.lr_shape, cfg.lr_colour))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.1 ** (s / cfg.iters))  # exponential decay to 0.1×
    fine_from = int(cfg.coarse_frac * cfg.iters)
    hist, t0 = [], time.perf_counter()
    for step in tqdm(range(cfg.iters), disable=not progress, desc="fit", leave=False):
        img = scene()
        loss = 0.0
        if "visual" in losses:
            loss = cfg.lambda_visual * visual_loss(img, x, cfg.l1_weight, cfg.ssim_weight, cfg.ssim_window)
        if step >= fine_from:  # fine stage: the perception-aware terms (paper: added in the fine stage only)
            if "perception" in losses:
                loss = loss + cfg.lambda_perc * perc(img, refs)
            if "visibility" in losses:
                loss = loss + cfg.lambda_obj * visibility_loss(img, x, boxes, cfg.l1_weight, cfg.ssim_weight,
                                                               cfg.obj_window)  # fmt: skip
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 50 == 0 or step == cfg.iters - 1:
            hist.append((step, loss.item()))
    with torch.no_grad():
        renders = scene().clamp(0, 1)
    return FitResult(scene, renders, time.perf_counter() - t0, hist)
