"""The gf-screen card's config, checked in the driver before any worker starts: every method config the run builds
from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.science.gf_screen import GRLConfig

from . import Cfg
from .experiment import _focus_cfg, _screen_cfg, _world


def _pair(cfg: Cfg, name: str, positive: bool = False) -> None:
    v = getattr(cfg, name)
    if len(v) != 2 or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in v) or v[0] > v[1]:
        raise ValueError(f"{name} must be a (low, high) pair of finite numbers with low ≤ high, got {v!r}")
    if positive and v[0] <= 0:
        raise ValueError(f"{name} must be > 0 (voxels), got {v!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields; a ValueError names the field and its range."""
    _pair(cfg, "radius", positive=True)
    _pair(cfg, "hypo_hu")
    _pair(cfg, "hyper_hu")
    _world(cfg)  # CTWorldConfig: every side ≥ 16 voxels
    _screen_cfg(cfg)  # ScreenConfig: overlap in [0, 1)
    _focus_cfg(cfg)  # TrainConfig: steps ≥ 1, class weights > 0, hard_neg share
    GRLConfig(), GRLConfig(reward="dice")  # the two GRL Glances
    for name in ("focus_lr", "glance_lr"):
        if not 0 < getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be in (0, 1) (an AdamW rate), got {getattr(cfg, name)!r}")
    for name in ("fg_weight", "fg_weight_final"):
        if not 0 < getattr(cfg, name) < math.inf:
            raise ValueError(f"{name} must be finite and > 0 (a lesion-class CE weight), got {getattr(cfg, name)!r}")
    if not 0 <= cfg.target_fpr < 1:
        raise ValueError(f"target_fpr must be in [0, 1) (a validation FPR), got {cfg.target_fpr!r}")
    if not 0 <= cfg.glance_uniform_neg <= 1:
        raise ValueError(f"glance_uniform_neg must be in [0, 1] (a share of draws), got {cfg.glance_uniform_neg!r}")
    if len(cfg.focus_channels) < 2 or min(cfg.focus_channels) < 1:
        raise ValueError(f"focus_channels needs ≥ 2 positive levels, got {cfg.focus_channels!r}")
    if len(cfg.glance_widths) != 4 or min(cfg.glance_widths) < 1:
        raise ValueError(f"glance_widths needs 4 positive widths (MONAI ResNet stages), got {cfg.glance_widths!r}")
