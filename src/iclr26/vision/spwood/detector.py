"""A tiny rotated FCOS: CNN backbone, two-level FPN, shared head with class, centerness, (l, t, r, b) and PSC angle.

Rotated FCOS (mmrotate `RotatedFCOSHead` with `separate_angle=True`, as in H2RBox-v2 / PWOOD / SPWOOD): every feature
location predicts class scores, a centerness, the distances (l, t, r, b) from the location to the four sides of the box
*in the box's own frame*, and the box angle. The angle is coded with PSC (phase-shifting coder, SPWOOD's `PSCCoder`):
code_k = cos(2 theta + 2 pi k / N), k = 0..N-1, decoded by theta = atan2(-sum_k c_k sin(2 pi k/N), sum_k c_k cos(2 pi
k/N)) / 2, which is continuous over theta's period pi. Our scale: a 4-conv backbone (strides 4 and 8 feed the FPN),
GroupNorm everywhere (batch statistics would couple the teacher and the student), ~60k parameters, trained from scratch.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .geometry import canonical

STRIDES = (4, 8)


def psc_encode(theta: torch.Tensor, n_phase: int = 3) -> torch.Tensor:
    """PSC code of angles (period pi): (...,) -> (..., n_phase)."""
    k = torch.arange(n_phase, dtype=theta.dtype, device=theta.device)
    return torch.cos(2 * theta[..., None] + 2 * math.pi * k / n_phase)


def psc_decode(code: torch.Tensor) -> torch.Tensor:
    """Angle in [-pi/2, pi/2) from PSC codes (..., n_phase); differentiable (atan2)."""
    n = code.shape[-1]
    k = torch.arange(n, dtype=code.dtype, device=code.device)
    ph = 2 * math.pi * k / n
    s = -(code * torch.sin(ph)).sum(-1)
    c = (code * torch.cos(ph)).sum(-1)
    return torch.atan2(s, c) / 2


def _block(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.GroupNorm(8, cout), nn.ReLU(inplace=True))


class TinyRotatedFCOS(nn.Module):
    """Rotated FCOS for small images; `forward(images)` -> dict of flattened per-location outputs (see `outputs`)."""

    def __init__(self, n_classes: int, width: int = 32, n_phase: int = 3):
        super().__init__()
        if n_classes < 1 or width < 8 or width % 8:
            raise ValueError(f"need n_classes >= 1 and width a multiple of 8 >= 8, got {n_classes!r}, {width!r}")
        self.n_classes, self.n_phase = n_classes, n_phase
        self.stem = nn.Sequential(_block(3, 16, 2), _block(16, width, 2))  # stride 4
        self.c3 = _block(width, 2 * width, 2)  # stride 8
        self.lat4, self.lat8 = nn.Conv2d(width, width, 1), nn.Conv2d(2 * width, width, 1)
        self.tower = nn.Sequential(_block(width, width, 1), _block(width, width, 1))
        self.cls = nn.Conv2d(width, n_classes, 3, padding=1)
        self.reg = nn.Conv2d(width, 4, 3, padding=1)
        self.ctr = nn.Conv2d(width, 1, 3, padding=1)
        self.ang = nn.Conv2d(width, n_phase, 3, padding=1)
        self.scales = nn.Parameter(torch.ones(len(STRIDES)))
        nn.init.constant_(self.cls.bias, -math.log(99.0))  # prior 0.01 (FCOS / RetinaNet)
        self._grid = {}

    def points(self, size: int):
        """Location centres (N, 2), their strides (N,) and FPN level ids (N,) for a square image of `size`."""
        if size not in self._grid:
            pts, strd, lvl = [], [], []
            for i, s in enumerate(STRIDES):
                n = size // s
                ys, xs = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
                pts.append(torch.stack([xs, ys], -1).reshape(-1, 2).float() * s + s / 2)
                strd.append(torch.full((n * n,), float(s)))
                lvl.append(torch.full((n * n,), i))
            self._grid[size] = (torch.cat(pts), torch.cat(strd), torch.cat(lvl))
        return self._grid[size]

    def forward(self, images: torch.Tensor) -> dict:
        c4 = self.stem(images)
        c8 = self.c3(c4)
        p8 = self.lat8(c8)
        p4 = self.lat4(c4) + F.interpolate(p8, scale_factor=2, mode="nearest")
        out = {"cls": [], "reg": [], "ctr": [], "ang": []}
        for i, p in enumerate((p4, p8)):
            f = self.tower(p)
            out["cls"].append(self.cls(f))
            out["reg"].append(self.reg(f) * self.scales[i])  # log-distances in units of the stride
            out["ctr"].append(self.ctr(f))
            out["ang"].append(self.ang(f))
        maps = {k: v for k, v in out.items()}
        flat = {k: torch.cat([m.flatten(2) for m in v], 2).transpose(1, 2) for k, v in out.items()}
        flat["ctr"] = flat["ctr"][..., 0]
        flat["maps"] = maps
        return flat


def decode(points, strides, reg, ang) -> torch.Tensor:
    """Rotated boxes (..., 5) from locations, log-distances (l, t, r, b) / stride and PSC codes."""
    d = torch.exp(reg.clamp(max=6.0)) * strides[..., None]
    theta = psc_decode(ang)
    ox, oy = (d[..., 2] - d[..., 0]) / 2, (d[..., 3] - d[..., 1]) / 2  # centre offset in the box frame
    c, s = torch.cos(theta), torch.sin(theta)
    cx = points[..., 0] + c * ox - s * oy
    cy = points[..., 1] + s * ox + c * oy
    return torch.stack([cx, cy, d[..., 0] + d[..., 2], d[..., 1] + d[..., 3], theta], -1)


@torch.no_grad()
def predict(model, images, score_thr=0.05, iou_thr=0.1, topk=100, batch=64):
    """Detections per image: list of (boxes (k, 5), scores (k,), labels (k,)); class-wise rotated NMS."""
    from .geometry import rotated_nms

    model.eval()
    pts, strd, _ = model.points(images.shape[-1])
    dets = []
    for i in range(0, len(images), batch):
        o = model(images[i : i + batch])
        scores = torch.sigmoid(o["cls"]) * torch.sigmoid(o["ctr"])[..., None]  # FCOS: class score x centerness
        boxes = canonical(decode(pts, strd, o["reg"], o["ang"]))
        for b in range(len(scores)):
            sc, idx = scores[b].flatten().topk(min(topk, scores[b].numel()))
            keep = sc > score_thr
            sc, idx = sc[keep], idx[keep]
            loc, lab = idx // model.n_classes, idx % model.n_classes
            bx = boxes[b, loc]
            kept = [torch.nonzero(lab == c)[:, 0] for c in range(model.n_classes)]
            kept = torch.cat([k[rotated_nms(bx[k], sc[k], iou_thr)] for k in kept if len(k)] or [torch.zeros(0).long()])
            dets.append((bx[kept], sc[kept], lab[kept]))
    return dets
