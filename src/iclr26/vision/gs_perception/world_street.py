"""Synthetic street frames with small objects and exact boxes, deterministic from a seed (gs-perception testbed).

A frame is a busy static street: a sky gradient, a row of buildings with window grids, a road band with lane dashes,
a sinusoidal texture and pixel noise. On it stand 1-6 small objects of three classes, drawn so that their box is
exact (the tight extent of every drawn pixel):

- car: a filled rectangle (10-16 × 6-9 px) with a dark window band and two dark wheels, on the road;
- pedestrian: a tall thin ellipse body (4-6 × 9-14 px) with a differently coloured head, on the pavement;
- sign: a disc (6-8 px) on a grey pole (4-6 px), anywhere below the sky.

Objects keep at least ``min_gap`` px between centres (so a stride-8 detector can resolve them). A *sequence* is a short
clip over a static background: cars drive along the road, pedestrians walk slowly, signs stay put (the toy version of
the paper's static/dynamic street scenes).

    from iclr26.vision.gs_perception.world_street import CLASSES, make_frames, make_sequence
    seq = make_sequence(seed=0, n_frames=3)        # seq.frames (F, 3, H, W) float32 in [0, 1]; seq.boxes[f] (n, 4)
    x, boxes, labels = make_frames(seed=1, n=64)   # independent frames for detector training
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLASSES = ("car", "pedestrian", "sign")
H, W = 64, 96  # default frame size


@dataclass
class Sequence:
    frames: np.ndarray  # (F, 3, H, W) float32 in [0, 1]
    boxes: list  # per frame: (n, 4) float32 boxes x1, y1, x2, y2 in pixels (x2, y2 exclusive)
    labels: list  # per frame: (n,) int64 class indices into CLASSES


def background(rng: np.random.Generator, h: int = H, w: int = W) -> np.ndarray:
    """A static street background (3, h, w): sky, buildings with windows, pavement, road with lane dashes, texture."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((3, h, w), np.float32)
    horizon, road_top = int(h * 0.35), int(h * 0.62)
    sky = np.array([0.45, 0.6, 0.85], np.float32) + rng.uniform(-0.1, 0.1, 3).astype(np.float32)
    img[:, :horizon] = sky[:, None, None] * (0.8 + 0.4 * yy[:horizon] / horizon)[None]
    x = 0
    while x < w:  # buildings up to the pavement line
        bw, top = int(rng.integers(10, 24)), int(rng.integers(2, horizon))
        col = rng.uniform(0.25, 0.75, 3).astype(np.float32)
        img[:, top : road_top - 6, x : x + bw] = col[:, None, None]
        win = rng.uniform(0.05, 0.95, 3).astype(np.float32)
        for wy in range(top + 2, road_top - 8, 4):
            for wx in range(x + 2, min(x + bw - 2, w), 4):
                img[:, wy : wy + 2, wx : wx + 2] = win[:, None, None]
        x += bw
    img[:, road_top - 6 : road_top] = rng.uniform(0.5, 0.7) * np.array([1, 1, 0.95], np.float32)[:, None, None]
    img[:, road_top:] = rng.uniform(0.2, 0.35)
    lane = (h + road_top) // 2
    for dx in range(int(rng.integers(0, 8)), w, 12):
        img[:, lane : lane + 1, dx : dx + 6] = 0.9
    f1, f2, ph = rng.uniform(0.1, 0.5), rng.uniform(0.1, 0.5), rng.uniform(0, 6.28, 2)
    img += 0.06 * (np.sin(f1 * xx + ph[0]) * np.cos(f2 * yy + ph[1]))[None]
    img += rng.normal(0, 0.03, img.shape).astype(np.float32)
    return np.clip(img, 0, 1)


def _colour(rng) -> np.ndarray:
    c = rng.uniform(0.0, 1.0, 3)
    c[rng.integers(3)] = rng.uniform(0.8, 1.0)  # one saturated channel: objects stand out from the grey street
    return c.astype(np.float32)


def object_size(rng, cls: int) -> tuple[int, int, dict]:
    """(width, height, style) of one object of class ``cls``."""
    if cls == 0:
        return int(rng.integers(10, 17)), int(rng.integers(6, 10)), {"body": _colour(rng)}
    if cls == 1:
        return int(rng.integers(4, 7)), int(rng.integers(9, 15)), {"body": _colour(rng), "head": _colour(rng)}
    d = int(rng.integers(6, 9))
    return d, d + int(rng.integers(4, 7)), {"body": _colour(rng), "disc": d}


