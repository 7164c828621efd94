"""How many intra-op threads torch uses inside a reproduction, restored afterwards.

Measured on the 2-core machines this project runs on, while another process held the second core: OpenMP threads
spin-wait for each other, so small models run many times slower with two threads than with one (a DiKE disentangler
step on ``facts-tiny`` 0.24 s vs ~5 s; a SmolLM2 ROME edit 7 s vs 50 s).
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def torch_threads(n: int = 1):
    """``torch.set_num_threads(n)`` inside the block; the previous count is restored on exit, also on errors."""
    if n < 1:
        raise ValueError(f"thread count must be ≥ 1, got {n}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
