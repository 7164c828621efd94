"""The three tokenisers of UniVLA's shared vocabulary (arXiv:2506.19850 §3.1) and the vocabulary that joins them.

- Text: a word-level vocabulary (the paper uses Emu3's byte-level BPE; our instructions come from a template grammar).
- Vision: a patch VQ. Each p × p patch is replaced by the index of its nearest codebook vector; the codebook is fitted
  here by k-means on training frames (the paper uses Emu3's MoVQGAN tokenizer, 8× spatial compression, 32,768 codes).
- Action: FAST (Pertsch et al. 2025): a chunk A ∈ R^{H×d} is transformed by a DCT along time per dimension, the
  coefficients are scaled and rounded to integers, and flattened low frequency first, dimensions interleaved. FAST then
  compresses with BPE; we keep the fixed-length integer stream (no BPE), which makes batch decoding trivial.

`UnifiedVocab` lays the ids out disjointly: specials (pad, boi, eoi, boa, eoa), text words, vision codes, action bins.
(The paper overwrites the last 1,024 text ids with action ids; with a vocabulary built here there is no need.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.fft import dct, idct

SPECIALS = ("<pad>", "<boi>", "<eoi>", "<boa>", "<eoa>")


@dataclass
class FastConfig:
    chunk: int = field(default=4, metadata={"help": "H, steps per chunk (paper: 10; 5 on SimplerEnv)"})
    dims: int = field(default=3, metadata={"help": "action dimensions d (paper: 7; ours dx, dy, grip)"})
    scale: float = field(default=10.0, metadata={"help": "DCT coefficient scale before rounding (FAST: 10)"})
    clip: int = field(default=20, metadata={"help": "integers are clipped to [-clip, clip] (ours)"})

    def __post_init__(self):
        if self.chunk < 1 or self.dims < 1:
            raise ValueError(f"FastConfig.chunk and .dims must be >= 1, got {self.chunk!r}, {self.dims!r}")
        if self.scale <= 0 or self.clip < 1:
            raise ValueError(f"FastConfig.scale must be > 0 and .clip >= 1, got {self.scale!r}, {self.clip!r}")


class FastActionTokenizer:
    """DCT action tokeniser: ``encode(chunk (H, d)) -> ids in [0, 2*clip]``, ``decode(ids) -> chunk``.

    Round-trip error: the DCT is orthonormal, so the squared reconstruction error equals that of the coefficients,
    each off by at most 1 / (2 scale) before clipping: ‖Â − A‖_F ≤ √(H d) / (2 scale)."""

    def __init__(self, cfg: FastConfig | None = None):
        self.cfg = cfg or FastConfig()
        self.n_tokens = 2 * self.cfg.clip + 1
        self.length = self.cfg.chunk * self.cfg.dims

    def encode(self, chunk) -> np.ndarray:
        a = np.asarray(chunk, dtype=np.float64)
        if a.shape != (self.cfg.chunk, self.cfg.dims):
            raise ValueError(f"action chunk must have shape {(self.cfg.chunk, self.cfg.dims)}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"action chunk holds NaN or inf ({a.tolist()}): actions must be finite, in [-1, 1]")
        coef = dct(a, axis=0, norm="ortho")  # C[k, j]: frequency k of dimension j
        q = np.clip(np.rint(coef * self.cfg.scale), -self.cfg.clip, self.cfg.clip).astype(np.int64)
        return q.reshape(-1) + self.cfg.clip  # row-major: low frequency first, dimensions interleaved

    def decode(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) and (ids.min() < 0 or ids.max() >= self.n_tokens):
            raise ValueError(f"action ids must lie in [0, {self.n_tokens}), got {ids.min()}..{ids.max()}")
        if len(ids) < self.length:  # a truncated stream: missing (high-frequency) coefficients are zero
            ids = np.concatenate([ids, np.full(self.length - len(ids), self.cfg.clip)])
        q = (ids[: self.length] - self.cfg.clip).reshape(self.cfg.chunk, self.cfg.dims)
        return idct(q / self.cfg.scale, axis=0, norm="ortho")

    def max_error(self) -> float:
        """Frobenius bound on the round-trip error of an unclipped chunk."""
        return float(np.sqrt(self.length) / (2 * self.cfg.scale))


class PatchVQ:
    """Vector-quantised patches: a k-means codebook over flattened p × p × 3 patches (exact when the frames hold at
    most ``codebook`` distinct patches: the codebook is then the set of distinct patches)."""

    def __init__(self, patch: int = 4, codebook: int = 128, seed: int = 0):
        if patch < 1 or codebook < 2:
            raise ValueError(f"PatchVQ needs patch >= 1 and codebook >= 2, got {patch!r}, {codebook!r}")
        self.patch, self.codebook, self.seed = patch, codebook, seed
        self.centres: np.ndarray | None = None

    def patches(self, frames) -> np.ndarray:
        f = np.asarray(frames, dtype=np.float32)
        if f.ndim == 3:
            f = f[None]
        if f.ndim != 4 or f.shape[-1] != 3:
            raise ValueError(f"frames must be (n, H, W, 3) or (H, W, 3) RGB, got shape {f.shape}")
        if not np.isfinite(f).all():
            raise ValueError("frames hold NaN or inf: give uint8 RGB frames (0..255)")
        n, h, w, c = f.shape
        p = self.patch
        if h % p or w % p:
            raise ValueError(f"frame size {(h, w)} is not a multiple of the patch size {p}")
        x = f.reshape(n, h // p, p, w // p, p, c).transpose(0, 1, 3, 2, 4, 5)
        return x.reshape(n, (h // p) * (w // p), p * p * c) / 255.0  # row-major over patches

    def fit(self, frames) -> PatchVQ:
        x = self.patches(frames).reshape(-1, self.patch * self.patch * 3)
        uniq, counts = np.unique(np.round(x, 4), axis=0, return_counts=True)
        if len(uniq) <= self.codebook:
            self.centres = uniq.astype(np.float32)
        else:
            from sklearn.cluster import KMeans

            km = KMeans(self.codebook, n_init=1, random_state=self.seed).fit(uniq, sample_weight=counts)
            self.centres = km.cluster_centers_.astype(np.float32)
        return self

    def encode(self, frames) -> np.ndarray:
        """(n, H, W, 3) uint8 -> (n, patches) code ids (nearest centre)."""
        if self.centres is None:
            raise RuntimeError("PatchVQ.encode before fit(): call fit(frames) first")
        x = self.patches(frames)
        d = (x**2).sum(-1, keepdims=True) - 2 * x @ self.centres.T + (self.centres**2).sum(-1)
        return d.argmin(-1)

    def decode(self, codes, grid: tuple[int, int]) -> np.ndarray:
        """Code ids (n, patches) -> (n, H, W, 3) uint8 frames."""
        c = np.asarray(codes)
        n, p = c.shape[0], self.patch
        x = self.centres[c].reshape(n, grid[0], grid[1], p, p, 3).transpose(0, 1, 3, 2, 4, 5)
        return np.clip(np.rint(x.reshape(n, grid[0] * p, grid[1] * p, 3) * 255), 0, 255).astype(np.uint8)


class UnifiedVocab:
    """One id space: specials, then text words, then vision codes, then action bins (disjoint ranges)."""

    def __init__(self, words, n_vision: int, n_action: int):
        self.words = list(words)
        self.n_vision, self.n_action = n_vision, n_action
        self.special = {s: i for i, s in enumerate(SPECIALS)}
        self.text0 = len(SPECIALS)
        self.word_id = {w: self.text0 + i for i, w in enumerate(self.words)}
        self.vision0 = self.text0 + len(self.words)
        self.action0 = self.vision0 + n_vision
        self.size = self.action0 + n_action

    @property
    def pad(self) -> int:
        return self.special["<pad>"]

    def kind(self, ids) -> np.ndarray:
        """Per id: 0 special, 1 text, 2 vision, 3 action."""
        ids = np.asarray(ids)
        return np.select([ids < self.text0, ids < self.vision0, ids < self.action0], [0, 1, 2], 3)

    def text(self, instruction: str, length: int) -> list[int]:
        """Word ids, left-padded with <pad> to a fixed length."""
        try:
            ids = [self.word_id[w] for w in instruction.split()]
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the vocabulary {self.words}") from None
        if len(ids) > length:
            raise ValueError(f"instruction has {len(ids)} words, more than text_len={length}")
        return [self.pad] * (length - len(ids)) + ids
