"""`GaussianScene3D`: a fixed budget of 3D Gaussians for a posed clip, rendered with the EWA projection (`ewa`).

The 3D counterpart of `render.GaussianScene`, for `fit(..., scene=GaussianScene3D.from_sequence(seq, n))`. As in street
3DGS methods (S3Gaussian, OmniRe, the paper's base models), the Gaussians start at LiDAR points with the colours seen
there; a share of them is *dynamic* and carries a per-frame 3D offset (the toy version of per-object tracked boxes).
The dynamic Gaussians are placed first on points flagged as objects (the paper's dynamic actors come from tracked
boxes; here from the world's object flag), the rest on the remaining points.

The initial scale of every Gaussian is the mean distance to its 3 nearest initial points (3DGS's rule), isotropic,
rotation identity, opacity 0.88 (logit 2, as the 2D scene). The fitter's learning rates are given in pixels for the
2D scene; here the mean's learning rate is multiplied by ``metres_per_pixel`` (the median point depth over f_x: one
pixel's footprint at a typical depth), so the same `FitConfig` moves a Gaussian by about the same number of pixels.
"""

from __future__ import annotations

import torch
from torch import nn

from .ewa import render_3d


def _take(pool: torch.Tensor, n: int, g) -> torch.Tensor:
    """The first ``n`` of ``pool``, or ``n`` draws with replacement when it is shorter."""
    return pool[:n] if len(pool) >= n else pool[torch.randint(len(pool), (n,), generator=g)]


class GaussianScene3D(nn.Module):
    """``n_gaussians`` 3D Gaussians seen by ``n_frames`` cameras (world-to-camera ``rot`` (F, 3, 3), ``trans``
    (F, 3)) with pinhole intrinsics ``k`` (3, 3), initialised at ``points`` (P, 3) with ``colours`` (P, 3)."""

    def __init__(self, n_gaussians: int, rot, trans, k, height: int, width: int, points, colours,
                 is_object=None, dynamic_frac: float = 0.25, seed: int = 0, bg=(0.5, 0.5, 0.5),
                 near: float = 0.2):  # fmt: skip
        super().__init__()
        if n_gaussians < 1:
            raise ValueError(f"GaussianScene3D needs n_gaussians >= 1, got {n_gaussians}")
        if not 0.0 <= dynamic_frac < 1.0:
            raise ValueError(f"GaussianScene3D.dynamic_frac must lie in [0, 1), got {dynamic_frac!r}")
        pts, col = torch.as_tensor(points, dtype=torch.float32), torch.as_tensor(colours, dtype=torch.float32)
        if pts.ndim != 2 or pts.shape[1] != 3 or col.shape != pts.shape or len(pts) < 4:
            raise ValueError(f"GaussianScene3D: points and colours must both be (P, 3) with P >= 4, got "
                             f"{tuple(pts.shape)} and {tuple(col.shape)}")  # fmt: skip
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("rot", torch.as_tensor(rot, dtype=torch.float32))
        self.register_buffer("trans", torch.as_tensor(trans, dtype=torch.float32))
        k = torch.as_tensor(k, dtype=torch.float32)
        self.fx, self.fy, self.cx, self.cy = (float(v) for v in (k[0, 0], k[1, 1], k[0, 2], k[1, 2]))
        self.height, self.width, self.n_frames = height, width, len(self.rot)
        self.n_dynamic = int(round(n_gaussians * dynamic_frac))
        self.n_static = n_gaussians - self.n_dynamic
        obj = torch.zeros(len(pts), dtype=torch.bool) if is_object is None else torch.as_tensor(is_object).bool()
        perm = torch.randperm(len(pts), generator=g)
        on_obj, off_obj = perm[obj[perm]], perm[~obj[perm]]
        dyn = _take(torch.cat([on_obj, off_obj]), self.n_dynamic, g)  # dynamic ones on object points first
        stat = _take(off_obj if len(off_obj) else perm, self.n_static, g)
        idx = torch.cat([stat, dyn]).long()
        d = torch.cdist(pts[idx], pts)
        s0 = d.topk(4, largest=False).values[:, 1:].mean(1).clamp(min=1e-3)  # mean distance to 3 nearest points
        self.means = nn.Parameter(pts[idx].clone())
        self.log_scales = nn.Parameter(torch.log(s0)[:, None].repeat(1, 3))
        self.quats = nn.Parameter(torch.tensor([[1.0, 0.0, 0.0, 0.0]]).repeat(n_gaussians, 1))
        self.colour_logits = nn.Parameter(torch.logit(col[idx].clamp(0.02, 0.98)))
        self.opacity_logits = nn.Parameter(torch.full((n_gaussians,), 2.0))
        self.offsets = nn.Parameter(torch.zeros(self.n_frames, self.n_dynamic, 3))
        depth = (pts @ self.rot[0].T + self.trans[0])[:, 2]
        self.metres_per_pixel = float(depth.median()) / self.fx
        self.bg, self.near = tuple(float(v) for v in bg), near

    @classmethod
    def from_sequence(cls, seq, n_gaussians: int, dynamic_frac: float = 0.25, seed: int = 0, **kw):
        """From a `iclr26.vision.gs_perception.world_street3d.Sequence3D` (its cameras and LiDAR-like points)."""
        h, w = seq.frames.shape[2:]
        return cls(n_gaussians, seq.rot, seq.trans, seq.k, h, w, seq.points, seq.point_colours, seq.point_is_object,
                   dynamic_frac, seed, **kw)  # fmt: skip

    def param_groups(self, lr_means: float, lr_shape: float, lr_colour: float) -> list[dict]:
        """Adam parameter groups; ``lr_means`` in pixels (times ``metres_per_pixel``)."""
        return [{"params": [self.means, self.offsets], "lr": lr_means * self.metres_per_pixel},
                {"params": [self.log_scales, self.quats], "lr": lr_shape},
                {"params": [self.colour_logits, self.opacity_logits], "lr": lr_colour}]  # fmt: skip

    def splats(self, frame: int):
        """The Gaussians of one frame (dynamic means shifted by that frame's offset)."""
        shift = torch.cat([torch.zeros(self.n_static, 3), self.offsets[frame]], 0)
        return (self.means + shift, self.log_scales, self.quats, torch.sigmoid(self.colour_logits),
                torch.sigmoid(self.opacity_logits))  # fmt: skip

    def forward(self, frames=None) -> torch.Tensor:
        """Rendered frames (F, 3, H, W) for the frame indices ``frames`` (default: all)."""
        idx = range(self.n_frames) if frames is None else frames
        return torch.stack([render_3d(*self.splats(f), self.rot[f], self.trans[f], self.fx, self.fy, self.cx, self.cy,
                                      self.height, self.width, self.bg, self.near) for f in idx])  # fmt: skip
