"""The pgllm card's config, checked in the driver before any worker starts: every method config the run builds from
the card config (their own range checks run) and the ranges of the card's own fields, each error naming the field.
Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.vision.pgllm import PGLLMConfig
from iclr26.vision.pgllm.world import CLASSES

from . import Cfg


def check_config(cfg: Cfg) -> None:
    """Build the PGLLMConfig of every K and α the tuning can reach from `cfg` and check the card's own fields."""
    for name, lo in (("n_pre", 2), ("n_test", 2), ("n_val", 2), ("n_points", 8), ("steps", 1), ("n_sparse", 2),
                     ("n_slm", 2)):  # fmt: skip
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")
    n_min = min(cfg.n_val, cfg.n_sparse) * len(CLASSES)  # the smallest support a K graph is built on
    if not cfg.k_grid or not all(isinstance(k, int) and 1 <= k < n_min for k in cfg.k_grid):
        raise ValueError(f"k_grid must hold integers K in [1, {n_min}) (below the smallest support, "
                         f"min(n_val, n_sparse) × {len(CLASSES)} classes), got {cfg.k_grid!r}")  # fmt: skip
    if not cfg.ratio_grid or not all(isinstance(r, (int, float)) and math.isfinite(r) and r > 0
                                     for r in cfg.ratio_grid):  # fmt: skip
        raise ValueError(f"ratio_grid must hold finite ratios α/(1-α) > 0, got {cfg.ratio_grid!r}")
    if not 0 <= cfg.shift <= 2:
        raise ValueError(f"shift must lie in [0, 2], got {cfg.shift!r}")
    for k in cfg.k_grid:
        for r in cfg.ratio_grid:
            PGLLMConfig(k=k, alpha=r / (1 + r), steps=cfg.steps)