def draw(img: np.ndarray, cls: int, x1: int, y1: int, w: int, h: int, style: dict) -> None:
    """Draw one object in place; every pixel of the box's outer rows and columns is touched by the drawing."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    patch = img[:, y1 : y1 + h, x1 : x1 + w]
    if cls == 0:  # car body, window band, wheels
        patch[:] = style["body"][:, None, None]
        patch[:, 1 : max(2, h // 3), 2 : w - 2] = 0.12
        patch[:, h - 2 :, 1:4] = 0.05
        patch[:, h - 2 :, w - 4 : w - 1] = 0.05
    elif cls == 1:  # ellipse body inscribed in the box below a head
        head = max(2, w // 2 + 1)
        inside = ((xx - (w - 1) / 2) / (w / 2)) ** 2 + ((yy - (h - 1) / 2) / (h / 2)) ** 2 <= 1.0
        inside[[0, -1], w // 2] = True  # the box is tight: top and bottom pixels drawn
        inside[h // 2, [0, -1]] = True
        patch[:, inside] = style["body"][:, None]
        patch[:, :head, max(0, w // 2 - 1) : w // 2 + 1] = style["head"][:, None, None]
    else:  # disc on a pole
        d = style["disc"]
        disc = ((xx[:d] - (d - 1) / 2) ** 2 + (yy[:d] - (d - 1) / 2) ** 2) <= (d / 2) ** 2
        disc[[0, -1], d // 2] = True
        disc[d // 2, [0, -1]] = True
        patch[:, :d][:, disc] = style["body"][:, None]
        patch[:, d:, d // 2 - 1 : d // 2 + 1] = 0.55


def _place(rng, h, w, cls, bw, bh, taken, min_gap):
    road_top = int(h * 0.62)
    for _ in range(100):
        if cls == 0:
            y1 = int(rng.integers(road_top - bh // 2, h - bh))
        elif cls == 1:
            y1 = int(rng.integers(road_top - bh - 2, road_top - bh // 2 + 1))
        else:
            y1 = int(rng.integers(int(h * 0.3), h - bh))
        x1 = int(rng.integers(0, w - bw))
        c = np.array([x1 + bw / 2, y1 + bh / 2])
        if all(np.abs(c - t).max() >= min_gap for t in taken):
            return x1, y1
    return None


def _layout(rng, h, w, n_obj, min_gap):
    objs, taken = [], []
    for _ in range(n_obj):
        cls = int(rng.integers(len(CLASSES)))
        bw, bh, style = object_size(rng, cls)
        pos = _place(rng, h, w, cls, bw, bh, taken, min_gap)
        if pos is not None:
            taken.append(np.array([pos[0] + bw / 2, pos[1] + bh / 2]))
            objs.append([cls, pos[0], pos[1], bw, bh, style])
    return objs


def _render(bg, objs):
    img = bg.copy()
    for cls, x1, y1, bw, bh, style in sorted(objs, key=lambda o: o[2] + o[4]):  # farther (higher) objects first
        draw(img, cls, int(x1), int(y1), bw, bh, style)
    boxes = np.array([[o[1], o[2], o[1] + o[3], o[2] + o[4]] for o in objs], np.float32).reshape(-1, 4)
    return img, boxes, np.array([o[0] for o in objs], np.int64)


def make_frames(seed: int, n: int, h: int = H, w: int = W, n_obj: tuple[int, int] = (1, 6), min_gap: int = 10):
    """``n`` independent frames (new background each): (n, 3, h, w) float32, list of boxes, list of labels."""
    rng = np.random.default_rng(seed)
    xs, bs, ls = [], [], []
    for _ in range(n):
        objs = _layout(rng, h, w, int(rng.integers(n_obj[0], n_obj[1] + 1)), min_gap)
        img, b, lab = _render(background(rng, h, w), objs)
        xs.append(img), bs.append(b), ls.append(lab)
    return np.stack(xs), bs, ls


def make_sequence(seed: int, n_frames: int = 3, h: int = H, w: int = W, n_obj: tuple[int, int] = (3, 6),
                  min_gap: int = 10, speed: float = 3.0) -> Sequence:  # fmt: skip
    """A clip over one static background: cars move ``speed`` px per frame along x, pedestrians a third of it, signs
    stay. Moves that would leave the frame or collide are reversed; positions are integers (exact boxes)."""
    if n_frames < 1:
        raise ValueError(f"n_frames must be >= 1, got {n_frames!r}")
    rng = np.random.default_rng(seed)
    bg = background(rng, h, w)
    objs = _layout(rng, h, w, int(rng.integers(n_obj[0], n_obj[1] + 1)), min_gap)
    vel = [speed * rng.choice([-1, 1]) * (1.0 if o[0] == 0 else 1 / 3 if o[0] == 1 else 0.0) for o in objs]
    frames, boxes, labels = [], [], []
    pos = [float(o[1]) for o in objs]
    for _ in range(n_frames):
        cur = [[o[0], int(round(p)), o[2], o[3], o[4], o[5]] for o, p in zip(objs, pos)]
        img, b, lab = _render(bg, cur)
        frames.append(img), boxes.append(b), labels.append(lab)
        for i, o in enumerate(objs):
            nxt = pos[i] + vel[i]
            others = [
                np.array([pos[j] + objs[j][3] / 2, objs[j][2] + objs[j][4] / 2]) for j in range(len(objs)) if j != i
            ]
            c = np.array([nxt + o[3] / 2, o[2] + o[4] / 2])
            if nxt < 0 or nxt > w - o[3] or any(np.abs(c - t).max() < min_gap for t in others):
                vel[i] = -vel[i]
            else:
                pos[i] = nxt
    return Sequence(np.stack(frames), boxes, labels)
