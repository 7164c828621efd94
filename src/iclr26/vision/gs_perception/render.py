"""A differentiable 2D Gaussian splatting rasteriser in pure torch (the CPU stand-in for a CUDA 3DGS rasteriser).

Each splat i has a mean μ_i (pixels), a covariance Σ_i = R(θ_i) diag(s_i²) R(θ_i)ᵀ, a colour c_i, an opacity o_i and a
depth z_i. As in 3DGS (Kerbl et al. 2023, Eq. 2-3), the splats are sorted front to back by depth and alpha-composited:

    α_i(p) = min(0.99, o_i · exp(−½ (p − μ_i)ᵀ Σ_i⁻¹ (p − μ_i)))
    C(p)   = Σ_i c_i α_i(p) T_i(p) + T_{N+1}(p) · bg,     T_i(p) = Π_{j<i} (1 − α_j(p))

Every splat is evaluated at every pixel (dense, no tiles: fine for a few hundred splats on 64 × 96 frames). The
transmittance is a cumulative sum in log space, so its gradient is exact and stable. The sort uses a stable argsort:
splats of equal depth keep their input order, which matters only where they overlap (tested).

`GaussianScene` holds a fixed budget of splats for a short clip over a static background: the first ``n_static``
splats are shared by all frames, the rest are *dynamic* and carry a per-frame 2D offset (a toy version of the
static/dynamic decomposition of street 3DGS methods such as S3Gaussian or OmniRe).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def covariance_inverse(log_scales: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Σ⁻¹ = R diag(s⁻²) Rᵀ for (N, 2) log-scales and (N,) angles, as (N, 3): entries (a, b, c) of [[a, b], [b, c]]."""
    inv_var = torch.exp(-2 * log_scales)
    cos, sin = torch.cos(theta), torch.sin(theta)
    a = cos**2 * inv_var[:, 0] + sin**2 * inv_var[:, 1]
    b = cos * sin * (inv_var[:, 0] - inv_var[:, 1])
    c = sin**2 * inv_var[:, 0] + cos**2 * inv_var[:, 1]
    return torch.stack([a, b, c], 1)


def _check(means, log_scales, theta, colours, opacity, depth):
    n = means.shape[0]
    for name, t, shape in (("means", means, (n, 2)), ("log_scales", log_scales, (n, 2)), ("colours", colours, (n, 3)),
                           ("theta", theta, (n,)), ("opacity", opacity, (n,)), ("depth", depth, (n,))):  # fmt: skip
        if tuple(t.shape) != shape:
            raise ValueError(f"rasterize: {name} has shape {tuple(t.shape)}; expected {shape} for {n} splats")


def _composite(dx, dy, q, opacity, colours, valid=None):
    """Front-to-back alpha compositing over the splat axis (dim −2) of pixel offsets dx, dy (..., K, P)."""
    maha = q[..., 0, None] * dx**2 + 2 * q[..., 1, None] * dx * dy + q[..., 2, None] * dy**2
    alpha = (opacity[..., None] * torch.exp(-0.5 * maha)).clamp(max=0.99)
    if valid is not None:
        alpha = alpha * valid[..., None]
    log_keep = torch.log1p(-alpha)
    log_t = torch.cumsum(log_keep, -2) - log_keep  # log T_i = Σ_{j<i} log(1 − α_j) (exclusive cumulative sum)
    weight = alpha * torch.exp(log_t)  # α_i T_i
    img = torch.einsum("...kp,...kc->...cp", weight, colours)
    return img, torch.exp(log_t[..., -1, :] + log_keep[..., -1, :])  # colour, final transmittance T_{N+1}


