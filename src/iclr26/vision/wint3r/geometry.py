"""Pose encodings, relative poses, similarity alignment and the evaluation metrics (Chamfer, ATE, RRA/RTA/AUC).

Poses are camera-to-world 4x4 matrices; the network's pose encoding is (t ∈ R^3, unit quaternion q = (w, x, y, z)),
the official "absT_quaR". Quaternions are canonicalised to w >= 0 before any L1 comparison (q and -q are one rotation).
Trajectory alignment and ATE use evo (`evo.core.geometry.umeyama_alignment`); the torch Umeyama here is checked
against it in the tests.
"""

from __future__ import annotations

import numpy as np
import torch


def quat_to_mat(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) quaternions (w, x, y, z), normalised here, to (..., 3, 3) rotation matrices."""
    w, x, y, z = (q / q.norm(dim=-1, keepdim=True).clamp_min(1e-8)).unbind(-1)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return torch.stack([torch.stack(r, -1) for r in rows], -2)


def mat_to_quat(r: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotations to (..., 4) unit quaternions with w >= 0 (robust branch-free form, then normalised)."""
    m = r
    w = 0.5 * torch.sqrt((1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]).clamp_min(1e-12))
    x = 0.5 * torch.sqrt((1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2]).clamp_min(1e-12))
    y = 0.5 * torch.sqrt((1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2]).clamp_min(1e-12))
    z = 0.5 * torch.sqrt((1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2]).clamp_min(1e-12))
    x = torch.copysign(x, m[..., 2, 1] - m[..., 1, 2])
    y = torch.copysign(y, m[..., 0, 2] - m[..., 2, 0])
    z = torch.copysign(z, m[..., 1, 0] - m[..., 0, 1])
    q = torch.stack([w, x, y, z], -1)
    return q / q.norm(dim=-1, keepdim=True)


def canonical_quat(q: torch.Tensor) -> torch.Tensor:
    """Unit quaternion with w >= 0 (the sign ambiguity removed)."""
    q = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    return torch.where(q[..., :1] < 0, -q, q)


def enc_to_mat(enc: torch.Tensor) -> torch.Tensor:
    """(..., 7) pose encodings (t, q) to (..., 4, 4) camera-to-world matrices."""
    out = torch.zeros(*enc.shape[:-1], 4, 4, dtype=enc.dtype, device=enc.device)
    out[..., :3, :3] = quat_to_mat(enc[..., 3:])
    out[..., :3, 3] = enc[..., :3]
    out[..., 3, 3] = 1
    return out


def mat_to_enc(t: torch.Tensor) -> torch.Tensor:
    return torch.cat([t[..., :3, 3], mat_to_quat(t[..., :3, :3])], -1)


def relative_poses(t: torch.Tensor) -> torch.Tensor:
    """(..., N, 4, 4) -> (..., N, N, 4, 4): entry (i, j) = T_i^{-1} T_j, frame j in frame i's coordinates."""
    r, p = t[..., :3, :3], t[..., :3, 3]
    rt = r.transpose(-1, -2)
    rel_r = rt.unsqueeze(-3) @ r.unsqueeze(-4)  # R_i^T R_j
    rel_p = (rt.unsqueeze(-3) @ (p.unsqueeze(-3) - p.unsqueeze(-2)).unsqueeze(-1)).squeeze(-1)  # R_i^T (p_j - p_i)
    out = torch.zeros(*rel_r.shape[:-2], 4, 4, dtype=t.dtype, device=t.device)
    out[..., :3, :3], out[..., :3, 3], out[..., 3, 3] = rel_r, rel_p, 1
    return out


def to_first_frame(t: torch.Tensor) -> torch.Tensor:
    """Re-express (..., N, 4, 4) poses w.r.t. the first frame (the official `compute_relative_poses`)."""
    return torch.linalg.inv(t[..., :1, :, :]) @ t


