"""The paper's losses: visual (the base method's), perception-aligned (Eqs. 4-6) and object-zone visibility.

- Visual: L_visual = 0.8 · L1 + 0.2 · (1 − SSIM) (the 3DGS / OmniRe photometric loss; SSIM from kornia).
- Perception (Eq. 4): L_perc = λ_box · L_box + λ_cls · L_cls between the frozen detector P on the rendering R(x) and
  its detections on the original x (the reference is P(x), not dataset labels). Post-NMS boxes are not
  differentiable, so the terms are read at the detector's dense predictions on R(x) at the cells responsible for
  P(x)'s detections: L_box = mean(1 − CIoU) (Eq. 5) and L_cls = the Bernoulli KL of the class probabilities on x
  and on R(x) (the differentiable stand-in of Eq. 6's indicator, which stays a metric). P(x) is computed once,
  offline (the repository's `generate_gt_bbox.py`). A detector without `decode` / `assigned` is used through its raw
  outputs: L_perc = mean squared difference of P(R(x)) and P(x) (an output-matching fallback).
- Object visibility: L_obj-vis = d_vis(R(x) ⊙ M(x), x ⊙ M(x)), M(x) the union of P(x)'s boxes, computed offline. Each
  box is a zone; d_vis is the photometric loss restricted to the zone and normalised by its area, averaged over the
  zones (each small object counts once, as in the official code's per-box mean). The SSIM map is computed on the whole
  frame (window ``window``) and averaged inside each box, so zones narrower than the window still count.
"""

from __future__ import annotations

import kornia
import torch
import torch.nn.functional as F
from torch import nn

from .boxes import ciou


def visual_loss(rendered, target, l1_weight: float = 0.8, ssim_weight: float = 0.2, window: int = 11):
    """0.8 · L1 + 0.2 · (1 − SSIM) over a batch (B, 3, H, W)."""
    loss = l1_weight * (rendered - target).abs().mean()
    if ssim_weight:
        loss = loss + ssim_weight * (1 - kornia.metrics.ssim(rendered, target, window).mean())
    return loss


def _zones(boxes, h: int, w: int) -> list[tuple[int, int, int, int]]:
    out = []
    for b in torch.as_tensor(boxes, dtype=torch.float32).reshape(-1, 4).tolist():
        x1, y1 = max(int(b[0]), 0), max(int(b[1]), 0)
        x2, y2 = min(int(-(-b[2] // 1)), w), min(int(-(-b[3] // 1)), h)
        if x2 > x1 and y2 > y1:
            out.append((x1, y1, x2, y2))
    return out


def visibility_loss(rendered, target, boxes: list, l1_weight: float = 0.8, ssim_weight: float = 0.2,
                    window: int = 5) -> torch.Tensor:  # fmt: skip
    """L_obj-vis over a batch: per frame and per box (integer-rounded outward), the area-normalised
    l1_weight · |R − x| + ssim_weight · (1 − SSIM) inside the box; mean over all boxes of all frames; 0 if none."""
    if len(boxes) != rendered.shape[0]:
        raise ValueError(f"visibility_loss: {rendered.shape[0]} frames but {len(boxes)} box lists")
    h, w = rendered.shape[-2:]
    dist = l1_weight * (rendered - target).abs().mean(1)
    if ssim_weight:
        dist = dist + ssim_weight * (1 - kornia.metrics.ssim(rendered, target, window).mean(1))
    terms = [dist[k, y1:y2, x1:x2].mean() for k, bx in enumerate(boxes) for x1, y1, x2, y2 in _zones(bx, h, w)]
    return torch.stack(terms).mean() if terms else rendered.sum() * 0


def freeze(detector: nn.Module) -> nn.Module:
    """Eval mode (BatchNorm statistics fixed) and no parameter gradients: only the image receives gradients."""
    detector.eval()
    for p in detector.parameters():
        p.requires_grad_(False)
    return detector


def _flat(out) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out.flatten(1)
    if isinstance(out, dict):
        out = list(out.values())
    return torch.cat([_flat(o) for o in out if isinstance(o, (torch.Tensor, dict, list, tuple))], 1)


def bernoulli_kl(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Σ over the last axis of KL(Bern(p) ‖ Bern(q)), element-wise per row."""
    p, q = p.clamp(eps, 1 - eps), q.clamp(eps, 1 - eps)
    return (p * torch.log(p / q) + (1 - p) * torch.log((1 - p) / (1 - q))).sum(-1)


class PerceptionLoss:
    """L_perc of a frozen detector (Eq. 4). ``refs = reference(frames)`` once (offline: P(x)'s post-NMS detections
    and its class probabilities at their cells); then ``loss(rendered, refs)`` each step:

        L_box = mean_i (1 − CIoU(b_i(x), b̂_i(R(x))))              (Eq. 5)
        L_cls = mean_i Σ_c KL(Bern(p_ic(x)) ‖ Bern(p̂_ic(R(x))))   (Eq. 6's class agreement, made differentiable)

    where b̂_i, p̂_i are the detector's predictions on R(x) at the cell responsible for the i-th detection of x (its
    centre cell: the matching the paper leaves open). Both terms are 0 when R(x) = x. A detector without
    `decode` / `assigned` is used through its raw outputs: L_perc = mean squared difference of P(R(x)) and P(x).
    ``input_size`` = (h, w) resizes with F.interpolate first (the official code resizes to 320 × 480 for YOLOv8);
    the rendering is clamped to [0, 1] before the detector."""

    def __init__(self, detector: nn.Module, conf: float = 0.3, box_weight: float = 1.0, cls_weight: float = 1.0,
                 input_size: tuple[int, int] | None = None):  # fmt: skip
        if not isinstance(detector, nn.Module):
            raise TypeError(f"PerceptionLoss needs a torch.nn.Module detector, got {type(detector).__name__}")
        self.det = freeze(detector)
        self.conf, self.box_weight, self.cls_weight, self.input_size = conf, box_weight, cls_weight, input_size
        self.dense = callable(getattr(detector, "assigned", None)) and callable(getattr(detector, "decode", None))

    def _in(self, x):
        x = x.clamp(0, 1)
        if self.input_size is not None:
            x = F.interpolate(x, size=self.input_size, mode="bilinear", align_corners=False)
        return x

    @torch.no_grad()
    def reference(self, frames) -> list:
        """Per frame: {"boxes", "labels", "scores", "probs"} of P(x), or raw outputs for a detector without `decode`."""
        raw = self.det(self._in(torch.as_tensor(frames, dtype=torch.float32)))
        if not self.dense:
            return list(_flat(raw).detach())
        dets = self.det.decode(raw, self.conf)
        for d, (_, probs) in zip(dets, self.det.assigned(raw, [d["boxes"] for d in dets])):
            d["probs"] = probs
        return dets

    def __call__(self, rendered, refs) -> torch.Tensor:
        raw = self.det(self._in(rendered))
        if not self.dense:
            return F.mse_loss(_flat(raw), torch.stack(list(refs)))
        out = self.det.assigned(raw, [r["boxes"] for r in refs])
        if sum(len(r["boxes"]) for r in refs) == 0:
            return rendered.sum() * 0  # frames with no detection contribute 0
        pb, pp = torch.cat([o[0] for o in out]), torch.cat([o[1] for o in out])
        rb, rp = torch.cat([r["boxes"] for r in refs]), torch.cat([r["probs"] for r in refs])
        box = (1 - ciou(pb, rb)).mean()  # Eq. 5
        cls = bernoulli_kl(rp, pp).mean()  # Eq. 6 (differentiable)
        return self.box_weight * box + self.cls_weight * cls  # Eq. 4
