"""The braingfm card's config, checked in the driver before any worker starts: every method config the run builds
from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

from iclr26.science.braingfm import FitConfig, MetaConfig, PretrainConfig
from iclr26.science.braingfm.world import ATLASES, DISORDERS

from . import Cfg
from .backbones import variants


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")


def _grid(name: str, grid) -> None:
    if not grid or not all(isinstance(v, (int, float)) and 0 < v < 1 for v in grid):
        raise ValueError(f"{name} must hold at least one learning rate in (0, 1), got {grid!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields; a ValueError names the field and its range."""
    _at_least(cfg, {"n_timepoints": 10, "n_pretrain_val": 2, "pretrain_steps": 1, "pretrain_schedule_steps": 1,
                    "pretrain_batch": 2, "max_epochs": 1, "patience": 1, "n_meta": 4, "meta_iters": 1,
                    "meta_inner_steps": 0, "shot_reps": 1})  # fmt: skip
    atlases = [a for a, _, _ in ATLASES]
    if cfg.target_atlas not in atlases:
        raise ValueError(f"target_atlas must be one of {atlases}, got {cfg.target_atlas!r}")
    for name in ("ft_disorders", "meta_disorders", "unseen"):
        bad = [d for d in getattr(cfg, name) if d not in DISORDERS]
        if bad or not getattr(cfg, name):
            raise ValueError(f"{name} must be a non-empty list of disorders among {sorted(DISORDERS)}, got {bad}")
    for name in variants(cfg).values():  # the pre-training variants, as the run builds them
        PretrainConfig(mode=name, max_steps=cfg.pretrain_steps, batch=cfg.pretrain_batch,
                       schedule_steps=min(cfg.pretrain_schedule_steps, cfg.pretrain_steps))  # fmt: skip
    _grid("lr_grid", cfg.lr_grid)
    _grid("adapt_lrs", cfg.adapt_lrs)
    for lr in cfg.lr_grid:
        FitConfig(lr=lr, max_epochs=cfg.max_epochs, patience=cfg.patience)
    MetaConfig(iters=cfg.meta_iters, k_shot=cfg.k_shot, inner_steps=cfg.meta_inner_steps, outer_lr=cfg.meta_outer_lr)
    if not 0 < cfg.meta_outer_lr < 1:
        raise ValueError(f"meta_outer_lr must be in (0, 1) (an Adam rate), got {cfg.meta_outer_lr!r}")
    if not cfg.adapt_steps or min(cfg.adapt_steps) < 0 or list(cfg.adapt_steps) != sorted(set(cfg.adapt_steps)):
        raise ValueError(f"adapt_steps must be increasing step counts ≥ 0, got {cfg.adapt_steps!r}")
