"""Synthetic CT-like abdominal/chest volumes with small lesions, lesion-like distractors and exact masks (GF-Screen).

Each volume is built in Hounsfield units (HU) on a voxel grid ``(X, Y, Z)`` (MONAI's channel-first spatial order)
from a seed, deterministically:

1. **Body**: air (−1000 HU) outside an elliptic cylinder of fat (−100 HU) with a 2-voxel muscle rim (40 HU).
2. **Organs** (jittered ellipsoids, textbook contrast-enhanced HU values): liver 60, spleen 50, two kidneys (cortex 150,
   medulla 30), an elongated pancreas 40, the aorta (a tube along z, 180) and vertebrae (discs, 400). In "chest"
   volumes the upper 40 % of the slices hold two lungs (−800 HU) instead of liver and spleen.
3. **Texture**: organ-interior texture from the real CT slice shipped with pydicom (``CT_small.dcm``, 128×128): random
   high-pass patches of it, scaled to a few HU, tiled over the slices.
4. **Lesions** (label 1): 0–3 ellipsoids in a host organ (radii 2–4.5 voxels in-plane, half that along z, as a
   1×1×2 mm grid would show them), hypodense (ΔHU ∈ [−60, −20]) or hyperdense ([+20, +40]); solid lung nodules
   +850 HU inside a lung (soft tissue, about 0 to +20 HU at the centre of the larger ones after the blur, inside the
   abdominal window; the first version's +700 left most nodules below the window's −175 HU, labelled but
   invisible). Their boundary is blurred (Gaussian σ = 0.8 voxel); the label is the ellipsoid itself.
5. **Distractors** (label 0, the false-positive bait): bright vessel segments (radius 1–1.5, 150 HU) and benign
   sharp-edged cysts (−10 HU) inside organs, in every volume, with or without lesions.
6. **Acquisition**: Gaussian noise σ = 15 HU, a smooth multiplicative bias field (±5 %) and, in a third of the
   volumes, a streak artefact through a few slices.

The organ geometry and HU values are textbook approximations (our assumption, following the GF-Screen dossier); only
the texture is real data. ``window`` maps HU to [0, 1] with MONAI's ``ScaleIntensityRange`` on the abdominal window
[−175, 250] HU used by the paper's code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import ndimage

HOSTS = ("liver", "kidney", "pancreas", "spleen", "lung")


@dataclass(frozen=True)
class CTWorldConfig:
    size: tuple[int, int, int] = field(default=(64, 64, 32), metadata={"help": "volume shape (X, Y, Z) in voxels"})
    p_lesion: float = field(default=0.6, metadata={"help": "share of volumes with lesions (dossier: 0.6)"})
    max_lesions: int = field(default=3, metadata={"help": "lesions per positive volume: 1..max (dossier: up to 3)"})
    p_chest: float = field(default=0.3, metadata={"help": "share of chest volumes with lungs (ours)"})
    n_distractors: tuple[int, int] = field(default=(2, 5), metadata={"help": "distractors per volume, inclusive range"})
    noise_hu: float = field(default=15.0, metadata={"help": "Gaussian noise σ in HU (dossier: 15)"})
    texture_hu: float = field(default=8.0, metadata={"help": "amplitude of the real-CT texture in HU (ours)"})
    hypo_hu: tuple[float, float] = field(default=(-60.0, -20.0), metadata={"help": "ΔHU of hypodense lesions"})
    hyper_hu: tuple[float, float] = field(default=(20.0, 40.0), metadata={"help": "ΔHU of hyperdense lesions"})
    radius: tuple[float, float] = field(default=(2.0, 4.5), metadata={"help": "in-plane lesion radius (voxels)"})

    def __post_init__(self):
        if len(self.size) != 3 or min(self.size) < 16:
            raise ValueError(f"CTWorldConfig.size must be 3 sides >= 16, got {self.size!r}")
        if not 0 <= self.p_lesion <= 1 or not 0 <= self.p_chest <= 1:
            raise ValueError(f"p_lesion and p_chest must lie in [0, 1], got {self.p_lesion!r}, {self.p_chest!r}")
        if self.max_lesions < 1 or not 0 <= self.n_distractors[0] <= self.n_distractors[1]:
            raise ValueError(f"max_lesions >= 1 and 0 <= n_distractors[0] <= [1], got {self!r}")


@dataclass
class CTVolume:
    """One volume: ``hu`` (float32 HU), ``label`` (uint8 lesion mask), and what was placed where."""

    hu: np.ndarray
    label: np.ndarray
    lesions: list = field(default_factory=list)  # (host, kind, centre, radii)
    distractors: list = field(default_factory=list)  # (kind, centre, radius)
    chest: bool = False

    @property
    def positive(self) -> bool:
        return bool(self.label.any())


@lru_cache(maxsize=1)
def ct_texture() -> np.ndarray:
    """High-pass texture of pydicom's real CT slice (HU, zero mean, unit std over the body)."""
    import pydicom
    from pydicom.data import get_testdata_file

    ds = pydicom.dcmread(get_testdata_file("CT_small.dcm"))
    hu = ds.pixel_array.astype(np.float64) * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
    hp = hu - ndimage.gaussian_filter(hu, 2.0)  # keep the fine structure, drop the anatomy
    body = hu > -500
    hp = np.clip(hp, *np.percentile(hp[body], [1, 99]))
    return ((hp - hp[body].mean()) / hp[body].std() * body).astype(np.float32)


