"""How many threads torch and the BLAS libraries use inside a reproduction: `ICLR26_THREADS`, default 1.

Measured on the 2-core machines this project runs on (training steps per second of a tiny llama, batch 16 × 128
tokens; d=64/3 layers and d=256/4 layers):

    machine quiet:                1 thread 13.96 / 1.38    2 threads 18.63 / 2.41   (2 threads 1.3–1.7× faster)
    other core busy (a 2nd job):  1 thread 12.95 / 1.37    2 threads  5.02 / 0.74   (2 threads 1.9–2.6× slower)

OpenMP threads spin-wait for each other, so two threads on a machine where anything else runs (a second job, the
test suite, the user's editor) collapse, while one thread loses at most ~40 % on a quiet machine. The default is
therefore one thread; set `ICLR26_THREADS=2` (or more, on a bigger machine) when nothing else runs.
"""

from __future__ import annotations

import contextlib
import os

from .errors import UserError


def default_threads() -> int:
    """`ICLR26_THREADS` if set (a positive integer), else 1."""
    text = os.environ.get("ICLR26_THREADS", "").strip()
    return positive_int("ICLR26_THREADS", text, "threads per process") if text else 1


def positive_int(name: str, text: str, what: str) -> int:
    """``int(text)`` of a setting that must be a positive integer, else a UserError naming the setting."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise UserError(f"{name} must be a positive integer ({what}), got {text!r}")
    return n


@contextlib.contextmanager
def torch_threads(n: int | None = None):
    """``torch.set_num_threads(n)`` inside the block (default: :func:`default_threads`); the previous count is
    restored on exit, also on errors."""
    import torch

    n = default_threads() if n is None else n
    if n < 1:
        raise ValueError(f"thread count must be ≥ 1, got {n}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def run_threads(n: int | None = None):
    """The thread limit of one reproduction seed: torch's intra-op threads and the BLAS/OpenMP pools (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    n = default_threads() if n is None else n
    with torch_threads(n), threadpool_limits(limits=n):
        yield
