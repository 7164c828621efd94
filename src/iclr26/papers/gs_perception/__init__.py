"""Reproduction: *Beyond Visual Reconstruction Quality: Object Perception-aware 3D Gaussian Splatting for Autonomous
Driving* (ICLR 2026, https://openreview.net/forum?id=PmQlMTBmpa; code
https://github.com/Shanicky-RenzhiWang/Perception-aware-3DGS).

Idea. Street reconstructions are judged by SSIM/PSNR, but what a simulator for testing a driving stack needs is that
the stack's detector sees the same objects on the rendered frame as on the real one. Two plug-in losses fix this at
equal budget: the perception-aligned loss (the frozen detector's outputs on the rendering against its detections on
the original) and the object-zone visibility loss (the photometric loss inside the detected boxes). The paper reports
higher detection consistency (mAP, mean IoU, fewer misses) for the guidance detector and for unseen detectors, while
global SSIM changes by about 1 % or less.

Protocol (Waymo, S3Gaussian / OmniRe and YOLOv8 are out of reach; `iclr26.vision.gs_perception`). Seeded synthetic
street clips (`iclr26.vision.gs_perception.world_street`, 64 × 96, small cars / pedestrians / signs with exact boxes,
static background,
moving objects); a guidance detector (CenterNet-style, stride 4) and an unseen detector built differently (YOLO-style
grid, stride 8, GroupNorm/SiLU, other training data), both trained here with early stopping and cached. A pure-torch
2D Gaussian splatting fit per clip at a fixed splat budget (static + dynamic splats), arms: visual loss only,
+ perception, + visibility, + both, and two controls: + perception with the trained guidance detector's reference
detections moved to random places (same sizes and classes), and + visibility on zones of the same sizes at random
places. Metrics against each detector's
detections on the original frames: mAP@[.5:.95], mean IoU, misses per frame; global SSIM / PSNR and object-zone SSIM.
Loss weights tuned once on validation clips by one rule (the paper's constrained objective, Eq. 3): maximise the
guidance detector's validation mAP subject to a global-SSIM drop ≤ 1 % against the visual-only fit (penalty 10 per
unit of excess drop), grids extended past edge picks; "both" and the controls reuse the tuned weights. Seeds change
the test clips and the splat initialisation (detectors and weights are shared).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    world: str = field(
        default="2d",
        metadata={
            "help": "'2d': street frames and the 2D splatting fitter (quick); "
            "'3d': ray-cast 3D street clips with camera poses and LiDAR-like "
            "points, 3D Gaussians with the EWA projection (full; ours)"
        },
    )
    height: int = field(default=64, metadata={"help": "frame height (dossier: 96; Waymo 1920 × 1280)"})
    width: int = field(default=96, metadata={"help": "frame width"})
    n_frames: int = field(default=3, metadata={"help": "frames per clip (dossier: 8; time budget)"})
    n_clips: int = field(default=1, metadata={"help": "test clips per seed (dossier: 10; time budget)"})
    n_val_clips: int = field(default=1, metadata={"help": "validation clips for tuning (ours)"})
    n_gaussians: int = field(default=128, metadata={"help": "splat budget of every arm (dossier: 150-300)"})
    iters: int = field(default=150, metadata={"help": "fit steps (dossier: 300 coarse + 700 fine; paper 35k)"})
    n_det_train: int = field(default=600, metadata={"help": "generated frames to train each detector (dossier 20k)"})
    n_det_val: int = field(default=150, metadata={"help": "validation frames for the detectors' early stopping"})
    det_epochs: int = field(
        default=40, metadata={"help": "max detector epochs, a safety net: early stopping (patience 4) decides (ours)"}
    )
    n_eval: int = field(default=150, metadata={"help": "held-out frames for the detectors' recall (testbed)"})
    perc_grid: tuple[float, ...] = field(default=(0.01, 0.03, 0.1), metadata={"help": "λ_perc grid (paper: 1)"})
    obj_grid: tuple[float, ...] = field(default=(0.3, 1.0, 3.0), metadata={"help": "λ_obj-vis grid (paper: 1)"})
    max_ext: int = field(default=3, metadata={"help": "grid extensions past an edge pick (tune_on_grid)"})
    ssim_tol: float = field(default=0.01, metadata={"help": "allowed relative SSIM drop ε of the tuning rule (~1 %)"})

    def __post_init__(self):
        if min(self.n_frames, self.n_clips, self.n_val_clips, self.n_gaussians, self.iters) < 1:
            raise ValueError("Cfg: n_frames, n_clips, n_val_clips, n_gaussians and iters must be >= 1")
        if self.height < 32 or self.width < 48:
            raise ValueError(f"Cfg: frames must be at least 32 × 48, got {self.height} × {self.width}")
        if self.world not in ("2d", "3d"):
            raise ValueError(f"Cfg.world must be '2d' or '3d', got {self.world!r}")
        if min(self.perc_grid) <= 0 or min(self.obj_grid) <= 0 or not 0 < self.ssim_tol < 1:
            raise ValueError("Cfg: perc_grid and obj_grid must be > 0 and ssim_tol in (0, 1)")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        det_epochs=10,
        n_frames=1,
        n_clips=1,
        n_gaussians=48,
        iters=30,
        n_eval=32,
        perc_grid=(0.03,),
        obj_grid=(1.0,),
        max_ext=0,
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        world="3d",
        n_frames=4,
        n_clips=10,
        n_val_clips=3,
        n_gaussians=256,
        iters=1000,
        n_det_train=5000,
        det_epochs=30,
    ),  # fmt: skip
}
VERSION = 4  # 4: the perception control keeps the trained detector and moves its reference detections to random
# places (the untrained detector's gradient was ~1e-4 of the trained one's: a control that could not pass);
# 3: detectors initialised from their own seeds and built under a lock (with two workers each process
# had built its own from its first seed's random state), trained until early stopping (cap 40; was 10, which bound
# both); the λ tuning shared on disk
EXPECTED_SECONDS = {"smoke": 25, "quick": 480, "full": 14400}  # cached detectors (first quick: +~150 s)
ACCEPTS_MODEL = False
MODEL_NOTE = "pass your own detector (any torch module) to `iclr26.vision.gs_perception.fit`"

ARMS = ("visual", "perc", "vis", "both", "ctrl", "visrand")
DETS = ("guide", "unseen")
PAPER = "S3Gaussian, Waymo, YOLOv8 guidance"


MARGIN = 0.01  # the smallest mAP gain that counts (the paper's gains are 0.04-0.12)


def _gain(arm: str) -> tuple[Check, ...]:
    return (
        Check(f"map_{arm}_guide", ">", "map_visual_guide", margin=MARGIN),
        Check(f"iou_{arm}_guide", ">", "iou_visual_guide"),
        Check(f"map_{arm}_unseen", ">", "map_visual_unseen", margin=MARGIN),
        Check(f"iou_{arm}_unseen", ">", "iou_visual_unseen"),
    )


def _no_gain(arm: str) -> tuple[Check, ...]:
    """The negative-control form of the claims' mAP checks: the control arm is shown not to gain MARGIN."""
    return tuple(fails(Check(f"map_{arm}_{d}", ">", f"map_visual_{d}", margin=MARGIN)) for d in DETS)


