"""Box utilities in torch (torchvision cannot be installed here) and the paper's perception-stability metrics.

Boxes are (x1, y1, x2, y2) in pixels. `ciou` is the Complete IoU of Zheng et al. (2020) used by the paper's L_box
(Eq. 5): CIoU = IoU − ρ²/c² − a·v with v = 4/π² (atan(w_g/h_g) − atan(w_b/h_b))² and a = v / ((1 − IoU) + v),
a treated as a constant. `nms` is greedy class-aware non-maximum suppression (vectorised IoU, a short loop).

Perception stability (paper §4, "detections on the original frame act as ground truth"):
`consistency(ref, rec)` → mAP@[.5:.95] (COCO 101-point interpolation, class-aware) of the detections on R(x)
against those on x, the mean IoU of each reference detection with its Hungarian-matched (class-aware) detection on
R(x) (0 when unmatched), and the number of misses (reference detections without a same-class match at IoU ≥ 0.5).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pairwise IoU (n, m) of boxes a (n, 4) and b (m, 4)."""
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area_a[:, None] + area_b[None] - inter).clamp(min=1e-9)


def ciou(b: torch.Tensor, g: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """Element-wise Complete IoU of boxes b (n, 4) and g (n, 4) (paper Eq. 5, after Zheng et al. 2020)."""
    wb, hb = (b[:, 2] - b[:, 0]).clamp(min=eps), (b[:, 3] - b[:, 1]).clamp(min=eps)
    wg, hg = (g[:, 2] - g[:, 0]).clamp(min=eps), (g[:, 3] - g[:, 1]).clamp(min=eps)
    inter = ((torch.minimum(b[:, 2], g[:, 2]) - torch.maximum(b[:, 0], g[:, 0])).clamp(min=0)
             * (torch.minimum(b[:, 3], g[:, 3]) - torch.maximum(b[:, 1], g[:, 1])).clamp(min=0))  # fmt: skip
    iou = inter / (wb * hb + wg * hg - inter + eps)
    cw = torch.maximum(b[:, 2], g[:, 2]) - torch.minimum(b[:, 0], g[:, 0])
    ch = torch.maximum(b[:, 3], g[:, 3]) - torch.minimum(b[:, 1], g[:, 1])
    rho2 = ((b[:, 0] + b[:, 2] - g[:, 0] - g[:, 2]) ** 2 + (b[:, 1] + b[:, 3] - g[:, 1] - g[:, 3]) ** 2) / 4
    v = (4 / math.pi**2) * (torch.atan(wg / hg) - torch.atan(wb / hb)) ** 2
    with torch.no_grad():
        a = v / ((1 - iou) + v + eps)
    return iou - rho2 / (cw**2 + ch**2 + eps) - a * v


def nms(boxes: torch.Tensor, scores: torch.Tensor, labels: torch.Tensor, iou_thres: float) -> torch.Tensor:
    """Indices kept by greedy class-aware NMS, in decreasing score order."""
    order = torch.argsort(scores, descending=True)
    iou = box_iou(boxes[order], boxes[order])
    same = labels[order][:, None] == labels[order][None, :]
    keep = torch.ones(len(order), dtype=torch.bool)
    for i in range(len(order)):
        if keep[i]:
            keep[i + 1 :] &= ~((iou[i, i + 1 :] > iou_thres) & same[i, i + 1 :])
    return order[keep]


def _ap_101(tp: np.ndarray, scores: np.ndarray, n_gt: int) -> float:
    """COCO 101-point interpolated AP from detections' TP flags and scores against n_gt ground-truth boxes."""
    if n_gt == 0:
        return float("nan")
    if len(tp) == 0:
        return 0.0
    o = np.argsort(-scores, kind="stable")
    ctp, cfp = np.cumsum(tp[o]), np.cumsum(~tp[o])
    rec, prec = ctp / n_gt, ctp / np.maximum(ctp + cfp, 1e-9)
    prec = np.maximum.accumulate(prec[::-1])[::-1]  # precision envelope
    idx = np.searchsorted(rec, np.linspace(0, 1, 101), side="left")
    return float(np.mean([prec[i] if i < len(prec) else 0.0 for i in idx]))


COCO_IOUS = tuple(0.5 + 0.05 * i for i in range(10))  # 0.50, 0.55, ..., 0.95


def mean_ap(ref: list[dict], rec: list[dict], thresholds=COCO_IOUS) -> float:
    """mAP@[.5:.95] of detections ``rec`` (per image: boxes, scores, labels) against ``ref`` taken as ground truth
    (scores ignored), COCO-style: greedy matching by decreasing score, per class, mean over classes and thresholds.
    Classes absent from every reference image are skipped; NaN if ``ref`` holds no box at all."""
    classes = sorted({int(c) for r in ref for c in r["labels"]})
    aps = []
    for t in thresholds:
        for c in classes:
            tps, scs, n_gt = [], [], 0
            for r, d in zip(ref, rec):
                g = r["boxes"][r["labels"] == c]
                m = d["labels"] == c
                b, s = d["boxes"][m], d["scores"][m]
                n_gt += len(g)
                if len(b) == 0:
                    continue
                iou = box_iou(b, g).numpy() if len(g) else np.zeros((len(b), 0))
                used = np.zeros(len(g), bool)
                for i in np.argsort(-s.numpy(), kind="stable"):
                    j = np.argmax(np.where(used, -1, iou[i])) if len(g) else -1
                    hit = j >= 0 and not used[j] and iou[i, j] >= t
                    if hit:
                        used[j] = True
                    tps.append(hit), scs.append(float(s[i]))
            aps.append(_ap_101(np.array(tps, bool), np.array(scs), n_gt))
    return float(np.nanmean(aps)) if aps else float("nan")


def match(ref: dict, rec: dict) -> np.ndarray:
    """IoU of each reference detection with its Hungarian-matched same-class detection on R(x) (0 if unmatched)."""
    g, b = ref["boxes"], rec["boxes"]
    out = np.zeros(len(g))
    if len(g) == 0 or len(b) == 0:
        return out
    iou = box_iou(g, b).numpy() * (ref["labels"][:, None] == rec["labels"][None, :]).numpy()
    r, c = linear_sum_assignment(-iou)
    out[r] = iou[r, c]
    return out


def consistency(ref: list[dict], rec: list[dict], miss_iou: float = 0.5) -> dict[str, float]:
    """Perception stability of one detector: mAP (reference detections as GT), mean IoU, misses per frame."""
    if len(ref) != len(rec):
        raise ValueError(f"consistency: {len(ref)} reference frames but {len(rec)} reconstructed frames")
    ious = [match(r, d) for r, d in zip(ref, rec)]
    flat = np.concatenate(ious) if ious else np.zeros(0)
    if not len(flat):
        warnings.warn(
            f"consistency: the detector found no object on any of the {len(ref)} original frames, so mAP and mean IoU "
            "are undefined (NaN); an untrained detector or a confidence threshold above its scores does this",
            stacklevel=2,
        )
    return {
        "map": mean_ap(ref, rec),
        "iou": float(flat.mean()) if len(flat) else float("nan"),
        "miss": float(np.mean([(i < miss_iou).sum() for i in ious])),
    }


def recall(dets: list[dict], boxes: list, labels: list, iou_thres: float = 0.5) -> float:
    """Share of true objects found by a same-class detection at IoU ≥ ``iou_thres`` (Hungarian matching)."""
    found = total = 0
    for d, b, lab in zip(dets, boxes, labels):
        ref = {"boxes": torch.as_tensor(b, dtype=torch.float32), "labels": torch.as_tensor(lab)}
        found += int((match(ref, d) >= iou_thres).sum())
        total += len(b)
    return found / max(total, 1)
