"""Measured cost of reading a context: peak memory allocated by torch and wall time of a call.

Peak memory is the largest running sum of the allocations and frees that torch's profiler records while ``fn`` runs
(``profile_memory=True``): tensors allocated and not yet freed, CPU or GPU, not the process's resident size.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable


@contextlib.contextmanager
def _quiet():
    """Silence the profiler's start/stop lines (written to the C-level stderr)."""
    import os
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_memory_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes of live torch tensors allocated during ``fn()`` (relative to its start)."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet(), profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        fn()
    # each op's own allocations (net of frees inside it, children excluded) and the frees recorded outside ops
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    live = peak = 0
    for e in events:
        live += e.self_cpu_memory_usage
        peak = max(peak, live)
    return int(peak)


def wall_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]
