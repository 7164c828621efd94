"""DE-LoRA: a LoRA layer whose down-projection A is one task-shared subspace and whose up-projections B_t are
per-task experts (Uni-Walker, Wang et al., ICLR 2026, https://arxiv.org/abs/2603.06073, §3).

Standard LoRA writes W = W0 + (alpha/r) B A. Uni-Walker reads A (r x d_in) as the encoder into a subspace that all
tasks share and keep refining, and each B_t (d_out x r) as a decoder expert that belongs to task t:

    y = W0 x + (alpha/r) * sum_{n in active} w_n B_n A x                                  (DE-LoRA forward)

The layer keeps peft's conventions (``lora_A`` initialised Kaiming-uniform with a = sqrt(5), experts zero, scaling
alpha / r), so with one expert it *is* a peft LoRA layer (a test checks this). Beside the layer, the three
regularisers and the initialiser of the paper:

- KIS (knowledge inheritance): B_t <- mat(mu + (1/k) sum_{j<=k} u_j), mu and u_j the mean and top-k principal
  directions of the flattened same-style experts;
- SSC (shared subspace consolidation): lambda_ssc * sum F_A * (A - A_prev)^2, F_A a running Fisher of A;
- ESOC (expert subspace orthogonality): lambda_esoc * sum_{i<t} |tr(B~_i^T B~_t)|, B~ Frobenius-normalised.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class DELoRALinear(nn.Module):
    """A frozen `nn.Linear` plus a shared ``lora_A`` and a dictionary of expert up-projections."""

    def __init__(self, base: nn.Linear, r: int = 16, alpha: float = 32.0):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"DELoRALinear wraps an nn.Linear, got {type(base).__name__}")
        if r < 1 or alpha <= 0:
            raise ValueError(f"need r >= 1 and alpha > 0, got r={r!r}, alpha={alpha!r}")
        self.base, self.r, self.scaling = base, r, alpha / r
        for p in base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # as peft's LoRA init
        self.experts = nn.ParameterDict()
        self.active: list[tuple[str, float]] = []

    def add_expert(self, name: str, init: torch.Tensor | None = None) -> nn.Parameter:
        """A new expert B (zero, as LoRA's B, unless KIS gives an initial value)."""
        if name in self.experts:
            raise ValueError(f"expert {name!r} exists already")
        shape = (self.base.out_features, self.r)
        if init is not None and tuple(init.shape) != shape:
            raise ValueError(f"expert init must have shape {shape}, got {tuple(init.shape)}")
        self.experts[name] = nn.Parameter(torch.zeros(shape) if init is None else init.detach().clone())
        return self.experts[name]

    def set_active(self, names, weights=None) -> None:
        names = list(names)
        missing = [n for n in names if n not in self.experts]
        if missing:
            raise KeyError(f"unknown experts {missing}; known: {list(self.experts)}")
        weights = [1.0] * len(names) if weights is None else list(weights)
        self.active = list(zip(names, weights))

    def freeze_experts(self, names) -> None:
        for n in names:
            self.experts[n].requires_grad_(False)

    def delta_B(self) -> torch.Tensor | None:
        if not self.active:
            return None
        return sum(w * self.experts[n] for n, w in self.active)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        b = self.delta_B()
        if b is None:
            return y
        # DE-LoRA forward: W0 x + (alpha/r) (sum_n w_n B_n) A x
        return y + self.scaling * F.linear(F.linear(x, self.lora_A), b)


def inject(model: nn.Module, targets, factory) -> dict[str, nn.Module]:
    """Replace each child Linear named in `targets` by ``factory(linear)``; returns {name: new module}."""
    out = {}
    for name in targets:
        old = getattr(model, name, None)
        if not isinstance(old, nn.Linear):
            raise ValueError(f"target {name!r} is not an nn.Linear child of {type(model).__name__}")
        setattr(model, name, factory(old))
        out[name] = getattr(model, name)
    return out


def kis_init(same_style: list[torch.Tensor], n_components: int = 3) -> torch.Tensor | None:
    """Knowledge inheritance: mean of the same-style experts plus the mean of their top principal directions.

    B_t <- mat(mu + (1/k) sum_{j=1..k} u_j) (paper §3.2); k = min(n_components, n - 1). With one expert the copy,
    with none `None` (zero init). Signs of the u_j follow sklearn's `svd_flip` (largest |entry| positive)."""
    if not same_style:
        return None
    m = torch.stack([b.detach().flatten() for b in same_style])
    mu = m.mean(0)
    k = min(n_components, m.shape[0] - 1)
    if k < 1:
        return mu.reshape(same_style[0].shape).clone()
    _, _, vt = torch.linalg.svd(m - mu, full_matrices=False)
    u = vt[:k]
    u = u * torch.sign(u.gather(1, u.abs().argmax(1, keepdim=True)))
    return (mu + u.mean(0)).reshape(same_style[0].shape)


def esoc_penalty(new: torch.Tensor, old: list[torch.Tensor]) -> torch.Tensor:
    """ESOC: sum_i |tr(B~_i^T B~_t)| with Frobenius-normalised experts (the trace of B_i^T B_t is their inner
    product)."""
    if not old:
        return new.sum() * 0.0
    bt = new / new.norm().clamp(min=1e-8)
    return sum((b / b.norm().clamp(min=1e-8) * bt).sum().abs() for b in old)


def ssc_penalty(a: torch.Tensor, a_prev: torch.Tensor, fisher: torch.Tensor) -> torch.Tensor:
    """SSC: sum F_A * (A' - A)^2 (the code's form of ||F_A (.) (A' - A)||^2)."""
    return (fisher * (a - a_prev) ** 2).sum()
