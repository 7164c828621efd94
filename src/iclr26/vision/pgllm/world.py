"""Procedural 3D shape classes as point clouds (ModelNet-like), with exact labels, deterministic from a seed.

Each class is a small assembly of trimesh primitives (boxes, cylinders, cones, tori, surfaces of revolution):
a table is a slab on four legs, a cup an open shell with a torus handle, an airplane a fuselage with wings and a tail.
A shape is drawn by randomising the proportions, the part jitter and the number of parts, dropping parts (occlusion),
rotating about the vertical axis, sampling points area-weighted on the surface (`trimesh.sample.sample_surface`),
adding Gaussian noise and normalising to the unit sphere.

`shift` moves the shape prior: wider proportion ranges, other part counts (three-legged tables, pedestal stools, a
second wing pair), more dropout and noise. A model trained on shift 0 (the "pre-training world") makes realistic
errors on shift 1 (the evaluation world). Confusable groups are built in: table/desk/bench, cup/vase/bottle/bowl,
door/monitor, chair/stool/bed. `ood_splits` gives the ID / OOD class splits (ModelNet40's MN1/MN2/MN3 protocol: one
third of the classes in distribution, the rest out of distribution).

    from iclr26.vision.pgllm.world import CLASSES, make_set
    pts, labels = make_set(n_per_class=10, seed=0, shift=1.0)   # (160, 256, 3) float32, (160,) int
"""

from __future__ import annotations

import numpy as np
import trimesh

CLASSES = (
    "table", "desk", "bench", "stool", "chair", "bed", "shelf", "bottle",
    "vase", "cup", "bowl", "lamp", "tent", "airplane", "car", "door", "monitor", "guitar",
)  # fmt: skip


def _box(ext, center):
    m = trimesh.creation.box(extents=np.abs(ext) + 1e-3)
    m.apply_translation(center)
    return m


def _cyl(r, h, center, sections=12, axis="z"):
    m = trimesh.creation.cylinder(radius=abs(r) + 1e-3, height=abs(h) + 1e-3, sections=sections)
    if axis == "x":
        m.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0]))
    elif axis == "y":
        m.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
    m.apply_translation(center)
    return m


def _revolve(profile, sections=16):
    """A surface of revolution about z from a (radius, height) profile."""
    return trimesh.creation.revolve(np.asarray(profile, float), sections=sections)


def _legs(n, w, d, h, r, z0=0.0):
    """n legs of radius r and height h under a w x d top (3 legs: a triangle; 1 leg: a pedestal)."""
    if n == 1:
        return [_cyl(3 * r, h, (0, 0, z0 + h / 2))]
    if n == 3:
        ang = np.arange(3) * 2 * np.pi / 3
        return [_cyl(r, h, (0.4 * w * np.cos(a), 0.4 * d * np.sin(a), z0 + h / 2)) for a in ang]
    return [_cyl(r, h, (sx * 0.42 * w, sy * 0.42 * d, z0 + h / 2)) for sx in (-1, 1) for sy in (-1, 1)]


