"""Inter-process file locks: two processes that build the same thing (a zoo model, a converted checkpoint, a run
folder, a tuning result) take turns instead of both building it, and the second one reuses what the first one built."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from filelock import FileLock, Timeout


@contextlib.contextmanager
def file_lock(path: Path, what: str, quiet: bool = False):
    """Hold an exclusive lock on `path` (created if needed); say once, on stderr, when waiting for another process."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if not quiet:
            print(f"iclr26: waiting for another process that is building {what} ({path})", file=sys.stderr, flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def cached_json(path: Path, what: str, compute, quiet: bool = False) -> dict:
    """The JSON object stored at `path`; on first use `compute()` makes it, under a lock so that a second process waits
    and reuses it. Written atomically with a content digest and verified when read (see `core.cache`). Used for
    one-off tuning results that every seed of a reproduction shares."""
    from .cache import cached_json as _cached

    return _cached(path, what, compute, quiet=quiet)
