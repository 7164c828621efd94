"""One tuning rule for every method and baseline: the best validation score over a grid, extended while an edge wins.

Every combination of the grids is scored; the best one is kept (ties: the values geometrically closest to each grid's
centre, so that a flat score never walks to an edge). While the pick sits on an edge of a grid and that edge is
strictly better than its inner neighbour, the grid is extended by one value beyond it (the grid's own ratio), up to
``max_extend`` times per side.
"""

from __future__ import annotations

import itertools
import math


def _centre_distance(combo: dict, grids: dict) -> float:
    return sum(abs(math.log(v) - 0.5 * (math.log(min(grids[k])) + math.log(max(grids[k])))) for k, v in combo.items())


def tune(score, grids: dict[str, tuple[float, ...]], max_extend: int = 2, log=None) -> tuple[dict, dict]:
    """(best combination, {combination: score}) of ``score(**combo)`` over the product of positive ``grids``."""
    grids = {k: sorted(v) for k, v in grids.items()}
    if any(len(v) < 1 or min(v) <= 0 for v in grids.values()):
        raise ValueError(f"every grid needs positive values (one value: fixed, not tuned), got {grids}")
    scores: dict[tuple, float] = {}
    extended = {(k, side): 0 for k in grids for side in (0, 1)}
    while True:
        names = list(grids)
        for values in itertools.product(*(grids[k] for k in names)):
            if values not in scores:
                scores[values] = float(score(**dict(zip(names, values))))
        best = max(
            (v for v in itertools.product(*(grids[k] for k in names))),
            key=lambda v: (scores[v], -_centre_distance(dict(zip(names, v)), grids)),
        )
        grown = False
        for i, k in enumerate(names):
            g = grids[k]
            for side, edge, inner in ((0, g[0], g[min(1, len(g) - 1)]), (1, g[-1], g[max(-2, -len(g))])):
                if len(g) < 2 or best[i] != edge or extended[(k, side)] >= max_extend:
                    continue
                neighbour = tuple(inner if j == i else best[j] for j in range(len(names)))
                if scores[best] > scores[neighbour]:
                    ratio = g[1] / g[0] if side == 0 else g[-1] / g[-2]
                    grids[k] = [edge / ratio] + g if side == 0 else g + [edge * ratio]
                    extended[(k, side)] += 1
                    grown = True
        if not grown:
            pick = dict(zip(names, best))
            if log is not None:
                log(f"tuned {pick} (score {scores[best]:.3f}) over { ({k: list(v) for k, v in grids.items()}) }")
            return pick, {tuple(zip(names, v)): s for v, s in scores.items()}