CLAIMS = [
    Claim(
        "testbed",
        "The testbed can do the task: both detectors find the true objects on original frames",
        checks=(Check("recall_guide", ">", 0.85), Check("recall_unseen", ">", 0.8)),
        paper="existing methods: SSIM 0.92-0.97 but YOLOv8 mAP 0.45-0.58, up to 1.5 misses (preliminary study)",
        role="testbed",
    ),
    Claim(
        "headroom",
        "The visual-only fit at the splat budget leaves something to fix: it loses part of the guidance detector's "
        "detections (mAP against the detections on the originals below 0.9)",
        checks=(Check("map_visual_guide", "<", 0.9),),
        role="headroom",
    ),
    Claim(
        "control-perception",
        "Junk targets of the same gradient scale do not gain: L_perc of the trained guidance detector with its "
        "reference detections moved to random places (same sizes, classes, weight) does not raise either detector's "
        "mAP by the claims' margin",
        checks=_no_gain("ctrl"),
        paper="(our control; not in the paper)",
        role="negative control",
    ),
    Claim(
        "control-visibility",
        "Zones without objects do not gain: L_obj-vis on zones of the same sizes at random places (same weight) does "
        "not raise either detector's mAP by the claims' margin",
        checks=_no_gain("visrand"),
        paper="(our control; not in the paper)",
        role="negative control",
    ),
    Claim(
        "changes-detections",
        "The perception-aware terms change what the detector sees: + both moves the guidance detector's mAP by more "
        "than the margin (so an unchanged SSIM is not the SSIM of a no-op)",
        checks=(Check("map_both_guide", ">", "map_visual_guide", margin=MARGIN),),
        role="non-degenerate",
    ),
    Claim(
        "perception",
        "+ L_perc raises detection consistency (mAP, mean IoU) over the visual-only fit for the guidance detector "
        "and for the unseen detector",
        checks=_gain("perc"),
        paper=f"mAP 0.550 -> 0.593, mean IoU 0.803 -> 0.840 ({PAPER}); Faster R-CNN mAP 0.171 -> 0.229 (unseen)",
        requires=("testbed", "headroom", "control-perception"),
    ),
    Claim(
        "visibility",
        "+ L_obj-vis raises detection consistency (mAP, mean IoU) for the guidance and the unseen detector",
        checks=_gain("vis"),
        paper=f"mAP 0.550 -> 0.672, mean IoU 0.803 -> 0.862 ({PAPER}); Faster R-CNN mAP 0.171 -> 0.271",
        requires=("testbed", "headroom", "control-visibility"),
    ),
    Claim(
        "both",
        "+ both raises detection consistency for both detectors and lowers the guidance detector's misses",
        checks=(*_gain("both"), Check("miss_both_guide", "<", "miss_visual_guide")),
        paper=f"mAP 0.550 -> 0.700, IoU 0.872, misses 1.5 -> 0.0 ({PAPER}); RT-DETR mAP 0.494 -> 0.610",
        requires=("testbed", "headroom", "control-perception", "control-visibility"),
    ),
    Claim(
        "ssim-kept",
        "Global SSIM changes by at most ~1 % (relative drop < 0.01 against the visual-only fit) for every arm",
        checks=(
            Check("ssim_drop_perc", "<", 0.01),
            Check("ssim_drop_vis", "<", 0.01),
            Check("ssim_drop_both", "<", 0.01),
        ),  # fmt: skip
        paper="SSIM 0.924 -> 0.920 / 0.937 / 0.941 (S3Gaussian); within about 1 % in every base",
        note="the λ tuning bounds the SSIM drop on the validation clips, so this checks that the bound holds on test",
        requires=("changes-detections",),
    ),
    Claim(
        "cost",
        "L_perc costs extra time (a detector forward and backward per step); L_obj-vis is nearly free (< 1.25×)",
        checks=(Check("time_ratio_perc", ">", 1.0), Check("time_ratio_vis", "<", 1.25)),
        paper="training 204.4 min -> 232.2 (L_perc) / 205.4 (L_obj-vis), RTX A5000",
        ungated="a wall-clock measurement of the same fits with and without a loss term: it compares no quality that "
        "a testbed could fail to show, and a skipped L_perc would fail its first check",
    ),
]

