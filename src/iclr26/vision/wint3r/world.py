"""Ray-cast indoor rooms: RGB frames with exact depth, local point maps and camera poses, deterministic from a seed.

A room is an axis-aligned box (half extents about 2 × 1.2 × 2; floor, ceiling and four walls), furnished with a few
axis-aligned boxes standing on the floor near the walls and a few spheres. Every surface has a random base colour, a
procedural checker texture (random frequency, so the camera's motion is visible) and a face-dependent shading factor
(a geometry cue). A camera (pinhole, 60° horizontal field of view, OpenCV axes: x right, y down, z forward) moves on a
smooth forward walk inside the free middle of the room: translation steps of 0.04-0.1 room units mostly along the
viewing direction, a yaw rate of a few degrees per frame that drifts and steers back from the edges, a small pitch
wobble. Rendering is vectorised NumPy ray casting with
analytic ray-plane, ray-box (slab) and ray-sphere intersections; depth is the z of the hit point in the camera frame.

    from iclr26.vision.wint3r.world import make_streams
    d = make_streams(n=4, length=16, seed=0)   # images (4, 16, 3, 24, 32), depth (4, 16, 24, 32),
                                                # pts_local (4, 16, 24, 32, 3), poses (4, 16, 4, 4) camera-to-world, K
"""

from __future__ import annotations

import numpy as np

ROOM = np.array([2.0, 1.2, 2.0])  # half extents (x, y, z); y points down (OpenCV), the floor is at y = +1.2


def intrinsics(h: int, w: int, fov_deg: float = 60.0) -> np.ndarray:
    """Pinhole K with the given horizontal field of view, principal point at the image centre."""
    f = 0.5 * w / np.tan(np.deg2rad(fov_deg) / 2)
    return np.array([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1.0]])


def make_scene(rng: np.random.Generator) -> dict:
    """Random furniture (2-4 boxes on the floor near the walls, 1-3 spheres) and per-surface textures."""
    boxes = []
    for _ in range(rng.integers(2, 5)):
        half = rng.uniform([0.15, 0.2, 0.15], [0.35, 0.6, 0.35])
        side, s = rng.integers(2), rng.choice([-1.0, 1.0])  # against a wall along x or along z
        c = np.array([rng.uniform(-1.4, 1.4), ROOM[1] - half[1], rng.uniform(-1.4, 1.4)])
        c[0 if side == 0 else 2] = s * (ROOM[0] - half[0] - rng.uniform(0.05, 0.3))
        boxes.append((c - half, c + half))
    spheres = []
    for _ in range(rng.integers(1, 4)):
        r = rng.uniform(0.15, 0.35)
        ang = rng.uniform(0, 2 * np.pi)
        c = np.array([1.6 * np.cos(ang), rng.uniform(-0.6, 0.6), 1.6 * np.sin(ang)])
        spheres.append((c, r))
    n_surf = 6 + len(boxes) + len(spheres)
    return {
        "boxes": boxes,
        "spheres": spheres,
        "colour": rng.uniform(0.15, 0.95, (n_surf, 3)),
        "freq": rng.uniform(1.5, 4.0, n_surf),
        "contrast": rng.uniform(0.25, 0.5, n_surf),
        "field_w": rng.normal(0, 1.2, (3, 3)),  # a smooth room-wide colour field: 0.5 + 0.5 sin(W p + phase)
        "field_phase": rng.uniform(0, 2 * np.pi, 3),
    }


def make_trajectory(rng: np.random.Generator, length: int) -> np.ndarray:
    """Camera-to-world poses (length, 4, 4) of a smooth forward walk in the free middle of the room: the camera moves
    mostly along its viewing direction (speed 0.04-0.1 units per frame, some sideways noise), its yaw rate drifts
    (a few degrees per frame) and steers back toward the centre near the edge (|x|, |z| > 0.4; it slows down rather
    than pass 0.8); a small pitch wobble."""
    pos = np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.2, 0.2), rng.uniform(-0.5, 0.5)])
    yaw, pitch = rng.uniform(0, 2 * np.pi), 0.0
    speed = rng.uniform(0.04, 0.1)
    dyaw = rng.choice([-1, 1]) * np.deg2rad(rng.uniform(2, 8))
    lim = np.deg2rad(8)
    out = np.zeros((length, 4, 4))
    for t in range(length):
        cy, sy, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
        ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
        rx = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
        out[t, :3, :3], out[t, :3, 3], out[t, 3, 3] = ry @ rx, pos, 1.0
        fwd, side = np.array([sy, 0.0, cy]), np.array([cy, 0.0, -sy])
        edge = np.abs(pos[[0, 2]]).max()
        nxt = pos + speed * fwd + rng.normal(0, 0.2 * speed) * side + np.array([0, rng.normal(0, 0.01), 0])
        if np.abs(nxt[[0, 2]]).max() > max(edge, 0.8):  # never past |x|, |z| = 0.8 outward: slow down instead
            nxt = pos + 0.2 * (nxt - pos) if np.abs((pos + 0.2 * (nxt - pos))[[0, 2]]).max() <= max(edge, 0.85) else pos
        pos = nxt
        pos[1] = np.clip(pos[1], -0.4, 0.4)
        dyaw = dyaw + rng.normal(0, np.deg2rad(1.0))
        if np.abs(pos[[0, 2]]).max() > 0.4:  # steer toward the centre
            err = (np.arctan2(-pos[0], -pos[2]) - yaw + np.pi) % (2 * np.pi) - np.pi
            dyaw = 0.2 * dyaw + 0.8 * np.clip(err, -lim, lim)
        dyaw = np.clip(dyaw, -lim, lim)
        yaw += dyaw
        pitch = np.clip(0.9 * pitch + rng.normal(0, np.deg2rad(1.5)), -np.deg2rad(10), np.deg2rad(10))
    return out


