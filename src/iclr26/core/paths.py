"""Where the project keeps what it builds: the cache of converted weights and parsed corpora, and, one folder per torch
thread count, of trained models and tuned hyper-parameters."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$ICLR26_CACHE, else ~/.cache/iclr26 (created on first use)."""
    p = Path(os.environ.get("ICLR26_CACHE", Path.home() / ".cache" / "iclr26"))
    p.mkdir(parents=True, exist_ok=True)
    return p


def trained_cache_dir() -> Path:
    """Where trained models, fitted statistics and tuned hyper-parameters are cached: ``cache_dir()/threads-N``, one
    folder per torch thread count N at the time of the call (created on first use).

    A model trained with another thread count sums in another order and ends elsewhere; keyed by the count, a run
    reuses only what a run with its own count built, so its numbers are those of a run on an empty cache. What does not
    depend on the count (converted weights, parsed corpora) stays at ``cache_dir()``'s root."""
    import torch

    p = cache_dir() / f"threads-{torch.get_num_threads()}"
    p.mkdir(parents=True, exist_ok=True)
    return p
