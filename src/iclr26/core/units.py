"""Cached work units: a part of a reproduction (a trained arm, a pre-trained backbone) that depends only on its spec
(a seed, some config fields, a digest of the code that makes it), built once under a file lock and stored atomically
under `trained_cache_dir()`. Any process loads it: a rerun resumes at unit granularity instead of recomputing a whole
seed, and a worker that has finished its own seed builds units of a seed still waiting for a worker (`wait=False`
skips a unit another process is building), so seeds on fewer workers than seeds end closer together.

A unit built in another process is the same tensor for tensor as one built here, provided the build starts from its
own seeds (never from the caller's random state) and the thread count is the same (the cache folder is per count).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from filelock import FileLock, Timeout

from .flock import file_lock
from .paths import trained_cache_dir


def code_digest(files: Iterable[Path]) -> str:
    """A short hash of the given source files' bytes: a change to any of them gives new units, never stale ones."""
    return hashlib.sha1(b"".join(Path(f).read_bytes() for f in files)).hexdigest()[:12]


def unit_path(folder: str, name: str, spec: dict) -> Path:
    """``trained_cache_dir()/folder/<name>-<hash of spec>.pt`` (``spec``: everything the unit depends on)."""
    text = json.dumps(spec, sort_keys=True, default=list)
    return trained_cache_dir() / folder / f"{name}-{hashlib.sha1(text.encode()).hexdigest()[:12]}.pt"


def cached_unit(path: Path, build: Callable[[], dict], what: str, wait: bool = True, log=None) -> dict | None:
    """The unit stored at ``path``; on first use ``build()`` makes it (a dict of tensors and numbers), under a lock, and
    it is written atomically with its content digest (``core.cache``: a damaged unit is moved aside and rebuilt).
    ``wait=False``: return None instead of waiting when another process is building it."""
    from .cache import read_checked, read_tensors

    path = Path(path)
    got = read_checked(path, read_tensors, log, move_aside=False)  # a bad unit is moved aside under the lock
    if got is not None:
        return got
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_suffix(".lock")
    if wait:
        with file_lock(lock, what):
            return _build_once(path, build, what, log)
    held = FileLock(str(lock))  # non-blocking: skip a unit that another process is building
    try:
        held.acquire(timeout=0)
    except Timeout:
        return None
    try:
        return _build_once(path, build, what, log)
    finally:
        held.release()


def _build_once(path: Path, build, what: str, log) -> dict:
    from .cache import read_checked, read_tensors, write_checked, write_tensors

    got = read_checked(path, read_tensors, log)  # built by another process while this one waited
    if got is not None:
        return got
    if log is not None:
        log(f"building {what} (cached at {path.name})")
    obj = build()
    write_checked(path, obj, write_tensors)
    return obj
