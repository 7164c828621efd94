"""Aerial-style scenes with oriented objects and exact rotated boxes ("ToyDOTA"), deterministic from a seed.

A scene is a small RGB image (default 64 x 64) of a textured ground (smooth colour noise, a few straight roads) with
3-7 objects of three categories, each drawn at a random angle and size, and a few distractor blobs that belong to no
category. Every object is a rotated box `(cx, cy, w, h, theta)` in pixels, long side `w >= h`, `theta` the angle of the
long side from the x axis (x right, y down) in [-pi/2, pi/2) (mmrotate's "le90"). The drawn shape fills exactly its
box's extent, so the box is the exact minimal rotated box of the object.

- plane:   a cross, fuselage along the long side, wings across (span 0.75 x length), grey
- ship:    an elongated ellipse (aspect 1:3-1:4), bright white hull with a dark wake line
- vehicle: a small filled rectangle (aspect 1:2) in a saturated colour with a dark windshield band at one end

Objects do not overlap (rejection sampling on their circumscribed circles). The object sizes span two FPN levels
of a stride-4/8 detector.

    from iclr26.vision.spwood.world import CLASSES, make_scenes
    data = make_scenes(8, seed=0)   # "images": (8, 3, 64, 64) float32; "boxes"[i]: (k, 5); "labels"[i]: (k,)
"""

from __future__ import annotations

import numpy as np

CLASSES = ("plane", "ship", "vehicle")
# (length range in pixels, short/long aspect range)
_SIZES = {0: ((11.0, 17.0), (0.72, 0.78)), 1: ((12.0, 20.0), (0.25, 0.33)), 2: ((7.0, 10.0), (0.45, 0.55))}


