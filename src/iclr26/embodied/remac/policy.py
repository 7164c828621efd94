"""The flow-matching action-chunk policy of REMAC / RTC on Kinetix: an MLP-Mixer over the P positions of a chunk.

Each of the P tokens is the concatenation of the noisy action x_s[tau], the observation o (repeated) and one *prefix
bit* b_tau = 1 - m_d^tau (1 on committed positions tau < d). A linear input projection maps tokens to C channels;
`n_blocks` mixer blocks alternate token mixing (across positions) and channel mixing, each modulated by adaLN from
the flow-time embedding (sin-cos features of s, then an MLP; the adaLN projections start at zero, as in the official
code); a final adaLN + linear head gives the velocity v(o, x_s, s) in R^{P x A}.

The prefix bit is ours: the official code feeds the mask through a learned projection added to each LoRA branch's
input. Here it is a column of the input projection that the base never uses (base training always sees b = 0, so its
weights there get no gradient and stay at their zero initialisation, and the base is exactly mask-blind); LoRA on the
input projection then learns a mask embedding, and merging LoRA stays exact (no mask-dependent branch at inference).

Flow convention (pi0 / official code): x_s = (1 - s) eps + s A, target velocity u = A - eps, sampling integrates s from
0 (noise) to 1 (actions) with Euler steps x <- x + v / n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass(frozen=True)
class MixerConfig:
    obs_dim: int
    act_dim: int
    chunk: int = field(default=8, metadata={"help": "chunk length P (paper Kinetix code: 8)"})
    channels: int = field(default=32, metadata={"help": "channel width C (paper code: 256; ours, CPU budget)"})
    channel_hidden: int = field(default=64, metadata={"help": "channel-MLP width (paper code: 512; ours)"})
    token_hidden: int = field(default=16, metadata={"help": "token-MLP width (paper code: 64; ours)"})
    n_blocks: int = field(default=4, metadata={"help": "mixer blocks (paper code: 4)"})

    def __post_init__(self):
        for name in ("obs_dim", "act_dim", "chunk", "channels", "channel_hidden", "token_hidden", "n_blocks"):
            if getattr(self, name) < 1:
                raise ValueError(f"MixerConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.channels % 2:
            raise ValueError(f"MixerConfig.channels must be even (sin-cos time features), got {self.channels}")


def posemb_sincos(s: torch.Tensor, dim: int, min_period: float = 4e-3, max_period: float = 4.0) -> torch.Tensor:
    """Sin-cos features of the flow time s in [0, 1] (periods between 4e-3 and 4, as the official code)."""
    frac = torch.linspace(0.0, 1.0, dim // 2, device=s.device)
    period = min_period * (max_period / min_period) ** frac
    ang = s[:, None] * (2 * math.pi / period)[None]
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1)


def _zero_linear(i: int, o: int) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.zeros_(lin.weight), nn.init.zeros_(lin.bias)
    return lin


class MixerBlock(nn.Module):
    """Token mixing then channel mixing, both pre-normed and modulated by adaLN (scale, shift, gate) from time."""

    def __init__(self, cfg: MixerConfig):
        super().__init__()
        c = cfg.channels
        self.token_in = nn.Linear(cfg.chunk, cfg.token_hidden, bias=False)
        self.token_out = nn.Linear(cfg.token_hidden, cfg.chunk, bias=False)
        self.channel_in = nn.Linear(c, cfg.channel_hidden, bias=False)
        self.channel_out = nn.Linear(cfg.channel_hidden, c, bias=False)
        self.norm1 = nn.LayerNorm(c, elementwise_affine=False)
        self.norm2 = nn.LayerNorm(c, elementwise_affine=False)
        self.adaln1, self.adaln2 = _zero_linear(c, 3 * c), _zero_linear(c, 3 * c)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        sc1, sh1, g1 = self.adaln1(temb)[:, None].chunk(3, dim=-1)
        sc2, sh2, g2 = self.adaln2(temb)[:, None].chunk(3, dim=-1)
        y = (self.norm1(x) * (1 + sc1) + sh1).transpose(1, 2)  # (B, C, P): mix across positions
        x = x + g1 * self.token_out(nn.functional.gelu(self.token_in(y))).transpose(1, 2)
        y = self.norm2(x) * (1 + sc2) + sh2
        return x + g2 * self.channel_out(nn.functional.gelu(self.channel_in(y)))


class FlowChunkPolicy(nn.Module):
    """v(o, x_s, s, prefix bits) for chunks x of shape (B, P, A); see the module docstring."""

    def __init__(self, cfg: MixerConfig):
        super().__init__()
        self.cfg = cfg
        c = cfg.channels
        self.in_proj = nn.Linear(cfg.act_dim + cfg.obs_dim + 1, c)
        with torch.no_grad():
            self.in_proj.weight[:, -1].zero_()  # the prefix-bit column: unused by the base (see docstring)
        self.time_mlp = nn.Sequential(nn.Linear(c, c), nn.SiLU(), nn.Linear(c, c), nn.SiLU())
        self.blocks = nn.ModuleList(MixerBlock(cfg) for _ in range(cfg.n_blocks))
        self.final_norm = nn.LayerNorm(c, elementwise_affine=False)
        self.final_adaln = _zero_linear(c, 2 * c)
        self.out_proj = nn.Linear(c, cfg.act_dim)

    def forward(self, obs: torch.Tensor, x: torch.Tensor, s: torch.Tensor, d: torch.Tensor | None = None):
        """obs (B, O), x (B, P, A), s (B,) flow times, d (B,) committed prefix lengths (None: 0)."""
        b, p, _ = x.shape
        if obs.shape[0] != b or x.shape[1:] != (self.cfg.chunk, self.cfg.act_dim):
            want = f"(B, {self.cfg.chunk}, {self.cfg.act_dim}) with B = len(obs)"
            raise ValueError(f"x must be {want}, got {tuple(x.shape)}")
        bit = torch.zeros(b, p, 1) if d is None else (torch.arange(p)[None] < d[:, None]).float()[..., None]
        temb = self.time_mlp(posemb_sincos(s.expand(b) if s.dim() == 0 else s, self.cfg.channels))
        h = self.in_proj(torch.cat([x, obs[:, None].expand(b, p, obs.shape[-1]), bit], dim=-1))
        for blk in self.blocks:
            h = blk(h, temb)
        sc, sh = self.final_adaln(temb)[:, None].chunk(2, dim=-1)
        return self.out_proj(self.final_norm(h) * (1 + sc) + sh)


def prefix_mask(d: torch.Tensor, chunk: int) -> torch.Tensor:
    """m_d^tau = 1[tau >= d] (REMAC §3.2): 1 on positions to generate, 0 on the committed prefix. Shape (B, P, 1)."""
    if len(d) and (int(d.min()) < 0 or int(d.max()) > chunk):
        raise ValueError(f"committed prefix lengths d must lie in [0, {chunk}], got {d.tolist()}")
    return (torch.arange(chunk)[None] >= d[:, None]).float()[..., None]
