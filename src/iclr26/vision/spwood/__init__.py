"""SPWOOD: Sparse Partial Weakly-Supervised Oriented Object Detection (ICLR 2026, https://arxiv.org/abs/2602.03634;
official code https://github.com/VisionXLab/SPWOOD, mmrotate 0.x).

Oriented object detection with few labelled images (partial), few labelled instances inside them (sparse) and weak
labels (HBox or point instead of rotated boxes). SPWOOD trains a rotated FCOS in a mean-teacher loop with:

- `sparse_focal_loss`: background-assigned scores above 1 - thresh are "hard negatives" (maybe an unlabelled object)
  and weighted by omega < 1 (`losses.py`);
- orientation self-supervision (`orientation_consistency_loss`: rotated / flipped views must predict the rotated /
  mirrored angle) and the spatial-layout losses for points (`gaussian_overlap_loss`, `layout_size_loss`);
- multi-level pseudo-label filtering (`select_pseudo(..., "level")`): a two-component GMM per FPN level on the
  teacher's confidences sets each level's threshold (`filtering.py`);
- the category-balanced sparse partition (`sparse_partial_split(..., mode="overall")`).

Building blocks in torch (torchvision's ops are not available here): vectorised rotated IoU, rotated NMS and rotated
mAP (`geometry.py`), a tiny rotated FCOS with a PSC angle coder (`detector.py`), the trainer (`train.py`).

    from iclr26.vision.spwood import SPWOODConfig, train_spwood, predict
    model, info = train_spwood(images, instances, labelled_ids, (val_images, val_gts), n_classes, SPWOODConfig())
"""

from __future__ import annotations

from .config import SPWOODConfig
from .detector import TinyRotatedFCOS, decode, predict, psc_decode, psc_encode
from .filtering import gmm_1d, gmm_threshold, point_segments, select_pseudo, sparse_partial_split, weaken_labels
from .geometry import canonical, corners, hbox_of, rotated_iou, rotated_map, rotated_nms
from .losses import (
    focal_terms,
    frame_iou_loss,
    gaussian_overlap_loss,
    hbox_iou_loss,
    layout_size_loss,
    orientation_consistency_loss,
    qfl_v2,
    sparse_focal_loss,
)
from .targets import assign, cat_instances, flip_instances, make_instances
from .train import orientation_ss_loss, supervised_loss, train_spwood, transformed_view, unsup_loss

__all__ = [
    "SPWOODConfig",
    "TinyRotatedFCOS",
    "assign",
    "canonical",
    "cat_instances",
    "corners",
    "decode",
    "flip_instances",
    "focal_terms",
    "frame_iou_loss",
    "gaussian_overlap_loss",
    "gmm_1d",
    "gmm_threshold",
    "hbox_iou_loss",
    "hbox_of",
    "layout_size_loss",
    "make_instances",
    "orientation_consistency_loss",
    "orientation_ss_loss",
    "point_segments",
    "predict",
    "psc_decode",
    "psc_encode",
    "qfl_v2",
    "rotated_iou",
    "rotated_map",
    "rotated_nms",
    "select_pseudo",
    "sparse_focal_loss",
    "sparse_partial_split",
    "supervised_loss",
    "train_spwood",
    "transformed_view",
    "unsup_loss",
    "weaken_labels",
]
