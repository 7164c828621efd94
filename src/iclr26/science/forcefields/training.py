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

from iclr26.science.forcefields import ForceField
from iclr26.science.forcefields.world import ForceFieldData


class TargetScaler:
    """E' = (E − Σ_i μ_{Z_i}) / s and F' = F / s with per-species references μ (least squares) and s = force RMS.

    F' = −∂E'/∂r still holds, so a model trained on (E', F') is conservative in the original units too.
    """

    def __init__(self, data: ForceFieldData, n_species: int):
        check_data(data, "data")
        if int(data.species.max()) >= n_species or int(data.species.min()) < 0:
            raise ValueError(
                f"species indices must lie in [0, n_species={n_species}), got max {int(data.species.max())}"
            )
        counts = torch.nn.functional.one_hot(data.species, n_species).sum(1).to(torch.float64)
        self.mu = torch.linalg.lstsq(counts, data.energy.to(torch.float64)[:, None]).solution[:, 0]
        self.scale = float(data.forces.to(torch.float64).pow(2).mean().sqrt()) or 1.0
        self.n_species = n_species

    def transform(self, data: ForceFieldData) -> ForceFieldData:
        check_data(data, "data")
        ref = self.mu[data.species].sum(1)
        e = (data.energy.to(torch.float64) - ref) / self.scale
        return ForceFieldData(data.species, data.pos, e, data.forces.to(torch.float64) / self.scale)


def check_data(d: ForceFieldData, what: str) -> None:
    """A labelled set is non-empty, shaped (B, n) / (B, n, 3) / (B,) / (B, n, 3) and finite."""
    b = len(d)
    if b < 1 or d.pos.dim() != 3 or d.pos.shape[-1] != 3 or d.species.shape != d.pos.shape[:2]:
        raise ValueError(f"{what}: need at least one structure, species (B, n) and pos (B, n, 3); got "
                         f"{tuple(d.species.shape)}, {tuple(d.pos.shape)}")  # fmt: skip
    if d.energy.shape != (b,) or d.forces.shape != d.pos.shape:
        raise ValueError(f"{what}: energy must be (B,) and forces (B, n, 3), got {tuple(d.energy.shape)}, "
                         f"{tuple(d.forces.shape)}")  # fmt: skip
    for name in ("pos", "energy", "forces"):
        if not bool(torch.isfinite(getattr(d, name)).all()):
            raise ValueError(f"{what}: {name} contains NaN or inf; drop or relabel those structures")


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
    patience: int = field(
        default=0,
        metadata={
            "help": "0: a fixed budget of `steps` with cosine decay. > 0: train to convergence: validate every "
            "`eval_every` steps, halve the LR after patience//2 validations without improvement, stop after `patience` "
            "(or at `steps`, the budget cap) and restore the best weights (our choice; the paper's recipe was not "
            "retrieved)"
        },
    )
    eval_every: int = field(default=25, metadata={"help": "steps between validations when patience > 0 (≥ 1)"})
    min_rel_improvement: float = field(
        default=1e-3, metadata={"help": "relative drop of the validation loss that counts as an improvement (≥ 0)"}
    )

    def __post_init__(self):
        if self.patience < 0 or not 0 <= self.min_rel_improvement < math.inf:
            raise ValueError(
                f"TrainConfig.patience and min_rel_improvement must be ≥ 0, got {self.patience}, "
                f"{self.min_rel_improvement}"
            )
        for name in ("steps", "batch_size", "n_evals", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if not 0 < self.lr < math.inf:
            raise ValueError(f"TrainConfig.lr must be finite and > 0, got {self.lr}")
        w = (self.energy_weight, self.force_weight)
        if not all(0 <= v < math.inf for v in w) or sum(w) == 0:
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
    check_data(val, "val")
    if chunk < 1:
        raise ValueError(f"chunk must be ≥ 1, got {chunk}")
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

    `curve` holds (step, training FLOPs, wall seconds, validation loss) at the validation steps; `best_loss` is the
    lowest validation loss among them (early stopping). With ``cfg.patience > 0`` training runs to convergence on the
    validation loss (see `TrainConfig.patience`); `steps_used` and `converged` (1.0 if it stopped before the cap)
    report the budget actually spent, and the model ends with its best weights.
    """
    check_data(train, "train")
    check_data(val, "val")
    with torch.enable_grad():  # also where the caller switched autograd off
        return _train(model, train, val, cfg, progress)


def _train(model, train, val, cfg: TrainConfig, progress: bool) -> dict:
    dtype = next(model.parameters()).dtype
    train, val = train.to(dtype), val.to(dtype)
    gen = torch.Generator().manual_seed(cfg.seed)
    bs = min(cfg.batch_size, len(train))
    fps = flops_per_step(model, train.subset(slice(0, bs)), cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    converge = cfg.patience > 0
    if converge:
        evals = set(range(cfg.eval_every, cfg.steps + 1, cfg.eval_every)) | {cfg.steps}
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, factor=0.5, patience=max(1, cfg.patience // 2) - 1, threshold=cfg.min_rel_improvement
        )
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps))
        )
        evals = {max(1, round(cfg.steps ** ((k + 1) / cfg.n_evals))) for k in range(cfg.n_evals)} | {cfg.steps}
    curve, perm, cursor, t0, train_time = [], torch.randperm(len(train), generator=gen), 0, time.perf_counter(), 0.0
    best, best_state, bad, step = math.inf, None, 0, 0
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
        if not converge:
            sched.step()
        if step in evals:
            train_time += time.perf_counter() - t0
            metrics = evaluate(model.eval(), val, cfg)
            curve.append({"step": step, "flops": fps * step, "seconds": train_time, **metrics})
            t0 = time.perf_counter()
            if converge:
                if metrics["loss"] < best * (1 - cfg.min_rel_improvement):
                    best, bad = metrics["loss"], 0
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                else:
                    bad += 1
                plateau.step(metrics["loss"])
                if bad >= cfg.patience:
                    break
    out = {**curve[-1], "best_loss": min(c["loss"] for c in curve)}  # early stopping on validation
    if converge:
        if best_state is not None:
            model.load_state_dict(best_state)
        out.update(steps_used=float(step), converged=float(bad >= cfg.patience))
    return {**out, "flops_per_step": fps, "params": model.num_parameters(), "curve": curve}


def equivariance_error(model: ForceField, data: ForceFieldData, n_rotations: int = 4, seed: int = 0) -> dict:
    """Relative change of E under random rotations, and of F against R·F (0 for an exactly equivariant model)."""
    from iclr26.science.forcefields.world import random_rotations

    if n_rotations < 1:
        raise ValueError(f"n_rotations must be ≥ 1, got {n_rotations}")
    dtype = next(model.parameters()).dtype
    d = data.to(dtype)
    e0, f0 = (t.detach() for t in model.energy_and_forces(d.species, d.pos))
    e_err, f_err = 0.0, 0.0
    for rot in random_rotations(n_rotations, torch.Generator().manual_seed(seed), dtype):
        e1, f1 = (t.detach() for t in model.energy_and_forces(d.species, d.pos @ rot.T))
        e_err = max(e_err, float((e1 - e0).abs().max() / e0.abs().max().clamp_min(1e-12)))
        f_err = max(f_err, float((f1 - f0 @ rot.T).abs().max() / f0.abs().max().clamp_min(1e-12)))
    return {"energy_rel_error": e_err, "force_rel_error": f_err}
