"""Input checks shared by SCISOR and its baselines: a sequence is a 1-D integer tensor of residue ids, and a deletion
variant is a set of distinct positions inside it that leaves at least one residue. Bad input is an error naming the
problem, never a silent score (a padding id scored as a residue, a negative position wrapping around, a duplicate
position deleting a neighbour)."""

from __future__ import annotations

import torch


def check_sequence(x, vocab: int, what: str = "sequence") -> None:
    """``x`` must be a non-empty 1-D integer tensor with every id in [0, vocab) (no padding or special ids)."""
    if not isinstance(x, torch.Tensor) or x.ndim != 1 or x.dtype.is_floating_point or x.dtype == torch.bool:
        raise ValueError(f"{what} must be a 1-D integer tensor of residue ids, got "
                         f"{type(x).__name__} {tuple(getattr(x, 'shape', ()))} {getattr(x, 'dtype', '')}")  # fmt: skip
    if len(x) == 0:
        raise ValueError(f"{what} is empty")
    lo, hi = int(x.min()), int(x.max())
    if lo < 0 or hi >= vocab:
        raise ValueError(f"{what} holds ids outside the {vocab}-letter alphabet [0, {vocab}) (min {lo}, max {hi}): "
                         "padding and special ids are not residues")  # fmt: skip


def check_variants(variants, n: int) -> None:
    """Every variant is a non-empty tuple of distinct positions in [0, n) that deletes fewer than n residues."""
    for k, v in enumerate(variants):
        pos = list(v)
        if not pos or not all(hasattr(i, "__index__") for i in pos):  # ints, numpy ints, 0-d int tensors
            raise ValueError(f"variant {k} must be a non-empty tuple of integer positions, got {v!r}")
        pos = [int(i) for i in pos]
        if min(pos) < 0 or max(pos) >= n:
            raise ValueError(f"variant {k} {tuple(pos)} has a position outside [0, {n}) of the {n}-residue sequence")
        if len(set(pos)) != len(pos):
            raise ValueError(f"variant {k} {tuple(pos)} names a position twice")
        if len(pos) >= n:
            raise ValueError(f"variant {k} deletes all {n} residues; at least one must remain")
