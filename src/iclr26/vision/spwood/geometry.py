"""Rotated-box geometry in torch: corners, circumscribed boxes, vectorised rotated IoU, rotated NMS, rotated mAP.

A rotated box is `(cx, cy, w, h, theta)`, theta in radians (le90: [-pi/2, pi/2), long side `w`). mmrotate computes
rotated IoU and NMS with CUDA ops (`mmcv.ops.box_iou_rotated`, `nms_rotated`) and torchvision cannot be installed
here, so both are written in torch: the intersection of two convex quadrilaterals is the convex polygon spanned by
(corners of A inside B) + (corners of B inside A) + (edge-edge crossings); its vertices are sorted by angle around their
mean and its area taken by the shoelace formula, all for K pairs at once with masks. `tests/test_spwood.py` checks it
against shapely on random boxes.
"""

from __future__ import annotations

import math

import numpy as np
import torch

PI = math.pi


def norm_angle(t: torch.Tensor) -> torch.Tensor:
    """Wrap angles to the le90 range [-pi/2, pi/2) (period pi: a box is the same after a half turn)."""
    return torch.remainder(t + PI / 2, PI) - PI / 2


def canonical(boxes: torch.Tensor) -> torch.Tensor:
    """The same boxes with long side first (w >= h) and theta in [-pi/2, pi/2)."""
    cx, cy, w, h, t = boxes.unbind(-1)
    swap = h > w
    w2, h2 = torch.where(swap, h, w), torch.where(swap, w, h)
    return torch.stack([cx, cy, w2, h2, norm_angle(torch.where(swap, t + PI / 2, t))], -1)


def corners(boxes: torch.Tensor) -> torch.Tensor:
    """(..., 5) -> (..., 4, 2) corners, counter-clockwise in a y-down frame (positive shoelace area)."""
    c, s = torch.cos(boxes[..., 4]), torch.sin(boxes[..., 4])
    u = torch.stack([c, s], -1) * boxes[..., 2:3] / 2
    v = torch.stack([-s, c], -1) * boxes[..., 3:4] / 2
    ctr = boxes[..., None, :2]
    return ctr + torch.stack([-u - v, u - v, u + v, -u + v], -2)


def hbox_of(boxes: torch.Tensor) -> torch.Tensor:
    """Circumscribed horizontal box (x1, y1, x2, y2) of rotated boxes (differentiable; the HBox-RBox relation)."""
    c, s = torch.cos(boxes[..., 4]).abs(), torch.sin(boxes[..., 4]).abs()
    hw = (boxes[..., 2] * c + boxes[..., 3] * s) / 2
    hh = (boxes[..., 2] * s + boxes[..., 3] * c) / 2
    return torch.stack([boxes[..., 0] - hw, boxes[..., 1] - hh, boxes[..., 0] + hw, boxes[..., 1] + hh], -1)


