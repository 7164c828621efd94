"""Cache files that are verified when read: every cached file (or model folder) is written atomically with a content
digest beside it, and a reader checks the digest before it trusts the file.

A cache folder is what users share (a lab's NFS cache, a cluster's cache): a file there may be truncated (a run
killed while another process copied it, a full disk) or damaged. A file whose digest is missing or wrong, or that
cannot be parsed, is reported in one log line naming it, moved aside (``<name>.corrupt-<time>``) and rebuilt under
the file lock; it is never used half-read and never crashes the run. Nothing here unpickles: tensors load with
``torch.load(weights_only=True)``, everything else is JSON.

Layout: ``x.pt`` has ``x.pt.sha256`` beside it; a folder (a zoo model) holds ``.iclr26-sha256`` listing the digest of
each file in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .flock import file_lock

T = TypeVar("T")
FOLDER_DIGEST = ".iclr26-sha256"
_VERIFIED: dict[tuple, bool] = {}  # (path, digest mtime, (file, size, mtime)...) -> verified in this process


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _folder_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != FOLDER_DIGEST)


def digest_path(path: Path) -> Path:
    path = Path(path)
    return path / FOLDER_DIGEST if path.is_dir() else path.with_name(path.name + ".sha256")


def write_digest(path: Path) -> None:
    """Record the content digest of a file or folder (atomically, beside the file or inside the folder)."""
    path = Path(path)
    if path.is_dir():
        text = json.dumps({str(p.relative_to(path)): _sha256(p) for p in _folder_files(path)}, indent=1, sort_keys=True)
    else:
        text = _sha256(path)
    target = digest_path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, target)


def problem(path: Path) -> str:
    """Why the file or folder at ``path`` cannot be trusted ('' when its digest matches)."""
    path = Path(path)
    dig = digest_path(path)
    if not dig.exists():
        return "it has no content digest (written by older code, or interrupted)"
    try:
        files = _folder_files(path) if path.is_dir() else [path]
        stamp = (str(path), dig.stat().st_mtime_ns, *((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    except OSError as exc:
        return f"it cannot be read ({exc})"
    if _VERIFIED.get(stamp):  # unchanged since it was verified in this process (a large folder is hashed once)
        return ""
    try:
        if path.is_dir():
            want = json.loads(dig.read_text(encoding="utf-8"))
            have = {str(p.relative_to(path)): _sha256(p) for p in _folder_files(path)}
            bad = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
            if bad:
                return f"its content does not match its digest ({', '.join(bad[:3])})"
        elif dig.read_text(encoding="utf-8").strip() != _sha256(path):
            return "its content does not match its digest (truncated or damaged)"
    except (OSError, ValueError) as exc:
        return f"it cannot be read ({exc})"
    _VERIFIED[stamp] = True
    return ""


def quarantine(path: Path, why: str, log: Callable[[str], None] | None = None) -> Path:
    """Move a damaged cache entry aside (kept for inspection, never read again) and say so in one line."""
    path = Path(path)
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:  # already moved aside (by a process that does not hold the lock)
        return aside
    dig = digest_path(path) if not aside.is_dir() else None
    if dig is not None and dig.exists():
        os.replace(dig, aside.with_name(aside.name + ".sha256"))
    line = f"iclr26: cache file {path} is unusable: {why}; moved to {aside.name} and rebuilt"
    (log or (lambda m: print(m, file=sys.stderr, flush=True)))(line)
    return aside


def read_checked(path: Path, read: Callable[[Path], T], log=None, move_aside: bool = True) -> T | None:
    """``read(path)`` if the entry exists, matches its digest and parses; else None (a bad entry is moved aside, when
    ``move_aside``: only the holder of the entry's lock does that, so that two processes never both move it)."""
    path = Path(path)
    if not path.exists():
        return None
    why = problem(path)
    if not why:
        try:
            return read(path)
        except Exception as exc:  # any parse error of a damaged file: rebuild, never crash on it
            why = f"it cannot be parsed ({type(exc).__name__}: {exc})"
    if move_aside:
        quarantine(path, why, log)
    return None


def write_checked(path: Path, obj, write: Callable[[object, Path], None]) -> None:
    """``write(obj, tmp)`` then an atomic rename and the digest (a crash leaves no entry that passes the check)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(obj, tmp)
    old = None
    if path.is_dir():  # replacing a folder: move the old one out of the way first
        old = path.with_name(f"{path.name}.old-{os.getpid()}")
        os.replace(path, old)
    os.replace(tmp, path)
    write_digest(path)
    if old is not None:
        import shutil

        shutil.rmtree(old, ignore_errors=True)


def cached(path: Path, build: Callable[[], T], what: str, read: Callable[[Path], T],
           write: Callable[[T, Path], None], log=None, quiet: bool = False) -> T:  # fmt: skip
    """The entry at ``path``; built by ``build()`` on first use or when the stored one fails its check, under a file
    lock so that a second process waits and reuses it."""
    path = Path(path)
    got = read_checked(path, read, log, move_aside=False)  # a bad entry is left to the lock holder below
    if got is not None:
        return got
    with file_lock(path.with_name(path.name + ".lock"), what, quiet=quiet):
        got = read_checked(path, read, log)  # built by another process while this one waited
        if got is not None:
            return got
        obj = build()
        write_checked(path, obj, write)
        return obj


def _write_json(obj, tmp: Path) -> None:
    tmp.write_text(json.dumps(obj, indent=1), encoding="utf-8")


def _read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def cached_json(path: Path, what: str, compute: Callable[[], dict], quiet: bool = False) -> dict:
    """A JSON result (a tuning, fitted statistics) computed once and shared by every seed and process."""
    return cached(path, compute, what, _read_json, _write_json, quiet=quiet)


def write_tensors(obj, tmp: Path) -> None:
    import torch

    torch.save(obj, tmp)


def read_tensors(path: Path):
    import torch

    return torch.load(path, weights_only=True)  # tensors, numbers, strings and containers of them: no pickled code


def cached_tensors(path: Path, what: str, build: Callable[[], dict], log=None, quiet: bool = False) -> dict:
    """A dict of tensors and numbers (trained weights, statistics) built once, stored with ``torch.save`` and loaded
    with ``weights_only=True``."""
    return cached(path, build, what, read_tensors, write_tensors, log=log, quiet=quiet)


def cached_folder(folder: Path, what: str, build: Callable[[Path], dict | None], record: str = "done.json",
                  log=None, quiet: bool = False) -> dict:  # fmt: skip
    """A folder (a trained model, an adapter, a tokenizer) built once and verified on every use; returns its record.

    ``build(tmp)`` writes the folder's files into ``tmp`` (``save_pretrained(tmp)``) and returns a JSON record (the
    training time, its metrics), stored as ``record`` inside it. The folder appears in place only when complete (an
    atomic rename, then a digest of every file); a folder whose files no longer match that digest, or that has none
    (an interrupted build, older code), is moved aside in one log line and rebuilt, under the file lock."""
    import shutil

    folder = Path(folder)

    def read(p: Path) -> dict:
        return json.loads((p / record).read_text(encoding="utf-8"))

    def write(_, tmp: Path) -> None:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            info = build(tmp)
        except BaseException:  # an interrupted build leaves no half-written folder behind
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        (tmp / record).write_text(json.dumps(info or {}, indent=1), encoding="utf-8")

    got = cached(folder, lambda: None, what, read, write, log=log, quiet=quiet)  # the build happens in `write`
    return got if got is not None else read(folder)
