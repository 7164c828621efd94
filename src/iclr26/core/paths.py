"""Where the project keeps what it builds: the cache of zoo models, converted weights and parsed corpora."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .locks import file_lock


def cache_dir() -> Path:
    """$ICLR26_CACHE, else ~/.cache/iclr26 (created on first use)."""
    p = Path(os.environ.get("ICLR26_CACHE", Path.home() / ".cache" / "iclr26"))
    p.mkdir(parents=True, exist_ok=True)
    return p


def note_cache_threads(threads: int) -> str | None:
    """Record that a run with `threads` threads uses the cache, and warn when runs with other counts used it before.

    Most cached models are keyed by their data and settings only (SPWOOD's burn-ins also by the thread count). A model
    trained with another thread count ends elsewhere, and a run that reuses it computes other numbers than a run on an
    empty cache would. The counts seen so far are kept in `threads.json` at the cache's root. Returns the warning, or
    None when every earlier run used the same count."""
    root = cache_dir()
    path = root / "threads.json"
    with file_lock(root / "threads.lock", "the cache's thread record", quiet=True):
        seen = sorted(set(json.loads(path.read_text())) if path.exists() else set())
        if threads not in seen:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(sorted({*seen, threads})))
            tmp.replace(path)
    others = [n for n in seen if n != threads]
    if not others:
        return None
    return (f"the cache {root} also holds models built by runs with ICLR26_THREADS={', '.join(map(str, others))}; "
            f"this run uses {threads} and reuses them as they are, so its numbers can differ from a run on an empty "
            "cache. Keep one ICLR26_THREADS per cache (another ICLR26_CACHE) when numbers must match.")  # fmt: skip
