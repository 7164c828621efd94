"""AlphaEdit: Null-Space Constrained Knowledge Editing — Fang, Jiang, Wang, Ma, Wang, He, Chua (ICLR 2025),
https://arxiv.org/abs/2410.02355.

AlphaEdit keeps MEMIT's targets and residual spreading but removes the trade-off between writing new facts and keeping
old ones: the update is projected onto the null space of the preserved keys ``K₀``, so ``(W + ΔP) K₀ = W K₀`` exactly.
``P = Û Ûᵀ`` where ``Û`` holds the eigenvectors of ``K₀K₀ᵀ`` (here the key covariance ``C``) whose eigenvalues are
below a small threshold (§3.2). With the keys ``K_p`` of earlier edits in a sequence, the projected update has the
closed form (Eq. 12) ``ΔP = R K₁ᵀ P (K_p K_pᵀ P + K₁ K₁ᵀ P + α I)⁻¹``, added to ``W`` directly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch

from .base import EditState
from .config import _check
from .memit import MEMIT, MEMITConfig


@dataclass
class AlphaEditConfig(MEMITConfig):
    """AlphaEdit's hyper-parameters; defaults are the official GPT-2 XL settings (AlphaEdit repo / EasyEdit
    hparams/AlphaEdit/gpt2-xl.yaml); value-optimisation fields are MEMIT's."""

    nullspace_threshold: float = field(
        default=2e-2,
        metadata={
            "help": "eigenvalues of C below this span the null space (AlphaEdit gpt2-xl.yaml: 2e-2, absolute; the "
            "paper's text says 1e-2). With nullspace_relative=True a fraction of C's largest eigenvalue instead"
        },
    )
    nullspace_relative: bool = field(
        default=False,
        metadata={
            "help": "False: the official absolute threshold (depends on the model's key scale); True: threshold = "
            "nullspace_threshold × λ_max(C), the same rule on any model (our option for tiny models)"
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


def nullspace_projector(c: torch.Tensor, threshold: float, relative: bool = False) -> torch.Tensor:
    """``P = Û Ûᵀ``, ``Û`` = eigenvectors of the symmetric ``c`` with eigenvalue < ``threshold`` (× the largest
    eigenvalue when ``relative``), float64."""
    return nullspace(c, threshold, relative)[0]


def nullspace(c: torch.Tensor, threshold: float, relative: bool = False) -> tuple[torch.Tensor, dict]:
    """The projector and what it keeps: ``null_dim`` (eigenvectors kept), ``d``, ``energy_share`` (share of
    ``tr C = E‖k‖²``, the preserved keys' energy, that lies in the kept space: 0 = the update cannot touch K₀),
    the threshold used, and the smallest and largest eigenvalue of ``C``."""
    evals, evecs = torch.linalg.eigh(c.double())
    thr = threshold * float(evals.max()) if relative else threshold
    keep = evals < thr
    u = evecs[:, keep]
    info = {
        "null_dim": int(keep.sum()),
        "d": int(c.shape[0]),
        "energy_share": float(evals[keep].clamp_min(0).sum() / evals.clamp_min(0).sum().clamp_min(1e-300)),
        "threshold": thr,
        "eig_min": float(evals.min()),
        "eig_max": float(evals.max()),
    }
    return u @ u.T, info


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
        """The null-space projector of ``layer`` (memoised by weight fingerprint); ``self.nullspace_info[layer]``
        records its dimension and the share of K₀'s energy it holds. Warns when it degenerates: ``P = I`` makes
        AlphaEdit plain ridge regression (no null-space constraint), ``P = 0`` forbids every update."""
        key = ("P", self.fingerprint(model), layer, self.cfg.nullspace_threshold, self.cfg.nullspace_relative)

        def make():
            return nullspace(
                self.covariance(model, tok, layer), self.cfg.nullspace_threshold, self.cfg.nullspace_relative
            )

        p, info = self._memo(key, make)
        if not hasattr(self, "nullspace_info"):
            self.nullspace_info = {}
        if self.nullspace_info.get(layer) != info:
            self.nullspace_info[layer] = info
            if info["null_dim"] in (0, info["d"]):
                what = "the identity (no null-space constraint: plain ridge regression)" if info["null_dim"] else "zero"
                warnings.warn(
                    f"{self.name}: the null-space projector of layer {layer} is {what}: threshold "
                    f"{info['threshold']:.3g} vs eigenvalues of C in [{info['eig_min']:.3g}, {info['eig_max']:.3g}]. "
                    "Choose nullspace_threshold inside that range (or nullspace_relative=True)",
                    stacklevel=2,
                )
        return p

    def negligible_hint(self) -> str:
        return (
            f"the null space (threshold {self.cfg.nullspace_threshold:g}, relative={self.cfg.nullspace_relative}) "
            f"leaves too little room for the edited keys, or α={self.cfg.l2:g} is large for this model's key scale; "
            "see nullspace_info"
        )

    def layer_update(self, model, tok, layer: int, k: torch.Tensor, r: torch.Tensor, state: EditState):
        p = self.projector(model, tok, layer)
        kp = state.extra.setdefault("alphaedit_kpkpt", {})
        delta = alphaedit_delta(k.T, r.T, p, kp.get(layer), self.cfg.l2)
        kd = k.double()
        kp[layer] = kd.T @ kd if layer not in kp else kp[layer] + kd.T @ kd  # K_p ← [K_p, K₁]
        return delta
