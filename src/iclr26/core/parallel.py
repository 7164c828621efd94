"""Seeds side by side: `ICLR26_JOBS` worker processes, each computing one seed with `ICLR26_THREADS` threads.

On the 2-core machines this project runs on, two processes of one thread each use both cores without the
spin-waiting that makes two threads in one busy process slow (see `core.threads`), so a reproduction's seeds run two
at a time by default. Each seed is computed in a fresh *spawned* process from its own seed, as in a sequential run;
work that seeds share (a pretrained base, a tuning) is cached on disk under a file lock, so the seed that needs it
second waits and then loads it. A seed's metrics therefore do not depend on how many jobs ran (tested), only on
the thread count; measured times and memory do, when two seeds share the machine.

``ICLR26_JOBS``: a positive integer, or ``auto`` (the default): as many jobs as seeds, at most
``cpu_count // ICLR26_THREADS``, and one where a CUDA device is present (seeds would share it).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

from .threads import default_threads, positive_int


def default_jobs(n_tasks: int) -> int:
    """Worker processes for ``n_tasks`` seeds: `ICLR26_JOBS` if set, else ``auto`` (see the module docstring)."""
    text = os.environ.get("ICLR26_JOBS", "").strip().lower() or "auto"
    if text == "auto":
        if _cuda():
            return 1
        return max(1, min(n_tasks, (os.cpu_count() or 1) // default_threads()))
    return min(positive_int("ICLR26_JOBS", text, "seeds computed at once, or 'auto'"), max(1, n_tasks))


def _cuda() -> bool:
    import sys

    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available())


def _quiet_bars() -> None:
    """Worker start-up: no progress bars (two workers' bars would overwrite each other on one terminal); the log
    lines stay. Every bar in the project is a tqdm, whose callers pass ``disable=`` themselves, so it is forced here."""
    from tqdm import tqdm

    init = tqdm.__init__

    def quiet_init(self, *args, **kwargs):
        kwargs["disable"] = True
        init(self, *args, **kwargs)

    tqdm.__init__ = quiet_init


def run_all(fn: Callable, calls: Sequence[tuple], jobs: int, done: Callable | None = None) -> list:
    """``[fn(*args) for args in calls]``, computed by ``jobs`` spawned processes (in this process when ``jobs`` is 1).

    ``fn`` must be importable at module level. ``done(i, result)`` is called in this process as each call finishes.
    The first failure cancels the calls not yet started and is raised once the running ones end (their results
    are kept by ``done``, e.g. written to disk, so a rerun resumes)."""
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    results: list = [None] * len(calls)
    if jobs == 1 or len(calls) <= 1:
        for i, args in enumerate(calls):
            results[i] = fn(*args)
            if done is not None:
                done(i, results[i])
        return results
    ctx = multiprocessing.get_context("spawn")  # a fork would copy torch's thread pools and locks mid-state
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_quiet_bars) as pool:
        futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
        pending, error = set(futures), None
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for fut in sorted(finished, key=futures.__getitem__):
                    if fut.cancelled():
                        continue
                    if fut.exception() is not None:
                        if error is None:  # keep the first; stop what has not started, let the rest finish
                            error = fut.exception()
                            for other in pending:
                                other.cancel()
                        continue
                    results[futures[fut]] = fut.result()
                    if done is not None:
                        done(futures[fut], results[futures[fut]])
        except KeyboardInterrupt:
            for other in pending:
                other.cancel()
            raise
    if error is not None:
        raise error
    return results
