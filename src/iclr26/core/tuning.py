"""Hyper-parameter selection on a validation split with a grid that grows until the choice is interior.

A method tuned on a fixed grid that picks the grid's largest (or smallest) value has not been tuned: its best value
may lie beyond the grid, and a comparison with a method whose optimum is inside the grid is then unfair. `tune_on_grid`
evaluates a log-spaced grid and, while the best value sits on an edge, adds the next value beyond that edge (same
ratio as the grid's neighbouring values), up to `max_extensions` times. The result says whether an edge was still
chosen, so that a caller can report it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GridResult:
    best: float  # the chosen value
    score: float  # its validation score (higher is better)
    payload: Any  # whatever `evaluate` returned beside the score for the chosen value (e.g. the trained model)
    grid: list[float]  # every value evaluated, sorted
    scores: dict[float, float] = field(default_factory=dict)
    at_edge: bool = False  # True if the best value is still the smallest or largest evaluated after all extensions


def tune_on_grid(
    evaluate: Callable[[float], tuple[float, Any]],
    grid: Sequence[float],
    max_extensions: int = 4,
    keep_payloads: bool = False,
    lower: float | None = None,
    integer: bool = False,
) -> GridResult:
    """Best value of ``evaluate(value) -> (score, payload)`` over a positive grid, extended past any chosen edge.

    Ties go to the value evaluated first. A grid of one value is extended by ×10 / ÷10 steps. ``lower`` is a hard floor
    of the domain (e.g. 1 for a tree's leaf size): the grid is not extended below it, and a pick at the floor is not an
    edge pick. ``integer`` rounds extension values to integers (leaf sizes, counts).
    """
    values = sorted({float(v) for v in grid})
    if not values or values[0] <= 0:
        raise ValueError(f"grid must hold positive values (learning rates, strengths), got {list(grid)!r}")
    if lower is not None and values[0] < lower:
        raise ValueError(f"grid value {values[0]} lies below the floor lower={lower}")
    if max_extensions < 0:
        raise ValueError(f"max_extensions must be ≥ 0, got {max_extensions}")
    scores: dict[float, float] = {}
    payloads: dict[float, Any] = {}
    best: float | None = None

    def run(v: float) -> None:
        nonlocal best
        s, p = evaluate(v)
        if not math.isfinite(s):
            s = -math.inf  # a diverged run never wins
        scores[v] = s
        if best is None or s > scores[best]:
            best = v
            payloads.clear()
        if keep_payloads or best == v:
            payloads[v] = p

    for v in values:
        run(v)

    def at_floor(v: float) -> bool:
        return lower is not None and v <= lower

    for _ in range(max_extensions):
        grid_now = sorted(scores)
        if len(grid_now) > 1 and grid_now[0] < best < grid_now[-1]:
            break
        if best == grid_now[-1]:
            ratio = grid_now[-1] / grid_now[-2] if len(grid_now) > 1 else 10.0
            nxt = grid_now[-1] * ratio
        elif at_floor(best):
            break
        else:
            ratio = grid_now[1] / grid_now[0] if len(grid_now) > 1 else 10.0
            nxt = max(grid_now[0] / ratio, lower) if lower is not None else grid_now[0] / ratio
        nxt = float(round(nxt)) if integer else nxt
        if nxt in scores:
            break
        run(nxt)
    grid_now = sorted(scores)
    at_edge = best == grid_now[-1] or (best == grid_now[0] and not at_floor(best))
    return GridResult(best, scores[best], payloads[best], grid_now, scores, at_edge)
