"""The paper's mask-gated LoRA (official `src_lora/model_async_lora.py`, `LoRALinear`), and FLOP counts per chunk.

The official REMAC LoRA layer makes each LoRA branch mask-aware and mask-gated: with the per-position mask
m (1 on positions to generate, 0 on the committed prefix; shape (B, P, 1)),

    x_lora = x + W_m m + b_m              (a learned projection of the mask added to the branch's input)
    y      = W0 x + m ⊙ (alpha / r) B A x_lora

on the input projection, the channel-mixing layers and the output head; the token-mixing layers (which mix across
positions, so a per-position mask does not apply) get a plain LoRA branch (official: ``mask=None`` there). Because the
branch depends on m through a product, it cannot be folded into W0: the gated model must run its LoRA branches at
inference, unlike our default mask-as-input-column form (`policy.py`), whose merge is exact. `GatedLoRAPolicy` wraps
a frozen `FlowChunkPolicy` this way; `chunk_flops` counts what one sampled chunk costs (torch's FLOP counter, so the
latency claims are decided on a deterministic count, wall time being reported beside it).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from .policy import FlowChunkPolicy, prefix_mask


class MaskGatedLoRALinear(nn.Module):
    """A frozen `nn.Linear` plus a LoRA branch that, when ``gated``, reads a mask projection and is gated by the mask
    (set ``.mask`` to a (B, P, 1) tensor before the call; None: the plain branch, as the official ``mask=None``)."""

    def __init__(self, base: nn.Linear, r: int = 4, alpha: float = 8.0, dropout: float = 0.1, gated: bool = True):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"MaskGatedLoRALinear wraps an nn.Linear, got {type(base).__name__}")
        if r < 1 or alpha <= 0 or not 0 <= dropout < 1:
            raise ValueError(f"need r >= 1, alpha > 0, 0 <= dropout < 1; got {r!r}, {alpha!r}, {dropout!r}")
        self.base, self.scaling, self.gated = base, alpha / r, gated
        for p in base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)  # starts at the base (the official code draws B at random; see the docs)
        self.drop = nn.Dropout(dropout)
        self.mask_proj = nn.Linear(1, base.in_features) if gated else None
        if gated:
            nn.init.zeros_(self.mask_proj.weight), nn.init.zeros_(self.mask_proj.bias)
        self.mask: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        m = self.mask if self.gated else None
        x_lora = x if m is None else x + self.mask_proj(m)
        delta = self.scaling * self.lora_B(self.drop(self.lora_A(x_lora)))  # official: dropout after A
        return y + (delta if m is None else m * delta)


class GatedLoRAPolicy(nn.Module):
    """A frozen `FlowChunkPolicy` with the official mask-gated LoRA; called as the policy, v(obs, x, s, d)."""

    def __init__(self, base: FlowChunkPolicy, r: int = 4, alpha: float = 8.0, dropout: float = 0.1):
        super().__init__()
        self.net = copy.deepcopy(base)
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.cfg = base.cfg

        def wrap(owner, name, gated):
            layer = MaskGatedLoRALinear(getattr(owner, name), r, alpha, dropout, gated)
            setattr(owner, name, layer)
            return layer

        self.layers = [wrap(self.net, "in_proj", True)]
        for blk in self.net.blocks:
            self.layers += [wrap(blk, "token_in", False), wrap(blk, "token_out", False)]
            self.layers += [wrap(blk, "channel_in", True), wrap(blk, "channel_out", True)]
        self.layers.append(wrap(self.net, "out_proj", True))

    def trainable(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def forward(self, obs, x, s, d=None):
        m = None if d is None else prefix_mask(d, self.cfg.chunk)
        for layer in self.layers:
            layer.mask = m
        try:
            return self.net(obs, x, s, d)
        finally:
            for layer in self.layers:
                layer.mask = None

    def merge_and_unload(self):
        raise TypeError(
            "the mask-gated LoRA cannot be merged into plain weights (its branch is multiplied by the per-position "
            "mask); run it unmerged, or train with REMACConfig(lora='input_bit') for an exact merge"
        )


def chunk_flops(fn) -> int:
    """Floating-point operations of one call of ``fn()`` (e.g. sampling one chunk), counted with the formulas of
    `torch.utils.flop_counter` (matrix products, convolutions, attention; forward and the backward a VJP runs;
    deterministic for fixed shapes). A plain dispatch mode, not `FlopCounterMode`, whose module tracker breaks
    ``torch.autograd.grad`` inside the counted call (RTC's guidance)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class _Count(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            rule = flop_registry.get(func._overloadpacket)
            if rule is not None:
                _Count.total += int(rule(*args, **kwargs, out_val=out))
            return out

    with _Count():
        fn()
    return _Count.total