def _ellipsoid(grid, centre, radii) -> np.ndarray:
    """Boolean mask of an axis-aligned ellipsoid, evaluated only inside its bounding box."""
    shape = grid[0].shape
    box = tuple(slice(max(0, int(c - r) - 1), min(n, int(c + r) + 2)) for c, r, n in zip(centre, radii, shape))
    out = np.zeros(shape, bool)
    if any(b.start >= b.stop for b in box):
        return out
    out[box] = sum(((g[box] - c) / r) ** 2 for g, c, r in zip(grid, centre, radii)) <= 1.0
    return out


def make_ct_volume(seed: int, cfg: CTWorldConfig | None = None) -> CTVolume:
    """One volume, a deterministic function of ``seed`` (and ``cfg``)."""
    cfg = cfg or CTWorldConfig()
    rng = np.random.default_rng(seed)
    X, Y, Z = cfg.size
    grid = np.meshgrid(np.arange(X), np.arange(Y), np.arange(Z), indexing="ij")
    sx, sy = X / 64, Y / 64  # geometry is stated for a 64×64 slice and scaled
    hu = np.full(cfg.size, -1000.0)
    cx, cy = X / 2 + rng.uniform(-1, 1), Y / 2 + rng.uniform(-1, 1)
    a, b = rng.uniform(26, 30) * sx, rng.uniform(18, 22) * sy
    r2 = ((grid[0] - cx) / a) ** 2 + ((grid[1] - cy) / b) ** 2
    body = r2 <= 1.0
    hu[body] = 40.0  # muscle rim
    inner = ((grid[0] - cx) / (a - 2)) ** 2 + ((grid[1] - cy) / (b - 2)) ** 2 <= 1.0
    hu[inner] = -100.0  # fat

    def jit(v, s=1.5):
        return v + rng.uniform(-s, s)

    chest = rng.random() < cfg.p_chest
    z_lung = int(round(0.4 * Z)) if chest else 0  # slices [Z - z_lung, Z) are thorax
    organs = {}
    liver = _ellipsoid(grid, (jit(cx - 12 * sx), jit(cy - 3 * sy), jit(Z / 2)), (12 * sx, 10 * sy, 0.45 * Z))
    spleen = _ellipsoid(grid, (jit(cx + 15 * sx), jit(cy + 2 * sy), jit(Z / 2)), (5 * sx, 6 * sy, 0.3 * Z))
    organs["liver"], organs["spleen"] = liver, spleen
    kid = np.zeros(cfg.size, bool)
    med = np.zeros(cfg.size, bool)
    for side in (-1, 1):
        c = (jit(cx + side * 10 * sx), jit(cy + 10 * sy), jit(Z / 2))
        kid |= _ellipsoid(grid, c, (4 * sx, 5 * sy, 0.25 * Z))
        med |= _ellipsoid(grid, c, (2 * sx, 2.5 * sy, 0.15 * Z))
    organs["kidney"] = kid
    organs["pancreas"] = _ellipsoid(grid, (jit(cx + 2 * sx), jit(cy + 2 * sy), jit(Z / 2)), (10 * sx, 3 * sy, 0.15 * Z))
    lung = np.zeros(cfg.size, bool)
    if chest:
        for side in (-1, 1):
            lung |= _ellipsoid(grid, (jit(cx + side * 12 * sx), jit(cy - 1), Z), (10 * sx, 12 * sy, z_lung + 2))
        lung &= grid[2] >= Z - z_lung
        for k in ("liver", "spleen"):
            organs[k] = organs[k] & ~lung & (grid[2] < Z - z_lung)
    organs["lung"] = lung & inner
    for k, v in (("liver", 60), ("spleen", 50), ("pancreas", 40)):
        hu[organs[k] & inner] = v
    hu[kid & inner] = 150
    hu[med & inner] = 30
    hu[organs["lung"]] = -800
    aorta = ((grid[0] - jit(cx, 1)) ** 2 + (grid[1] - jit(cy + 12 * sy, 1)) ** 2) <= (3 * sx) ** 2
    hu[aorta] = 180
    disc = (((grid[0] - cx) ** 2 + (grid[1] - (cy + 18 * sy)) ** 2) <= (4.5 * sx) ** 2) & (grid[2] % 4 != 0)
    hu[disc & body] = 400
    soft = inner & ~organs["lung"] & ~aorta & ~disc

    # real texture: random patches of the high-pass CT slice, one per slice, inside soft tissue
    tex = ct_texture()
    for z in range(Z):
        ox, oy = rng.integers(0, tex.shape[0] - X + 1), rng.integers(0, tex.shape[1] - Y + 1)
        patch = tex[ox : ox + X, oy : oy + Y]
        if rng.random() < 0.5:
            patch = patch.T if X == Y else patch[::-1]
        hu[..., z] += cfg.texture_hu * patch * soft[..., z]

    label = np.zeros(cfg.size, np.uint8)
    lesions, distractors = [], []
    taken = np.zeros(cfg.size, bool)

    def place(mask_of_host, radii):
        """A centre inside the host whose ellipsoid stays in the host and off earlier objects (None if none fits)."""
        cand = np.argwhere(mask_of_host & ~taken)
        for _ in range(30):
            if len(cand) == 0:
                return None, None
            c = tuple(cand[rng.integers(len(cand))] + rng.uniform(-0.5, 0.5, 3))
            m = _ellipsoid(grid, c, radii)
            if m.sum() and (m & mask_of_host).sum() >= 0.85 * m.sum() and not (m & taken).any():
                return c, m
        return None, None

    if rng.random() < cfg.p_lesion:
        hosts = [h for h in HOSTS if organs[h].sum() > 200]
        for _ in range(rng.integers(1, cfg.max_lesions + 1)):
            host = hosts[rng.integers(len(hosts))]
            r = rng.uniform(*cfg.radius)
            radii = (r * rng.uniform(0.8, 1.2), r * rng.uniform(0.8, 1.2), r / 2)
            c, m = place(organs[host], radii)
            if c is None:
                continue
            kind = "nodule" if host == "lung" else ("hypo" if rng.random() < 0.6 else "hyper")
            d = 850.0 if kind == "nodule" else rng.uniform(*(cfg.hypo_hu if kind == "hypo" else cfg.hyper_hu))
            hu += d * ndimage.gaussian_filter(m.astype(np.float64), 0.8)  # blurred boundary
            label[m] = 1
            taken |= ndimage.binary_dilation(m, iterations=2)
            lesions.append((host, kind, tuple(float(v) for v in c), radii))
        if not lesions:  # nothing fitted: keep the share of positives by forcing one liver lesion
            c, m = place(organs["liver"] | organs["spleen"], (3.0, 3.0, 1.5))
            if c is not None:
                hu += -40.0 * ndimage.gaussian_filter(m.astype(np.float64), 0.8)
                label[m] = 1
                taken |= ndimage.binary_dilation(m, iterations=2)
                lesions.append(("liver", "hypo", tuple(float(v) for v in c), (3.0, 3.0, 1.5)))

    organ_any = (organs["liver"] | organs["spleen"] | kid | organs["pancreas"]) & inner
    for _ in range(rng.integers(cfg.n_distractors[0], cfg.n_distractors[1] + 1)):
        if rng.random() < 0.5:  # benign cyst: water-like, sharp edge
            r = rng.uniform(2.0, 4.0)
            c, m = place(organ_any, (r, r, r / 2))
            if c is not None:
                hu[m] = -10.0
                distractors.append(("cyst", tuple(float(v) for v in c), r))
        else:  # vessel: a short bright tube along z
            r, length = rng.uniform(1.0, 1.5), rng.integers(2, 5)
            c, m = place(organ_any, (r, r, length))
            if c is not None:
                hu[m] = 150.0
                distractors.append(("vessel", tuple(float(v) for v in c), r))
        if c is not None:
            taken |= ndimage.binary_dilation(m, iterations=2)

    # acquisition: smooth multiplicative bias field, streaks, Gaussian noise
    coarse = rng.normal(0, 1, (4, 4, 3))
    bias = ndimage.zoom(coarse, [s / c for s, c in zip(cfg.size, coarse.shape)], order=1)
    hu = np.where(body, hu * (1 + 0.05 * bias / (np.abs(bias).max() + 1e-9)), hu)
    if rng.random() < 1 / 3:
        z0, ang = rng.integers(0, Z - 2), rng.uniform(0, np.pi)
        dist = np.abs((grid[0] - cx) * np.sin(ang) - (grid[1] - cy) * np.cos(ang))
        hu += 80.0 * np.exp(-(dist**2) / 2.0) * ((grid[2] >= z0) & (grid[2] < z0 + 2)) * body
    hu += rng.normal(0, cfg.noise_hu, cfg.size)
    return CTVolume(hu.astype(np.float32), label, lesions, distractors, bool(chest))