def _parts(name: str, u, rng, shift: float) -> list:
    """The parts of one shape of class ``name``; ``u(lo, hi)`` draws a proportion widened by the shift."""
    alt = rng.random() < 0.35 * shift  # a variant of the shape prior unseen at shift 0
    if name == "table":
        w, d, h = u(1.0, 1.4), u(0.7, 1.0), u(0.6, 0.8)
        return [_box((w, d, 0.06), (0, 0, h))] + _legs(3 if alt else 4, w, d, h, 0.035)
    if name == "desk":
        w, d, h = u(1.2, 1.5), u(0.5, 0.7), u(0.6, 0.75)
        side = [_box((0.05, d, h), (s * w / 2, 0, h / 2)) for s in (-1, 1)]
        extra = [_box((w * 0.35, d, h * 0.5), (w * 0.3, 0, h * 0.25))] if alt else []
        return [_box((w, d, 0.05), (0, 0, h))] + side + extra
    if name == "bench":
        w, d, h = u(1.6, 2.2), u(0.35, 0.5), u(0.35, 0.5)
        back = [_box((w, 0.05, 0.4), (0, d / 2, h + 0.2))] if alt else []
        return [_box((w, d, 0.06), (0, 0, h))] + _legs(4, w, d, h, 0.04) + back
    if name == "stool":
        r, h = u(0.2, 0.3), u(0.6, 0.8)
        return [_cyl(r, 0.05, (0, 0, h), sections=16)] + _legs(1 if alt else 3, 2 * r, 2 * r, h, 0.025)
    if name == "chair":
        w, h = u(0.45, 0.6), u(0.4, 0.5)
        back_h = u(0.4, 0.6) * (0.5 if alt else 1.0)
        return [_box((w, w, 0.06), (0, 0, h)), _box((w, 0.05, back_h), (0, w / 2, h + back_h / 2))] + _legs(
            4, w, w, h, 0.025
        )
    if name == "bed":
        w, d, h = u(1.0, 1.4), u(1.8, 2.2), u(0.35, 0.5)
        foot = [_box((w, 0.06, h * 1.1), (0, -d / 2, h * 0.55))] if alt else []
        return [_box((w, d, h * 0.6), (0, 0, h * 0.5)), _box((w, 0.08, h * 2.2), (0, d / 2, h * 1.1))] + foot
    if name == "shelf":
        w, d, h = u(0.8, 1.1), u(0.3, 0.4), u(1.4, 1.9)
        n = int(rng.integers(2, 4)) + (2 if alt else 0)
        frame = [_box((0.04, d, h), (s * w / 2, 0, h / 2)) for s in (-1, 1)]
        return frame + [_box((w, d, 0.04), (0, 0, h * i / n)) for i in range(n + 1)]
    if name == "bottle":
        r, h = u(0.15, 0.22), u(0.7, 1.0)
        return [_revolve([[0, 0], [r, 0], [r, h * 0.6], [r * 0.35, h * 0.8], [r * 0.3, h], [0, h]])]
    if name == "vase":
        r, h = u(0.25, 0.35), u(0.6, 0.9)
        return [_revolve([[0, 0], [r * 0.6, 0], [r, h * 0.4], [r * 0.45, h * 0.85], [r * 0.6, h], [0.0, h]])]
    if name == "cup":
        r, h = u(0.22, 0.3), u(0.4, 0.55)
        handle = [] if alt else [_handle(r, h)]
        return [_revolve([[0, 0], [r, 0], [r * 1.1, h], [r * 1.05, h], [0.9 * r, 0.05], [0, 0.05]])] + handle
    if name == "bowl":
        r, h = u(0.4, 0.55), u(0.2, 0.3)
        t = np.linspace(0, np.pi / 2, 7)
        outer = np.c_[r * np.sin(t), h * (1 - np.cos(t))]
        return [_revolve(np.r_[[[0, 0]], outer[1:], outer[::-1][:-1] * 0.92 + [0, 0.02], [[0, 0.02]]])]
    if name == "lamp":
        h, r = u(1.0, 1.5), u(0.2, 0.3)
        shade = trimesh.creation.cone(radius=r, height=r * 1.2, sections=14)
        shade.apply_translation((0, 0, h - r * 0.6))
        return [shade, _cyl(r * 0.8, 0.04, (0, 0, 0.02), sections=14), _cyl(0.02, h, (0, 0, h / 2))]
    if name == "tent":
        w, d, h = u(1.0, 1.5), u(1.2, 2.0), u(0.7, 1.0)
        v = [[x, y, z] for y in (-d / 2, d / 2) for x, z in ((-w / 2, 0), (w / 2, 0), (0, h))]  # triangular prism
        f = [[0, 1, 2], [3, 5, 4], [0, 3, 4], [0, 4, 1], [1, 4, 5], [1, 5, 2], [2, 5, 3], [2, 3, 0]]
        return [trimesh.Trimesh(vertices=np.array(v), faces=np.array(f), process=False)]
    if name == "airplane":
        L, span = u(1.6, 2.0), u(1.6, 2.2)
        body = _cyl(0.1, L, (0, 0, 0.3), axis="x")
        wings = [_box((0.35, span, 0.03), (0, 0, 0.3))]
        if alt:
            wings.append(_box((0.25, span * 0.6, 0.03), (0.45 * L / 2, 0, 0.3)))
        tail = [_box((0.25, 0.6, 0.03), (-L / 2 + 0.1, 0, 0.3)), _box((0.25, 0.03, 0.3), (-L / 2 + 0.1, 0, 0.45))]
        return [body] + wings + tail
    if name == "car":
        L, w, h = u(1.6, 2.0), u(0.7, 0.9), u(0.3, 0.4)
        wheels = [_cyl(0.13, 0.08, (sx * L * 0.32, sy * w / 2, 0.13), axis="y") for sx in (-1, 1) for sy in (-1, 1)]
        cabin = _box((L * (0.7 if alt else 0.5), w * 0.9, h * 0.8), (-0.05 * L, 0, 0.13 + h + h * 0.4))
        return [_box((L, w, h), (0, 0, 0.13 + h / 2)), cabin] + wheels
    if name == "door":
        w, h = u(0.8, 1.0), u(1.9, 2.2)
        knob = [] if alt else [_cyl(0.03, 0.08, (w * 0.4, 0.06, h * 0.5), axis="y")]
        return [_box((w, 0.06, h), (0, 0, h / 2))] + knob
    if name == "monitor":
        w, h = u(0.9, 1.3), u(0.55, 0.8)
        stand = [_cyl(0.03, 0.25, (0, 0, 0.125))] if not alt else [_box((0.05, 0.05, 0.25), (0, 0.03, 0.125))]
        return [_box((w, 0.05, h), (0, 0, 0.25 + h / 2)), _box((0.35, 0.25, 0.03), (0, 0, 0.015))] + stand
    if name == "guitar":
        r1, r2, L = u(0.25, 0.32), u(0.18, 0.24), u(0.7, 0.9)
        return [
            _cyl(r1, 0.1, (0, 0, 0), sections=16, axis="y"),
            _cyl(r2, 0.1, (0, 0, r1 + r2 * 0.8), sections=16, axis="y"),
            _box((0.07, 0.05, L), (0, 0, r1 + 2 * r2 + L / 2 - 0.1)),
        ]
    raise ValueError(f"unknown class {name!r}; expected one of {CLASSES}")


