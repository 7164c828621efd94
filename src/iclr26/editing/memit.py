"""MEMIT: Mass-Editing Memory in a Transformer — Meng, Sharma, Andonian, Belinkov, Bau (ICLR 2023),
https://arxiv.org/abs/2210.07229.

MEMIT writes many facts at once and spreads each edit over a range of MLP layers. For every request it optimises a
residual-stream target ``z_i = h_i^L + δ_i`` at the subject's last token of the *last* edited layer ``L`` (§4.2,
Eq. 16). Then, layer by layer from the first, it recomputes the keys ``K`` (averaged over prefixes) and the
residual still missing at ``L``, gives this layer its share ``R = (z − h^L) / (L − l + 1)`` and solves the batch
least-squares problem ``min_Δ ||(W + Δ) K − (W K + R)||² + λ ||Δ K₀||²`` with ``K₀K₀ᵀ ≈ C``, whose solution is
(Eq. 14) ``Δ = R Kᵀ (λ C + K Kᵀ)⁻¹``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch

from .base import Editor, EditState
from .compute import activation_at_subject, compute_keys, optimize_delta, solve_psd
from .config import EditConfig, _check
from .requests import EditRequest


@dataclass
class MEMITConfig(EditConfig):
    """MEMIT's hyper-parameters; defaults are the official GPT-2 XL settings (MEMIT repo,
    hparams/MEMIT/gpt2-xl.json)."""

    layers: tuple[int, ...] | None = field(
        default=None,
        metadata={
            "help": "MLP layers to edit; None = GPT-2 XL's 13–17 of 48 (MEMIT §4.1) mapped by relative depth, at least "
            "2 layers (0–1 of a 4-layer model, 8–10 of a 30-layer one)"
        },
    )
    v_num_grad_steps: int = field(default=20, metadata={"help": "Adam steps for δ (MEMIT gpt2-xl.json)"})
    v_lr: float = field(default=0.5, metadata={"help": "Adam learning rate for δ (MEMIT gpt2-xl.json)"})
    v_weight_decay: float = field(default=0.5, metadata={"help": "weight decay on δ (MEMIT gpt2-xl.json)"})
    clamp_norm_factor: float = field(default=0.75, metadata={"help": "||δ|| ≤ 0.75·||h|| (MEMIT gpt2-xl.json)"})
    kl_factor: float = field(default=0.0625, metadata={"help": "essence-drift KL weight (MEMIT gpt2-xl.json)"})
    context_templates: tuple[tuple[int, int], ...] = field(
        default=((10, 5),), metadata={"help": "5 prefixes of 10 tokens (MEMIT code)"}
    )
    stats_n_tokens: int = field(
        default=100_000,
        metadata={
            "help": "corpus tokens for C (MEMIT: 100,000 Wikipedia samples; ours counts tokens, to bound the cost)"
        },
    )
    mom2_update_weight: float = field(
        default=20_000.0,
        metadata={"help": "λ weighting the preserved keys' covariance (MEMIT gpt2-xl.json: 20,000; 15,000 for GPT-J)"},
    )

    def __post_init__(self):
        super().__post_init__()
        _check(self, "mom2_update_weight", self.mom2_update_weight > 0, "> 0")

    def default_layer_fractions(self):
        return (13 / 47, 17 / 47)


def lambda_scale(c: torch.Tensor, keys: torch.Tensor) -> float:
    """``median_i k_iᵀ C⁻¹ k_i`` over keys ``[n, d_in]``: the λ at which a typical key's own term ``k kᵀ`` weighs as
    much as ``λC`` along it (for keys drawn like the corpus's, ``E[kᵀC⁻¹k] = d_in``). A scale rule for MEMIT's λ on
    models far from GPT-2 XL (our choice; MEMIT sets λ per model by hand)."""
    kd = keys.double()
    return float((kd * solve_psd(c, kd.T).T).sum(-1).median())


def memit_delta(k: torch.Tensor, r: torch.Tensor, c: torch.Tensor, weight: float) -> torch.Tensor:
    """MEMIT Eq. 14: ``Δ = R Kᵀ (λ C + K Kᵀ)⁻¹`` — the minimiser of ``||Δ K − R||² + λ tr(Δ C Δᵀ)``.

    ``k`` is ``[d_in, n]`` (edited keys as columns), ``r`` ``[d_out, n]``, ``c`` ``[d_in, d_in]``; returns float64."""
    k, r = k.double(), r.double()
    a = weight * c.double() + k @ k.T
    return solve_psd(a, k @ r.T).T  # a is symmetric: (a⁻¹ K Rᵀ)ᵀ = R Kᵀ a⁻¹


class MEMIT(Editor):
    """Batch, multi-layer least-squares edits."""

    name = "MEMIT"
    config_class = MEMITConfig
    min_layers = 2

    def targets(self, model, tok, requests: list[EditRequest], state: EditState) -> torch.Tensor:
        """``z_i = h_i^L + δ_i`` per request (MEMIT Eq. 16), ``[n, d]``."""
        last = self.layers(model)[-1]
        templates = self.context_templates(model, tok, state)
        return torch.stack([optimize_delta(model, tok, r, last, "resid", self.cfg, templates).target for r in requests])

    def layer_update(self, model, tok, layer: int, k: torch.Tensor, r: torch.Tensor, state: EditState):
        c = self.covariance(model, tok, layer)
        return memit_delta(k.T, r.T, c, self.cfg.mom2_update_weight)

    # below this share of its target residual realised at every layer, an update is reported as negligible
    negligible_share = 0.05

    def _edit_batch(self, model, tok, requests: list[EditRequest], state: EditState) -> None:
        layers = self.layers(model)
        templates = self.context_templates(model, tok, state)
        z = self.targets(model, tok, requests, state)
        self.realised_share = {}
        for i, layer in enumerate(layers):
            k = compute_keys(model, tok, requests, layer, templates)  # [n, d_ff]
            cur = activation_at_subject(model, tok, requests, "resid", layers[-1])  # h^L with earlier updates in
            r = (z - cur) / (len(layers) - i)  # spread the residual evenly over the remaining layers
            delta = self.layer_update(model, tok, layer, k, r, state)
            # how much of this layer's share of the residual the update writes at the edited keys: ‖ΔK‖ / ‖R‖
            self.realised_share[layer] = float((delta @ k.double().T).norm() / r.double().norm().clamp_min(1e-12))
            state.apply(model, layer, delta)
            state.edited_keys.setdefault(layer, []).append(k)
        self._warn_if_negligible()

    def _warn_if_negligible(self) -> None:
        shares = self.realised_share
        if shares and max(shares.values()) < self.negligible_share:
            warnings.warn(
                f"{self.name}: the update writes at most {max(shares.values()):.1%} of its target at the edited keys "
                f"(‖ΔK‖/‖R‖ per layer {', '.join(f'{v:.3g}' for v in shares.values())}): {self.negligible_hint()}",
                stacklevel=3,
            )

    def negligible_hint(self) -> str:
        return (
            f"mom2_update_weight λ={self.cfg.mom2_update_weight:g} outweighs the edit on this model (MEMIT's 20,000 "
            "is GPT-2 XL's). Lower it: a scale-free choice is λ ≈ median kᵀC⁻¹k of typical edit keys (≈ d_ff for "
            "keys like the corpus's), see iclr26.editing.memit.lambda_scale"
        )
