"""ROME: Rank-One Model Editing — Meng, Bau, Andonian, Belinkov, "Locating and Editing Factual Associations in GPT"
(NeurIPS 2022), https://arxiv.org/abs/2202.05262.

The MLP output (down) projection ``W`` of one middle layer is read as a linear associative memory from keys ``k`` (the
MLP hidden activation at the subject's last token) to values ``v = W k``. To write a new fact, ROME (§3.1) takes the
subject's key ``k*`` (averaged over random prefixes), finds by gradient descent a value ``v*`` that makes the model
output the new object, and inserts the pair with the smallest change that keeps every other key's value in the least
squares sense weighted by the key covariance ``C = E[k kᵀ]``. The solution is rank one (Eq. 2):
``Ŵ = W + (v* − W k*) (C⁻¹k*)ᵀ / ((C⁻¹k*)ᵀ k*)``, so ``Ŵ k* = v*`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..lm.adapters import ModelAdapter, weight_of
from .base import Editor, EditState
from .compute import compute_keys, optimize_delta, solve_psd
from .config import EditConfig, _check
from .requests import EditRequest


@dataclass
class ROMEConfig(EditConfig):
    """ROME's hyper-parameters; defaults are the official GPT-2 XL settings (ROME repo, hparams/ROME/gpt2-xl.json)."""

    layers: tuple[int, ...] | None = field(
        default=None,
        metadata={
            "help": "the one MLP layer to edit; None = layer 17 of GPT-2 XL's 48 (causal tracing, ROME §2) mapped by "
            "relative depth (layer 1 of a 4-layer model, 10 of a 30-layer one)"
        },
    )
    v_num_grad_steps: int = field(default=20, metadata={"help": "Adam steps for v* (ROME gpt2-xl.json)"})
    v_lr: float = field(default=0.5, metadata={"help": "Adam learning rate for v* (ROME gpt2-xl.json)"})
    v_weight_decay: float = field(default=0.5, metadata={"help": "weight decay on δ (ROME gpt2-xl.json)"})
    clamp_norm_factor: float = field(default=4.0, metadata={"help": "||δ|| ≤ 4·||v|| (ROME gpt2-xl.json)"})
    kl_factor: float = field(default=0.0625, metadata={"help": "essence-drift KL weight (ROME Eq. 4, gpt2-xl.json)"})
    context_templates: tuple[tuple[int, int], ...] = field(
        default=((5, 10), (10, 10)),
        metadata={"help": "10 prefixes of 5 tokens and 10 of 10 tokens (ROME code); shorten for tiny models' context"},
    )
    stats_n_tokens: int = field(
        default=100_000,
        metadata={
            "help": "corpus tokens for C (ROME: 100,000 Wikipedia samples; ours counts tokens, to bound the cost)"
        },
    )
    value_target: str = field(
        default="prompt",
        metadata={
            "help": "which key realises v* exactly: 'prompt' = the un-prefixed edit prompt's key k₀ "
            "(Ŵk₀ = Wk₀ + δ; ROME's compute_v.py), 'prefix_mean' = the prefix-averaged k̄ (Ŵk̄ = Wk̄ + δ; our "
            "earlier choice). Both use u = C⁻¹k̄"
        },
    )
    mom2_adjustment: bool = field(
        default=True,
        metadata={"help": "use C⁻¹k* (True, ROME) or k* itself (False: C = I, an ablation in ROME's code)"},
    )

    def __post_init__(self):
        super().__post_init__()
        _check(self, "layers", self.layers is None or len(self.layers) == 1, "one layer (ROME edits a single MLP)")
        _check(self, "value_target", self.value_target in ("prompt", "prefix_mean"), "'prompt' or 'prefix_mean'")

    def default_layer_fractions(self):
        return (17 / 47, 17 / 47)


def rome_delta(
    w: torch.Tensor, c: torch.Tensor | None, k: torch.Tensor, v: torch.Tensor, k_exact: torch.Tensor | None = None
) -> torch.Tensor:
    """ROME Eq. 2: ``Δ = (v* − W k₀) uᵀ / (uᵀ k₀)`` with ``u = C⁻¹ k`` (``C = I`` if ``c`` is None), so that
    ``Ŵ k₀ = v*`` exactly. ``k`` is the (prefix-averaged) key that sets the direction ``u``; ``k_exact = k₀`` the key
    that must map to ``v*`` (default ``k``; ROME's code uses the un-prefixed prompt's key, ``compute_v.py``).

    ``w`` is ``[d_out, d_in]``, ``k`` ``[d_in]``, ``v`` ``[d_out]``; returns the rank-one ``Δ`` (float64)."""
    w, k, v = w.double(), k.double(), v.double()
    k0 = k if k_exact is None else k_exact.double()
    u = k if c is None else solve_psd(c, k)
    return torch.outer(v - w @ k0, u) / (u @ k0)


class ROME(Editor):
    """Rank-one edits of one MLP layer; a batch of requests is applied one request after another."""

    name = "ROME"
    config_class = ROMEConfig

    def _edit_batch(self, model, tok, requests: list[EditRequest], state: EditState) -> None:
        (layer,) = self.layers(model)
        templates = self.context_templates(model, tok, state)
        c = self.covariance(model, tok, layer) if self.cfg.mom2_adjustment else None
        module = ModelAdapter(model).mlp_out(layer)
        for req in requests:
            k = compute_keys(model, tok, [req], layer, templates)[0]  # ROME Eq. 3: k* averaged over prefixes
            # the key that must map to v* exactly: the un-prefixed prompt's (ROME's code) or the prefix average
            k0 = compute_keys(model, tok, [req], layer, ("{}",))[0] if self.cfg.value_target == "prompt" else k
            opt = optimize_delta(model, tok, req, layer, "mlp_out", self.cfg, templates)  # ROME Eq. 4
            w = weight_of(module).detach()
            v = w.double() @ k0.double() + opt.delta.double()  # v*: the value that adds δ to this layer's output
            state.apply(model, layer, rome_delta(w, c, k, v, k_exact=k0))
            state.edited_keys.setdefault(layer, []).append(k[None])
