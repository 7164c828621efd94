"""The Boolean optimiser: finetuning in the Boolean domain by accumulated bit flips, with no latent weights.

BOLD-style rule (Nguyen et al., NeurIPS 2024, https://arxiv.org/abs/2405.16339; used by MBOK §4 for the last kernel).
For a Boolean kernel ``s ∈ {±1}`` with loss signal ``g = ∂L/∂s`` (the "variation"; with floating-point activations it
is the gradient with respect to the ±1 entries):

    m ← β m + η ĝ                 one accumulator per Boolean weight: the only optimiser state
    flip where  m ⊙ s ≥ 1         the accumulated signal says "move s towards −s" strongly enough
    s[flip] ← −s[flip];  m[flip] ← 0
    β ← 1 − (fraction flipped)    adaptive decay (β starts at 0, as in the public BOLD code)

``ĝ = g / rms(g)`` per kernel and step (our choice, stated in the docs: the raw gradient's scale differs by orders of
magnitude between layers and models, so a single η would flip nothing in one layer and everything in another; with
the normalisation η is "steps of typical signal per flip"). The accumulator is kept in float16 by default (the
paper: one 16-bit momentum per Boolean weight).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from .layer import MultiBooleanLinear

KERNEL_CHOICES = ("last", "all")


class BooleanOptimizer:
    """Bit-flip optimiser over the Boolean kernels of some :class:`MultiBooleanLinear` layers.

    ``kernels="last"`` trains only ``S_K`` of each layer (the paper's choice), ``"all"`` every kernel (its ablation).
    Call after ``loss.backward()``: ``opt.step()``; ``opt.zero_grad()`` before the next forward is not needed (each
    forward makes fresh sign leaves) but is provided for symmetry with torch optimisers.
    """

    def __init__(
        self,
        layers: Iterable[MultiBooleanLinear],
        lr: float = 0.05,
        kernels: str = "last",
        accum_dtype: torch.dtype = torch.float16,
        normalize: bool = True,
    ):
        if not lr > 0:
            raise ValueError(f"BooleanOptimizer.lr must be > 0, got {lr!r}")
        if kernels not in KERNEL_CHOICES:
            raise ValueError(f"BooleanOptimizer.kernels must be one of {KERNEL_CHOICES}, got {kernels!r}")
        self.layers = [m for m in layers if isinstance(m, MultiBooleanLinear)]
        if not self.layers:
            raise ValueError("BooleanOptimizer got no MultiBooleanLinear layers: run quantize_model(model) first")
        self.lr, self.kernels, self.normalize = lr, kernels, normalize
        self.state: dict[tuple[int, int], dict] = {}
        for li, layer in enumerate(self.layers):
            idx = (layer.k - 1,) if kernels == "last" else tuple(range(layer.k))
            layer.trainable_kernels = idx
            for i in idx:
                shape = (layer.out_features, layer.in_features)
                self.state[(li, i)] = {"accum": torch.zeros(shape, dtype=accum_dtype), "beta": 0.0}
        self.flips = 0  # since the last read of flip_rate()
        self.seen = 0

    @torch.no_grad()
    def step(self) -> int:
        """Apply the accumulate-and-flip rule to every trained kernel; returns the number of flips."""
        total = 0
        for (li, i), st in self.state.items():
            layer = self.layers[li]
            leaf = layer.sign_leaves.get(i)
            if leaf is None or leaf.grad is None:
                continue
            g = leaf.grad.float()
            if self.normalize:
                g = g / (g.pow(2).mean().sqrt() + 1e-30)
            m = st["beta"] * st["accum"].float() + self.lr * g  # m ← β m + η ĝ
            s = layer.signs[i]
            flip = m * s.float() >= 1.0  # flip where m ⊙ s ≥ 1
            s[flip] = -s[flip]
            m[flip] = 0.0
            st["accum"].copy_(m.to(st["accum"].dtype))
            n = int(flip.sum())
            st["beta"] = 1.0 - n / flip.numel()  # β ← 1 − flip fraction
            total += n
            self.seen += flip.numel()
        self.flips += total
        self.zero_grad()
        return total

    def zero_grad(self) -> None:
        for layer in self.layers:
            layer.sign_leaves = {}

    def flip_rate(self) -> float:
        """Flips per trained Boolean weight per step since the last call."""
        rate = self.flips / max(1, self.seen)
        self.flips = self.seen = 0
        return rate

    def state_tensors(self) -> list[torch.Tensor]:
        """Every tensor this optimiser keeps between steps (for measuring its memory)."""
        return [st["accum"] for st in self.state.values()]

    def n_trained(self) -> int:
        return sum(st["accum"].numel() for st in self.state.values())

    def release(self) -> None:
        """Stop recording Boolean signals in the layers (after finetuning)."""
        for layer in self.layers:
            layer.trainable_kernels = ()
            layer.sign_leaves = {}
