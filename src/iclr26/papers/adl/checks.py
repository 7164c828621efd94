"""The adl card's config, checked in the driver before any worker starts (issue 48): every config the run builds from
the card config (the tiny model's HF config, the pretraining and finetuning `TrainConfig`, both `ADLConfig`: their own
range checks run) and the ranges of the card's own fields, each error naming the field. Kept out of the experiment so
that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.lenses.adl import ADLConfig
from iclr26.lm.tiny import tiny_config
from iclr26.lm.train import TrainConfig

from . import Cfg

OPENING = 12  # tokens of every generic document opening (`run`: δ̄ on the first n_positions of them)


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _int(v, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        _need(_int(getattr(cfg, name), lo), name, f"an integer ≥ {lo}", getattr(cfg, name))


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_topics": 2, "n_layers": 1, "d_model": 1, "n_heads": 1, "n_base_docs": 1, "pretrain_steps": 1,
                    "pretrain_batch": 1, "n_ft_docs": 1, "ft_epochs": 1, "n_generic": 1, "steer_prompts": 1,
                    "steer_tokens": 1, "search_steps": 1, "bb_trials": 1})  # fmt: skip
    # δ̄ is the mean over the non-BOS positions of the first n_positions of a 12-token opening
    _need(_int(cfg.n_positions, 2) and cfg.n_positions <= OPENING, "n_positions", f"an integer in [2, {OPENING}]",
          cfg.n_positions)  # fmt: skip
    _need(math.isfinite(cfg.ft_lr) and cfg.ft_lr > 0, "ft_lr", "a finite learning rate > 0", cfg.ft_lr)
    _need(math.isfinite(cfg.max_strength) and cfg.max_strength > 0, "max_strength", "finite and > 0", cfg.max_strength)
    ratios = cfg.mix_ratios
    _need(all(math.isfinite(r) and r >= 0 for r in ratios) and 0.0 in ratios, "mix_ratios",
          "finite ratios ≥ 0 that include 0 (the unmixed organism every claim reads)", ratios)  # fmt: skip
    _need(bool(cfg.bb_budgets) and all(_int(b, 1) and b <= cfg.n_generic for b in cfg.bb_budgets), "bb_budgets",
          f"a non-empty tuple of sample counts in [1, n_generic = {cfg.n_generic}]", cfg.bb_budgets)  # fmt: skip
    _need(cfg.steer_prompts <= cfg.n_generic, "steer_prompts", f"≤ n_generic = {cfg.n_generic}", cfg.steer_prompts)
    tiny_config("llama", vocab_size=512, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, max_len=128)
    TrainConfig(steps=cfg.pretrain_steps, batch_size=cfg.pretrain_batch, lr=3e-3, warmup=30, seq_len=64,
                mode="stream")  # fmt: skip
    TrainConfig(steps=1, batch_size=16, lr=cfg.ft_lr, warmup=5, seq_len=64, mode="stream")
    ADLConfig(n_positions=cfg.n_positions, search_steps=cfg.search_steps, max_strength=cfg.max_strength)
    if cfg.smollm2:
        _at_least(cfg, {"smollm2_steps": 1, "smollm2_generic": 1})
        _need(bool(cfg.smollm2_scales) and all(math.isfinite(s) and s > 0 for s in cfg.smollm2_scales),
              "smollm2_scales", "a non-empty tuple of finite Patchscope scales > 0", cfg.smollm2_scales)  # fmt: skip
        ADLConfig(n_positions=cfg.n_positions, scales=cfg.smollm2_scales)
