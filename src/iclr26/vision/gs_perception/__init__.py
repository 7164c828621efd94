"""Perception-aware Gaussian splatting: *Beyond Visual Reconstruction Quality: Object Perception-aware 3D Gaussian
Splatting for Autonomous Driving* (ICLR 2026, https://openreview.net/forum?id=PmQlMTBmpa; code
https://github.com/Shanicky-RenzhiWang/Perception-aware-3DGS).

A street-scene Gaussian splatting reconstruction should make the driving stack's detector see the same thing on the
rendered frame as on the real one. Two plug-in losses on top of the base photometric loss: the perception-aligned loss
(the frozen detector's outputs on the rendering R(x) against its detections on the original x) and the object-zone
visibility loss (the photometric loss inside the detected boxes). Here: a pure-torch differentiable 2D splatting
rasteriser (`render`; CUDA rasterisers do not run on this machine), its 3D variant with the EWA projection
(`ewa`, `scene3d`; the reproduction's `full` scale), the losses (`losses`), the `fit` call, two small
detectors (`detectors`) and the perception-stability metrics (`boxes`).
"""

from .boxes import box_iou, ciou, consistency, match, mean_ap, nms, recall
from .detectors import CenterNetDetector, GridDetector, detect, train_detector
from .ewa import project, quat_to_rot, render_3d
from .fit import LOSSES, FitConfig, FitResult, fit
from .losses import PerceptionLoss, freeze, visibility_loss, visual_loss
from .render import GaussianScene, covariance_inverse, rasterize
from .scene3d import GaussianScene3D

__all__ = [
    "box_iou", "ciou", "consistency", "match", "mean_ap", "nms", "recall", "CenterNetDetector", "GridDetector",
    "detect", "train_detector", "LOSSES", "FitConfig", "FitResult", "fit", "PerceptionLoss", "freeze",
    "visibility_loss", "visual_loss", "GaussianScene", "covariance_inverse", "rasterize", "project", "quat_to_rot",
    "render_3d", "GaussianScene3D",
]  # fmt: skip
