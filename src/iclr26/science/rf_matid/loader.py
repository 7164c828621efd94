"""Loader for the real RF-MatID files (download: https://ntumars.github.io/project/RFMatID/), read into the same
`RFDataset` container as the synthetic world, so `iclr26.papers.rf_matid.experiment.benchmark` runs on either.

Format (from the official `dataset/dataset.py`; the README does not document it):

    RFMatID_Dataset/frequency_domain/<device>-4To43.5GHz-2048-<class>-<d>mm-<θ>deg/*.csv
        one sweep per CSV: a header row, then 2048 rows  freq (Hz), real, imag
    RFMatID_Dataset/time_domain/<same folder names>/*.csv
        a header row, then rows  time (ps), amplitude   (the official loader keeps every 3rd sample)

The class is the third-last dash-separated field of the folder name (e.g. `brick01`), the superclass its alphabetic
prefix among brick, stone, wood, syntheticMaterial, glass (official `_coarse_class`).
"""

from __future__ import annotations

import csv
import glob
import os

import numpy as np

SUPERCLASSES = ("brick", "stone", "wood", "syntheticMaterial", "glass")


def parse_folder(name: str) -> tuple[str, int, int]:
    """'ms46131a-4To43.5GHz-2048-brick01-200mm-0deg' → ('brick01', 200, 0)."""
    parts = os.path.basename(name.rstrip("/")).split("-")
    if len(parts) < 3 or not parts[-2].endswith("mm") or not parts[-1].endswith("deg"):
        raise ValueError(f"folder {name!r} does not match '<...>-<class>-<d>mm-<angle>deg'")
    return parts[-3], int(parts[-2][:-2]), int(parts[-1][:-3])


def superclass_of(cls: str) -> str:
    for s in SUPERCLASSES:
        if cls.lower().startswith(s.lower()):
            return s
    raise ValueError(f"class {cls!r} has no known superclass prefix {SUPERCLASSES}")


def _read_csv(path: str) -> np.ndarray:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    return np.asarray(rows, dtype=np.float64)


def load_rfmatid(root: str, max_per_folder: int | None = None):
    """Read `root` (the `frequency_domain` folder) into an `RFDataset` (H complex [n, 2048], f in GHz, labels,
    distances, angles). `max_per_folder` caps the sweeps read per (class, d, θ) folder."""
    from iclr26.science.rf_matid.world import RFDataset

    folders = sorted(p for p in glob.glob(os.path.join(root, "*")) if os.path.isdir(p))
    if not folders:
        raise FileNotFoundError(f"no sample folders under {root!r}; expected RFMatID_Dataset/frequency_domain")
    info = [parse_folder(p) for p in folders]
    classes = tuple(sorted({c for c, _, _ in info}))
    sups = tuple(s for s in SUPERCLASSES if any(superclass_of(c) == s for c in classes))
    H, lab, dist, ang, f_ref = [], [], [], [], None
    for p, (c, d, a) in zip(folders, info):
        files = sorted(glob.glob(os.path.join(p, "*.csv")))[:max_per_folder]
        for fpath in files:
            arr = _read_csv(fpath)
            if f_ref is None:
                f_ref = arr[:, 0] / 1e9
            elif len(arr) != len(f_ref):
                raise ValueError(f"{fpath}: {len(arr)} bins, expected {len(f_ref)}")
            H.append(arr[:, 1] + 1j * arr[:, 2])
            lab.append(classes.index(c))
            dist.append(d)
            ang.append(a)
    lab = np.asarray(lab)
    sup = np.array([sups.index(superclass_of(c)) for c in classes])[lab]
    return RFDataset(np.asarray(H, np.complex64), f_ref, lab, np.asarray(dist), np.asarray(ang), classes, sup, sups)
