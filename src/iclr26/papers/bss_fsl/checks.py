"""The bss-fsl card's config, checked in the driver before any worker starts: every method config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import numpy as np

from iclr26.theory.bss_fsl.schedule import (
    BatchScheduleConfig,
)

from . import Cfg
from .experiment import _task


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields; a ValueError names the field and its range."""
    _at_least(cfg, {"mc_replicates": 1, "lm_vocab": 2, "lm_emb": 1, "lm_hidden": 1, "lm_eval_points": 1})
    tasks = [_task(cfg, s) for s in (cfg.s_easy, cfg.s_hard, *cfg.phase_s)]  # PowerLawTaskConfig: d, beta, s, sigma2
    for rho in (*cfg.switch_grid, cfg.early, cfg.late):  # b_small ≤ b_large, integers, ρ in [0, 1]
        BatchScheduleConfig(b_small=cfg.b_small, b_large=cfg.b_large, switch_fraction=rho, n_segments=cfg.opt_segments)
        BatchScheduleConfig(b_small=cfg.lm_b_small, b_large=cfg.lm_b_large, switch_fraction=rho)
    if not cfg.switch_grid:
        raise ValueError("switch_grid must hold at least one switch fraction in [0, 1]")
    if not 1 <= cfg.opt_b_min <= cfg.opt_b_max < np.inf:
        raise ValueError(f"opt_b_min and opt_b_max must satisfy 1 ≤ opt_b_min ≤ opt_b_max, got {cfg.opt_b_min}, "
                         f"{cfg.opt_b_max}")  # fmt: skip
    if not (isinstance(cfg.data_budget, int) and cfg.data_budget >= max(cfg.b_large, cfg.opt_b_max)):
        raise ValueError(f"data_budget must be an integer ≥ b_large and opt_b_max ({max(cfg.b_large, cfg.opt_b_max)}) "
                         f"samples, got {cfg.data_budget!r}")  # fmt: skip
    if not (isinstance(cfg.lm_tokens, int) and cfg.lm_tokens >= cfg.lm_b_large):
        raise ValueError(f"lm_tokens must be an integer ≥ lm_b_large ({cfg.lm_b_large}), got {cfg.lm_tokens!r}")
    for name in ("lm_lr", "lm_zipf"):
        if not 0 < getattr(cfg, name) < np.inf:
            raise ValueError(f"{name} must be finite and > 0, got {getattr(cfg, name)}")
    # η = lr_scale / tr(Σ) must keep the exact recursion mean-square stable at the smallest batch, else every risk
    # diverges (a silent inf, not a result)
    b_min = min(cfg.b_small, cfg.opt_b_min)
    limit = min(t.max_stable_lr(b_min) * t.lam.sum() for t in tasks)
    if not 0 < cfg.lr_scale < limit:
        raise ValueError(f"lr_scale must be in (0, {limit:.3g}) (η = lr_scale / tr Σ, mean-square stable at batch "
                         f"{b_min:g}), got {cfg.lr_scale}")  # fmt: skip
