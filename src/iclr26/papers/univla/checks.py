"""The univla card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (the tiny Llama's `ModelConfig`, `FastConfig`, the VQ codebook, the `TrainSpec` of
post-training and of fine-tuning: their own range checks run) and the ranges of the card's own fields that
`Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so that it stays outside the
run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.embodied.univla import FastConfig, ModelConfig, PatchVQ

from . import Cfg
from .experiment import TEXT_LEN, _spec

PATCHES = 9  # 12 × 12 frames in 4 × 4 patches


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"stride": 1, "n_frames": 2, "codebook": 2, "d_model": 1, "n_layers": 1, "n_heads": 1,
                    "post_steps": 1, "ft_steps": 1, "batch": 1, "eval_every": 1, "patience": 1,
                    "decay_patience": 1})  # fmt: skip
    mcfg = ModelConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads)  # d_model % n_heads == 0
    most = (mcfg.max_len - TEXT_LEN) // (PATCHES + 2)  # a clip: the instruction, then <boi> 9 codes <eoi> per frame
    what = f"an integer in [2, {most}] (a post-training clip fits the {mcfg.max_len}-token context)"
    _need(cfg.n_frames <= most, "n_frames", what, cfg.n_frames)
    _need(math.isfinite(cfg.lr) and cfg.lr > 0, "lr", "finite and > 0", cfg.lr)
    FastConfig(chunk=cfg.chunk)
    PatchVQ(patch=4, codebook=cfg.codebook, seed=0)
    for steps in (cfg.post_steps, cfg.ft_steps):  # TrainSpec: steps, batch, eval_every, patience, decay_patience ≥ 1
        _spec(cfg, steps)
