"""The uniwalker card's config, checked in the driver before any worker starts (issue 48): every method config the
run builds from the card config (the policy's `PolicyConfig`, the per-task `TrainConfig` and the joint reference's, one
`UniWalkerConfig` per Uni-Walker arm and tuning-grid value: their own range checks run) and the ranges of the card's
own fields that `Cfg.__post_init__` leaves open, each error naming the field. Kept out of the experiment so that it
stays outside the run's code fingerprint."""

from __future__ import annotations

import dataclasses
import math

from iclr26.embodied.uniwalker import PolicyConfig, TrainConfig, UniWalkerConfig
from iclr26.embodied.uniwalker.world import N_THOUGHT, WORDS

from . import ABLATIONS, Cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def _finite(cfg: Cfg, name: str, low: float, strict: bool) -> None:
    v = getattr(cfg, name)
    ok = math.isfinite(v) and (v > low if strict else v >= low)
    _need(ok, name, f"finite and {'>' if strict else '≥'} {low:g}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"hidden": 1, "hydra_heads": 1, "joint_rank_factor": 0, "pretrain_steps": 1})
    _finite(cfg, "lr", 0, strict=True)
    _finite(cfg, "lambda_ssc", 0, strict=False)
    _finite(cfg, "lambda_orth", 0, strict=False)
    for name in ("ssc_grid", "orth_grid"):  # empty: not tuned
        v = getattr(cfg, name)
        _need(all(math.isfinite(x) for x in v), name, "a tuple of finite values > 0 (empty: not tuned)", v)
    if "joint" in cfg.arms:  # its lr grid is searched (and extended downwards)
        v = cfg.joint_lrs
        _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), "joint_lrs",
              "a non-empty tuple of finite learning rates > 0", v)  # fmt: skip
    PolicyConfig(n_words=len(WORDS), n_thought=N_THOUGHT, hidden=cfg.hidden)
    tcfg = TrainConfig(lr=cfg.lr, max_steps=cfg.max_steps, eval_every=25, early_stop=cfg.early_stop)
    for lr in cfg.joint_lrs if "joint" in cfg.arms else ():
        dataclasses.replace(tcfg, max_steps=tcfg.max_steps * cfg.n_tasks // 3, lr=lr)
    for arm in (a for a in cfg.arms if a == "uw" or a.startswith("uw_")):
        off = {f: False for f in ABLATIONS if arm == f"uw_no_{f}"}
        for lam in (cfg.lambda_ssc, *(cfg.ssc_grid if arm == "uw" else ())):  # r ≥ 1, λ ≥ 0
            UniWalkerConfig(r=cfg.r, alpha=2.0 * cfg.r, snapshot_a=arm == "uw_code", lambda_ssc=lam, **off)
