"""Where the project keeps what it builds: the cache of zoo models, converted weights and parsed corpora."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$ICLR26_CACHE, else ~/.cache/iclr26 (created on first use)."""
    p = Path(os.environ.get("ICLR26_CACHE", Path.home() / ".cache" / "iclr26"))
    p.mkdir(parents=True, exist_ok=True)
    return p
