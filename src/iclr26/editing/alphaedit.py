"""AlphaEdit: Null-Space Constrained Knowledge Editing — Fang, Jiang, Wang, Ma, Wang, He, Chua (ICLR 2025),
https://arxiv.org/abs/2410.02355.

AlphaEdit keeps MEMIT's targets and residual spreading but removes the trade-off between writing new facts and keeping
old ones: the update is projected onto the null space of the preserved keys ``K₀``, so ``(W + ΔP) K₀ = W K₀`` exactly.
``P = Û Ûᵀ`` where ``Û`` holds the eigenvectors of ``K₀K₀ᵀ`` (here the key covariance ``C``) whose eigenvalues are
below a small threshold (§3.2). With the keys ``K_p`` of earlier edits in a sequence, the projected update has the
closed form (Eq. 12) ``ΔP = R K₁ᵀ P (K_p K_pᵀ P + K₁ K₁ᵀ P + α I)⁻¹``, added to ``W`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .base import EditState, _check
from .memit import MEMIT, MEMITConfig


@dataclass
class AlphaEditConfig(MEMITConfig):
    """AlphaEdit's hyper-parameters; defaults are the official GPT-2 XL settings (AlphaEdit repo / EasyEdit
    hparams/AlphaEdit/gpt2-xl.yaml); value-optimisation fields are MEMIT's."""

    nullspace_threshold: float = field(
        default=2e-2,
        metadata={
            "help": "eigenvalues of C below this span the null space (AlphaEdit gpt2-xl.yaml: 2e-2; the paper's text "
            "says 1e-2). Absolute, so it depends on the key scale of the model"
        },
    )
    l2: float = field(
        default=10.0,
        metadata={"help": "α, the ridge weight on ||ΔP||² (AlphaEdit gpt2-xl.yaml 'L2': 10; Eq. 12 writes I, i.e. 1)"},
    )

    def __post_init__(self):
        super().__post_init__()
        _check(self, "nullspace_threshold", self.nullspace_threshold > 0, "> 0")
        _check(self, "l2", self.l2 > 0, "> 0")


def nullspace_projector(c: torch.Tensor, threshold: float) -> torch.Tensor:
    """``P = Û Ûᵀ``, ``Û`` = eigenvectors of the symmetric ``c`` with eigenvalue < ``threshold`` (float64)."""
    evals, evecs = torch.linalg.eigh(c.double())
    u = evecs[:, evals < threshold]
    return u @ u.T


def alphaedit_delta(
    k: torch.Tensor, r: torch.Tensor, p: torch.Tensor, kp_kpt: torch.Tensor | None = None, l2: float = 1.0
) -> torch.Tensor:
    """AlphaEdit Eq. 12: ``ΔP = R K₁ᵀ P (K_p K_pᵀ P + K₁ K₁ᵀ P + α I)⁻¹``.

    ``k`` ``[d_in, n]``, ``r`` ``[d_out, n]``, ``p`` ``[d_in, d_in]``, ``kp_kpt = K_p K_pᵀ`` (or None); float64.
    Solved as the transposed system ``(P (K_pK_pᵀ + K₁K₁ᵀ) + α I) X = P K₁ Rᵀ``, ``ΔP = Xᵀ``."""
    k, r, p = k.double(), r.double(), p.double()
    m = k @ k.T if kp_kpt is None else kp_kpt.double() + k @ k.T
    a = p @ m + l2 * torch.eye(p.shape[0], dtype=torch.float64)
    return torch.linalg.solve(a, p @ k @ r.T).T


class AlphaEdit(MEMIT):
    """MEMIT's targets and spreading with the null-space-projected solver; remembers edited keys across batches."""

    name = "AlphaEdit"
    config_class = AlphaEditConfig

    def projector(self, model, tok, layer: int) -> torch.Tensor:
        key = ("P", id(model), layer)
        if key not in self._cov:
            self._cov[key] = nullspace_projector(self.covariance(model, tok, layer), self.cfg.nullspace_threshold)
        return self._cov[key]

    def layer_update(self, model, tok, layer: int, k: torch.Tensor, r: torch.Tensor, state: EditState):
        p = self.projector(model, tok, layer)
        kp = state.extra.setdefault("alphaedit_kpkpt", {})
        delta = alphaedit_delta(k.T, r.T, p, kp.get(layer), self.cfg.l2)
        kd = k.double()
        kp[layer] = kd.T @ kd if layer not in kp else kp[layer] + kd.T @ kd  # K_p ← [K_p, K₁]
        return delta
