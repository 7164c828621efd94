"""The rf-matid card's config, checked in the driver before any worker starts: every method config the run builds
from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

from iclr26.science.rf_matid.train import TrainConfig
from iclr26.science.rf_matid.world import RFWorldConfig

from . import Cfg


def _grid(name: str, grid, upper: float) -> None:
    if not grid or not all(isinstance(v, (int, float)) and 0 < v < upper for v in grid):
        raise ValueError(f"{name} must hold at least one learning rate in (0, {upper:g}), got {grid!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields; a ValueError names the field and its range."""
    RFWorldConfig(n_bins=cfg.n_bins, repeats=cfg.repeats, kappa=cfg.kappa, angle_keep=cfg.angle_keep)
    for name in ("lr_cnn", "lr_transformer", "lr_rf_matid", "lr_cnn_time"):  # the nets' OneCycle max_lr
        if not 0 < getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be in (0, 1) (a OneCycle max_lr), got {getattr(cfg, name)!r}")
        TrainConfig(lr=getattr(cfg, name), batch=cfg.batch, max_epochs=cfg.max_epochs, patience=cfg.patience)
    if not 0 < cfg.lr_gb <= 1:
        raise ValueError(f"lr_gb must be in (0, 1] (a boosting learning rate), got {cfg.lr_gb!r}")
    _grid("net_lr_grid", cfg.net_lr_grid, 1.0)
    _grid("gb_lr_grid", cfg.gb_lr_grid, 1.0 + 1e-12)
    for lr in cfg.net_lr_grid:
        TrainConfig(lr=lr, batch=cfg.batch, max_epochs=cfg.max_epochs, patience=cfg.patience)
    if not (isinstance(cfg.gb_max_iter, int) and cfg.gb_max_iter >= 1):
        raise ValueError(f"gb_max_iter must be an integer ≥ 1 (boosting rounds), got {cfg.gb_max_iter!r}")
    bad = [m for m in cfg.extra_s3_models if m not in cfg.models]
    if bad:
        raise ValueError(f"extra_s3_models must be among models {cfg.models}, got {bad}")
