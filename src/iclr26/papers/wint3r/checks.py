"""The wint3r card's config, checked in the driver before any worker starts: every model and training config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming
the field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.vision.wint3r import TrainConfig, WinT3RConfig

from . import ARM_CFG, Cfg


def check_config(cfg: Cfg) -> None:
    """Build every arm's WinT3RConfig and the TrainConfig from `cfg` and check the card's own fields."""
    for name, lo in (("n_train", 1), ("n_val", 1), ("n_test", 1), ("train_len", 4), ("test_len", 4), ("dim", 1),
                     ("batch", 1), ("max_steps", 1), ("eval_every", 1), ("patience", 1)):  # fmt: skip
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")
    if not (math.isfinite(cfg.lr) and cfg.lr > 0):
        raise ValueError(f"lr must be finite and > 0, got {cfg.lr!r}")
    if not 0 <= cfg.texture_mix <= 1:
        raise ValueError(f"texture_mix must lie in [0, 1], got {cfg.texture_mix!r}")
    for over in ARM_CFG.values():
        WinT3RConfig(dim=cfg.dim, **over)
    TrainConfig(lr=cfg.lr, batch=cfg.batch, max_steps=cfg.max_steps, eval_every=cfg.eval_every, patience=cfg.patience)