def rbox_corners(boxes: np.ndarray) -> np.ndarray:
    """(n, 5) rotated boxes -> (n, 4, 2) corners, counter-clockwise in image coordinates."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 5)
    c, s = np.cos(b[:, 4]), np.sin(b[:, 4])
    u = np.stack([c, s], -1) * b[:, 2:3] / 2
    v = np.stack([-s, c], -1) * b[:, 3:4] / 2
    ctr = b[:, None, :2]
    return ctr + np.stack([-u - v, u - v, u + v, -u + v], 1)


def _smooth_noise(rng, size, cells):
    g = rng.normal(size=(3, cells + 1, cells + 1))
    x = np.linspace(0, cells, size)
    i0 = np.clip(np.floor(x).astype(int), 0, cells - 1)
    f = x - i0
    rows = g[:, i0] * (1 - f)[None, :, None] + g[:, i0 + 1] * f[None, :, None]
    return rows[:, :, i0] * (1 - f)[None, None, :] + rows[:, :, i0 + 1] * f[None, None, :]


def _shape_mask(cls, xp, yp, w, h):
    """Coverage of a shape in its own frame (xp along the long side), values in {0, 1} per sample point."""
    if cls == 0:  # plane: fuselage (full length, 0.28 of span) + wings (full span, 0.3 of length) + tail
        fus = (np.abs(xp) <= w / 2) & (np.abs(yp) <= 0.14 * h)
        wing = (np.abs(xp - 0.05 * w) <= 0.15 * w) & (np.abs(yp) <= h / 2)
        tail = (np.abs(xp + 0.42 * w) <= 0.08 * w) & (np.abs(yp) <= 0.3 * h)
        return fus | wing | tail
    if cls == 1:  # ship: ellipse
        return (xp / (w / 2)) ** 2 + (yp / (h / 2)) ** 2 <= 1.0
    return (np.abs(xp) <= w / 2) & (np.abs(yp) <= h / 2)


def _draw(img, rng, cls, box, ss):
    """Paint one object into img (3, S, S) with ss x ss supersampling."""
    size = img.shape[-1]
    cx, cy, w, h, t = box
    r = int(np.ceil(max(w, h) / 2)) + 2
    x0, x1 = max(int(cx) - r, 0), min(int(cx) + r + 1, size)
    y0, y1 = max(int(cy) - r, 0), min(int(cy) + r + 1, size)
    off = (np.arange(ss) + 0.5) / ss
    xs = (np.arange(x0, x1)[:, None] + off[None]).ravel()
    ys = (np.arange(y0, y1)[:, None] + off[None]).ravel()
    px, py = np.meshgrid(xs, ys)
    dx, dy = px - cx, py - cy
    xp, yp = dx * np.cos(t) + dy * np.sin(t), -dx * np.sin(t) + dy * np.cos(t)
    m = _shape_mask(cls, xp, yp, w, h).astype(np.float32)
    if cls == 0:
        col = np.array([0.72, 0.72, 0.75]) + rng.uniform(-0.06, 0.06)
        tex = np.zeros_like(m)
    elif cls == 1:
        col = np.array([0.92, 0.92, 0.9]) + rng.uniform(-0.05, 0.03)
        tex = -0.45 * ((np.abs(yp) <= 0.12 * h) & (np.abs(xp) <= 0.35 * w))
    else:
        col = np.array([(0.85, 0.15, 0.12), (0.15, 0.3, 0.85), (0.9, 0.8, 0.15)][rng.integers(3)])
        tex = -0.5 * (np.abs(xp - 0.22 * w) <= 0.08 * w)
    cover = m.reshape(y1 - y0, ss, x1 - x0, ss).mean((1, 3))
    shade = (m * tex).reshape(y1 - y0, ss, x1 - x0, ss).mean((1, 3))
    patch = img[:, y0:y1, x0:x1]
    img[:, y0:y1, x0:x1] = patch * (1 - cover) + (col[:, None, None] * cover + shade * col[:, None, None])


def make_scene(rng: np.random.Generator, size: int = 64, n_objects=(3, 7), n_distractors=(1, 4), ss: int = 2):
    """One scene: (image (3, S, S) float32 in [0, 1], boxes (k, 5) float32, labels (k,) int64)."""
    ground = np.array([0.35, 0.42, 0.28]) + rng.uniform(-0.06, 0.06, 3)
    img = ground[:, None, None] + 0.07 * _smooth_noise(rng, size, 4) + 0.03 * _smooth_noise(rng, size, 16)
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    for _ in range(rng.integers(0, 3)):  # roads: straight grey bands
        a, d = rng.uniform(0, np.pi), rng.uniform(-size / 3, size / 3)
        dist = np.abs((xx - size / 2) * np.sin(a) - (yy - size / 2) * np.cos(a) - d)
        img = np.where(dist[None] < rng.uniform(1.0, 2.0), 0.5 + rng.uniform(-0.05, 0.05), img)
    for _ in range(rng.integers(n_distractors[0], n_distractors[1] + 1)):  # blobs of no category
        cx, cy, rad = rng.uniform(0, size), rng.uniform(0, size), rng.uniform(2.0, 4.5)
        blob = (((xx - cx) / rad) ** 2 + ((yy - cy) / (rad * rng.uniform(0.6, 1.0))) ** 2) <= 1
        img = np.where(blob[None], rng.uniform(0.1, 0.7, 3)[:, None, None], img)
    boxes, labels, circles = [], [], []
    for _ in range(100):
        if len(boxes) >= rng.integers(n_objects[0], n_objects[1] + 1):
            break
        cls = int(rng.integers(len(CLASSES)))
        (lo, hi), (alo, ahi) = _SIZES[cls]
        w = rng.uniform(lo, hi)
        h = w * rng.uniform(alo, ahi)
        t = rng.uniform(-np.pi / 2, np.pi / 2)
        rad = np.hypot(w, h) / 2
        cx, cy = rng.uniform(rad * 0.7, size - rad * 0.7, 2)
        if any(np.hypot(cx - x, cy - y) < rad + r + 1 for x, y, r in circles):
            continue
        circles.append((cx, cy, rad))
        boxes.append((cx, cy, w, h, t))
        labels.append(cls)
    img = img.astype(np.float64)
    for cls, box in zip(labels, boxes):
        _draw(img, rng, cls, box, ss)
    img = np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1).astype(np.float32)
    return img, np.array(boxes, np.float32).reshape(-1, 5), np.array(labels, np.int64)


def make_scenes(n: int, seed: int, size: int = 64, n_objects=(3, 7), n_distractors=(1, 4)) -> dict:
    """n scenes from one seed: {"images": (n, 3, S, S) float32, "boxes": [(k, 5)], "labels": [(k,)], "classes"}."""
    if n < 1 or size < 32:
        raise ValueError(f"make_scenes needs n >= 1 and size >= 32, got n={n!r}, size={size!r}")
    rng = np.random.default_rng(seed)
    out = [make_scene(rng, size, n_objects, n_distractors) for _ in range(n)]
    return {
        "images": np.stack([o[0] for o in out]),
        "boxes": [o[1] for o in out],
        "labels": [o[2] for o in out],
        "classes": CLASSES,
    }
