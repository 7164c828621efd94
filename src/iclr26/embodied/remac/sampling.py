"""Samplers of an action chunk: plain flow sampling, REMAC's prefix-preserved sampling, RTC's guided inpainting.

All take `prev`, the committed plan in the new chunk's time frame: prev[:, tau] is the action the previous chunk holds
for time t + tau (its not yet executed tail shifted by the execution horizon h, zeros where it has none), and the
delay d: positions tau < d will be executed from prev while this chunk is being computed.
"""

from __future__ import annotations

import math

import torch

from .policy import prefix_mask


def check_inputs(policy, obs: torch.Tensor, prev: torch.Tensor | None = None, d=None, n_steps: int = 1) -> None:
    """Clear errors instead of silent NaN chunks or a silently empty / full mask."""
    cfg = policy.cfg
    if obs.dim() != 2:
        raise ValueError(f"obs must be (B, obs_dim), got shape {tuple(obs.shape)}")
    if not torch.isfinite(obs).all():
        raise ValueError("obs holds NaN or inf: the policy would return NaN chunks; check the observation pipeline")
    if int(n_steps) < 1:
        raise ValueError(f"n_steps (Euler steps) must be >= 1, got {n_steps!r}")
    if prev is not None:
        if tuple(prev.shape) != (obs.shape[0], cfg.chunk, cfg.act_dim):
            raise ValueError(f"prev must be (B, {cfg.chunk}, {cfg.act_dim}) with B = len(obs), got {tuple(prev.shape)}")
        if not torch.isfinite(prev).all():
            raise ValueError("prev (the committed plan) holds NaN or inf")
    if d is not None:
        dd = torch.as_tensor(d)
        if int(dd.min()) < 0 or int(dd.max()) > cfg.chunk:
            raise ValueError(f"delay d must lie in [0, chunk = {cfg.chunk}], got {dd.tolist()}")


@torch.no_grad()
def sample_flow(policy, obs: torch.Tensor, n_steps: int = 5, generator: torch.Generator | None = None) -> torch.Tensor:
    """Plain flow sampling from Gaussian noise at s = 0 to s = 1 with n Euler steps (the base policy; naive async)."""
    check_inputs(policy, obs, n_steps=n_steps)
    cfg = policy.cfg
    x = torch.randn(obs.shape[0], cfg.chunk, cfg.act_dim, generator=generator)
    for k in range(n_steps):
        x = x + policy(obs, x, torch.full((obs.shape[0],), k / n_steps)) / n_steps
    return x


@torch.no_grad()
def sample_prefix_preserved(policy, obs: torch.Tensor, prev: torch.Tensor, d: int | torch.Tensor, n_steps: int = 5,
                            init: str = "prefix_tail_zeros", generator: torch.Generator | None = None):  # fmt: skip
    """REMAC §3.4: A^{s+1/n} = m ⊙ (A^s + v(A^s, o, s, m) / n) + (1 - m) ⊙ A^p with m = m_d and A^p = prev.

    init="prefix_tail_zeros" starts from prev itself (the official `x_init = action_to_execute`: the previous chunk's
    tail, zeros after it); init="noise" starts from Gaussian noise with the prefix clamped (our ablation)."""
    if init not in ("prefix_tail_zeros", "noise"):
        raise ValueError(f"init must be 'prefix_tail_zeros' or 'noise', got {init!r}")
    if prev is None:  # nothing committed (an episode's first chunk): plain sampling, mask all ones
        return sample_flow(policy, obs, n_steps, generator)
    check_inputs(policy, obs, prev, d, n_steps)
    b = obs.shape[0]
    d = torch.full((b,), int(d)) if not torch.is_tensor(d) else d.long()
    m = prefix_mask(d, policy.cfg.chunk)
    x = prev.clone() if init == "prefix_tail_zeros" else torch.randn(prev.shape, generator=generator)
    x = m * x + (1 - m) * prev
    for k in range(n_steps):
        v = policy(obs, x, torch.full((b,), k / n_steps), d)
        x = m * (x + v / n_steps) + (1 - m) * prev  # the committed prefix is clamped at every step
    return x


def rtc_weights(d: int, horizon: int, chunk: int, schedule: str = "exp") -> torch.Tensor:
    """RTC's soft prefix mask W (Black et al. 2025, Eq. 5; official `get_prefix_weights(d, P - h, P)`): 1 on the
    frozen positions tau < d, decaying over the rest of the overlap with the previous chunk (tau < P - h), 0 after."""
    if schedule not in ("exp", "linear", "ones", "zeros"):
        raise ValueError(f"schedule must be one of exp/linear/ones/zeros, got {schedule!r}")
    if not 0 <= d <= horizon <= chunk - d:
        raise ValueError(f"RTC needs 0 <= d <= h <= P - d, got d={d}, h={horizon}, P={chunk}; lower d or change h")
    end = chunk - horizon
    start = min(d, end)
    idx = torch.arange(chunk, dtype=torch.float32)
    if schedule == "ones":
        w = torch.ones(chunk)
    elif schedule == "zeros":
        w = (idx < start).float()
    else:
        w = ((start - 1 - idx) / (end - start + 1) + 1).clamp(0, 1)
        if schedule == "exp":
            w = w * torch.expm1(w) / (math.e - 1)
    return torch.where(idx >= end, torch.zeros(()), w)


def sample_rtc(policy, obs: torch.Tensor, prev: torch.Tensor, d: int, horizon: int, n_steps: int = 5,
               max_guidance: float = 5.0, schedule: str = "exp", generator: torch.Generator | None = None):  # fmt: skip
    """Real-time chunking (RTC): flow sampling from noise with pseudo-inverse guidance towards the previous chunk.

    At each step: A1 = x + (1 - s) v(x) (one-step estimate), e = W ⊙ (prev - A1), g = e^T dA1/dx (a vector-Jacobian
    product: the extra backward pass), weight = min(beta, (1 - s) / s * (s^2 + (1 - s)^2) / (1 - s)^2), and
    x <- x + (v + weight g) / n. beta = max_guidance (RTC: 5)."""
    if prev is None:  # nothing to guide towards (an episode's first chunk)
        return sample_flow(policy, obs, n_steps, generator)
    check_inputs(policy, obs, prev, d, n_steps)
    b, cfg = obs.shape[0], policy.cfg
    w = rtc_weights(d, horizon, cfg.chunk, schedule)[None, :, None]
    x = torch.randn(b, cfg.chunk, cfg.act_dim, generator=generator)
    for k in range(n_steps):
        s = k / n_steps
        st = torch.full((b,), s)
        with torch.enable_grad():
            xg = x.detach().requires_grad_(True)
            v = policy(obs, xg, st)
            a1 = xg + (1 - s) * v
            err = (w * (prev - a1)).detach()
            (g,) = torch.autograd.grad(a1, xg, grad_outputs=err)  # VJP: e^T dA1/dx
        inv_r2 = (s**2 + (1 - s) ** 2) / (1 - s) ** 2
        c = (1 - s) / s if s > 0 else math.inf
        weight = min(c * inv_r2, max_guidance)
        x = x + (v.detach() + weight * g) / n_steps
    return x.detach()
