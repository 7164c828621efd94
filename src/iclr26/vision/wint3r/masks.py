"""The two attention patterns of WinT3R: sliding windows over frames, and the block-causal camera-token pool.

Windows (paper §3.1): windows of w consecutive frames start every `stride` frames (w = 4, stride w/2 = 2: half
overlap). Inside a window every image token attends to every token of the window's frames (and to the state). Seen over
the whole stream, two frames interact directly iff some window holds both: a block-banded frame mask (`frame_mask`).

Camera-token pool (Eq. 5-6): each window appends its w camera tokens to the pool; the camera head reads the whole pool.
Laid out as one sequence (window after window, overlapped frames twice), token a of window k may attend to token b iff
b's window is <= k (`pool_mask`, the official code's `window_mask`: mask[s:s+w, s+w:] = False for every block start
s). Without the pool (ablation) the mask is block-diagonal: a window sees only its own tokens.
"""

from __future__ import annotations

import torch


def window_schedule(length: int, w: int = 4, stride: int = 2) -> list[list[int]]:
    """Frame indices of each window over a stream of `length` frames (padded by repeating the last frame, as the
    official code does, so that every frame is in a window): starts 0, stride, 2 stride, ..."""
    if w < 1 or stride < 1 or stride > w:
        raise ValueError(f"window_schedule: need 1 <= stride <= w, got w={w!r}, stride={stride!r}")
    if length < 1:
        raise ValueError(f"window_schedule: length must be >= 1, got {length!r}")
    n_win = max(1, -(-(length - w) // stride) + 1) if length > w else 1
    return [[min(s + j, length - 1) for j in range(w)] for s in range(0, n_win * stride, stride)]


def frame_mask(length: int, w: int = 4, stride: int = 2) -> torch.Tensor:
    """(length, length) bool: True where frames i and j attend to each other directly (share a window)."""
    m = torch.zeros(length, length, dtype=torch.bool)
    for win in window_schedule(length, w, stride):
        idx = torch.tensor(sorted(set(win)))
        m[idx[:, None], idx[None, :]] = True
    return m


def pool_mask(n_windows: int, w: int, pool: bool = True) -> torch.Tensor:
    """(n_windows w, n_windows w) bool over the pooled camera tokens (True = may attend). `pool=True`: block-causal
    (every earlier window and the own one); `pool=False`: block-diagonal (own window only, the ablation)."""
    if n_windows < 1 or w < 1:
        raise ValueError(f"pool_mask: n_windows and w must be >= 1, got {n_windows!r}, {w!r}")
    blk = torch.arange(n_windows).repeat_interleave(w)
    return blk[None, :] <= blk[:, None] if pool else blk[None, :] == blk[:, None]


class CameraTokenPool:
    """The online pool: `append` a window's camera tokens (B, w, C); `as_sequence()` is everything so far (B, N, C);
    `window_mask(pool)` is the mask for that sequence."""

    def __init__(self, w: int):
        self.w, self.tokens = w, []

    def append(self, tokens: torch.Tensor) -> None:
        if tokens.shape[1] != self.w:
            raise ValueError(f"CameraTokenPool.append: expected {self.w} tokens per window, got {tokens.shape[1]}")
        self.tokens.append(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def as_sequence(self) -> torch.Tensor:
        return torch.cat(self.tokens, 1)

    def window_mask(self, pool: bool = True) -> torch.Tensor:
        return pool_mask(len(self.tokens), self.w, pool)
