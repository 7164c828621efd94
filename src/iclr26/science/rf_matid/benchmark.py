"""RF-MatID's benchmark definition: frequency protocols P1–P5, the seven data splits, complex whitening, input views.

Everything here follows the official code (github.com/NTUMARS/RF-MatID, `dataset/dataset.py`, `dataset/split_config.py`,
`config_hub/.../freq_protocol_*/.../config.yaml`):

- a protocol is a list of [lo, hi] GHz intervals; bins outside are dropped (`freq_crop`), P1 keeps all;
- S1 is a random 70/30 split (official: torch generator seed 42); S2 holds out distances (mod1 interpolation,
  mod2 near 200–700 mm, mod3 far 1500–2000 mm); S3 holds out angles (mod1 {2, 5, 8}°, mod2 {0, 1, 2}°,
  mod3 {8, 9, 10}°); the held-out part is the test set;
- complex whitening is per sample: the (Re, Im) pairs of one sweep, over its bins, are centred and multiplied by the
  inverse square root of their 2 × 2 covariance (`standardize_complex_whiten`), so the Re/Im phase relation is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrequencyProtocol:
    name: str
    bands: tuple[tuple[float, float], ...] | None  # None = the full 4–43.5 GHz sweep
    description: str = ""

    def mask(self, f_ghz: np.ndarray) -> np.ndarray:
        if self.bands is None:
            return np.ones(len(f_ghz), bool)
        m = np.zeros(len(f_ghz), bool)
        for lo, hi in self.bands:
            if not 4.0 <= lo < hi <= 43.5:
                raise ValueError(f"protocol {self.name}: band [{lo}, {hi}] must lie in [4, 43.5] GHz")
            m |= (f_ghz >= lo) & (f_ghz <= hi)
        return m


PROTOCOLS = {
    "P1": FrequencyProtocol("P1", None, "full band 4–43.5 GHz"),
    "P2": FrequencyProtocol("P2", ((30.0, 43.5),), "mm-wave 30–43.5 GHz"),
    "P3": FrequencyProtocol("P3", ((4.0, 30.0),), "cm-wave 4–30 GHz"),
    "P4": FrequencyProtocol("P4", ((5.725, 5.85), (23.12, 23.6), (24.0, 36.0), (37.0, 42.5)),
                            "regulatory band list of the official P4 config"),  # fmt: skip
    "P5": FrequencyProtocol("P5", ((4.0, 5.65), (5.85, 10.0), (10.7, 15.35), (15.4, 23.6), (24.25, 31.3),
                                   (31.8, 36.43), (36.5, 42.5)), "regulatory band list of the official P5 config"),
}  # fmt: skip

S2_VAL = {
    "mod1": (250, 400, 550, 700, 900, 1050, 1200, 1350, 1550, 1700, 1900),
    "mod2": tuple(range(200, 701, 50)),
    "mod3": tuple(range(1500, 2001, 50)),
}
S3_VAL = {"mod1": (2, 5, 8), "mod2": (0, 1, 2), "mod3": (8, 9, 10)}
SPLITS = ("S1", "S2-mod1", "S2-mod2", "S2-mod3", "S3-mod1", "S3-mod2", "S3-mod3")


def make_split(distance_mm, angle_deg, name: str, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, test indices) of split `name` ∈ SPLITS. S1: random 70/30 with `seed`."""
    distance_mm, angle_deg = np.asarray(distance_mm), np.asarray(angle_deg)
    n = len(distance_mm)
    if name == "S1":
        perm = np.random.default_rng(seed).permutation(n)
        k = int(0.7 * n)
        return np.sort(perm[:k]), np.sort(perm[k:])
    kind, _, mod = name.partition("-")
    table, var = {"S2": (S2_VAL, distance_mm), "S3": (S3_VAL, angle_deg)}.get(kind, (None, None))
    if table is None or mod not in table:
        raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
    test = np.isin(var, table[mod])
    return np.flatnonzero(~test), np.flatnonzero(test)


def validation_split(train_idx: np.ndarray, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Our model-selection rule: a random `frac` of a split's training portion is its validation set."""
    perm = np.random.default_rng([seed, 99]).permutation(train_idx)
    k = max(1, int(round(frac * len(perm))))
    return np.sort(perm[k:]), np.sort(perm[:k])


def complex_whiten(H: np.ndarray) -> np.ndarray:
    """Per-sample complex whitening (official `standardize_complex_whiten`): [n, N] complex → [n, N, 2] float32
    with zero mean and identity 2 × 2 covariance over the bins of each sample."""
    x = np.stack([H.real, H.imag], -1).astype(np.float64)  # [n, N, 2]
    x = x - x.mean(1, keepdims=True)
    cov = np.einsum("nki,nkj->nij", x, x) / (x.shape[1] - 1)
    w, v = np.linalg.eigh(cov)
    inv_sqrt = np.einsum("nij,nj,nkj->nik", v, 1 / np.sqrt(np.maximum(w, 1e-30)), v)
    return np.einsum("nki,nji->nkj", x, inv_sqrt).astype(np.float32)


def time_view(H: np.ndarray, pad_factor: int = 5, decimate: int = 3) -> np.ndarray:
    """Time-domain view [n, T, 1]: |IFFT(Hann · H)| zero-padded, every `decimate`-th sample, z-scored per sample
    (official TD loader: amplitude[::3], (x − mean) / std)."""
    from iclr26.science.rf_matid.world import to_time_domain

    t = to_time_domain(H, pad_factor)[:, ::decimate]
    t = (t - t.mean(1, keepdims=True)) / (t.std(1, keepdims=True) + 1e-12)
    return t[..., None].astype(np.float32)


def view(H: np.ndarray, f_ghz: np.ndarray, protocol: str = "P1", kind: str = "dual_channel"):
    """Model input [n, N', C] under a protocol: 'dual_channel' (whitened Re, Im), 'time' (time-domain amplitude)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {sorted(PROTOCOLS)}")
    f_ghz = np.asarray(f_ghz, float)
    if f_ghz.ndim != 1 or len(f_ghz) != np.shape(H)[-1]:
        raise ValueError(f"view: f_ghz must hold one frequency per bin of H ({np.shape(H)[-1]}), got {f_ghz.shape}")
    if not (np.isfinite(f_ghz).all() and f_ghz.min() >= 1.0 and f_ghz.max() <= 100.0):
        raise ValueError(f"view: f_ghz must be in GHz (the sweep is 4–43.5 GHz), got {f_ghz.min():.4g}–"
                         f"{f_ghz.max():.4g}; frequencies in Hz: divide by 1e9")  # fmt: skip
    m = PROTOCOLS[protocol].mask(f_ghz)
    if not m.any():
        raise ValueError(f"view: protocol {protocol} keeps no bin of the sweep {f_ghz.min():.4g}–{f_ghz.max():.4g} GHz")
    if kind == "dual_channel":
        return complex_whiten(H[:, m]), f_ghz[m]
    if kind == "time":
        return time_view(H[:, m]), f_ghz[m]
    raise ValueError(f"unknown view {kind!r}; expected 'dual_channel' or 'time'")
