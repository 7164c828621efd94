"""LoRA layers of the baselines Uni-Walker compares with (peft's plain LoRA serves Seq-FT and joint training).

- O-LoRA (Wang et al., EMNLP Findings 2023, arXiv:2310.14152): one LoRA (A_t, B_t) per task, old ones frozen and
  summed in the forward pass; the new A_t is pushed orthogonal to the old ones by sum_i ||A_i A_t^T||^2.
- SD-LoRA (Wu et al., ICLR 2025, arXiv:2501.13198): each finished task leaves a frozen unit-norm direction
  D_i = B_i A_i / ||B_i A_i||_F and a magnitude alpha_i; W = W0 + sum_i alpha_i D_i + (current LoRA), and all
  magnitudes keep being learnt on later tasks.
- HydraLoRA (Tian et al., NeurIPS 2024, arXiv:2404.19245): one shared A, N heads B_n mixed by a softmax router
  g(x); W x = W0 x + s sum_n g_n(x) B_n A x; here trained sequentially with every part trainable.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _frozen(base: nn.Linear) -> nn.Linear:
    for p in base.parameters():
        p.requires_grad_(False)
    return base


def _new_a(r: int, d_in: int) -> nn.Parameter:
    a = nn.Parameter(torch.empty(r, d_in))
    nn.init.kaiming_uniform_(a, a=math.sqrt(5))
    return a


class OLoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int = 16, alpha: float = 32.0):
        super().__init__()
        self.base, self.r, self.scaling = _frozen(base), r, alpha / r
        self.lora_A, self.lora_B = nn.ParameterDict(), nn.ParameterDict()
        self.active: list[str] = []

    def add_task(self, name: str) -> None:
        for p in list(self.lora_A.values()) + list(self.lora_B.values()):
            p.requires_grad_(False)
        self.lora_A[name] = _new_a(self.r, self.base.in_features)
        self.lora_B[name] = nn.Parameter(torch.zeros(self.base.out_features, self.r))

    def orth_penalty(self, name: str) -> torch.Tensor:
        """O-LoRA Eq. 6: sum over old tasks i of sum_{j,k} |(A_i A_t^T)_{jk}|^2."""
        a = self.lora_A[name]
        return sum(((o @ a.T) ** 2).sum() for n, o in self.lora_A.items() if n != name) + a.sum() * 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        for n in self.active:
            y = y + self.scaling * F.linear(F.linear(x, self.lora_A[n]), self.lora_B[n])
        return y


class SDLoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int = 16, alpha: float = 32.0):
        super().__init__()
        self.base, self.r, self.scaling = _frozen(base), r, alpha / r
        self.directions: list[torch.Tensor] = []  # frozen unit-norm directions D_i (d_out x d_in)
        self.magnitudes = nn.ParameterList()
        self.lora_A = self.lora_B = None
        self.n_active = 0  # directions 0..n_active-1 are used
        self.current_on = False

    def start_task(self) -> None:
        self.lora_A = _new_a(self.r, self.base.in_features)
        self.lora_B = nn.Parameter(torch.zeros(self.base.out_features, self.r))
        self.n_active, self.current_on = len(self.directions), True

    def finish_task(self) -> None:
        """Turn the current LoRA into a direction D = s B A / ||s B A||_F with magnitude ||s B A||_F."""
        with torch.no_grad():
            delta = self.scaling * self.lora_B @ self.lora_A
            norm = float(delta.norm())
        self.directions.append(delta / max(norm, 1e-12))
        self.magnitudes.append(nn.Parameter(torch.tensor(norm)))
        self.lora_A = self.lora_B = None
        self.n_active, self.current_on = len(self.directions), False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        if self.n_active:
            w = sum(self.magnitudes[i] * self.directions[i] for i in range(self.n_active))
            y = y + F.linear(x, w)
        if self.current_on and self.lora_A is not None:
            y = y + self.scaling * F.linear(F.linear(x, self.lora_A), self.lora_B)
        return y


class HydraLoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int = 16, alpha: float = 32.0, n_heads: int = 4):
        super().__init__()
        if n_heads < 1:
            raise ValueError(f"n_heads must be >= 1, got {n_heads!r}")
        self.base, self.r, self.scaling = _frozen(base), r, alpha / r
        self.lora_A = _new_a(r, base.in_features)
        self.lora_B = nn.Parameter(torch.zeros(n_heads, base.out_features, r))
        self.router = nn.Linear(base.in_features, n_heads, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.softmax(self.router(x), -1)  # (n, N) router weights
        h = F.linear(x, self.lora_A)  # (n, r)
        heads = torch.einsum("nr,kor->nko", h, self.lora_B)  # (n, N, d_out)
        return self.base(x) + self.scaling * (g.unsqueeze(-1) * heads).sum(1)
