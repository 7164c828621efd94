"""The mlr card's config, checked in the driver before any worker starts (issue 48): every config the run builds from
the card config (the world, the backbone's HF config, `Bench.mcfg`'s `MLRConfig` for each pair rule and Step-DPO
rate, TRL's `GRPOConfig`: their own range checks run, without creating any folder) and the ranges of the card's own
fields that `Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so that it stays
outside the run's code fingerprint."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from pathlib import Path
from types import SimpleNamespace

from trl import GRPOConfig

from iclr26.lm.tiny import tiny_config
from iclr26.rlft.mlr.world import LETTERS, ModProgWorld

from . import DPO_ARMS, Cfg
from .bench import Bench
from .tuning import GRIDS, LR_FIELDS

PAIR_RULES = {"mlr": "tsmc", "mlr_outcome": "outcome", "mlr_random": "random", "mlr_nosplit": "tsmc"}


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _int(v, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        _need(_int(getattr(cfg, name), lo), name, f"an integer ≥ {lo}", getattr(cfg, name))


def _rate(name: str, v: float) -> None:
    _need(math.isfinite(v) and v > 0, name, "a finite learning rate > 0", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"d_model": 1, "n_layers": 1, "pretrain_lookups": 0, "pretrain_chains": 0,
                    "pretrain_label_chains": 0, "pretrain_reps": 0, "pretrain_epochs": 1})  # fmt: skip
    for name in ("train_horizons", "test_horizons"):  # horizons index the world's labels
        v = getattr(cfg, name)
        _need(bool(v) and all(_int(k, 1) and k <= len(LETTERS) for k in v), name,
              f"a non-empty tuple of horizons in [1, {len(LETTERS)}]", v)  # fmt: skip
    ModProgWorld(0, cfg.p, cfg.listing, cfg.operations)  # p in [3, 97]
    tiny_config("llama", vocab_size=128, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, max_len=512)
    _rate("base_lr", cfg.base_lr)
    _rate("dpo_planner_ratio", cfg.dpo_planner_ratio)
    for name in (*LR_FIELDS, "dpo_lr_planner"):
        _rate(name, getattr(cfg, name))
    dpo_rates = [(cfg.dpo_lr, cfg.dpo_lr_planner)]
    if cfg.tune:  # `tune_on_grid` takes positive grids; the planner's Step-DPO rate keeps the ratio
        for name in LR_FIELDS:
            v = getattr(cfg, GRIDS[name])
            _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), GRIDS[name],
                  "a non-empty tuple of finite rates > 0", v)  # fmt: skip
        dpo_rates = [(lr, cfg.dpo_planner_ratio * lr) for lr in cfg.dpo_lr_grid]
    # `Bench.mcfg` reads only the config (no world, no traces)
    Bench.mcfg(
        SimpleNamespace(cfg=cfg)
    )  # MLRConfig: lora_r, n_rollouts, k_candidates ≥ 2, beta > 0, rounds, prefix batches, ...
    for executor, planner in dpo_rates:
        for arm in DPO_ARMS:
            if arm in cfg.arms:
                tuned = dataclasses.replace(cfg, dpo_lr=executor, dpo_lr_planner=planner)
                Bench.mcfg(SimpleNamespace(cfg=tuned), pair_rule=PAIR_RULES[arm])
    if "grpo" in cfg.arms:
        _at_least(cfg, {"grpo_prompts": 1, "grpo_generations": 2, "grpo_max_iters": 1, "grpo_eval_every": 1})
        out = str(Path(tempfile.gettempdir()) / "iclr26-mlr-check")  # named, never created (TRL creates it on train)
        for lr in cfg.grpo_lr_grid if cfg.tune else (cfg.grpo_lr,):
            GRPOConfig(output_dir=out, per_device_train_batch_size=cfg.grpo_prompts * cfg.grpo_generations,
                       num_generations=cfg.grpo_generations, max_completion_length=12 * max(cfg.train_horizons),
                       learning_rate=lr, lr_scheduler_type="constant", beta=0.001, loss_type="bnpo", temperature=1.0,
                       top_k=0, max_steps=cfg.grpo_max_iters, logging_steps=10**6, report_to="none", use_cpu=True,
                       save_strategy="no", disable_tqdm=True)  # fmt: skip
