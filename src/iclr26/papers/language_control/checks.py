"""The language-control card's config, checked in the driver before any worker starts (issue 48): every config the
run builds from the card config (the tiny model's HF config, `TrainConfig`, one `SelectiveTuningConfig` per tuned
arm: their own range checks run) and the ranges of the card's own fields, each error naming the field. Kept out of the
experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.lenses.language_control.selective_tuning import SelectiveTuningConfig, select_layers
from iclr26.lm.tiny import tiny_config
from iclr26.lm.train import TrainConfig

from . import Cfg

STRATEGIES = ("all", "last", "first", "random")  # the arms full, last, first, random of `run`
FRACTIONS = ("frac_lx_to_en", "frac_lx_task", "frac_mono", "frac_parallel")  # of the mixture; the rest is English


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_layers": 1, "d_model": 1, "n_heads": 1, "n_pretrain": 1, "pretrain_steps": 1, "batch_size": 1,
                    "n_finetune": 1, "ft_epochs": 1, "ft_batch": 1, "k": 1, "n_eval": 1, "n_probe": 2})  # fmt: skip
    for name in ("lr", "ft_lr"):
        v = getattr(cfg, name)
        _need(math.isfinite(v) and v > 0, name, "a finite learning rate > 0", v)
    for name in (*FRACTIONS, "frac_instruction"):
        v = getattr(cfg, name)
        _need(math.isfinite(v) and 0 <= v <= 1, name, "a fraction in [0, 1]", v)
    total = sum(getattr(cfg, name) for name in FRACTIONS)
    _need(total < 1, "frac_lx_to_en + frac_lx_task + frac_mono + frac_parallel", "< 1 (the rest of the pretraining "
          "mixture is the English task data)", round(total, 6))  # fmt: skip
    _need(cfg.k <= cfg.n_layers, "k", f"≤ n_layers = {cfg.n_layers} (blocks tuned of the model's blocks)", cfg.k)
    tiny_config(cfg.arch, vocab_size=512, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                max_len=128)  # arch known, d_model divisible by n_heads  # fmt: skip
    TrainConfig(steps=cfg.pretrain_steps, batch_size=cfg.batch_size, lr=cfg.lr, warmup=50, seq_len=96, seed=0)
    for strategy in STRATEGIES:
        SelectiveTuningConfig(strategy=strategy, k=cfg.k, epochs=cfg.ft_epochs, lr=cfg.ft_lr, batch_size=cfg.ft_batch)
        select_layers(cfg.n_layers, strategy, cfg.k)
    if cfg.smollm2:  # the mismatched baseline pairs sentence n with sentence n + 1
        _at_least(cfg, {"smollm2_sentences": 2, "smollm2_concepts": 1})
