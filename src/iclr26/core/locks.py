"""Inter-process file locks: two processes that build the same thing (a zoo model, a converted checkpoint, a run
folder, a tuning result) take turns instead of both building it, and the second one reuses what the first one built."""

from __future__ import annotations

from pathlib import Path

from .flock import file_lock

__all__ = ["cached_json", "file_lock"]


def cached_json(path: Path, what: str, compute, quiet: bool = False) -> dict:
    """The JSON object stored at `path`; on first use `compute()` makes it, under a lock so that a second process waits
    and reuses it. Written atomically with a content digest and verified when read (see `core.cache`). Used for
    one-off tuning results that every seed of a reproduction shares."""
    from .cache import cached_json as _cached

    return _cached(path, what, compute, quiet=quiet)
