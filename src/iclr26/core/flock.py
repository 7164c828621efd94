"""Inter-process file locks: two processes that build the same thing take turns (see `core.locks`)."""

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
