"""The enact card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (one `FrameConfig` of the frame-seeing answerer per L2 strength of the grid: their own
range checks run) and the ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.embodied.enact import FrameConfig

from . import Cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"min_stable": 1, "kfts_draws": 1, "n_changes": 2})  # KFTS is tested on paths of 3 key frames
    lmax = max(cfg.lengths)
    _need(cfg.n_changes >= lmax - 1, "n_changes", f"≥ max(lengths) − 1 = {lmax - 1} (an item of L key frames needs "
          "L − 1 changes)", cfg.n_changes)  # fmt: skip
    v = cfg.alpha_grid  # `tune_on_grid` takes a positive grid
    ok = bool(v) and all(math.isfinite(a) and a > 0 for a in v)
    _need(ok, "alpha_grid", "a non-empty tuple of finite values > 0", v)
    for alpha in cfg.alpha_grid:  # FrameConfig: hidden ≥ 1, alpha > 0, pixel_noise in [0, 1)
        FrameConfig(hidden=cfg.hidden, alpha=alpha, pixel_noise=cfg.pixel_noise)
