"""DiKE: Disentangling Knowledge Representations for LLM Editing.

Paper: Zhang et al., ICLR 2026, https://arxiv.org/abs/2505.18774 (§3.2–3.3, Eq. 11–19). No official code found.

Locate-then-edit editors (ROME, MEMIT, AlphaEdit) rewrite the FFN down-projection ``W`` so that the subject's key
``k*`` maps to a new value ``v*``. The subject representation ``h_s`` also carries the subject's *other* facts, so the
edit disturbs them ("fine-grained irrelevant knowledge"). DiKE first trains, once per model and layer, a disentangler
(:mod:`iclr26.editing.dike.disentangler`) that splits ``h_s`` into a target-related part ``z_r`` and an unrelated part
``z_u``. An edit then (1) optimises a correction ``δ`` of ``z_r`` only, giving ``h*_s = Rec(z_r + δ, z_u)``, and (2)
solves in closed form for the weight update that writes ``v* = h*_s − h^p_s`` while keeping ``z_u`` read from the new
hidden state unchanged — on the edited key and on the preserved keys:

    Ŵ = argmin ||Ŵk* − v*||² + ||ŴK0 − V0||² + ||W3(Ŵk* − v0)||² + ||W3(ŴK0 − V0)||²        (four-term objective)
    ⇒  Δ = (I + W3ᵀW3)⁻¹ (v* − W k*) k*ᵀ (K0K0ᵀ + k*k*ᵀ)⁻¹                                (closed form)

The left factor ``(I + W3ᵀW3)⁻¹`` shrinks the update along output directions that the unrelated branch reads.
With several requests (one batch), ``k*`` and ``v*`` become matrices ``K1``, ``V1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from iclr26.editing.base import Editor, EditState
from iclr26.editing.compute import compute_keys, optimize_delta
from iclr26.editing.config import _check
from iclr26.editing.dike.disentangler import Disentangler, KRDConfig, KRDSample, train_disentangler
from iclr26.editing.memit import MEMITConfig
from iclr26.editing.requests import EditRequest
from iclr26.lm.adapters import ModelAdapter, weight_of

__all__ = ["DiKE", "DiKEConfig", "KRDConfig", "KRDSample", "RelatedDelta", "dike_update", "four_term_objective"]


@dataclass
class DiKEConfig(MEMITConfig):
    """DiKE's edit hyper-parameters. The paper builds on MEMIT's machinery and gives no v*-optimisation or statistics
    values, so those are inherited from :class:`MEMITConfig` (same budget as the baselines)."""

    layers: tuple[int, ...] | None = field(
        default=None,
        metadata={
            "help": "the one edited FFN layer (the closed form is single-layer and rank-one per edit, paper §3.3); "
            "None = ROME's layer (17 of GPT-2 XL's 48) mapped by relative depth"
        },
    )
    mu: float = field(
        default=1.0,
        metadata={
            "help": "weight of the fine-grained terms, (I + μ W3ᵀW3)⁻¹; 1 = paper (Eq. 18–19); 0 = MEMIT's "
            "single-layer solve with DKE's target (the paper's 'w/o fine-grained constraint' ablation)"
        },
    )
    tke: bool = field(
        default=True,
        metadata={
            "help": "edit only the target-related component, h*_s = h_s + W5 δ (paper); False adds δ to h_s directly "
            "(the paper's 'w/o TKE' ablation)"
        },
    )

    def __post_init__(self):
        super().__post_init__()
        _check(self, "layers", self.layers is None or len(self.layers) == 1, "one layer (DiKE edits a single FFN)")
        _check(self, "mu", self.mu >= 0, "≥ 0")

    def default_layer_fractions(self):
        return (17 / 47, 17 / 47)


def dike_update(
    W: torch.Tensor, K1: torch.Tensor, V1: torch.Tensor, C0: torch.Tensor, W3: torch.Tensor, mu: float = 1.0
) -> torch.Tensor:
    """The closed-form minimiser ``Δ`` of the four-term objective (Eq. 19), solved in float64.

    W: [d, d_ff] FFN output weight; K1: [d_ff, n] edited keys; V1: [d, n] target values (FFN outputs);
    C0: [d_ff, d_ff] = K0K0ᵀ (λ-weighted key second moment); W3: [d, d] the disentangler's unrelated-branch weight.
    """
    d, d_ff = W.shape
    if K1.dim() == 1:
        K1 = K1[:, None]
    if V1.dim() == 1:
        V1 = V1[:, None]
    if K1.shape[0] != d_ff or V1.shape[0] != d or K1.shape[1] != V1.shape[1]:
        raise ValueError(
            f"shapes do not fit W {tuple(W.shape)}: K1 {tuple(K1.shape)} must be [d_ff, n], "
            f"V1 {tuple(V1.shape)} must be [d, n]"
        )
    if C0.shape != (d_ff, d_ff) or W3.shape != (d, d):
        raise ValueError(f"C0 {tuple(C0.shape)} must be [{d_ff}, {d_ff}] and W3 {tuple(W3.shape)} [{d}, {d}]")
    W, K1, V1, C0, W3 = (x.detach().double() for x in (W, K1, V1, C0, W3))
    R = V1 - W @ K1  # residual the edit must write: v* − W k*
    # MEMIT's least squares: Δ_MEMIT = R K1ᵀ (C0 + K1K1ᵀ)⁻¹, via a symmetric solve on the transposed system
    A = C0 + K1 @ K1.T
    delta_memit = torch.linalg.solve(A, K1 @ R.T).T
    # Eq. 19: left factor (I + μ W3ᵀW3)⁻¹ from the fine-grained preservation terms
    M = torch.eye(d, dtype=torch.float64) + mu * (W3.T @ W3)
    return torch.linalg.solve(M, delta_memit)


def four_term_objective(
    W_hat: torch.Tensor,
    W: torch.Tensor,
    K1: torch.Tensor,
    V1: torch.Tensor,
    K0: torch.Tensor,
    W3: torch.Tensor,
    mu: float = 1.0,
) -> torch.Tensor:
    """The objective of Eq. 18 at ``Ŵ`` (with ``V0 = W K0`` and ``v0 = W K1``): for tests and diagnostics."""
    V0, v0 = W @ K0, W @ K1
    return (
        (W_hat @ K1 - V1).pow(2).sum()
        + (W_hat @ K0 - V0).pow(2).sum()
        + mu * (W3 @ (W_hat @ K1 - v0)).pow(2).sum()
        + mu * (W3 @ (W_hat @ K0 - V0)).pow(2).sum()
    )


class RelatedDelta(nn.Module):
    """δ lives in the target-related latent: what is added to ``h_s`` is ``W5 δ`` (difference form of
    ``Rec(z_r + δ, z_u) − Rec(z_r, z_u)``, so the recomposer's reconstruction error does not leak into the target)."""

    def __init__(self, W5: torch.Tensor):
        super().__init__()
        self.register_buffer("W5", W5.detach().float().clone())
        self.delta = nn.Parameter(torch.zeros(W5.shape[1]))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return (self.W5 @ self.delta).expand_as(h)

    @torch.no_grad()
    def clamp_(self, max_norm: float) -> None:
        n = (self.W5 @ self.delta).norm()
        if n > max_norm:
            self.delta.mul_(max_norm / n)


class DiKE(Editor):
    """DiKE editor: ``DiKE(cfg, corpus, disentangler=dis)`` or train one with :meth:`fit_disentangler` first."""

    name = "dike"
    config_class = DiKEConfig

    def __init__(
        self,
        cfg: DiKEConfig | None = None,
        corpus: Sequence[str] | None = None,
        cache: bool = True,
        disentangler: Disentangler | None = None,
    ):
        super().__init__(cfg, corpus, cache)
        self.disentangler = disentangler
        self.krd_history: list[dict[str, float]] = []

    def layers(self, model) -> tuple[int, ...]:
        return super().layers(model)[-1:]

    def fit_disentangler(
        self, model, tok, samples: Sequence[KRDSample], cfg: KRDConfig | None = None, progress: bool = True
    ) -> Disentangler:
        """Stage 1 (KRD), once per model and layer: train the disentangler at this editor's layer."""
        self.disentangler, self.krd_history = train_disentangler(
            model, tok, self.layers(model)[0], samples, cfg, progress=progress
        )
        return self.disentangler

    def _edit_batch(self, model, tok, requests: list[EditRequest], state: EditState) -> None:
        if self.disentangler is None:
            raise ValueError(
                "DiKE needs a trained disentangler: call editor.fit_disentangler(model, tok, samples) "
                "or pass DiKE(cfg, disentangler=...)"
            )
        (layer,) = self.layers(model)
        dis = self.disentangler
        if dis.d != ModelAdapter(model).d_model:
            raise ValueError(
                f"the disentangler has width {dis.d}, the model's residual stream {ModelAdapter(model).d_model}"
            )
        templates = self.context_templates(model, tok, state)
        K1 = compute_keys(model, tok, requests, layer, templates).T  # [d_ff, n]
        R = []
        for req in requests:
            # Eq. 14–15 (DKE): optimise δ of the related part only; h*_s = h_s + W5 δ
            fn = RelatedDelta(dis.W5.weight) if self.cfg.tke else None
            res = optimize_delta(model, tok, req, layer, "resid", self.cfg, templates, delta_fn=fn)
            R.append(res.delta)  # v* − W k* : what the FFN output must gain
        W = weight_of(ModelAdapter(model).mlp_out(layer)).detach()
        C0 = self.cfg.mom2_update_weight * self.covariance(model, tok, layer)
        V1 = W.double() @ K1.double() + torch.stack(R, 1).double()
        # Eq. 19: Δ = (I + μ W3ᵀW3)⁻¹ (V1 − W K1) K1ᵀ (C0 + K1K1ᵀ)⁻¹
        delta = dike_update(W, K1, V1, C0, dis.W3.weight, self.cfg.mu)
        state.apply(model, layer, delta.to(W.dtype))
        state.edited_keys.setdefault(layer, []).append(K1.T.detach())
