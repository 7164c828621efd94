"""Batch-size schedules under a fixed data budget, and the FSL-optimal schedule.

Paper: Wang et al., "Fast Catch-Up, Late Switching: Optimal Batch Size Scheduling via Functional Scaling Laws"
(https://arxiv.org/abs/2602.14208, ICLR 2026).

A schedule is a batch size B(ρ) as a function of the fraction ρ of the data budget D already consumed. With a constant
learning rate η, a data slice dz costs dz/B steps, so the schedule sets both the intrinsic time reached,
T = η ∫ dz / B(z), and the noise injected, (η/B) per unit of intrinsic time. Small batches buy intrinsic time (signal
learning), large batches buy quiet; only noise injected near the end is not yet forgotten. The paper's findings: for
easy tasks (s ≥ 1 − 1/β) the optimum increases B throughout training; for hard tasks (s < 1 − 1/β) it keeps B small
for most of training and switches to a large batch late. `optimal_schedule` finds the FSL-optimal piecewise-constant
schedule numerically (log B per equal-data segment, L-BFGS-B), so the data budget holds by construction.
`BatchSizeSchedule.steps(D)` turns any schedule into per-step batch sizes that consume exactly D samples; for a neural
network the same list drives gradient accumulation (`accumulation_plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from iclr26.theory.bss_fsl import PowerLawTask

__all__ = [
    "BatchScheduleConfig",
    "BatchSizeSchedule",
    "OptimalSchedule",
    "optimal_schedule",
    "accumulation_plan",
    "train_with_batch_schedule",
]


@dataclass(frozen=True)
class BatchScheduleConfig:
    """The two-stage ("switch") schedule family and the FSL schedule optimiser."""

    b_small: int = field(default=4, metadata={"help": "batch size before the switch; paper's values not retrieved"})
    b_large: int = field(default=64, metadata={"help": "batch size after the switch; paper's values not retrieved"})
    switch_fraction: float = field(
        default=0.8,
        metadata={"help": "fraction ρ of the data budget consumed at B_small; 'late' in the paper (value not stated)"},
    )
    n_segments: int = field(default=8, metadata={"help": "equal-data segments of the FSL-optimal schedule; our choice"})

    def __post_init__(self):
        if not (isinstance(self.b_small, int) and self.b_small >= 1):
            raise ValueError(f"BatchScheduleConfig.b_small must be an integer ≥ 1, got {self.b_small!r}")
        if not (isinstance(self.b_large, int) and self.b_large >= self.b_small):
            raise ValueError(
                f"BatchScheduleConfig.b_large must be an integer ≥ b_small={self.b_small}, got {self.b_large!r}"
            )
        if not 0.0 <= self.switch_fraction <= 1.0:
            raise ValueError(f"BatchScheduleConfig.switch_fraction must be in [0, 1], got {self.switch_fraction}")
        if not (isinstance(self.n_segments, int) and self.n_segments >= 1):
            raise ValueError(f"BatchScheduleConfig.n_segments must be an integer ≥ 1, got {self.n_segments!r}")


@dataclass(frozen=True)
class BatchSizeSchedule:
    """Piecewise-constant batch size in the data coordinate.

    sizes[p] is used while the consumed fraction ρ lies in [boundaries[p-1], boundaries[p]) (boundaries exclude the
    end points 0 and 1, so len(boundaries) = len(sizes) − 1).
    """

    sizes: tuple[float, ...]
    boundaries: tuple[float, ...] = ()

    def __post_init__(self):
        if len(self.sizes) == 0:
            raise ValueError("BatchSizeSchedule.sizes is empty: give at least one batch size")
        if any(not (b >= 1 and math.isfinite(b)) for b in self.sizes):
            raise ValueError(f"BatchSizeSchedule.sizes must all be finite and ≥ 1, got {self.sizes}")
        if len(self.boundaries) != len(self.sizes) - 1:
            raise ValueError(
                f"BatchSizeSchedule needs len(boundaries) = len(sizes) − 1, got {len(self.boundaries)} boundaries for "
                f"{len(self.sizes)} sizes"
            )
        b = (0.0, *self.boundaries, 1.0)
        if any(not (b[i] <= b[i + 1]) for i in range(len(b) - 1)):
            raise ValueError(
                f"BatchSizeSchedule.boundaries must be non-decreasing fractions in [0, 1], got {self.boundaries}"
            )

    # --- families -------------------------------------------------------------------------------------------------
    @classmethod
    def constant(cls, b: float) -> BatchSizeSchedule:
        return cls((b,))

    @classmethod
    def two_stage(cls, b_small: float, b_large: float, switch_fraction: float) -> BatchSizeSchedule:
        """B_small for ρ < switch_fraction, then B_large ("early" switch: small ρ, "late" switch: large ρ)."""
        if not 0.0 <= switch_fraction <= 1.0:
            raise ValueError(f"switch_fraction must be in [0, 1], got {switch_fraction}")
        return cls((b_small, b_large), (switch_fraction,))

    @classmethod
    def from_config(cls, config: BatchScheduleConfig) -> BatchSizeSchedule:
        """The two-stage schedule of a `BatchScheduleConfig`."""
        return cls.two_stage(config.b_small, config.b_large, config.switch_fraction)

    @classmethod
    def piecewise(cls, sizes) -> BatchSizeSchedule:
        """Equal-data segments with the given batch sizes."""
        sizes = tuple(float(b) for b in sizes)
        p = len(sizes)
        return cls(sizes, tuple((i + 1) / p for i in range(p - 1)))

    @classmethod
    def linear_ramp(cls, b_start: float, b_end: float, n_segments: int = 16) -> BatchSizeSchedule:
        """B grows linearly in ρ from b_start to b_end (as n_segments equal-data steps)."""
        if n_segments < 1:
            raise ValueError(f"n_segments must be ≥ 1, got {n_segments}")
        mids = (np.arange(n_segments) + 0.5) / n_segments
        return cls.piecewise(b_start + (b_end - b_start) * mids)

    # --- use ----------------------------------------------------------------------------------------------------
    def batch_size_at(self, fraction: float) -> float:
        """Batch size once a fraction `fraction` of the budget has been consumed."""
        if not 0 <= fraction <= 1:
            raise ValueError(f"fraction of the data budget must be in [0, 1], got {fraction}")
        return self.sizes[int(np.searchsorted(self.boundaries, fraction, side="right"))]

    def segment_data(self, data_budget: int) -> np.ndarray:
        """Integer samples per segment, summing exactly to `data_budget`."""
        if not (isinstance(data_budget, (int, np.integer)) and data_budget >= 1):
            raise ValueError(f"data_budget must be a positive integer number of samples, got {data_budget!r}")
        edges = np.round(np.array((0.0, *self.boundaries, 1.0)) * data_budget).astype(np.int64)
        return np.diff(edges)

    def steps(self, data_budget: int) -> np.ndarray:
        """Per-step integer batch sizes that consume exactly `data_budget` samples.

        Segment p takes n_p = max(1, round(D_p / B_p)) steps whose sizes differ by at most one sample (the remainder
        is spread, never left as one tiny, noisy step).
        """
        out = []
        for d_p, b in zip(self.segment_data(data_budget), self.sizes):
            d_p = int(d_p)
            if d_p == 0:
                continue
            n = max(1, int(round(d_p / b)))
            base, rem = divmod(d_p, n)
            out.append(np.concatenate([np.full(rem, base + 1, dtype=np.int64), np.full(n - rem, base, dtype=np.int64)]))
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def __call__(self, samples_seen: int, data_budget: int) -> float:
        if not data_budget > 0:
            raise ValueError(f"data_budget must be > 0 samples, got {data_budget}")
        return self.batch_size_at(samples_seen / data_budget)


def accumulation_plan(batch_sizes, micro_batch: int) -> list[list[int]]:
    """Split each optimiser step's batch into micro-batches of at most `micro_batch` samples (gradient accumulation).

    Average the micro-batch gradients weighted by their sizes so each step is a mean over its full batch.
    """
    if not isinstance(micro_batch, (int, np.integer)) or micro_batch < 1:
        raise ValueError(f"micro_batch must be an integer ≥ 1, got {micro_batch!r}")
    sizes = np.asarray(batch_sizes, dtype=float)
    if sizes.ndim != 1 or np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
        raise ValueError(
            "batch_sizes must be a 1-D array of integers ≥ 1 (one per optimiser step; e.g. "
            f"BatchSizeSchedule.steps(D)), got {sizes[:8].tolist()}"
        )
    plan = []
    for b in sizes.astype(np.int64):
        full, rem = divmod(int(b), micro_batch)
        plan.append([micro_batch] * full + ([rem] if rem else []))
    return plan


@dataclass
class OptimalSchedule:
    schedule: BatchSizeSchedule
    predicted_risk: float
    noise_level: float


def optimal_schedule(
    task: PowerLawTask,
    data_budget: int,
    lr: float,
    b_min: float,
    b_max: float,
    n_segments: int = 8,
    fixed_point_iters: int = 3,
) -> OptimalSchedule:
    """FSL-optimal piecewise-constant batch schedule with n_segments equal-data segments and B in [b_min, b_max].

    Minimises the continuous-data FSL `PowerLawTask.fsl_final_risk` over u_p = log B_p with L-BFGS-B from several
    starts. The gradient-noise level σ_eff² = σ² + R(T) is set by a fixed-point iteration on the predicted final risk
    (only the noise injected near the end survives, and there R ≈ R(T)).
    """
    if not 1 <= b_min <= b_max:
        raise ValueError(f"need 1 ≤ b_min ≤ b_max, got b_min={b_min}, b_max={b_max}")
    if n_segments < 1 or fixed_point_iters < 1:
        raise ValueError(f"n_segments and fixed_point_iters must be ≥ 1, got {n_segments}, {fixed_point_iters}")
    data = np.full(n_segments, data_budget / n_segments)
    lo, hi = math.log(b_min), math.log(b_max)
    bounds = [(lo, hi)] * n_segments
    starts = [
        np.full(n_segments, lo),
        np.full(n_segments, hi),
        np.linspace(lo, hi, n_segments),
        np.full(n_segments, (lo + hi) / 2),
    ]
    level = task.sigma2
    best_u, best_val = None, np.inf
    for _ in range(fixed_point_iters):

        def objective(u, noise_level=level):
            return task.fsl_final_risk(data, np.exp(u), lr, noise_level)

        best_val = np.inf
        for u0 in starts + ([best_u] if best_u is not None else []):
            r = minimize(objective, u0, method="L-BFGS-B", bounds=bounds)
            if r.fun < best_val:
                best_u, best_val = r.x, float(r.fun)
        level = task.sigma2 + best_val  # σ_eff² = σ² + R(T)
    return OptimalSchedule(BatchSizeSchedule.piecewise(np.exp(best_u)), best_val, level)


def train_with_batch_schedule(
    model, optimizer, batch_loss, batch_sizes, micro_batch: int | None = None, on_step=None, progress: str | None = None
) -> int:
    """Train a torch model with a per-step batch-size schedule (e.g. `BatchSizeSchedule.steps(D)`).

    batch_loss(start, size) must return the mean loss on samples [start, start + size) of a never-repeating stream.
    Each optimiser step accumulates gradients over micro-batches weighted by size/B (a mean over the full batch).
    Nothing is reset at a batch-size change: optimiser state and learning rate carry over (our reading of the paper).
    on_step(step, samples_seen) is called after every optimiser step. Returns the number of samples consumed.
    """
    from tqdm.auto import tqdm

    sizes = np.asarray(batch_sizes)
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(f"batch_sizes must be a non-empty 1-D array (one entry per optimiser step), got {sizes.shape}")
    plan = accumulation_plan(sizes, micro_batch or int(sizes.max()))
    sizes = sizes.astype(np.int64)
    pos = 0
    for k, (b, micro) in enumerate(tqdm(list(zip(sizes, plan)), desc=progress, disable=progress is None, leave=False)):
        optimizer.zero_grad(set_to_none=True)
        for mb in micro:
            (batch_loss(pos, mb) * (mb / b)).backward()
            pos += mb
        optimizer.step()
        if on_step is not None:
            on_step(k + 1, pos)
    return pos
