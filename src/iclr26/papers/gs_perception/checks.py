"""The gs-perception card's config, checked in the driver before any worker starts: every fit config the run builds
from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.vision.gs_perception import FitConfig

from . import Cfg


def check_config(cfg: Cfg) -> None:
    """Build every FitConfig of the tuning grids and the arms from `cfg` and check the card's own fields."""
    bounds = {"n_frames": 1, "n_clips": 1, "n_val_clips": 1, "n_gaussians": 1, "iters": 1, "n_det_train": 1,
              "n_det_val": 1, "det_epochs": 1, "n_eval": 1, "max_ext": 0}  # fmt: skip
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")
    for name in ("perc_grid", "obj_grid"):
        grid = getattr(cfg, name)
        if not grid or not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in grid):
            raise ValueError(f"{name} must hold at least one finite weight > 0, got {grid!r}")
    if not (math.isfinite(cfg.ssim_tol) and 0 < cfg.ssim_tol < 1):
        raise ValueError(f"ssim_tol must be in (0, 1), got {cfg.ssim_tol!r}")
    for lam_p in cfg.perc_grid:
        for lam_o in cfg.obj_grid:
            FitConfig(n_gaussians=cfg.n_gaussians, iters=cfg.iters, seed=0, lambda_perc=lam_p, lambda_obj=lam_o)
