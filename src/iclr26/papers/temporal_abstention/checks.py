"""The temporal-abstention card's config, checked in the driver before any worker starts (issue 48): every config the
run builds from the card config (the policy's HF config, the base's `TrainConfig`, TRL's `SFTConfig` and `GRPOConfig`
through the method's own builders: their own range checks run, without creating any folder) and the ranges of the
card's own fields that `Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so
that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from iclr26.lm.tiny import tiny_config
from iclr26.lm.train import TrainConfig
from iclr26.rlft.abstention.trainers import grpo_config, sft_config

from . import Cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    if not cfg.micro:
        return  # the real-model check takes only real_steps (checked by Cfg) and fixed settings of its own
    _at_least(cfg, {"d_model": 1, "n_layers": 1, "num_generations": 2, "grpo_batch": cfg.num_generations})
    _need(math.isfinite(cfg.beta) and cfg.beta >= 0, "beta", "finite and ≥ 0 (the KL coefficient)", cfg.beta)
    tiny_config("llama", vocab_size=512, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, max_len=192)
    if cfg.base_steps:
        _at_least(cfg, {"base_items": 1})
        TrainConfig(steps=cfg.base_steps, batch_size=32, lr=3e-3, warmup=50, seq_len=192)
    out = str(Path(tempfile.gettempdir()) / "iclr26-abstention-check")  # named, never created (TRL: on train)
    sft_config(out, learning_rate=cfg.sft_lr, num_train_epochs=cfg.sft_max_epochs, per_device_train_batch_size=32,
               max_length=192, use_cpu=True, disable_tqdm=True, logging_steps=1000, warmup_steps=10, bf16=False,
               completion_only_loss=not cfg.sft_full_loss)  # fmt: skip
    grpo_config(out, learning_rate=cfg.grpo_lr, max_steps=cfg.grpo_steps, per_device_train_batch_size=cfg.grpo_batch,
                num_generations=cfg.num_generations, max_completion_length=cfg.max_new_tokens, beta=cfg.beta,
                use_cpu=True, logging_steps=1, disable_tqdm=True, bf16=False)  # fmt: skip
