"""The autort card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (one `AutoRTConfig` per tuning-grid value and budget, the tiny llama generator's HF config:
their own range checks run) and the ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error
naming the field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.lm.tiny import tiny_config
from iclr26.rlft.autort import AutoRTConfig

from . import Cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def _grid(cfg: Cfg, name: str) -> tuple[float, ...]:
    v = getattr(cfg, name)  # `tune_on_grid` takes positive grids; a learning rate / temperature must be finite
    _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), name, "a non-empty tuple of finite values > 0", v)
    return v


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_seed_strategies": 1, "max_extensions": 0, "top_k": 1, "final_samples": 0, "n_probes": 10})
    _need(math.isfinite(cfg.max_samples_factor), "max_samples_factor", "finite and ≥ 1", cfg.max_samples_factor)
    _grid(cfg, "temp_grid")
    grids = [_grid(cfg, "lr_grid")]
    if cfg.lm_generator:
        grids.append(_grid(cfg, "model_lr_grid"))
        _at_least(cfg, {"lm_width": 4})
        _need(cfg.lm_width % 4 == 0, "lm_width", "a multiple of 4 (the tiny llama's attention heads)", cfg.lm_width)
        tiny_config("llama", vocab_size=64, d_model=cfg.lm_width, n_layers=2, max_len=16)  # d_model divisible by heads
    budgets = (cfg.budget, cfg.div_budget) if cfg.div_budget else (cfg.budget,)
    for grid in grids:  # AutoRTConfig: budget ≥ 1, max_samples_factor ≥ 1, lr finite > 0
        for lr in grid:
            for budget in budgets:
                AutoRTConfig(use_dsp=True, use_prt=True, target_budget=budget,
                             count_downgrade_queries=cfg.count_downgrade, lr=lr, seed=0,
                             max_samples_factor=cfg.max_samples_factor)  # fmt: skip
