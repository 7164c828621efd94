"""3D Gaussians rendered through a pinhole camera with the EWA splatting projection of 3DGS (Kerbl et al. 2023, Eq. 5;
Zwicker et al. 2002), in pure torch — the 3D variant of `render`, used by
`GaussianScene3D` (the reproduction's `full` scale; quick uses the 2D fitter).

A 3D Gaussian has a mean μ (world), a covariance Σ = R S Sᵀ Rᵀ (R from a unit quaternion, S = diag(exp(log_scales))),
a colour and an opacity. With the world-to-camera rotation W and translation t, the camera-space mean is
m = W μ + t; the screen mean is (f_x m_x / m_z + c_x, f_y m_y / m_z + c_y); the screen covariance is

    Σ' = J W Σ Wᵀ Jᵀ + 0.3 I,    J = [[f_x / m_z, 0, −f_x m_x / m_z²], [0, f_y / m_z, −f_y m_y / m_z²]]

(the local affine approximation of the projection, plus 3DGS's 0.3 px² low-pass). Splats are sorted by m_z and
alpha-composited front to back exactly as in `render` (dense: every splat at every pixel).
"""

from __future__ import annotations

import torch

from .render import _composite


def quat_to_rot(q: torch.Tensor) -> torch.Tensor:
    """(N, 4) quaternions (w, x, y, z), normalised here, to (N, 3, 3) rotation matrices."""
    w, x, y, z = (q / q.norm(dim=1, keepdim=True)).unbind(1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], 1).view(-1, 3, 3)  # fmt: skip


def project(means, log_scales, quats, rot, trans, fx: float, fy: float, cx: float, cy: float, lowpass: float = 0.3):
    """EWA projection: screen means (N, 2), screen covariances (N, 2, 2) and camera depths (N,)."""
    m = means @ rot.T + trans  # camera space
    if (m[:, 2] <= 1e-3).any():
        raise ValueError("project: a Gaussian lies behind or on the camera plane (z <= 1e-3); cull it first")
    r = quat_to_rot(quats)
    s = torch.exp(log_scales)
    cov = r @ torch.diag_embed(s**2) @ r.transpose(1, 2)  # Σ = R S Sᵀ Rᵀ
    tx, ty, tz = m.unbind(1)
    zero = torch.zeros_like(tz)
    jac = torch.stack([fx / tz, zero, -fx * tx / tz**2, zero, fy / tz, -fy * ty / tz**2], 1).view(-1, 2, 3)
    t = jac @ rot
    cov2 = t @ cov @ t.transpose(1, 2) + lowpass * torch.eye(2, dtype=means.dtype)
    mean2 = torch.stack([fx * tx / tz + cx, fy * ty / tz + cy], 1)
    return mean2, cov2, tz


def render_3d(means, log_scales, quats, colours, opacity, rot, trans, fx, fy, cx, cy, height: int, width: int,
              bg=None, near: float | None = None) -> torch.Tensor:  # fmt: skip
    """Image (3, H, W) of N 3D Gaussians seen by the camera (rot, trans, intrinsics); pixel centres at integer + 0.5.

    ``near``: if set, Gaussians whose camera-space depth is ≤ ``near`` are culled (dropped) instead of raising, as
    3DGS's rasteriser culls splats behind its near plane (0.2 there)."""
    if near is not None:
        keep = (means.detach() @ rot.T + trans)[:, 2] > near
        means, log_scales, quats, colours, opacity = (t[keep] for t in (means, log_scales, quats, colours, opacity))
    mean2, cov2, depth = project(means, log_scales, quats, rot, trans, fx, fy, cx, cy)
    order = torch.argsort(depth.detach(), stable=True)
    mean2, cov2, colours, opacity = mean2[order], cov2[order], colours[order], opacity[order]
    a, b, c = cov2[:, 0, 0], cov2[:, 0, 1], cov2[:, 1, 1]
    det = a * c - b * b
    q = torch.stack([c / det, -b / det, a / det], 1)  # the conic Σ'⁻¹ as (a, b, c)
    kw = {"dtype": means.dtype, "device": means.device}
    ys, xs = torch.meshgrid(torch.arange(height, **kw) + 0.5, torch.arange(width, **kw) + 0.5, indexing="ij")
    img, t_final = _composite(xs.reshape(1, -1) - mean2[:, 0:1], ys.reshape(1, -1) - mean2[:, 1:2], q, opacity, colours)
    img = img.view(3, height, width)
    if bg is not None:
        img = img + t_final.view(1, height, width) * torch.as_tensor(bg, **kw).view(3, 1, 1)
    return img
