"""`MultiBooleanLinear`: a drop-in replacement of ``nn.Linear`` as a sum of K Boolean kernels.

    y = Σ_k a_k ⊙ (S_k (b_k ⊙ x)) + bias          (MBOK's forward; weights only, activations stay floating point)

The signs ``S_k`` are int8 ±1 *buffers*, never parameters: there is no latent floating-point copy of a Boolean
weight. When a kernel is being finetuned, each forward pass makes a transient float view of its signs that requires
grad, so that autograd returns the Boolean signal ``g = ∂L/∂S_k = (a_k b_kᵀ) ⊙ (grad_yᵀ x)`` (summed over the batch);
:class:`~iclr26.compression.mbok.optim.BooleanOptimizer` turns it into bit flips. The scalings ``a_k, b_k`` are
ordinary parameters (trained by AdamW during finetuning).

On CPU the sum is computed as one dense matrix product (``Σ_k S_k ⊙ a_k b_kᵀ`` then ``F.linear``), which is exactly
the same function; the Boolean matrix–vector kernels that make MBOK fast (BitBLAS, INT1 × FP16) are GPU-only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .kernels import successive_svid


def _weight_and_bias(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``[d_out, d_in]`` weight and bias of an ``nn.Linear`` or a transformers ``Conv1D`` (gpt2)."""
    if isinstance(module, nn.Linear):
        return module.weight.detach(), None if module.bias is None else module.bias.detach()
    if type(module).__name__ == "Conv1D":  # y = x W + b with W [d_in, d_out]
        return module.weight.detach().T, None if module.bias is None else module.bias.detach()
    raise TypeError(f"expected an nn.Linear or a transformers Conv1D, got {type(module).__name__}")


class MultiBooleanLinear(nn.Module):
    """``y = Σ_k a_k ⊙ (S_k (b_k ⊙ x)) + bias`` with K Boolean kernels ``S_k ∈ {±1}^{out×in}``.

    Build one from a trained layer with :meth:`from_linear` (data-free successive SVID), or empty with the
    constructor (all kernels +1, zero scalings) and fill it with ``load_state_dict``.
    """

    def __init__(self, in_features: int, out_features: int, k: int = 2, bias: bool = True):
        super().__init__()
        if k < 1:
            raise ValueError(f"MultiBooleanLinear: number of kernels k must be ≥ 1, got {k!r}")
        if in_features < 1 or out_features < 1:
            raise ValueError(f"MultiBooleanLinear: features must be ≥ 1, got in={in_features}, out={out_features}")
        self.in_features, self.out_features, self.k = in_features, out_features, k
        self.register_buffer("signs", torch.ones(k, out_features, in_features, dtype=torch.int8))
        self.a = nn.Parameter(torch.zeros(k, out_features))
        self.b = nn.Parameter(torch.zeros(k, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.trainable_kernels: tuple[int, ...] = ()  # kernels whose Boolean signal is recorded (set by the optimiser)
        self.sign_leaves: dict[int, torch.Tensor] = {}  # transient float views of those kernels, from the last forward

    @classmethod
    def from_linear(cls, module: nn.Module, k: int = 2) -> MultiBooleanLinear:
        """Data-free initialisation from an ``nn.Linear`` / ``Conv1D`` by successive SVID of its weight."""
        w, bias = _weight_and_bias(module)
        layer = cls(w.shape[1], w.shape[0], k=k, bias=bias is not None)
        signs, a, b = successive_svid(w, k)
        with torch.no_grad():
            layer.signs.copy_(signs)
            layer.a.copy_(a)
            layer.b.copy_(b)
            if bias is not None:
                layer.bias.copy_(bias.float())
        return layer.to(w.device)

    def kernel_weight(self, i: int, signs: torch.Tensor | None = None) -> torch.Tensor:
        """``S_i ⊙ (a_i b_iᵀ)`` as a dense matrix."""
        s = self.signs[i].to(self.a.dtype) if signs is None else signs
        return s * torch.outer(self.a[i], self.b[i])

    def dense_weight(self) -> torch.Tensor:
        """``Σ_k S_k ⊙ (a_k b_kᵀ)``; finetuned kernels enter as fresh float leaves that collect ``∂L/∂S_k``."""
        self.sign_leaves = {}
        record = torch.is_grad_enabled() and self.trainable_kernels
        w = None
        for i in range(self.k):
            leaf = None
            if record and i in self.trainable_kernels:
                leaf = self.signs[i].to(self.a.dtype).requires_grad_(True)
                self.sign_leaves[i] = leaf
            term = self.kernel_weight(i, leaf)
            w = term if w is None else w + term
        return w

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = None if self.bias is None else self.bias.to(x.dtype)
        tokens = x.numel() // self.in_features
        if tokens >= self.out_features:  # many tokens: one dense product is cheapest
            return F.linear(x, self.dense_weight().to(x.dtype), bias)
        # few tokens: y = Σ_k a_k ⊙ (S_k (b_k ⊙ x)) without forming a_k b_kᵀ (same function, K thin products)
        self.sign_leaves = {}
        record = torch.is_grad_enabled() and self.trainable_kernels
        y = None
        for i in range(self.k):
            s = self.signs[i].to(x.dtype)
            if record and i in self.trainable_kernels:
                self.sign_leaves[i] = s = s.requires_grad_(True)
            term = F.linear(x * self.b[i].to(x.dtype), s) * self.a[i].to(x.dtype)
            y = term if y is None else y + term
        return y if bias is None else y + bias

    @property
    def n_weights(self) -> int:
        return self.in_features * self.out_features

    def extra_repr(self) -> str:
        bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, k={self.k}, bias={bias}"
