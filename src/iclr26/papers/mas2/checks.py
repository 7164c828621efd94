"""The mas2 card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (the world's `WorldConfig`, one `MAS2Config` — with its `CTOConfig` and `DPOConfig` — per
β of the grid, value-scaled and unscaled: their own range checks run) and the ranges of the card's own fields that
`Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so that it stays outside the
run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.agents.mas2.world import WorldConfig

from . import Cfg
from .experiment import _mas2_cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    for name in ("K", "N", "B"):  # CTOConfig's own message does not say which card field it came from
        v = getattr(cfg, name)
        _need(isinstance(v, int) and v >= 2, name, "an integer ≥ 2 (siblings are needed for preferences)", v)
    for name in ("rollouts", "max_epochs", "patience"):
        v = getattr(cfg, name)
        _need(isinstance(v, int) and v >= 1, name, "an integer ≥ 1", v)
    _need(math.isfinite(cfg.lr) and cfg.lr > 0, "lr", "finite and > 0", cfg.lr)
    _need(all(math.isfinite(b) for b in cfg.beta_grid), "beta_grid", "a tuple of finite values > 0", cfg.beta_grid)
    WorldConfig(tool_fail=cfg.tool_fail)  # tool_fail in [0, 1)
    for beta in cfg.beta_grid:  # MAS2Config, CTOConfig (K, N, B ≥ 2, rollouts ≥ 1), DPOConfig (β ≥ 0, lr > 0)
        for value_scaled in (True, False):
            _mas2_cfg(cfg, beta, value_scaled)
