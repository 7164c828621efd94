"""The boolean-llm card's config, checked in the driver before any worker starts (issue 48): every config the run
builds from the card config (the tiny llama's HF config, one `MBOKConfig` per finetuned variant and grid value, the
SmolLM2 finetuning `MBOKConfig`: their own range checks run) and the ranges of the card's own fields that
`Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so that it stays outside the
run's code fingerprint."""

from __future__ import annotations

import dataclasses
import math

from iclr26.compression.mbok import MBOKConfig
from iclr26.lm.tiny import tiny_config

from . import Cfg

QAT_GROUP = 64  # the distilled RTN-2 baseline's group (`finetune.makers`): it must divide every linear's in_features


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"seq_len": 2, "max_grid_extensions": 0})
    _need(cfg.d_model % QAT_GROUP == 0, "d_model", f"a multiple of {QAT_GROUP} (the RTN-2 QAT baseline's group must "
          "divide every linear layer's input width)", cfg.d_model)  # fmt: skip
    for name in ("bool_lr_grid", "qat_lr_grid", "scale_lr_grid"):
        v = getattr(cfg, name)
        _need(all(math.isfinite(x) for x in v), name, "a grid of finite values", v)
    tiny_config("llama", vocab_size=1024, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, max_len=cfg.seq_len)
    base = MBOKConfig(steps=cfg.ft_steps, batch_size=cfg.ft_batch, gamma=cfg.gamma, fp_lr=cfg.fp_lr, seed=0)
    for lr in cfg.bool_lr_grid:  # K = 2 last / all kernels, K = 3
        for k, kernels in ((2, "last"), (2, "all"), (3, "last")):
            dataclasses.replace(base, k=k, kernels=kernels, boolean_lr=lr)
    for lr in cfg.scale_lr_grid:  # the scalings-only control
        dataclasses.replace(base, k=2, boolean_lr=0.1, fp_lr=lr)
    for lr in cfg.qat_lr_grid:  # OneBit and RTN-2 latent-weight QAT
        dataclasses.replace(base, k=1, fp_lr=lr)
    if cfg.real:
        _need(bool(cfg.real_model), "real_model", "a model name or folder", cfg.real_model)
        _at_least(cfg, {"real_skip_layers": 0, "real_eval_blocks": 1, "real_seq_len": 2, "real_calib_blocks": 1,
                        "real_ft_batch": 1})  # fmt: skip
        MBOKConfig(k=2, steps=cfg.real_ft_steps, batch_size=cfg.real_ft_batch, boolean_lr=cfg.real_bool_lr,
                   fp_lr=1e-4, gamma=cfg.gamma, seed=0)  # fmt: skip
