"""Model adapters: where a causal LM keeps its blocks, attention, MLP projections, norms and head.

Keyed by ``config.model_type`` (never by substrings of a model's name). Every method in the library reaches a model's
internals through an adapter, so supporting a new architecture means registering one adapter here.

Weights are handed out in the ``[d_out, d_in]`` orientation of ``torch.nn.Linear`` (``y = W x``) whatever the module
stores; GPT-2's ``Conv1D`` keeps ``[d_in, d_out]`` and is transposed on the way in and out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..core.errors import UserError


class UnsupportedModelError(UserError):
    """A model type no adapter knows; the message lists the supported ones."""


@dataclass(frozen=True)
class Adapter:
    """Attribute paths (dotted, relative to the model or to one block) of the parts methods need."""

    model_type: str
    blocks: str  # list of transformer blocks, from the model
    embed: str  # token embedding, from the model
    final_norm: str  # from the model
    lm_head: str  # from the model
    attn: str  # attention module, from a block
    attn_out: str  # attention output projection (o_proj / c_proj), from a block
    mlp: str  # MLP module, from a block
    mlp_in: str  # MLP input (up) projection, from a block
    mlp_out: str  # MLP output (down) projection, from a block: its input is the "MLP key"
    norm_attn: str  # norm before attention, from a block
    norm_mlp: str  # norm before the MLP, from a block
    q_proj: str | None = None
    k_proj: str | None = None
    v_proj: str | None = None


_LLAMA_LIKE = dict(
    blocks="model.layers",
    embed="model.embed_tokens",
    final_norm="model.norm",
    lm_head="lm_head",
    attn="self_attn",
    attn_out="self_attn.o_proj",
    mlp="mlp",
    mlp_in="mlp.up_proj",
    mlp_out="mlp.down_proj",
    norm_attn="input_layernorm",
    norm_mlp="post_attention_layernorm",
    q_proj="self_attn.q_proj",
    k_proj="self_attn.k_proj",
    v_proj="self_attn.v_proj",
)

ADAPTERS: dict[str, Adapter] = {
    "gpt2": Adapter(
        "gpt2",
        blocks="transformer.h",
        embed="transformer.wte",
        final_norm="transformer.ln_f",
        lm_head="lm_head",
        attn="attn",
        attn_out="attn.c_proj",
        mlp="mlp",
        mlp_in="mlp.c_fc",
        mlp_out="mlp.c_proj",
        norm_attn="ln_1",
        norm_mlp="ln_2",
    ),
    "llama": Adapter("llama", **_LLAMA_LIKE),
    "qwen2": Adapter("qwen2", **_LLAMA_LIKE),
    "mistral": Adapter("mistral", **_LLAMA_LIKE),
    "qwen3": Adapter("qwen3", **_LLAMA_LIKE),
}


def _get(obj, path: str):
    for part in path.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


class ModelAdapter:
    """An adapter bound to one model: ``ad = ModelAdapter(model); ad.mlp_out(3)``."""

    def __init__(self, model: nn.Module):
        mt = getattr(getattr(model, "config", None), "model_type", None)
        if mt not in ADAPTERS:
            raise UnsupportedModelError(
                f"model type {mt!r} is not supported; supported model types: {', '.join(sorted(ADAPTERS))}. "
                "Register an Adapter in iclr26.lm.adapters.ADAPTERS to add one."
            )
        self.model = model
        self.spec = ADAPTERS[mt]

    @property
    def model_type(self) -> str:
        return self.spec.model_type

    @property
    def blocks(self) -> nn.ModuleList:
        return _get(self.model, self.spec.blocks)

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    def block(self, layer: int) -> nn.Module:
        n = self.n_layers
        if not -n <= layer < n:
            raise IndexError(f"layer {layer} does not exist: the model has {n} layers (0..{n - 1})")
        return self.blocks[layer]

    def part(self, layer: int, name: str) -> nn.Module:
        """``name`` is a field of :class:`Adapter` that lives in a block (attn, attn_out, mlp, mlp_in, ...)."""
        path = getattr(self.spec, name)
        if path is None:
            raise UnsupportedModelError(f"{self.model_type} adapter has no {name!r}")
        return _get(self.block(layer), path)

    def attn(self, layer: int) -> nn.Module:
        return self.part(layer, "attn")

    def mlp(self, layer: int) -> nn.Module:
        return self.part(layer, "mlp")

    def mlp_in(self, layer: int) -> nn.Module:
        return self.part(layer, "mlp_in")

    def mlp_out(self, layer: int) -> nn.Module:
        return self.part(layer, "mlp_out")

    def attn_out(self, layer: int) -> nn.Module:
        return self.part(layer, "attn_out")

    @property
    def embed(self) -> nn.Module:
        return _get(self.model, self.spec.embed)

    @property
    def final_norm(self) -> nn.Module:
        return _get(self.model, self.spec.final_norm)

    @property
    def lm_head(self) -> nn.Module:
        return _get(self.model, self.spec.lm_head)

    @property
    def d_model(self) -> int:
        return self.embed.weight.shape[1]

    def logits_from_resid(self, h: torch.Tensor) -> torch.Tensor:
        """Final norm then the unembedding: the logit lens applied to a residual-stream state."""
        return self.lm_head(self.final_norm(h))


def weight_of(module: nn.Module) -> torch.Tensor:
    """The module's weight as a ``[d_out, d_in]`` matrix (a view for Linear, a transposed view for Conv1D)."""
    if isinstance(module, nn.Linear):
        return module.weight
    if type(module).__name__ == "Conv1D":  # transformers.pytorch_utils.Conv1D: y = x W + b, W is [d_in, d_out]
        return module.weight.T
    raise TypeError(f"expected a Linear or Conv1D projection, got {type(module).__name__}")


@torch.no_grad()
def add_to_weight(module: nn.Module, delta: torch.Tensor) -> None:
    """``W ← W + Δ`` with ``Δ`` in ``[d_out, d_in]`` orientation, in place."""
    w = weight_of(module)
    if delta.shape != w.shape:
        raise ValueError(f"update has shape {tuple(delta.shape)}, the weight is {tuple(w.shape)} ([d_out, d_in])")
    w.add_(delta.to(w.dtype))


def supported_model_types() -> list[str]:
    return sorted(ADAPTERS)
