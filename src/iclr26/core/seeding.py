"""Seeding and timing helpers shared by every reproduction."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from contextlib import contextmanager


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (when installed) so a run is deterministic from its seed."""
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:
        pass
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:
        pass


def stage_seed(seed: int, stage: str, stages: Sequence[str]) -> int:
    """The seed of one stage of a seed's run: ``seed·1000 + 500 + stages.index(stage)``.

    A run whose stages (a base, a tuning, the method, each baseline) each start from their own seed draws the same
    numbers in a stage whether the stages before it were trained (consuming random numbers) or loaded from the cache,
    and whether or not they ran at all (perk, mlr)."""
    if stage not in stages:
        raise ValueError(f"unknown stage {stage!r}; the stages are {', '.join(stages)}")
    return seed * 1000 + 500 + list(stages).index(stage)


@contextmanager
def timed(store: dict, key: str):
    """`with timed(m, "edit_seconds"): ...` records wall time in seconds into `store[key]`."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        store[key] = time.perf_counter() - t0


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux ru_maxrss is KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
