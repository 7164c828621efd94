"""Labelled instances of RBox / HBox / point type, their FCOS-style assignment to feature locations, and flips.

A labelled image carries a dict of instance tensors: `cls` (k,), `type` (k,) 0 RBox / 1 HBox / 2 point, `rbox`
(k, 5) used only where type == 0, `hbox` (k, 4) (x1, y1, x2, y2) used only where type == 1, `pt` (k, 2) the point
(centre of the box for RBox/HBox), `cov` (k, 2, 2) the watershed-segment covariance for points, `size` (k,) the size
that picks the FPN level, sqrt(w h) (RBox: of the box; HBox: of the horizontal box; point: of the segment's
uniform-box equivalent), so that thin objects keep several positive locations on the finer level.
"""

from __future__ import annotations

import numpy as np
import torch

from .detector import STRIDES

LEVEL_SIZE = 10.0  # objects with sqrt(w h) <= this go to stride 4, larger ones to stride 8 (ours, for 64 px images)


def make_instances(boxes, labels, types, segs=None) -> dict:
    """Instance dict of one image from exact rotated boxes and a label type per instance (weak labels derived)."""
    from .geometry import as_rboxes, hbox_of

    b = as_rboxes(torch.as_tensor(np.asarray(boxes, np.float32)))
    t = torch.as_tensor(np.asarray(types, np.int64)).reshape(-1)
    hb = hbox_of(b)
    cov = torch.eye(2).repeat(len(b), 1, 1)
    size = torch.sqrt(b[:, 2] * b[:, 3])
    hsize = torch.sqrt((hb[:, 2] - hb[:, 0]) * (hb[:, 3] - hb[:, 1]))
    size = torch.where(t == 1, hsize, size)
    if segs is not None:
        for k, (_mu, c) in enumerate(segs):
            if t[k] == 2:
                cov[k] = torch.as_tensor(c, dtype=torch.float32)
                size[k] = float(np.sqrt(12 * np.sqrt(max(np.linalg.det(c), 1e-6))))  # sqrt(w h) of a uniform box
    return {
        "cls": torch.as_tensor(np.asarray(labels, np.int64)).reshape(-1),
        "type": t,
        "rbox": torch.where((t == 0)[:, None], b, torch.zeros_like(b)),  # no exact box leaks into weak labels
        "hbox": torch.where((t == 1)[:, None], hb, torch.zeros_like(hb)),
        "pt": b[:, :2].clone(),
        "cov": cov,
        "size": size,
    }


def flip_instances(inst: dict, size: int, horizontal: bool) -> dict:
    """Instances of the image flipped left-right (horizontal) or up-down."""
    out = {k: v.clone() for k, v in inst.items()}
    ax = 0 if horizontal else 1
    out["rbox"][:, ax] = torch.where(inst["type"] == 0, size - inst["rbox"][:, ax], inst["rbox"][:, ax])
    out["rbox"][:, 4] = -inst["rbox"][:, 4]
    out["pt"][:, ax] = size - inst["pt"][:, ax]
    hb = inst["hbox"]
    lo, hi = (0, 2) if horizontal else (1, 3)
    is_h = inst["type"] == 1
    out["hbox"][:, lo] = torch.where(is_h, size - hb[:, hi], hb[:, lo])
    out["hbox"][:, hi] = torch.where(is_h, size - hb[:, lo], hb[:, hi])
    out["cov"][:, 0, 1] = -inst["cov"][:, 0, 1]
    out["cov"][:, 1, 0] = -inst["cov"][:, 1, 0]
    return out


def instance_frame(inst: dict):
    """Centre (k, 2), frame angle (k,) and half-extents (k, 2) used for assignment, per label type."""
    t = inst["type"]
    hb = inst["hbox"]
    ctr = torch.where((t == 0)[:, None], inst["rbox"][:, :2], inst["pt"])
    ctr = torch.where((t == 1)[:, None], (hb[:, :2] + hb[:, 2:]) / 2, ctr)
    ang = torch.where(t == 0, inst["rbox"][:, 4], torch.zeros_like(inst["rbox"][:, 4]))
    half = torch.where((t == 0)[:, None], inst["rbox"][:, 2:4] / 2, (hb[:, 2:] - hb[:, :2]) / 2)
    half = torch.where((t == 2)[:, None], torch.full_like(half, 1e6), half)
    return ctr, ang, half


def cat_instances(insts: list) -> tuple[dict, torch.Tensor]:
    """Concatenate the instance dicts of a batch; returns (flat dict, image index per instance)."""
    flat = {key: torch.cat([ins[key] for ins in insts]) for key in insts[0]}
    img = torch.cat([torch.full((len(ins["cls"]),), b, dtype=torch.long) for b, ins in enumerate(insts)])
    return flat, img


def assign(flat: dict, img: torch.Tensor, n_images: int, points, strides, levels, radius=1.5, point_radius=1.0):
    """FCOS assignment with centre sampling for a batch: a location is positive for an instance if it lies on the
    instance's level, inside its box (RBox frame / HBox) and within radius x stride of its centre (point labels:
    within point_radius x stride of the point); the location nearest the centre is always positive. Ties go to the
    smallest instance. flat/img: `cat_instances` output. Returns the instance index (into flat) per (image,
    location), (B, N), -1 = background."""
    n = len(points)
    k = len(flat["cls"])
    if k == 0:
        return torch.full((n_images, n), -1, dtype=torch.long)
    ctr, ang, half = instance_frame(flat)
    lvl = (flat["size"] > LEVEL_SIZE).long()
    d = points[None] - ctr[:, None]  # (k, N, 2)
    c, s = torch.cos(ang)[:, None], torch.sin(ang)[:, None]
    xl, yl = d[..., 0] * c + d[..., 1] * s, -d[..., 0] * s + d[..., 1] * c
    r = torch.where(flat["type"] == 2, point_radius, radius)[:, None] * strides[None]
    inside = (xl.abs() <= half[:, None, 0]) & (yl.abs() <= half[:, None, 1])
    pos = inside & (xl.abs() <= r) & (yl.abs() <= r) & (levels[None] == lvl[:, None])
    dist = (d**2).sum(-1) + (levels[None] != lvl[:, None]) * 1e9
    pos[torch.arange(k), dist.argmin(1)] = True
    area = torch.where(flat["type"] == 2, flat["size"] ** 2, 4 * half.prod(1))
    cost = torch.where(pos, area[:, None].expand(k, n), torch.full((k, n), float("inf")))
    big = torch.full((n_images, k, n), float("inf"))
    big[img, torch.arange(k)] = cost
    best = big.argmin(1)
    return torch.where(torch.isfinite(big.min(1).values), best, torch.full_like(best, -1))


__all__ = ["STRIDES", "LEVEL_SIZE", "make_instances", "flip_instances", "cat_instances", "assign", "instance_frame"]
