"""Progressive reward tracking (PRT) and the First Inverse Rate (FIR) rule that picks the downgrade model.

Eq. 4: with a downgrade model TM' (a deliberately weakened copy of the target), the shaped reward is

    0  if TM' is not broken (the target is then assumed safe and is not queried),
    1  if TM' is broken but the target TM is not,
    2  if TM is broken,

so a strategy that already breaks the weaker model earns partial credit, and the target is queried only for those.

FIR: for a binary evaluation vector E = (e_1..e_n), e_i is an *inverse element* if some later e_j < e_i (a 1 followed
by a 0); FIR = #inverse elements / n. Here E lists a downgrade model's verdicts on probes ordered from hardest to
easiest for the target (ties: 0s first, so only strict disagreements count), so a model whose unsafe region grows
the target's in its own shape gives E = 0...01...1 (FIR 0), while a model broken at random has many inversions.
Rule (the paper gives none in algorithmic form; the dossier's operationalisation): take the last model before the
largest increase of FIR along the series.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def shaped_reward(downgrade_broken: bool, target_broken: bool | None) -> float:
    """Eq. 4 (values 0/1/2); ``target_broken`` is None when the target was not queried."""
    if not downgrade_broken:
        return 0.0
    if target_broken is None:
        raise ValueError("the target must be queried when the downgrade model is broken")
    return 2.0 if target_broken else 1.0


class ProgressiveRewardTracker:
    """Eq. 4 on an environment with ``query_downgrade`` and ``query_target`` (the target only if TM' gave in)."""

    def __init__(self, env):
        self.env = env

    def __call__(self, strategy) -> tuple[float, bool | None]:
        if not self.env.query_downgrade(strategy):
            return 0.0, None
        hit = bool(self.env.query_target(strategy))
        return shaped_reward(True, hit), hit


def first_inverse_rate(e: Sequence[int], ease: Sequence[float] | None = None) -> float:
    """FIR of a 0/1 vector (in the given order, or sorted by ``ease`` ascending with 0s before 1s on ties)."""
    e = np.asarray(e, dtype=int)
    if e.ndim != 1 or len(e) == 0 or not np.isin(e, (0, 1)).all():
        raise ValueError(f"E must be a non-empty 0/1 vector, got {e!r}")
    if ease is not None:
        ease = np.asarray(ease, dtype=float)
        if ease.shape != e.shape:
            raise ValueError(f"ease must have E's shape {e.shape}, got {ease.shape}")
        e = e[np.lexsort((e, ease))]
    zeros = np.flatnonzero(e == 0)
    if len(zeros) == 0:
        return 0.0
    return float(np.sum(e[: zeros[-1]] == 1) / len(e))  # a 1 is inverse iff a 0 comes after it


def select_downgrade(firs: Sequence[float]) -> int:
    """1-based index of the last model before the largest FIR increase (the last model if FIR never rises)."""
    f = np.asarray(firs, dtype=float)
    if len(f) < 2:
        raise ValueError(f"need FIR values of at least two downgrade models, got {list(firs)!r}")
    jumps = np.diff(f)
    if jumps.max() <= 0:
        return len(f)
    return int(np.argmax(jumps)) + 1  # models M_1..M_K; jump j is from M_{j+1} to M_{j+2}
