"""The equivariance-scaling card's config, checked in the driver before any worker starts (issue 48): every method
config the run builds from the card config (`EquivariantConfig` of ℓ_max = 1 and 2 at every size tier,
`UnconstrainedConfig`, one `TrainConfig` per architecture for the synthetic and the EMT sweeps: their own range checks
run) and the card's own fields, each error naming the field. No model is built (the width matching builds models; only
its inputs are checked). Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.science.forcefields import EquivariantConfig, UnconstrainedConfig
from iclr26.science.forcefields.training import TrainConfig
from iclr26.science.forcefields.world import ManyBodyPotentialConfig

from . import _LMAX, Cfg

EMT_CUTOFF = 5.0  # Å, the EMT sweep's r_max


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def _sizes(cfg: Cfg, name: str, distinct: int) -> None:
    v = getattr(cfg, name)
    ok = all(isinstance(x, int) and x >= 1 for x in v) and len(set(v)) >= distinct
    _need(ok, name, f"a tuple of ≥ {distinct} distinct integers ≥ 1 (a power-law fit needs two)", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_atoms": 2, "n_val": 1, "steps": 1, "batch_size": 1, "n_evals": 1, "patience": 0,
                    "eval_every": 1})  # fmt: skip
    _need(math.isfinite(cfg.temperature) and cfg.temperature > 0, "temperature", "finite and > 0", cfg.temperature)
    _sizes(cfg, "data_sizes", 2)
    _sizes(cfg, "size_tiers", 1)
    runs = [(cfg.steps, ManyBodyPotentialConfig().pair_cutoff)]
    if cfg.emt:
        _sizes(cfg, "emt_data_sizes", 2)
        _at_least(cfg, {"emt_steps": 1, "emt_burn_in": 0})
        runs.append((cfg.emt_steps, EMT_CUTOFF))
    for name in ("lr_u", "lr_l1", "lr_l2"):
        lr = getattr(cfg, name)
        _need(math.isfinite(lr) and lr > 0, name, "finite and > 0", lr)
        for steps, _ in runs:  # TrainConfig: steps, batch_size, n_evals, eval_every ≥ 1, patience ≥ 0, lr finite > 0
            TrainConfig(steps=steps, batch_size=cfg.batch_size, lr=lr, n_evals=cfg.n_evals, seed=0,
                        patience=cfg.patience, eval_every=cfg.eval_every,
                        min_rel_improvement=cfg.min_rel_improvement)  # fmt: skip
    for _, r_max in runs:
        UnconstrainedConfig(r_max=r_max, avg_neighbors=cfg.n_atoms - 1)
        for tier in cfg.size_tiers:  # mul ≥ 1, lmax in [0, 3]
            for lmax in _LMAX.values():
                EquivariantConfig(mul=tier, lmax=lmax, r_max=r_max, avg_neighbors=cfg.n_atoms - 1)
