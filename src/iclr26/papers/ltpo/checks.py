"""The ltpo card's config, checked in the driver before any worker starts (issue 48): every config the run builds
from the card config (the world, the tiny reasoner's HF config, one `LTPOConfig` per tuning-grid value and estimator:
their own range checks run) and the ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error
naming the field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.latent.ltpo import LTPOConfig
from iclr26.latent.ltpo.world import ModArithWorld
from iclr26.lm.tiny import tiny_config

from . import Cfg
from .tinymodel import RECIPE

GRIDS = ("sigma_grid", "step_grid", "adam_grid", "smol_sigma_grid", "smol_step_grid")


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"num_thoughts": 1, "steps": 1, "top_k": 1, "n_test": 1, "n_val": 1, "train_steps": 1,
                    "d_model": 1, "n_layers": 1})  # fmt: skip
    _need(all(isinstance(n, int) and n > cfg.train_ops for n in cfg.ood_ops) and len(cfg.ood_ops) >= 1, "ood_ops",
          f"a non-empty tuple of chain lengths > train_ops = {cfg.train_ops}", cfg.ood_ops)  # fmt: skip
    _need(math.isfinite(cfg.corrupt) and cfg.corrupt > 0, "corrupt", "finite and > 0 (× RMS(E))", cfg.corrupt)
    for name in GRIDS:  # `tune` takes positive grids; η = step·σ0²/R̄0 and the Adam lr must be finite
        v = getattr(cfg, name)
        _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), name, "a non-empty tuple of finite values > 0", v)
    ModArithWorld(cfg.modulus, cfg.train_ops)  # the modulus must be a prime
    heads = {n: RECIPE[n] for n in ("n_heads", "n_kv_heads", "max_len")}
    tiny_config("llama", vocab_size=64, d_model=cfg.d_model, n_layers=cfg.n_layers, **heads)  # d_model ÷ the heads
    for sigma in cfg.sigma_grid:  # LTPOConfig: sigma_decay in (0, 1], top_k ≥ 1, finite σ0 and η (RMS(E) = 1 here)
        for step in cfg.step_grid:
            LTPOConfig(num_thoughts=cfg.num_thoughts, steps=cfg.steps, sigma=sigma, sigma_decay=cfg.sigma_decay,
                       top_k=cfg.top_k, lr=step * sigma**2)  # fmt: skip
        for adam in cfg.adam_grid:
            LTPOConfig(num_thoughts=cfg.num_thoughts, steps=cfg.steps, sigma=sigma, sigma_decay=cfg.sigma_decay,
                       top_k=cfg.top_k, lr=adam, estimator="autograd")  # fmt: skip
    if cfg.smol:
        _at_least(cfg, {"smol_n": 1, "smol_val": 1, "smol_steps": 1, "smol_oracle_steps": 1, "smol_new_tokens": 1})
        for sigma in cfg.smol_sigma_grid:
            for step in cfg.smol_step_grid:
                LTPOConfig(num_thoughts=cfg.num_thoughts, steps=cfg.smol_steps, lr=step * sigma**2, sigma=sigma,
                           sigma_decay=cfg.sigma_decay, top_k=cfg.top_k)  # fmt: skip
