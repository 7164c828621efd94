"""The remix card's config, checked in the driver before any worker starts (issue 48): every config the run builds
from the card config (the world, the policy's HF config, the SFT `TrainConfig`, TRL's `GRPOConfig` and one
`ReMixConfig` per ablation, and the real-LM half's two: their own range checks run, without creating any folder) and
the ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error naming the field. Kept out of the
experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from trl import GRPOConfig

from iclr26.lm.tiny import tiny_config
from iclr26.lm.train import TrainConfig
from iclr26.rlft.remix import ReMixConfig
from iclr26.rlft.remix.world import ArithmeticWorld

from . import Cfg
from .experiment import ABLATIONS
from .real import MAX_NEW

REAL_HELD_OUT = 200  # the real half scores the first real_eval of the world's 200 test problems


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def _positive(cfg: Cfg, names: tuple[str, ...]) -> None:
    for name in names:
        v = getattr(cfg, name)
        _need(math.isfinite(v) and v > 0, name, "finite and > 0", v)


def _trl(cfg: Cfg, per_iter: int, generations: int, length: int, lr: float) -> dict:
    out = str(Path(tempfile.gettempdir()) / "iclr26-remix-check")  # named, never created (TRL creates it on train)
    return dict(output_dir=out, per_device_train_batch_size=per_iter, num_generations=generations,
                max_completion_length=length, learning_rate=lr, lr_scheduler_type="constant", beta=cfg.beta,
                epsilon=cfg.epsilon, loss_type="bnpo", temperature=1.0, max_steps=10**6, logging_steps=10**6,
                report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True, bf16=False)  # fmt: skip


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _need(math.isfinite(cfg.beta) and cfg.beta >= 0, "beta", "finite and ≥ 0 (the KL coefficient)", cfg.beta)
    _positive(cfg, ("epsilon",))
    if cfg.micro:
        _at_least(cfg, {"d_model": 1, "n_layers": 1, "sft_examples": 1, "prompts_per_iter": 1, "num_generations": 2,
                        "n_test": 1, "max_completion_length": 1, "history_window": 0, "utd": 1,
                        "kl_lambda_start": 0, "kl_lambda_every": 1})  # fmt: skip
        _positive(cfg, ("lr", "lr_remix"))
        ArithmeticWorld(0, n_test=cfg.n_test)  # n_test + the 100 validation problems < 1000
        tiny_config("llama", vocab_size=64, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, max_len=32)
        TrainConfig(steps=cfg.sft_steps, batch_size=64, lr=3e-3, seq_len=16, warmup=20)
        per_iter = cfg.prompts_per_iter * cfg.num_generations
        common = _trl(cfg, per_iter, cfg.num_generations, cfg.max_completion_length, cfg.lr)
        GRPOConfig(**common, top_k=0)
        knobs = dict(off_policy_ratio=cfg.off_policy_ratio, history_window=cfg.history_window, utd=cfg.utd,
                     reincarnate_at=cfg.reincarnate_at, kl_lambda_start=cfg.kl_lambda_start,
                     kl_lambda_every=cfg.kl_lambda_every)  # fmt: skip
        common["learning_rate"] = cfg.lr_remix
        for arm in cfg.arms:
            if arm in ABLATIONS:
                ReMixConfig(**common, top_k=0, **{**knobs, **ABLATIONS[arm]})
    if cfg.real_iters:
        _at_least(cfg, {"real_prompts_per_iter": 1, "real_eval": 1})
        _positive(cfg, ("real_lr",))
        _need(bool(cfg.real_model), "real_model", "a model name or folder", cfg.real_model)
        _need(cfg.real_eval <= REAL_HELD_OUT, "real_eval", f"≤ {REAL_HELD_OUT} (the world's held-out problems)",
              cfg.real_eval)  # fmt: skip
        per_iter = cfg.real_prompts_per_iter * cfg.real_generations
        common = _trl(cfg, per_iter, cfg.real_generations, MAX_NEW, cfg.real_lr)
        GRPOConfig(**common)
        half = max(1, cfg.real_iters // 2)
        ReMixConfig(**common, off_policy_ratio=cfg.off_policy_ratio, history_window=cfg.history_window, utd=cfg.utd,
                    reincarnate_at=half, kl_lambda_start=1, kl_lambda_every=max(1, half // 5))  # fmt: skip
