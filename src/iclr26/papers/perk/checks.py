"""The perk card's config, checked in the driver before any worker starts (issue 48): every config the run builds from
the card config (the world, the tiny base's HF config, one `PERKConfig` per inner × outer learning rate of the grids,
one `FTICRConfig` per FT-ICR rate, the SmolLM2 `PERKConfig`: their own range checks run) and the ranges of the card's
own fields that `Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so that it
stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.latent.perk import FTICRConfig, PERKConfig
from iclr26.latent.perk.world import KVWorld
from iclr26.lm.tiny import tiny_config

from . import Cfg
from .tuning import perk_config

GRIDS = ("inner_lr_grid", "outer_lr_grid", "icr_lr_grid")


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"sents_per_seg": 1, "d_model": 1, "n_layers": 1, "n_heads": 1, "base_steps": 1, "base_batch": 1,
                    "base_eval_every": 1, "base_patience": 1, "lora_rank": 1, "inner_steps": 1, "meta_steps": 1,
                    "meta_batch": 1, "icr_steps": 1, "icr_batch": 1, "eval_every": 1, "patience": 1, "n_val": 1,
                    "n_test": 1, "max_extensions": 0})  # fmt: skip
    _need(math.isfinite(cfg.base_lr) and cfg.base_lr > 0, "base_lr", "a finite learning rate > 0", cfg.base_lr)
    _need(math.isfinite(cfg.base_lm_weight) and cfg.base_lm_weight >= 0, "base_lm_weight", "finite and ≥ 0",
          cfg.base_lm_weight)  # fmt: skip
    for name in GRIDS:  # `tune_on_grid` takes positive grids
        v = getattr(cfg, name)
        _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), name, "a non-empty tuple of finite rates > 0", v)
    w = KVWorld(cfg.sents_per_seg, cfg.n_keys, cfg.n_keys)  # n_keys within the world's vocabulary
    tiny_config(cfg.arch, vocab_size=512, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                max_len=256)  # arch known, d_model divisible by n_heads  # fmt: skip
    for inner in cfg.inner_lr_grid:
        perk_config(cfg, w, inner_lr=inner)  # the untrained-init control
        for outer in cfg.outer_lr_grid:
            perk_config(cfg, w, inner_lr=inner, outer_lr=outer)
    for lr in cfg.icr_lr_grid:
        FTICRConfig(lr=lr)
    if cfg.smollm2:
        _at_least(cfg, {"smol_tokens": 1, "smol_steps": 1, "smol_passages": 1})
        _need(math.isfinite(cfg.smol_lr) and cfg.smol_lr > 0, "smol_lr", "a finite learning rate > 0", cfg.smol_lr)
        PERKConfig(seg_len=cfg.smol_tokens + 16, inner_steps=cfg.smol_steps, unroll_last=0, lora_rank=8,
                   inner_lr=cfg.smol_lr, inner_weight_decay=0.0)  # fmt: skip
