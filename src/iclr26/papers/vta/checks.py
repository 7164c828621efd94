"""The vta card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (the forecasters' `ForecasterConfig`, the tiny llama reasoner's HF config: their own range
checks run) and the ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error naming the field.
Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.lm.tiny import tiny_config
from iclr26.rlft.vta.annotate import WARMUP
from iclr26.rlft.vta.forecaster import ForecasterConfig

from . import Cfg
from .reasoner import MAX_NEW

CONTEXT = 96  # the tiny reasoner's context and the SFT max_length, in tokens
PROMPT_EXTRA = 15  # a prompt: ANALYSE, L − 1 past-move words, 12 indicator states, PREDICT, newline
COMPLETION_EXTRA = 14  # a completion: 9 tag tokens, 4 rationale words and the end token beside the H forecast bins


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"lookback": 2, "horizon": 1, "d_model": 4, "n_layers": 1, "base_steps": 1, "base_stocks": 1,
                    "num_generations": 2, "max_extensions": 0, "oracle_paths": 1})  # fmt: skip
    most = MAX_NEW - COMPLETION_EXTRA
    _need(cfg.horizon <= most, "horizon", f"≤ {most} (the reasoner's {MAX_NEW} completion tokens)", cfg.horizon)
    most = CONTEXT - (PROMPT_EXTRA - 1) - COMPLETION_EXTRA
    _need(cfg.lookback + cfg.horizon <= most, "lookback", f"≤ {most} − horizon (prompt and completion fit the "
          f"reasoner's {CONTEXT}-token context)", cfg.lookback)  # fmt: skip
    n_train, n_test = int(cfg.n_days * 0.7), int(cfg.n_days * 0.2)  # the market's 70 / 10 / 20 % split
    n_val = cfg.n_days - n_test - n_train
    _need(cfg.horizon < n_val, "horizon", f"< the {n_val} validation days (n_days × 10 %)", cfg.horizon)
    _need(WARMUP + cfg.lookback < n_train - cfg.horizon, "lookback",
          f"< {n_train - cfg.horizon - WARMUP} (train days − horizon − {WARMUP} indicator warm-up days)",
          cfg.lookback)  # fmt: skip
    _need(cfg.grpo_batch >= cfg.num_generations, "grpo_batch", f"≥ num_generations = {cfg.num_generations}",
          cfg.grpo_batch)  # fmt: skip
    _need(math.isfinite(cfg.grpo_lr) and cfg.grpo_lr > 0, "grpo_lr", "finite and > 0", cfg.grpo_lr)
    _need(math.isfinite(cfg.beta) and cfg.beta >= 0, "beta", "finite and ≥ 0 (the KL coefficient)", cfg.beta)
    for name in ("sft_lr_grid", "lr_grid", "w_grid"):  # `tune_on_grid` takes positive grids
        v = getattr(cfg, name)
        _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), name, "a non-empty tuple of finite values > 0", v)
    _need(cfg.d_model % 4 == 0, "d_model", "a multiple of 4 (the tiny reasoner's attention heads)", cfg.d_model)
    tiny_config("llama", vocab_size=64, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, max_len=CONTEXT)
    for w in cfg.w_grid:  # ForecasterConfig: sizes ≥ 1, the CFG scale w of VTA's forecaster finite ≥ 0
        ForecasterConfig(lookback=cfg.lookback, horizon=cfg.horizon, guidance=w)
