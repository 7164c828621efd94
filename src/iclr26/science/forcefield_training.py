"""Training neural force fields on energies and forces, with FLOP and symmetry accounting.

Part of the reproduction of Ngo & Ravanbakhsh, "Scaling Laws and Symmetry, Evidence from Neural Force Fields"
(https://arxiv.org/abs/2510.09768). Targets are scaled so that forces have unit RMS (`TargetScaler`); the objective is

    L = λ_E · mean_b ((Ê_b − E_b) / n)² + λ_F · mean_{b,i,x} (F̂_bix − F_bix)²,   F̂ = −∂Ê/∂r (autograd),

so each step back-propagates through the force computation (`create_graph=True`). `train_forcefield` records the
validation loss at log-spaced steps together with the training FLOPs spent so far (one step counted once with
`torch.utils.flop_counter.FlopCounterMode`, including the double backward) — the raw material of data, parameter and
compute scaling fits (`forcefield_scaling`). `equivariance_error` measures how far a model is from E(3) symmetry.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from .forcefields import ForceField
from .potentials import ForceFieldData


class TargetScaler:
    """E' = (E − Σ_i μ_{Z_i}) / s and F' = F / s with per-species references μ (least squares) and s = force RMS.

    F' = −∂E'/∂r still holds, so a model trained on (E', F') is conservative in the original units too.
    """

    def __init__(self, data: ForceFieldData, n_species: int):
        counts = torch.nn.functional.one_hot(data.species, n_species).sum(1).to(torch.float64)
        self.mu = torch.linalg.lstsq(counts, data.energy.to(torch.float64)[:, None]).solution[:, 0]
        self.scale = float(data.forces.to(torch.float64).pow(2).mean().sqrt()) or 1.0
        self.n_species = n_species

    def transform(self, data: ForceFieldData) -> ForceFieldData:
        ref = self.mu[data.species].sum(1)
        e = (data.energy.to(torch.float64) - ref) / self.scale
        return ForceFieldData(data.species, data.pos, e, data.forces.to(torch.float64) / self.scale)


@dataclass
class TrainConfig:
    """Optimisation recipe (the paper's was not retrieved; these are common MLIP choices at small scale)."""

    steps: int = field(default=200, metadata={"help": "optimiser steps (≥ 1), the same for every data size"})
    batch_size: int = field(default=16, metadata={"help": "structures per step (≥ 1); our choice"})
    lr: float = field(
        default=3e-2,
        metadata={"help": "peak Adam LR (> 0), cosine-decayed to 0; best for the e3nn models in a pilot (1e-2 for u)"},
    )
    energy_weight: float = field(default=1.0, metadata={"help": "λ_E on MSE of per-atom energy (≥ 0)"})
    force_weight: float = field(default=1.0, metadata={"help": "λ_F on MSE of force components (≥ 0)"})
    n_evals: int = field(default=5, metadata={"help": "validation checkpoints, log-spaced in steps (≥ 1)"})
    seed: int = field(default=0, metadata={"help": "seed of initialisation and batch order"})

    def __post_init__(self):
        for name in ("steps", "batch_size", "n_evals"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"TrainConfig.lr must be > 0, got {self.lr}")
        if self.energy_weight < 0 or self.force_weight < 0 or self.energy_weight + self.force_weight == 0:
            raise ValueError("TrainConfig.energy_weight and force_weight must be ≥ 0 and not both 0")


def _loss(model, d: ForceFieldData, cfg: TrainConfig, create_graph: bool) -> tuple[torch.Tensor, dict]:
    n = d.pos.shape[1]
    if cfg.force_weight > 0:
        e, f = model.energy_and_forces(d.species, d.pos, create_graph=create_graph)
        f_mse = (f - d.forces).pow(2).mean()
    else:
        e, f_mse = model(d.species, d.pos), torch.zeros((), dtype=d.pos.dtype)
    e_mse = ((e - d.energy) / n).pow(2).mean()
    return cfg.energy_weight * e_mse + cfg.force_weight * f_mse, {"energy_mse": e_mse, "force_mse": f_mse}


@torch.no_grad()
def evaluate(model: ForceField, val: ForceFieldData, cfg: TrainConfig, chunk: int = 256) -> dict[str, float]:
    """Validation loss (the training objective) and its energy/force parts, in scaled units."""
    totals = {"loss": 0.0, "energy_mse": 0.0, "force_mse": 0.0}
    for s in range(0, len(val), chunk):
        part = val.subset(slice(s, s + chunk))
        loss, parts = _loss(model, part, cfg, create_graph=False)
        w = len(part) / len(val)
        totals["loss"] += float(loss) * w
        for k, v in parts.items():
            totals[k] += float(v) * w
    return totals


def flops_per_step(model: ForceField, batch: ForceFieldData, cfg: TrainConfig) -> float:
    """FLOPs of one optimisation step (forward, force backward with create_graph, loss backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        loss, _ = _loss(model, batch, cfg, create_graph=True)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def train_forcefield(
    model: ForceField, train: ForceFieldData, val: ForceFieldData, cfg: TrainConfig, progress: bool = False
) -> dict:
    """Train on scaled targets (see `TargetScaler`); return the final validation metrics and the learning curve.

    `curve` holds (step, training FLOPs, wall seconds, validation loss) at `n_evals` log-spaced steps; `best_loss`
    is the lowest validation loss among them (early stopping).
    """
    if len(train) < 1 or len(val) < 1:
        raise ValueError("train and val must hold at least one structure each")
    dtype = next(model.parameters()).dtype
    train, val = train.to(dtype), val.to(dtype)
    gen = torch.Generator().manual_seed(cfg.seed)
    bs = min(cfg.batch_size, len(train))
    fps = flops_per_step(model, train.subset(slice(0, bs)), cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps))
    )
    evals = sorted({max(1, round(cfg.steps ** ((k + 1) / cfg.n_evals))) for k in range(cfg.n_evals)} | {cfg.steps})
    curve, perm, cursor, t0, train_time = [], torch.randperm(len(train), generator=gen), 0, time.perf_counter(), 0.0
    steps = range(1, cfg.steps + 1)
    if progress:
        from tqdm.auto import tqdm

        steps = tqdm(steps, desc=f"{type(model).__name__} D={len(train)}", leave=False)
    for step in steps:
        if cursor + bs > len(train):
            perm, cursor = torch.randperm(len(train), generator=gen), 0
        batch = train.subset(perm[cursor : cursor + bs])
        cursor += bs
        model.train()
        loss, _ = _loss(model, batch, cfg, create_graph=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step in evals:
            train_time += time.perf_counter() - t0
            metrics = evaluate(model.eval(), val, cfg)
            curve.append({"step": step, "flops": fps * step, "seconds": train_time, **metrics})
            t0 = time.perf_counter()
    best = min(c["loss"] for c in curve)  # early stopping on validation, as in data-scaling studies
    return {**curve[-1], "best_loss": best, "flops_per_step": fps, "params": model.num_parameters(), "curve": curve}


def equivariance_error(model: ForceField, data: ForceFieldData, n_rotations: int = 4, seed: int = 0) -> dict:
    """Relative change of E under random rotations, and of F against R·F (0 for an exactly equivariant model)."""
    from .potentials import random_rotations

    dtype = next(model.parameters()).dtype
    d = data.to(dtype)
    e0, f0 = (t.detach() for t in model.energy_and_forces(d.species, d.pos))
    e_err, f_err = 0.0, 0.0
    for rot in random_rotations(n_rotations, torch.Generator().manual_seed(seed), dtype):
        e1, f1 = (t.detach() for t in model.energy_and_forces(d.species, d.pos @ rot.T))
        e_err = max(e_err, float((e1 - e0).abs().max() / e0.abs().max().clamp_min(1e-12)))
        f_err = max(f_err, float((f1 - f0 @ rot.T).abs().max() / f0.abs().max().clamp_min(1e-12)))
    return {"energy_rel_error": e_err, "force_rel_error": f_err}