def umeyama(x: torch.Tensor, y: torch.Tensor, with_scale: bool = True) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(R, t, s) minimising Σ ||y_i - (s R x_i + t)||² for (N, 3) point sets (Umeyama 1991), as evo's."""
    mx, my = x.mean(0), y.mean(0)
    xc, yc = x - mx, y - my
    cov = yc.T @ xc / len(x)
    u, d, vt = torch.linalg.svd(cov)
    s_mat = torch.eye(3, dtype=x.dtype)
    if torch.linalg.det(u) * torch.linalg.det(vt) < 0:
        s_mat[2, 2] = -1
    r = u @ s_mat @ vt
    var = (xc**2).sum(1).mean()
    s = float((d * s_mat.diagonal()).sum() / var) if with_scale else 1.0
    return r, my - s * (r @ mx), s


def ate(pred_poses: np.ndarray, gt_poses: np.ndarray) -> float:
    """Absolute trajectory error: RMSE of camera centres after Sim(3) Umeyama alignment (evo's APE, translation
    part, `align=True, correct_scale=True`)."""
    from evo.core import metrics
    from evo.core.trajectory import PosePath3D

    est, ref = PosePath3D(poses_se3=list(_se3(pred_poses))), PosePath3D(poses_se3=list(_se3(gt_poses)))
    est.align(ref, correct_scale=True)
    ape = metrics.APE(metrics.PoseRelation.translation_part)
    ape.process_data((ref, est))
    return float(ape.get_statistic(metrics.StatisticsType.rmse))


def _se3(poses: np.ndarray) -> np.ndarray:
    """Re-orthonormalise rotations (float32 network output) so evo accepts them as SE(3)."""
    p = np.array(poses, dtype=np.float64)
    u, _, vt = np.linalg.svd(p[:, :3, :3])
    d = np.sign(np.linalg.det(u @ vt))
    u[:, :, 2] *= d[:, None]
    p[:, :3, :3] = u @ vt
    p[:, 3] = [0, 0, 0, 1]
    return p


def rot_angle_deg(r: np.ndarray) -> np.ndarray:
    return np.degrees(np.arccos(np.clip((np.trace(r, axis1=-2, axis2=-1) - 1) / 2, -1, 1)))


def rra_rta(pred_poses: np.ndarray, gt_poses: np.ndarray, thresholds=(15, 30)) -> dict[str, float]:
    """Over all pairs i < j: relative rotation error and the angle between relative translation directions
    (VGGT protocol); RRA@τ / RTA@τ = share of pairs under τ degrees; AUC@30 of min-accuracy over 1..30 degrees."""
    rp = relative_poses(torch.as_tensor(pred_poses, dtype=torch.float64)).numpy()
    rg = relative_poses(torch.as_tensor(gt_poses, dtype=torch.float64)).numpy()
    i, j = np.triu_indices(len(pred_poses), 1)
    rp, rg = rp[i, j], rg[i, j]
    r_err = rot_angle_deg(np.swapaxes(rp[:, :3, :3], -1, -2) @ rg[:, :3, :3])
    tp, tg = rp[:, :3, 3], rg[:, :3, 3]
    cos = (tp * tg).sum(1) / (np.linalg.norm(tp, axis=1) * np.linalg.norm(tg, axis=1) + 1e-12)
    t_err = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    out = {}
    for th in thresholds:
        out[f"rra{th}"], out[f"rta{th}"] = float((r_err < th).mean()), float((t_err < th).mean())
    worst = np.maximum(r_err, t_err)
    out["auc30"] = float(np.mean([(worst < th).mean() for th in range(1, 31)]))
    return out


def chamfer(pred: np.ndarray, gt: np.ndarray, align: bool = True) -> dict[str, float]:
    """Accuracy (pred -> nearest gt), completeness (gt -> nearest pred) and their mean (Chamfer "overall"), after a
    Sim(3) Umeyama alignment of `pred` onto `gt` using the pixel correspondences (both (N, 3), same order)."""
    from scipy.spatial import cKDTree

    if pred.shape != gt.shape:
        raise ValueError(f"chamfer: pred and gt must correspond point by point, got {pred.shape} and {gt.shape}")
    if align:
        r, t, s = umeyama(torch.as_tensor(pred, dtype=torch.float64), torch.as_tensor(gt, dtype=torch.float64))
        pred = s * pred @ r.numpy().T + t.numpy()
    acc = cKDTree(gt).query(pred)[0].mean()
    comp = cKDTree(pred).query(gt)[0].mean()
    return {"acc": float(acc), "comp": float(comp), "overall": float((acc + comp) / 2)}