def window(hu: np.ndarray, a_min: float = -175.0, a_max: float = 250.0) -> np.ndarray:
    """HU → [0, 1] with MONAI's ScaleIntensityRange (clipped), the paper's abdominal window by default."""
    from monai.transforms import ScaleIntensityRange

    out = ScaleIntensityRange(a_min=a_min, a_max=a_max, b_min=0.0, b_max=1.0, clip=True)(hu)
    return np.asarray(out, dtype=np.float32)


def make_ct_dataset(seeds, cfg: CTWorldConfig | None = None, p_lesion: float | None = None):
    """``(images [n, 1, X, Y, Z] in [0, 1], labels [n, 1, X, Y, Z], volumes)`` for the given volume seeds.

    ``p_lesion`` overrides the config's share of positive volumes (e.g. a test set with 40 % lesion-free scans)."""
    cfg = cfg or CTWorldConfig()
    if p_lesion is not None:
        from dataclasses import replace

        cfg = replace(cfg, p_lesion=p_lesion)
    vols = [make_ct_volume(int(s), cfg) for s in seeds]
    if not vols:
        raise ValueError("make_ct_dataset: no seeds given; expected at least one volume seed")
    images = np.stack([window(v.hu) for v in vols])[:, None]
    labels = np.stack([v.label for v in vols])[:, None]
    return images, labels, vols
