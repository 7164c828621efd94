"""The remac card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (the base policy's `MixerConfig` and `FlowTrainConfig`, one `REMACConfig` per arm of the
ablation ladder: their own range checks run) and the ranges of the card's own fields that `Cfg.__post_init__` leaves
open, each error naming the field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.embodied.remac import FlowTrainConfig, MixerConfig, REMACConfig
from iclr26.embodied.remac.world import ACT_DIM, OBS_DIM

from . import Cfg
from .experiment import CHUNK, LADDER


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"horizon": 1, "base_steps": 1, "lora_steps": 1, "flow_steps": 1, "timing_reps": 1})
    _need(all(isinstance(d, int) for d in cfg.delays), "delays", "a tuple of integer delays", cfg.delays)
    _need(math.isfinite(cfg.lora_lr) and cfg.lora_lr > 0, "lora_lr", "finite and > 0", cfg.lora_lr)
    for name in ("rtc_betas", "te_ks"):  # the grids the validation tuning searches (and extends at an edge)
        v = getattr(cfg, name)
        _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), name, "a non-empty tuple of finite values > 0", v)
    MixerConfig(OBS_DIM, ACT_DIM, CHUNK)
    FlowTrainConfig(max_steps=cfg.base_steps)
    for kw in LADDER.values():  # REMACConfig: steps ≥ 1, lr > 0, the arm's switches
        REMACConfig(**kw, steps=cfg.lora_steps, lr=cfg.lora_lr)