def render(scene: dict, pose: np.ndarray, k: np.ndarray, h: int, w: int, texture_mix: float = 0.5):
    """(rgb (3, h, w) in [0, 1], depth (h, w)) of one camera-to-world `pose` by ray casting. `texture_mix` blends
    the per-surface checker (0) with the smooth room-wide colour field (1)."""
    v, u = np.mgrid[0:h, 0:w] + 0.5
    dirs_c = np.stack([(u - k[0, 2]) / k[0, 0], (v - k[1, 2]) / k[1, 1], np.ones_like(u)], -1).reshape(-1, 3)
    d = dirs_c @ pose[:3, :3].T  # world ray directions (unnormalised: the ray parameter t is the camera depth z)
    o = pose[:3, 3]
    safe = np.where(np.abs(d) < 1e-9, 1e-9, d)
    # room interior: the exit distance along each axis, the nearest one is the wall hit
    t_axes = (np.sign(safe) * ROOM - o) / safe
    best_t = t_axes.min(1)
    ax = t_axes.argmin(1)
    surf = ax * 2 + (np.take_along_axis(d, ax[:, None], 1)[:, 0] > 0)  # 6 room faces
    normal_id = surf.copy()
    for b, (lo, hi) in enumerate(scene["boxes"]):  # slab method
        t1, t2 = (lo - o) / safe, (hi - o) / safe
        tn, tf = np.minimum(t1, t2), np.maximum(t1, t2)
        t_near, t_far = tn.max(1), tf.min(1)
        hit = (t_near <= t_far) & (t_near > 1e-4) & (t_near < best_t)
        best_t = np.where(hit, t_near, best_t)
        surf = np.where(hit, 6 + b, surf)
        normal_id = np.where(hit, tn.argmax(1) * 2 + (np.take_along_axis(d, tn.argmax(1)[:, None], 1)[:, 0] < 0),
                             normal_id)  # fmt: skip
    nb = len(scene["boxes"])
    for s, (c, r) in enumerate(scene["spheres"]):
        oc = o - c
        a, bq, cq = (d * d).sum(1), 2 * (d @ oc), oc @ oc - r * r
        disc = bq * bq - 4 * a * cq
        t = (-bq - np.sqrt(np.maximum(disc, 0))) / (2 * a)
        hit = (disc > 0) & (t > 1e-4) & (t < best_t)
        best_t = np.where(hit, t, best_t)
        surf = np.where(hit, 6 + nb + s, surf)
        normal_id = np.where(hit, 6, normal_id)
    p = o + best_t[:, None] * d
    chk = np.floor(p * scene["freq"][surf][:, None]).sum(1) % 2  # 3-D checker on the hit point
    shade = np.array([0.8, 0.8, 1.0, 0.55, 0.9, 0.7, 0.85])[normal_id]  # per face orientation, spheres 0.85
    if scene["spheres"]:
        shade = np.where(normal_id == 6, 0.6 + 0.4 * np.abs(np.sin(3 * p[:, 1] + p[:, 0])), shade)
    field = 0.5 + 0.5 * np.sin(p @ scene["field_w"].T + scene["field_phase"])
    base = (1 - texture_mix) * scene["colour"][surf] + texture_mix * field
    rgb = base * (1 - (1 - texture_mix) * scene["contrast"][surf][:, None] * chk[:, None]) * shade[:, None]
    return rgb.T.reshape(3, h, w).clip(0, 1), best_t.reshape(h, w)


def backproject(depth: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Local point map (..., h, w, 3) in the camera frame from depth (..., h, w)."""
    h, w = depth.shape[-2:]
    v, u = np.mgrid[0:h, 0:w] + 0.5
    x = (u - k[0, 2]) / k[0, 0] * depth
    y = (v - k[1, 2]) / k[1, 1] * depth
    return np.stack([x, y, depth], -1)


def make_streams(
    n: int, length: int, seed: int, h: int = 24, w: int = 32, noise: float = 0.02, texture_mix: float = 0.5
) -> dict:
    """`n` streams of `length` frames, each in its own random room. Image noise N(0, noise) is added to the RGB."""
    if n < 1 or length < 1:
        raise ValueError(f"make_streams: n and length must be >= 1, got n={n!r}, length={length!r}")
    if h < 4 or w < 4:
        raise ValueError(f"make_streams: image size must be at least 4x4, got {h}x{w}")
    rng = np.random.default_rng(seed)
    k = intrinsics(h, w)
    imgs = np.zeros((n, length, 3, h, w), np.float32)
    depth = np.zeros((n, length, h, w), np.float32)
    poses = np.zeros((n, length, 4, 4), np.float64)
    for i in range(n):
        scene = make_scene(rng)
        poses[i] = make_trajectory(rng, length)
        for t in range(length):
            imgs[i, t], depth[i, t] = render(scene, poses[i, t], k, h, w, texture_mix)
    imgs = np.clip(imgs + rng.normal(0, noise, imgs.shape), 0, 1).astype(np.float32)
    return {"images": imgs, "depth": depth, "pts_local": backproject(depth, k).astype(np.float32), "poses": poses,
            "K": k}  # fmt: skip
