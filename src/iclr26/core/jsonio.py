"""Files of run folders and caches: written atomically (temporary file + ``os.replace``), read with clear errors."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import UserError, unwritable


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; run folders are meant to be shared and read
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise unwritable(path.parent, exc) from exc
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp: str | None) -> None:
    if tmp and os.path.exists(tmp):
        os.unlink(tmp)


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy / torch scalars
        return obj.item()
    return obj


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, sort_keys=True, allow_nan=True) + "\n")


def read_json(path: Path) -> Any:
    """Read a run-folder file; a corrupt one is a clear error naming the file and the fix."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(
            f"{path} is corrupt ({exc}). Delete it, or rerun with --force to recompute the whole run folder."
        ) from exc


def config_hash(config: dict) -> str:
    blob = json.dumps(_jsonable(config), sort_keys=True).encode()
    return hashlib.sha1(blob).hexdigest()[:8]


def append_log(run_dir: Path, line: str) -> None:
    try:
        with open(Path(run_dir) / "log.txt", "a", encoding="utf-8") as f:
            f.write(line.rstrip("\n") + "\n")
    except OSError as exc:
        raise unwritable(run_dir, exc) from exc