def _handle(r, h):
    m = trimesh.creation.torus(h * 0.28, 0.025, major_sections=12, minor_sections=6)
    m.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
    m.apply_translation((r * 1.1, 0, h * 0.5))
    return m


def make_shape(label: int, rng: np.random.Generator, n_points: int = 256, shift: float = 0.0) -> np.ndarray:
    """One point cloud (n_points, 3) of class ``CLASSES[label]``, unit-sphere normalised."""
    if not 0 <= label < len(CLASSES):
        raise ValueError(f"label must lie in [0, {len(CLASSES)}), got {label!r}")
    if not 0.0 <= shift <= 2.0:
        raise ValueError(f"shift must lie in [0, 2], got {shift!r}")
    spread = 0.3 + 0.3 * shift  # ±30 % proportions at shift 0 (dossier), wider with the shift

    def u(lo, hi):
        return rng.uniform(lo, hi) * (1 + rng.uniform(-spread, spread) * 0.5)

    parts = _parts(CLASSES[label], u, rng, shift)
    for p in parts:  # part jitter
        p.apply_translation(rng.normal(0, 0.01 + 0.01 * shift, 3))
    if len(parts) > 1:  # occlusion: 0-20 % of the parts dropped; the main body (the first part) is always kept
        drop = rng.random(len(parts)) < rng.uniform(0, 0.1 + 0.1 * shift)
        parts = [p for i, (p, d) in enumerate(zip(parts, drop)) if i == 0 or not d]
    mesh = trimesh.util.concatenate(parts)
    mesh.apply_transform(trimesh.transformations.rotation_matrix(rng.uniform(0, 2 * np.pi), [0, 0, 1]))
    pts, _ = trimesh.sample.sample_surface(mesh, n_points, seed=int(rng.integers(2**31)))
    pts = pts + rng.normal(0, 0.01 * (1 + shift), pts.shape)  # Gaussian point noise (dossier: 0.01)
    pts = pts - pts.mean(0)
    return (pts / np.linalg.norm(pts, axis=1).max()).astype(np.float32)


def make_set(
    n_per_class: int, seed: int, shift: float = 0.0, n_points: int = 256, classes: tuple[int, ...] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``n_per_class`` shapes of each class (shuffled): points (N, n_points, 3) and labels (N,)."""
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be >= 1, got {n_per_class!r}")
    classes = tuple(range(len(CLASSES))) if classes is None else tuple(classes)
    rng = np.random.default_rng([seed, 7_331])
    labels = rng.permutation(np.repeat(np.array(classes), n_per_class))
    return np.stack([make_shape(int(c), rng, n_points, shift) for c in labels]), labels


def ood_splits(n_splits: int = 3, seed: int = 0) -> list[tuple[int, ...]]:
    """Disjoint ID class subsets (about 1/n_splits of the classes each); every other class is OOD for that split."""
    order = np.random.default_rng([seed, 99]).permutation(len(CLASSES))
    return [tuple(sorted(int(c) for c in part)) for part in np.array_split(order, n_splits)]
