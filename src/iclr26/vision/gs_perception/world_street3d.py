"""Ray-cast 3D street clips with small objects, exact boxes, camera poses and LiDAR-like points (gs-perception, 3D).

The 3D counterpart of `iclr26.vision.gs_perception.world_street`, deterministic from a seed. World axes follow OpenCV
(x right, y down,
z forward): the ground is the plane y = 0, the road runs along z (|x| < 3.5 m, dark, with dashed centre line), the
pavements lie at 3.5 < |x| < 6.5 and building blocks (axis-aligned boxes 4-16 m tall, random colours, window grids)
line both sides beyond them. Objects are axis-aligned boxes of the same three classes as the 2D world:

- car: 1.6-2.0 × 1.3-1.6 × 3.6-4.6 m (w × h × l) on the road, a dark window band in its upper third; cars drive
  along z at 0-1.2 m per frame (either direction);
- pedestrian: 0.4-0.6 × 1.6-1.85 × 0.4-0.6 m on a pavement, a head box of another colour; walks 0-0.3 m per frame;
- sign: a 0.5-0.8 m square panel on a 0.1 m grey pole 1.8-2.4 m tall, on a pavement; static.

A pinhole camera (70° horizontal field of view, principal point at 40 % of the height so the horizon sits in the upper
half, 1.5 m above the ground) drives forward along the road at ``ego_speed`` m per frame. Rendering is vectorised
NumPy ray casting (slab test against every box, the ground plane, a sky gradient), with a fixed directional light for
face shading and pixel noise. The box of an object in a frame is the tight extent of the pixels whose first hit is one
of its parts (x2, y2 exclusive, as in the 2D world); objects with fewer than ``min_pixels`` visible pixels are left
unlabelled (they are drawn but too small or occluded to count). ``points`` are LiDAR-like samples of the first frame's
visible surfaces (back-projected depth, with their colours and an object flag), the initialisation street 3DGS methods
take from LiDAR. Geometry, sizes and colours are our assumptions (textbook street proportions).

    from iclr26.vision.gs_perception.world_street3d import make_frames, make_sequence
    seq = make_sequence(seed=0, n_frames=3)   # frames (F, 3, H, W), boxes, labels, rot (F, 3, 3), trans (F, 3), K,
                                              # points (P, 3), point_colours (P, 3), point_is_object (P,)
    x, boxes, labels = make_frames(seed=1, n=64)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.vision.gs_perception.world_street import CLASSES, H, W, _colour

__all__ = ["CLASSES", "Sequence3D", "intrinsics", "make_frames", "make_scene", "make_sequence", "render"]
CAM_HEIGHT = 1.5
LIGHT = np.array([0.4, -0.8, -0.45]) / np.linalg.norm([0.4, -0.8, -0.45])  # towards the light (y is down)


@dataclass
class Sequence3D:
    frames: np.ndarray  # (F, 3, H, W) float32 in [0, 1]
    boxes: list  # per frame: (n, 4) float32 x1, y1, x2, y2 in pixels (x2, y2 exclusive)
    labels: list  # per frame: (n,) int64 indices into CLASSES
    rot: np.ndarray  # (F, 3, 3) world-to-camera rotations
    trans: np.ndarray  # (F, 3) world-to-camera translations: x_cam = rot @ x_world + trans
    k: np.ndarray  # (3, 3) pinhole intrinsics
    points: np.ndarray  # (P, 3) LiDAR-like world points of the first frame
    point_colours: np.ndarray  # (P, 3) their colours
    point_is_object: np.ndarray  # (P,) bool: the point lies on an object (car, pedestrian, sign)


def intrinsics(h: int = H, w: int = W, fov_deg: float = 70.0) -> np.ndarray:
    """Pinhole K with the given horizontal field of view; principal point at (w / 2, 0.4 h)."""
    f = 0.5 * w / np.tan(np.deg2rad(fov_deg) / 2)
    return np.array([[f, 0, w / 2], [0, f, 0.4 * h], [0, 0, 1.0]])


def _add(parts, lo, hi, colour, obj=-1, kind="object"):
    parts.append({"lo": np.asarray(lo, float), "hi": np.asarray(hi, float), "colour": np.asarray(colour, float),
                  "obj": obj, "kind": kind})  # fmt: skip


def make_scene(rng: np.random.Generator, z0: float = 0.0, length: float = 70.0, n_obj: tuple[int, int] = (3, 6)):
    """Buildings along ``[z0 - 10, z0 + length]`` and ``n_obj`` objects 6-35 m ahead of ``z0``. Returns the static
    parts, the objects (class, parts relative to the object's origin, origin, velocity along z)."""
    parts = []
    for side in (-1, 1):
        z = z0 - 10.0
        while z < z0 + length:
            ln, ht = rng.uniform(5, 11), rng.uniform(4, 16)
            x_in = rng.uniform(6.5, 7.5)
            lo, hi = (x_in, -ht, z), (x_in + 8, 0, z + ln)
            if side < 0:
                lo, hi = (-x_in - 8, -ht, z), (-x_in, 0, z + ln)
            _add(parts, lo, hi, rng.uniform(0.25, 0.8, 3), kind="building")
            z += ln + rng.uniform(0, 1.5)
    objects = []
    for _ in range(int(rng.integers(n_obj[0], n_obj[1] + 1))):
        cls = int(rng.integers(len(CLASSES)))
        body, sub = _colour(rng), []
        if cls == 0:
            w, h, ln = rng.uniform(1.6, 2.0), rng.uniform(1.3, 1.6), rng.uniform(3.6, 4.6)
            _add(sub, (-w / 2, -h, -ln / 2), (w / 2, 0, ln / 2), body, kind="car")
            x = rng.choice([-1, 1]) * rng.uniform(0.8, 2.4)
            vel = rng.choice([-1, 1]) * rng.uniform(0, 1.2)
        elif cls == 1:
            w, h, d = rng.uniform(0.4, 0.6), rng.uniform(1.6, 1.85), rng.uniform(0.4, 0.6)
            _add(sub, (-w / 2, -h + 0.25, -d / 2), (w / 2, 0, d / 2), body)
            _add(sub, (-0.12, -h, -0.12), (0.12, -h + 0.25, 0.12), _colour(rng))
            x = rng.choice([-1, 1]) * rng.uniform(3.8, 6.0)
            vel = rng.choice([-1, 1]) * rng.uniform(0, 0.3)
        else:
            s, pole = rng.uniform(0.5, 0.8), rng.uniform(1.8, 2.4)
            _add(sub, (-0.05, -pole, -0.05), (0.05, 0, 0.05), (0.55, 0.55, 0.55))
            _add(sub, (-s / 2, -pole - s, -0.04), (s / 2, -pole, 0.04), body)
            x = rng.choice([-1, 1]) * rng.uniform(3.8, 6.0)
            vel = 0.0
        objects.append({"cls": cls, "parts": sub, "origin": np.array([x, 0.0, z0 + rng.uniform(6, 35)]),
                        "vel": float(vel)})  # fmt: skip
    return parts, objects


def _slab(o, d, lo, hi):
    """Ray (o, d (P, 3)) against boxes lo, hi (B, 3): entry distance (P, B) (inf on a miss) and the hit axis (P, B)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d[:, None, :]
        t1, t2 = (lo[None] - o) * inv, (hi[None] - o) * inv
    tmin, tmax = np.minimum(t1, t2), np.maximum(t1, t2)
    tmin = np.nan_to_num(tmin, nan=-np.inf)
    tmax = np.nan_to_num(tmax, nan=np.inf)
    t_in, t_out = tmin.max(2), tmax.min(2)
    hit = (t_in <= t_out) & (t_in > 1e-6)
    return np.where(hit, t_in, np.inf), tmin.argmax(2)


def render(parts, objects, rot, trans, k, h: int = H, w: int = W, frame: int = 0, rng=None):
    """One frame: image (3, h, w) float32, depth (h, w) (camera z; inf for sky), object id per pixel (−1 for none)."""
    centre = -rot.T @ trans
    v, u = np.mgrid[0:h, 0:w].astype(float) + 0.5
    d = np.stack([(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones_like(u)], -1).reshape(-1, 3) @ rot
    boxes = list(parts)
    for i, ob in enumerate(objects):
        shift = ob["origin"] + np.array([0, 0, ob["vel"] * frame])
        boxes += [{**p, "lo": p["lo"] + shift, "hi": p["hi"] + shift, "obj": i} for p in ob["parts"]]
    lo, hi = np.stack([b["lo"] for b in boxes]), np.stack([b["hi"] for b in boxes])
    t_box, axis = _slab(centre, d, lo, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_ground = np.where(d[:, 1] > 1e-9, -centre[1] / d[:, 1], np.inf)
    best = t_box.argmin(1)
    t = np.minimum(t_box[np.arange(len(d)), best], t_ground)
    on_box = t_box[np.arange(len(d)), best] <= t_ground
    p = centre + np.where(np.isfinite(t), t, 0.0)[:, None] * d
    img = np.zeros((len(d), 3))
    sky = ~np.isfinite(t)
    elev = np.clip(-d[:, 1] / np.linalg.norm(d, axis=1), 0, 1)
    img[sky] = np.array([0.55, 0.68, 0.9]) * (0.85 + 0.3 * elev[sky, None])
    ground = ~sky & ~on_box
    gx, gz = np.abs(p[ground, 0]), p[ground, 2]
    g = np.where(gx < 3.5, 0.28, np.where(gx < 6.5, 0.62, 0.45))
    g = np.where((gx < 0.1) & (np.mod(gz, 6.0) < 3.0), 0.92, g)  # the dashed centre line
    img[ground] = g[:, None] * np.array([1.0, 1.0, 0.97])
    oid = np.full(len(d), -1)
    idx = np.flatnonzero(on_box & ~sky)
    for j in np.unique(best[idx]):
        sel = idx[best[idx] == j]
        b, ax = boxes[j], axis[sel, j]
        normal = np.zeros((len(sel), 3))
        normal[np.arange(len(sel)), ax] = -np.sign(d[sel, ax])
        col = np.tile(b["colour"], (len(sel), 1))
        q = p[sel]
        if b["kind"] == "building":  # window grid on the facades
            along = np.where(ax == 0, q[:, 2], q[:, 0])
            win = (np.mod(along, 1.6) < 0.8) & (np.mod(q[:, 1], 2.2) < 1.1) & (q[:, 1] < -0.8)
            col[win] = 0.15 + 0.6 * b["colour"][::-1]
        elif b["kind"] == "car":  # dark window band in the upper third
            col[q[:, 1] < b["lo"][1] + (b["hi"][1] - b["lo"][1]) / 3] = 0.12
        img[sel] = col * (0.65 + 0.35 * np.clip(normal @ LIGHT, 0, 1))[:, None]
        oid[sel] = b["obj"]
    if rng is not None:
        img += rng.normal(0, 0.02, img.shape)
    depth = (p - centre) @ rot.T
    depth = np.where(sky, np.inf, depth[:, 2])
    return (np.clip(img, 0, 1).T.reshape(3, h, w).astype(np.float32), depth.reshape(h, w), oid.reshape(h, w))


def _boxes(oid, objects, min_pixels):
    bs, ls = [], []
    for i, ob in enumerate(objects):
        ys, xs = np.nonzero(oid == i)
        if len(ys) >= min_pixels:
            bs.append([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
            ls.append(ob["cls"])
    return np.array(bs, np.float32).reshape(-1, 4), np.array(ls, np.int64)


def _camera(z: float, x: float = 0.0, yaw: float = 0.0):
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, 0, -s], [0, 1, 0], [s, 0, c]])  # world-to-camera (yaw about the vertical axis)
    return rot, -rot @ np.array([x, -CAM_HEIGHT, z])


def make_frames(seed: int, n: int, h: int = H, w: int = W, n_obj: tuple[int, int] = (2, 7), min_pixels: int = 12):
    """``n`` independent frames (a new street and camera each): (n, 3, h, w) float32, list of boxes, list of labels."""
    rng = np.random.default_rng(seed)
    k, xs, bs, ls = intrinsics(h, w), [], [], []
    for _ in range(n):
        parts, objects = make_scene(rng, n_obj=n_obj)
        rot, trans = _camera(0.0, rng.uniform(-1.5, 1.5), rng.uniform(-0.12, 0.12))
        img, _, oid = render(parts, objects, rot, trans, k, h, w, rng=rng)
        b, lab = _boxes(oid, objects, min_pixels)
        xs.append(img), bs.append(b), ls.append(lab)
    return np.stack(xs), bs, ls


def make_sequence(seed: int, n_frames: int = 3, h: int = H, w: int = W, n_obj: tuple[int, int] = (3, 6),
                  ego_speed: float = 1.0, n_points: int = 2000, min_pixels: int = 12) -> Sequence3D:  # fmt: skip
    """A clip: the camera drives ``ego_speed`` m per frame along the road, cars and pedestrians move along z."""
    if n_frames < 1:
        raise ValueError(f"n_frames must be >= 1, got {n_frames!r}")
    rng = np.random.default_rng(seed)
    k = intrinsics(h, w)
    parts, objects = make_scene(rng, n_obj=n_obj)
    x0 = rng.uniform(-1.5, 1.5)
    frames, boxes, labels, rots, transs = [], [], [], [], []
    for f in range(n_frames):
        rot, trans = _camera(f * ego_speed, x0)
        img, depth, oid = render(parts, objects, rot, trans, k, h, w, frame=f, rng=rng)
        if f == 0:
            first = (img, depth, oid, rot, trans)
        b, lab = _boxes(oid, objects, min_pixels)
        frames.append(img), boxes.append(b), labels.append(lab), rots.append(rot), transs.append(trans)
    img, depth, oid, rot, trans = first
    ys, xs = np.nonzero(np.isfinite(depth) & (depth < 80))
    pick = rng.choice(len(ys), size=min(n_points, len(ys)), replace=False)
    ys, xs = ys[pick], xs[pick]
    z = depth[ys, xs]
    cam = np.stack([(xs + 0.5 - k[0, 2]) / k[0, 0] * z, (ys + 0.5 - k[1, 2]) / k[1, 1] * z, z], 1)
    pts = (cam - trans) @ rot  # camera to world: x_w = rotᵀ (x_c − t)
    return Sequence3D(np.stack(frames), boxes, labels, np.stack(rots), np.stack(transs), k, pts.astype(np.float32),
                      img[:, ys, xs].T.copy(), oid[ys, xs] >= 0)  # fmt: skip
