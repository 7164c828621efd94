"""WinT3R's training losses (paper §3.3, Eqs. 7-12): confidence-weighted point loss and pairwise relative-pose loss.

Point loss (Eq. 9, DUSt3R-style): Σ_ij C_ij ||P̂_ij / ẑ - P_ij / z|| - α log C_ij over local (camera-frame) point maps,
ẑ and z the scale normalisers of prediction and ground truth: the mean point norm over the whole sequence weighted by
the detached log-confidence, computed separately for each (scale-free supervision).

Camera loss (Eq. 12): over every ordered pair i != j, the L1 distance between the predicted and true relative pose
encodings c_ij (relative translation, divided by ẑ resp. z, and relative quaternion with w >= 0), so no world frame has
to be chosen. Over the K refinement iterations: Σ_k γ^(K-k) L^(k) (code, γ = 0.6).
"""

from __future__ import annotations

import torch

from .geometry import canonical_quat, quat_to_mat


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                        aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], -1)  # fmt: skip


def relative_encodings(enc: torch.Tensor, scale: torch.Tensor | float = 1.0) -> torch.Tensor:
    """(B, N, 7) camera-to-world encodings (t, q) -> (B, N, N, 7): entry (i, j) = frame j in frame i's coordinates,
    translation R_i^T (t_j - t_i) / scale, quaternion q_i^* q_j with w >= 0."""
    t, q = enc[..., :3], canonical_quat(enc[..., 3:])
    r = quat_to_mat(q)
    dt = t[:, None, :, :] - t[:, :, None, :]  # (B, i, j, 3) = t_j - t_i
    rel_t = torch.einsum("bixy,bijx->bijy", r, dt)  # R_i^T (t_j - t_i)
    conj = q * torch.tensor([1.0, -1, -1, -1], dtype=q.dtype)
    rel_q = canonical_quat(quat_mul(conj[:, :, None], q[:, None, :]))
    scale = torch.as_tensor(scale, dtype=enc.dtype).reshape(-1, 1, 1, 1) if torch.is_tensor(scale) else scale
    return torch.cat([rel_t / scale, rel_q], -1)


def camera_loss(pred_iters: list[torch.Tensor], gt_enc: torch.Tensor, scale_pred, scale_gt, gamma: float = 0.6):
    """Eq. 12 summed over iterations with weights γ^(K-k): mean over ordered pairs i != j of ||ĉ_ij - c_ij||_1
    (summed over the 7 components)."""
    n = gt_enc.shape[1]
    if n < 2:
        raise ValueError(f"camera_loss: needs at least two frames, got {n}")
    target = relative_encodings(gt_enc, scale_gt)
    off = ~torch.eye(n, dtype=torch.bool)
    k = len(pred_iters)
    total = 0.0
    for it, pred in enumerate(pred_iters):
        err = (relative_encodings(pred, scale_pred) - target).abs().sum(-1)  # (B, N, N)
        total = total + gamma ** (k - 1 - it) * err[:, off].mean()
    return total


def scale_normaliser(pts: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted mean point norm per sequence: pts (B, N, H, W, 3), weights (B, N, H, W) -> (B,)."""
    return (pts.norm(dim=-1) * weights).flatten(1).sum(1) / weights.flatten(1).sum(1).clamp_min(1e-8)


def point_loss(pred: torch.Tensor, conf: torch.Tensor, gt: torch.Tensor, alpha: float = 1.0):
    """Eq. 9 (mean over pixels rather than a sum; the weights come from the detached log-confidence). Returns the
    loss and the two normalisers (ẑ, z), which the camera loss reuses."""
    w = conf.detach().log()
    zp, zg = scale_normaliser(pred, w), scale_normaliser(gt, w)
    err = (pred / zp.view(-1, 1, 1, 1, 1) - gt / zg.view(-1, 1, 1, 1, 1)).norm(dim=-1)
    return (conf * err - alpha * conf.log()).mean(), zp, zg
