"""Two small detectors trained here: the guidance detector and a differently built "unseen" one (paper: YOLOv8 as
guidance, Faster R-CNN / RT-DETR as black-box tests).

Both follow the protocol that `PerceptionLoss` uses (any torch module with `decode` and `assigned` can guide a fit):

    raw = det(images)                          # dense outputs, differentiable w.r.t. the images
    dets = det.decode(raw, conf)               # per image {"boxes", "scores", "labels"} after peak picking / NMS
    out = det.assigned(raw, boxes)             # per image (predicted boxes (n, 4), class probabilities (n, C)) at
                                               # the cells responsible for the given boxes (their centre cells)
    box, cls = det.dense_loss(raw, targets)    # the detector's own training loss (used by `train_detector`)

- `CenterNetDetector` (guidance): stride 4, BatchNorm + ReLU, a class heat-map with CenterNet's penalty-reduced
  focal loss (Zhou et al. 2019), box = offset + log-size at the centre cell, box loss 1 − CIoU; 3 × 3 peak picking.
- `GridDetector` (unseen): stride 8, GroupNorm + SiLU, 5 × 5 stem, YOLO-style objectness (BCE) + softmax class
  (cross-entropy) + box (1 − CIoU) at the cell holding the box centre; class-aware NMS.

`train_detector` trains either one on generated frames with early stopping on a validation split.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .boxes import ciou, nms


def _targets(targets, dtype=torch.float32):
    return [(torch.as_tensor(t["boxes"], dtype=dtype).reshape(-1, 4), torch.as_tensor(t["labels"]).long())
            for t in targets]  # fmt: skip


def _cells(boxes: torch.Tensor, stride: int, gh: int, gw: int):
    cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
    return (cy / stride).long().clamp(0, gh - 1), (cx / stride).long().clamp(0, gw - 1)


def _decode_boxes(off, size, gi, gj, stride):
    """Boxes from in-cell offsets (sigmoid logits) and log-sizes at cells (gi, gj)."""
    cx = (gj + torch.sigmoid(off[:, 0])) * stride
    cy = (gi + torch.sigmoid(off[:, 1])) * stride
    w, h = torch.exp(size[:, 0].clamp(max=4)) * stride, torch.exp(size[:, 1].clamp(max=4)) * stride
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)


class CenterNetDetector(nn.Module):
    """Guidance detector: heat-map (C classes) + 2 offset + 2 log-size channels at stride 4."""

    stride = 4

    def __init__(self, n_classes: int = 3, width: int = 32):
        super().__init__()
        c1, c2 = width // 2, width

        def block(i, o, s):
            return [nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

        self.body = nn.Sequential(*block(3, c1, 2), *block(c1, c2, 1), *block(c2, 48, 2), *block(48, 48, 1),
                                  nn.Conv2d(48, 48, 3, 1, 1), nn.ReLU())  # fmt: skip
        self.head = nn.Conv2d(48, n_classes + 4, 1)
        self.n_classes = n_classes
        nn.init.constant_(self.head.bias[:n_classes], -2.19)  # CenterNet prior: p = 0.1

    def forward(self, x):
        return self.head(self.body(x))

    def dense_loss(self, raw, targets):
        nc, (_, _, gh, gw) = self.n_classes, raw.shape
        heat = torch.sigmoid(raw[:, :nc]).clamp(1e-4, 1 - 1e-4)
        goal = torch.zeros_like(heat)
        yy, xx = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
        box_terms, n_pos = [], 0
        for k, (bx, lab) in enumerate(_targets(targets, raw.dtype)):
            if len(bx) == 0:
                continue
            gi, gj = _cells(bx, self.stride, gh, gw)
            sig = ((bx[:, 2:] - bx[:, :2]).min(1).values / self.stride / 3).clamp(min=0.5)
            for i in range(len(bx)):  # Gaussian-splatted targets, peak 1 at the centre cell
                g = torch.exp(-((yy - gi[i]) ** 2 + (xx - gj[i]) ** 2) / (2 * sig[i] ** 2))
                goal[k, lab[i]] = torch.maximum(goal[k, lab[i]], g)
            pred = _decode_boxes(raw[k, nc : nc + 2, gi, gj].T, raw[k, nc + 2 : nc + 4, gi, gj].T, gi, gj, self.stride)
            box_terms.append(1 - ciou(pred, bx))
            n_pos += len(bx)
        pos = goal >= 1 - 1e-6
        focal = torch.where(pos, (1 - heat) ** 2 * torch.log(heat), (1 - goal) ** 4 * heat**2 * torch.log(1 - heat))
        cls = -focal.sum() / max(n_pos, 1)
        box = torch.cat(box_terms).mean() if box_terms else raw.sum() * 0
        return box, cls

    def assigned(self, raw, boxes):
        nc, (_, _, gh, gw), out = self.n_classes, raw.shape, []
        for k, bx in enumerate(boxes):
            gi, gj = _cells(torch.as_tensor(bx, dtype=raw.dtype).reshape(-1, 4), self.stride, gh, gw)
            pred = _decode_boxes(raw[k, nc : nc + 2, gi, gj].T, raw[k, nc + 2 : nc + 4, gi, gj].T, gi, gj, self.stride)
            out.append((pred, torch.sigmoid(raw[k, :nc, gi, gj].T)))
        return out

    @torch.no_grad()
    def decode(self, raw, conf: float = 0.3, max_det: int = 20, iou_thres: float = 0.5):
        nc, out = self.n_classes, []
        heat = torch.sigmoid(raw[:, :nc])
        peak = heat * (heat == F.max_pool2d(heat, 3, 1, 1))
        for k in range(raw.shape[0]):
            c, gi, gj = torch.nonzero(peak[k] >= conf, as_tuple=True)
            s = peak[k, c, gi, gj]
            bx = _decode_boxes(raw[k, nc : nc + 2, gi, gj].T, raw[k, nc + 2 : nc + 4, gi, gj].T, gi, gj, self.stride)
            keep = nms(bx, s, c, iou_thres)[:max_det]
            out.append({"boxes": bx[keep], "scores": s[keep], "labels": c[keep]})
        return out


class GridDetector(nn.Module):
    """Unseen detector: objectness + C class logits + 2 offset + 2 log-size channels at stride 8."""

    stride = 8

    def __init__(self, n_classes: int = 3, width: int = 32):
        super().__init__()

        def block(i, o, k, s):
            return [nn.Conv2d(i, o, k, s, k // 2), nn.GroupNorm(4, o), nn.SiLU()]

        self.body = nn.Sequential(*block(3, 24, 5, 2), *block(24, width, 3, 1), *block(width, 48, 3, 2),
                                  *block(48, 64, 3, 2), *block(64, 64, 3, 1))  # fmt: skip
        self.head = nn.Conv2d(64, 1 + n_classes + 4, 1)
        self.n_classes = n_classes
        nn.init.constant_(self.head.bias[0], -3.0)

    def forward(self, x):
        return self.head(self.body(x))

    def dense_loss(self, raw, targets):
        nc = self.n_classes
        b, _, gh, gw = raw.shape
        obj_goal = torch.zeros(b, gh, gw, dtype=raw.dtype)
        box_terms, cls_terms = [], []
        for k, (bx, lab) in enumerate(_targets(targets, raw.dtype)):
            if len(bx) == 0:
                continue
            gi, gj = _cells(bx, self.stride, gh, gw)
            obj_goal[k, gi, gj] = 1.0
            cls_terms.append(F.cross_entropy(raw[k, 1 : 1 + nc, gi, gj].T, lab, reduction="none"))
            pred = _decode_boxes(
                raw[k, 1 + nc : 3 + nc, gi, gj].T, raw[k, 3 + nc : 5 + nc, gi, gj].T, gi, gj, self.stride
            )
            box_terms.append(1 - ciou(pred, bx))
        n_pos = max(int(obj_goal.sum()), 1)
        obj = F.binary_cross_entropy_with_logits(raw[:, 0], obj_goal, reduction="sum") / n_pos
        cls = obj + (torch.cat(cls_terms).mean() if cls_terms else 0.0)
        box = torch.cat(box_terms).mean() if box_terms else raw.sum() * 0
        return box, cls

    def assigned(self, raw, boxes):
        nc, (_, _, gh, gw), out = self.n_classes, raw.shape, []
        for k, bx in enumerate(boxes):
            gi, gj = _cells(torch.as_tensor(bx, dtype=raw.dtype).reshape(-1, 4), self.stride, gh, gw)
            pred = _decode_boxes(
                raw[k, 1 + nc : 3 + nc, gi, gj].T, raw[k, 3 + nc : 5 + nc, gi, gj].T, gi, gj, self.stride
            )
            prob = torch.sigmoid(raw[k, 0, gi, gj])[:, None] * torch.softmax(raw[k, 1 : 1 + nc, gi, gj].T, 1)
            out.append((pred, prob))
        return out

    @torch.no_grad()
    def decode(self, raw, conf: float = 0.3, max_det: int = 20, iou_thres: float = 0.5):
        nc, out = self.n_classes, []
        prob = torch.sigmoid(raw[:, :1]) * torch.softmax(raw[:, 1 : 1 + nc], 1)
        for k in range(raw.shape[0]):
            s, c = prob[k].max(0)
            gi, gj = torch.nonzero(s >= conf, as_tuple=True)
            bx = _decode_boxes(
                raw[k, 1 + nc : 3 + nc, gi, gj].T, raw[k, 3 + nc : 5 + nc, gi, gj].T, gi, gj, self.stride
            )
            s, c = s[gi, gj], c[gi, gj]
            keep = nms(bx, s, c, iou_thres)[:max_det]
            out.append({"boxes": bx[keep], "scores": s[keep], "labels": c[keep]})
        return out


@torch.no_grad()
def detect(detector: nn.Module, images, conf: float = 0.3, batch: int = 64) -> list[dict]:
    """Detections of a frozen detector (eval mode) on images (n, 3, H, W) in [0, 1]."""
    detector.eval()
    x = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    out = []
    for i in range(0, len(x), batch):
        out += detector.decode(detector(x[i : i + batch]), conf)
    return out


def train_detector(det: nn.Module, train, val, epochs: int = 40, batch: int = 32, lr: float = 3e-3,
                   patience: int = 4, seed: int = 0, log=None) -> dict:  # fmt: skip
    """Adam on box + class loss over (frames, boxes, labels) with early stopping on the validation loss; the best
    weights are restored. Returns {"epochs", "val_loss"}."""
    torch.manual_seed(seed)
    x, bx, lb = train
    xv, bv, lv = val
    x, xv = torch.as_tensor(x), torch.as_tensor(xv)
    tv = [{"boxes": b, "labels": lab} for b, lab in zip(bv, lv)]
    opt = torch.optim.Adam(det.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    best, best_state, bad, ep = float("inf"), None, 0, 0
    rng = np.random.default_rng(seed)
    for ep in range(1, epochs + 1):
        det.train()
        for idx in np.array_split(rng.permutation(len(x)), max(len(x) // batch, 1)):
            box, cls = det.dense_loss(det(x[idx]), [{"boxes": bx[i], "labels": lb[i]} for i in idx])
            opt.zero_grad()
            (box + cls).backward()
            opt.step()
        sched.step()
        det.eval()
        with torch.no_grad():
            vl = sum(float(sum(det.dense_loss(det(xv[i : i + 128]), tv[i : i + 128]))) for i in range(0, len(xv), 128))
        if log:
            log(f"  {type(det).__name__} epoch {ep}: val loss {vl:.4f}")
        if vl < best - 1e-4:
            best, best_state, bad = vl, copy.deepcopy(det.state_dict()), 0
        else:
            bad += 1
            if bad >= patience:
                break
    det.load_state_dict(best_state)
    det.eval()
    return {"epochs": ep, "val_loss": best}