METRICS = {
    "recall_guide": "guidance detector: share of true objects found (same class, IoU >= 0.5) on held-out frames",
    "recall_unseen": "unseen detector: the same",
    "map_guide_true": "guidance detector mAP@[.5:.95] against the true boxes on held-out frames",
    "map_unseen_true": "unseen detector mAP@[.5:.95] against the true boxes on held-out frames",
    "lambda_perc": "λ_perc chosen on the validation clips (tuning rule in the docstring)",
    "lambda_obj": "λ_obj-vis chosen on the validation clips",
    "time_ratio_perc": "wall seconds of the + perception fit / visual-only fit (same clips)",
    "time_ratio_vis": "wall seconds of the + visibility fit / visual-only fit",
}
for _a in ARMS:
    for _d in DETS:
        METRICS[f"map_{_a}_{_d}"] = f"arm {_a}: mAP@[.5:.95] of the {_d} detector on R(x) vs its detections on x"
        METRICS[f"iou_{_a}_{_d}"] = f"arm {_a}: mean IoU of x's {_d} detections with their Hungarian match on R(x)"
        METRICS[f"miss_{_a}_{_d}"] = (
            f"arm {_a}: {_d} detections on x without a same-class match (IoU >= 0.5), per frame"
        )
    METRICS[f"ssim_{_a}"] = f"arm {_a}: global SSIM (kornia, window 11) of R(x) vs x"
    METRICS[f"psnr_{_a}"] = f"arm {_a}: global PSNR (dB)"
    METRICS[f"objssim_{_a}"] = f"arm {_a}: SSIM map averaged inside the guidance detector's boxes on x (Obj SSIM)"
    METRICS[f"sec_{_a}"] = f"arm {_a}: wall seconds of the fits"
    if _a != "visual":
        METRICS[f"ssim_drop_{_a}"] = f"arm {_a}: (ssim_visual − ssim_{_a}) / ssim_visual"