def rasterize(means, log_scales, theta, colours, opacity, depth, height: int, width: int, bg=None,
              tile: int = 16) -> torch.Tensor:  # fmt: skip
    """Render one image (3, H, W) from N splats: means (N, 2) as (x, y) pixels (pixel centres at integer + 0.5),
    log_scales (N, 2), theta (N,), colours (N, 3), opacity (N,) in [0, 1], depth (N,) (smaller = in front).

    ``tile`` > 0: as in 3DGS, the frame is cut into tile × tile blocks and each block composites only the splats whose
    3.5σ bounding square touches it (exact up to the tails beyond 3.5σ, α < 0.25 % of o); ``tile=0``: every splat at
    every pixel (exact, slower)."""
    _check(means, log_scales, theta, colours, opacity, depth)
    n = means.shape[0]
    order = torch.argsort(depth.detach(), stable=True)  # front to back; equal depths keep input order
    means, log_scales, theta = means[order], log_scales[order], theta[order]
    colours, opacity = colours[order], opacity[order]
    q = covariance_inverse(log_scales, theta)
    kw = {"dtype": means.dtype, "device": means.device}
    if tile <= 0 or n == 0:
        ys, xs = torch.meshgrid(torch.arange(height, **kw) + 0.5, torch.arange(width, **kw) + 0.5, indexing="ij")
        dx = xs.reshape(1, -1) - means[:, 0:1]  # (N, P)
        dy = ys.reshape(1, -1) - means[:, 1:2]
        img, t_final = _composite(dx, dy, q, opacity, colours)
        img, t_final = img.view(3, height, width), t_final.view(height, width)
    else:
        th, tw = -(-height // tile), -(-width // tile)
        radius = 3.5 * torch.exp(log_scales.detach().max(1).values)
        x0 = torch.arange(tw, **kw) * tile  # tile origins
        y0 = torch.arange(th, **kw) * tile
        m = means.detach()
        hit_x = (m[:, 0, None] + radius[:, None] >= x0) & (m[:, 0, None] - radius[:, None] <= x0 + tile)  # (N, tw)
        hit_y = (m[:, 1, None] + radius[:, None] >= y0) & (m[:, 1, None] - radius[:, None] <= y0 + tile)  # (N, th)
        hit = (hit_y[:, :, None] & hit_x[:, None, :]).reshape(n, -1).T  # (T, N), splats already in depth order
        k = max(int(hit.sum(1).max()), 1)
        rank = torch.arange(n, device=means.device)
        idx = torch.argsort(torch.where(hit, rank, rank + n), 1)[:, :k]  # the first k hits of each tile, in order
        valid = torch.gather(hit, 1, idx).to(means.dtype)  # (T, k)
        py, px = torch.meshgrid(torch.arange(tile, **kw) + 0.5, torch.arange(tile, **kw) + 0.5, indexing="ij")
        gy, gx = torch.meshgrid(y0, x0, indexing="ij")
        px = gx.reshape(-1, 1) + px.reshape(1, -1)  # (T, P) pixel centres of each tile
        py = gy.reshape(-1, 1) + py.reshape(1, -1)
        dx = px[:, None, :] - means[idx, 0, None]  # (T, k, P)
        dy = py[:, None, :] - means[idx, 1, None]
        img, t_final = _composite(dx, dy, q[idx], opacity[idx], colours[idx], valid)  # (T, 3, P), (T, P)
        img = img.view(th, tw, 3, tile, tile).permute(2, 0, 3, 1, 4).reshape(3, th * tile, tw * tile)
        t_final = t_final.view(th, tw, tile, tile).permute(0, 2, 1, 3).reshape(th * tile, tw * tile)
        img, t_final = img[:, :height, :width], t_final[:height, :width]
    if bg is not None:
        img = img + t_final[None] * torch.as_tensor(bg, **kw).view(3, 1, 1)
    return img


class GaussianScene(nn.Module):
    """A fixed budget of ``n_gaussians`` 2D splats for a clip of ``n_frames`` frames of size ``height × width``.

    Parameters (all optimised): means (pixels), log-scales, angles, colour logits, opacity logits, per-frame offsets of
    the dynamic splats. Depths are fixed at initialisation (static splats behind dynamic ones, random order within)."""

    def __init__(self, n_gaussians: int, n_frames: int, height: int, width: int, dynamic_frac: float = 0.25,
                 init_frames=None, seed: int = 0, bg=(0.5, 0.5, 0.5), tile: int = 8):  # fmt: skip
        super().__init__()
        if n_gaussians < 1 or n_frames < 1:
            raise ValueError(f"GaussianScene needs n_gaussians >= 1 and n_frames >= 1, got {n_gaussians}, {n_frames}")
        if not 0.0 <= dynamic_frac < 1.0:
            raise ValueError(f"GaussianScene.dynamic_frac must lie in [0, 1), got {dynamic_frac!r}")
        g = torch.Generator().manual_seed(seed)
        self.height, self.width, self.n_frames = height, width, n_frames
        self.n_dynamic = int(round(n_gaussians * dynamic_frac))
        self.n_static = n_gaussians - self.n_dynamic
        xy = torch.rand(n_gaussians, 2, generator=g) * torch.tensor([width, height], dtype=torch.float32)
        s0 = math.log(0.5 * math.sqrt(height * width / n_gaussians))  # splats tile the frame about once at start
        if init_frames is not None:  # colour from the (mean) frame under each mean, as in image-fitting 2DGS
            mean_img = torch.as_tensor(init_frames, dtype=torch.float32).mean(0)
            xi = xy[:, 0].long().clamp(0, width - 1)
            yi = xy[:, 1].long().clamp(0, height - 1)
            col = mean_img[:, yi, xi].T.clamp(0.02, 0.98)
        else:
            col = torch.full((n_gaussians, 3), 0.5)
        self.means = nn.Parameter(xy)
        self.log_scales = nn.Parameter(
            torch.full((n_gaussians, 2), s0) + 0.1 * torch.randn(n_gaussians, 2, generator=g)
        )
        self.theta = nn.Parameter(torch.rand(n_gaussians, generator=g) * math.pi)
        self.colour_logits = nn.Parameter(torch.logit(col))
        self.opacity_logits = nn.Parameter(torch.full((n_gaussians,), 2.0))
        self.offsets = nn.Parameter(torch.zeros(n_frames, self.n_dynamic, 2))
        depth = torch.rand(n_gaussians, generator=g)
        depth[: self.n_static] += 1.0  # static (background) splats behind the dynamic ones
        self.register_buffer("depth", depth)
        self.bg, self.tile = tuple(float(v) for v in bg), tile

    def param_groups(self, lr_means: float, lr_shape: float, lr_colour: float) -> list[dict]:
        """Adam parameter groups (``lr_means`` in pixels)."""
        return [{"params": [self.means, self.offsets], "lr": lr_means},
                {"params": [self.log_scales, self.theta], "lr": lr_shape},
                {"params": [self.colour_logits, self.opacity_logits], "lr": lr_colour}]  # fmt: skip

    def splats(self, frame: int):
        """The splat parameters of one frame (dynamic means shifted by that frame's offset)."""
        shift = torch.cat([torch.zeros(self.n_static, 2), self.offsets[frame]], 0)
        return (self.means + shift, self.log_scales, self.theta, torch.sigmoid(self.colour_logits),
                torch.sigmoid(self.opacity_logits), self.depth)  # fmt: skip

    def forward(self, frames=None) -> torch.Tensor:
        """Rendered frames (F, 3, H, W) for the frame indices ``frames`` (default: all)."""
        idx = range(self.n_frames) if frames is None else frames
        return torch.stack([rasterize(*self.splats(f), self.height, self.width, self.bg, self.tile) for f in idx])