def _cross(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _inside(pts: torch.Tensor, poly: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """pts (K, P, 2) inside convex counter-clockwise poly (K, 4, 2) -> (K, P) bool."""
    edge = poly.roll(-1, dims=1) - poly  # (K, 4, 2)
    rel = pts[:, :, None, :] - poly[:, None, :, :]  # (K, P, 4, 2)
    return (_cross(edge[:, None], rel) >= -eps).all(-1)


def _intersection_area(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Areas of intersection of K pairs of convex quadrilaterals (K, 4, 2) x (K, 4, 2)."""
    k = a.shape[0]
    a2, b2 = a.roll(-1, 1), b.roll(-1, 1)
    da, db = (a2 - a)[:, :, None], (b2 - b)[:, None]  # (K, 4, 1, 2), (K, 1, 4, 2)
    r = b[:, None] - a[:, :, None]  # (K, 4, 4, 2)
    den = _cross(da, db)
    ok = den.abs() > 1e-9
    den = torch.where(ok, den, torch.ones_like(den))
    ta, tb = _cross(r, db) / den, _cross(r, da) / den
    hit = ok & (ta >= 0) & (ta <= 1) & (tb >= 0) & (tb <= 1)
    cross_pts = (a[:, :, None] + ta[..., None] * da).reshape(k, 16, 2)
    pts = torch.cat([a, b, cross_pts], 1)  # (K, 24, 2)
    valid = torch.cat([_inside(a, b), _inside(b, a), hit.reshape(k, 16)], 1)
    n = valid.sum(1)
    ctr = (pts * valid[..., None]).sum(1) / n.clamp(min=1)[:, None]
    ang = torch.atan2(pts[..., 1] - ctr[:, None, 1], pts[..., 0] - ctr[:, None, 0])
    ang = torch.where(valid, ang, torch.full_like(ang, 10.0))  # invalid points sort last
    order = ang.argsort(1)
    srt = pts.gather(1, order[..., None].expand(-1, -1, 2))
    vs = valid.gather(1, order)
    srt = torch.where(vs[..., None], srt, srt[:, :1].expand(-1, 24, -1))  # pad with the first vertex: zero area
    area = 0.5 * _cross(srt, srt.roll(-1, 1)).sum(1)
    return torch.where(n >= 3, area.abs(), torch.zeros_like(area))


def as_rboxes(boxes, what: str = "boxes") -> torch.Tensor:
    """``boxes`` as an (N, 5) tensor of rotated boxes (cx, cy, w, h, θ); any other last axis is an error (never a
    silent re-cut of (N, 4) boxes into 5 columns). An empty input gives (0, 5)."""
    b = torch.as_tensor(boxes)
    if b.numel() == 0:
        return b.reshape(0, 5)
    if b.ndim < 1 or b.shape[-1] != 5:
        raise ValueError(f"{what} must be rotated boxes of shape (N, 5) = (cx, cy, w, h, θ), got shape "
                         f"{tuple(b.shape)}; convert horizontal (N, 4) boxes with an angle column first")  # fmt: skip
    return b.reshape(-1, 5)


def rotated_iou(boxes1: torch.Tensor, boxes2: torch.Tensor, aligned: bool = False) -> torch.Tensor:
    """IoU of rotated boxes: (N, 5) x (M, 5) -> (N, M), or (N, 5) x (N, 5) -> (N,) with aligned=True."""
    boxes1, boxes2 = as_rboxes(boxes1, "boxes1").double(), as_rboxes(boxes2, "boxes2").double()
    if not aligned:
        n, m = len(boxes1), len(boxes2)
        if n == 0 or m == 0:
            return torch.zeros(n, m, dtype=torch.float32)
        out = rotated_iou(boxes1[:, None].expand(n, m, 5), boxes2[None].expand(n, m, 5), aligned=True)
        return out.reshape(n, m)
    if boxes1.shape != boxes2.shape:
        raise ValueError(f"aligned rotated_iou needs equal shapes, got {tuple(boxes1.shape)} and {tuple(boxes2.shape)}")
    if len(boxes1) == 0:
        return torch.zeros(0)
    inter = _intersection_area(corners(boxes1), corners(boxes2))
    union = boxes1[:, 2] * boxes1[:, 3] + boxes2[:, 2] * boxes2[:, 3] - inter
    return (inter / union.clamp(min=1e-9)).float()


def rotated_nms(boxes: torch.Tensor, scores: torch.Tensor, iou_thr: float) -> torch.Tensor:
    """Greedy non-maximum suppression with rotated IoU; returns kept indices in descending score order."""
    if len(boxes) == 0:
        return torch.zeros(0, dtype=torch.long)
    order = scores.argsort(descending=True)
    iou = rotated_iou(boxes[order], boxes[order])
    keep = torch.ones(len(order), dtype=torch.bool)
    for i in range(len(order)):
        if keep[i]:
            sup = iou[i] > iou_thr
            sup[: i + 1] = False
            keep &= ~sup
    return order[keep]


def average_precision(recall: np.ndarray, precision: np.ndarray) -> float:
    """VOC area under the precision-recall curve (all points, precision made monotone)."""
    r = np.concatenate([[0.0], recall, [1.0]])
    p = np.concatenate([[0.0], precision, [0.0]])
    p = np.maximum.accumulate(p[::-1])[::-1]
    i = np.nonzero(r[1:] != r[:-1])[0]
    return float(((r[i + 1] - r[i]) * p[i + 1]).sum())


def rotated_map(dets: list, gts: list, n_classes: int, iou_thr: float = 0.5) -> tuple[float, list[float]]:
    """Rotated mAP@iou_thr (VOC style, as DOTA's evaluation): dets[i] = (boxes (k, 5), scores (k,), labels (k,)),
    gts[i] = (boxes (g, 5), labels (g,)). Returns (mean AP over classes with ground truth, per-class APs)."""
    if len(dets) != len(gts):
        raise ValueError(f"rotated_map: {len(dets)} detection lists for {len(gts)} ground-truth images; pass one "
                         "(boxes, scores, labels) per image, an empty one for an image without detections")  # fmt: skip
    dets = [(as_rboxes(db, f"dets[{i}] boxes"), ds, dl) for i, (db, ds, dl) in enumerate(dets)]
    gts = [(as_rboxes(gb, f"gts[{i}] boxes"), gl) for i, (gb, gl) in enumerate(gts)]
    aps = []
    for c in range(n_classes):
        recs, n_gt = [], 0
        for (db, ds, dl), (gb, gl) in zip(dets, gts):
            db, ds, gb = torch.as_tensor(db), torch.as_tensor(ds), torch.as_tensor(gb)
            dm, gm = torch.as_tensor(dl) == c, torch.as_tensor(gl) == c
            g = gb[gm]
            n_gt += len(g)
            d, s = db[dm], ds[dm]
            if len(d) == 0:
                continue
            order = s.argsort(descending=True)
            d, s = d[order], s[order]
            iou = rotated_iou(d, g) if len(g) else torch.zeros(len(d), 0)
            taken = torch.zeros(len(g), dtype=torch.bool)
            for j in range(len(d)):
                tp = False
                if len(g):
                    best = int(iou[j].argmax())
                    if iou[j, best] >= iou_thr and not taken[best]:
                        taken[best], tp = True, True
                recs.append((float(s[j]), tp))
        if n_gt == 0:
            aps.append(float("nan"))
            continue
        if not recs:
            aps.append(0.0)
            continue
        recs.sort(key=lambda x: -x[0])
        tp = np.cumsum([t for _, t in recs])
        fp = np.cumsum([not t for _, t in recs])
        aps.append(average_precision(tp / n_gt, tp / np.maximum(tp + fp, 1e-9)))
    valid = [a for a in aps if not math.isnan(a)]
    return (float(np.mean(valid)) if valid else 0.0), aps
