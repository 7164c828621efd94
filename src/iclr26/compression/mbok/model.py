"""Whole-model MBOK: replace every linear layer but the embeddings and the head, and save / load it bit-packed.

``quantize_model(model, k=2)`` works on any Hugging Face causal LM (``nn.Linear`` as in llama / qwen2, ``Conv1D`` as
in gpt2): the head is found with ``model.get_output_embeddings()`` (never by a module's name), embeddings are not
linear layers. ``save_packed`` writes the Boolean kernels with 8 weights per byte, so the file really is ~K bits per
quantised weight plus the scalings.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm.auto import tqdm

from .kernels import pack_signs, unpack_signs
from .layer import MultiBooleanLinear


def _is_projection(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) or type(module).__name__ == "Conv1D"


def quantizable_linears(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of every linear / Conv1D projection except the output head (tied or not)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    out = [(n, m) for n, m in model.named_modules() if _is_projection(m) and m is not head]
    if not out:
        raise ValueError(f"{type(model).__name__} has no nn.Linear / Conv1D layer to quantise (besides its head)")
    return out


def _set_module(model: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, new)


@torch.no_grad()
def quantize_model(model: nn.Module, k: int = 2, progress: bool = False, skip: tuple[str, ...] = ()) -> nn.Module:
    """Replace every linear layer but embeddings and head by a :class:`MultiBooleanLinear` with ``k`` kernels,
    initialised data-free by successive SVID. In place; returns ``model``.

    ``skip``: module names (or name suffixes such as ``"layers.11.mlp.down_proj"``) to keep in floating point.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"quantize_model: k must be a positive integer (kernels per layer), got {k!r}")
    adapters = [n for n, m in model.named_modules() if hasattr(m, "base_layer") and hasattr(m, "lora_A")]
    if adapters:
        raise ValueError(
            f"quantize_model: the model carries peft LoRA layers ({adapters[0]}, ...); merge them "
            "(`model = model.merge_and_unload()`) or quantize the model before adding an adapter"
        )
    layers = [(n, m) for n, m in quantizable_linears(model) if not any(n == s or n.endswith("." + s) for s in skip)]
    for name, module in tqdm(layers, desc=f"MBOK K={k}", disable=not progress, leave=False):
        _set_module(model, name, MultiBooleanLinear.from_linear(module, k))
    return model


def boolean_layers(model: nn.Module) -> list[tuple[str, MultiBooleanLinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, MultiBooleanLinear)]


def save_packed(model: nn.Module, path: str | Path, layers_only: bool = False, scale_dtype=None,
                dense_dtype=None) -> int:  # fmt: skip
    """Save an MBOK model to a safetensors file with bit-packed kernels; returns the file size in bytes.

    Per layer: ``<name>.signs`` (uint8, 8 Boolean weights per byte), ``<name>.a``, ``<name>.b`` (scalings, in
    ``scale_dtype`` or as stored), ``<name>.bias``. With ``layers_only`` the rest of the model (embeddings, norms,
    head) is left out, so the size measures the quantised layers alone; ``dense_dtype`` (e.g. ``torch.float16``) casts
    the floating-point tensors of that rest (the comparison with an FP16 file). Shapes and K go to the file's metadata.
    """
    layers = boolean_layers(model)
    if not layers:
        raise ValueError("save_packed: the model has no MultiBooleanLinear layer; run quantize_model(model) first")
    tensors, meta = {}, {}
    covered = set()
    for name, layer in layers:
        tensors[f"{name}.signs"] = pack_signs(layer.signs)
        for p in ("a", "b", "bias"):
            t = getattr(layer, p)
            if t is not None:
                tensors[f"{name}.{p}"] = t.detach().to(scale_dtype or t.dtype).contiguous()
        meta[name] = [layer.k, layer.out_features, layer.in_features, layer.bias is not None]
        covered.update(f"{name}.{p}" for p in ("signs", "a", "b", "bias"))
    if not layers_only:
        seen = {}
        for key, t in model.state_dict(keep_vars=False).items():
            if key in covered:
                continue
            ptr = (t.data_ptr(), t.shape)  # tied weights (embedding = head) are stored once
            if ptr in seen:
                meta.setdefault("__tied__", {})[key] = seen[ptr]
                continue
            seen[ptr] = key
            cast = dense_dtype is not None and t.is_floating_point()
            tensors[key] = t.detach().to(dense_dtype if cast else t.dtype).contiguous()
    path = Path(path)
    save_file(tensors, str(path), metadata={"mbok": json.dumps(meta)})
    return path.stat().st_size


@torch.no_grad()
def load_packed(model: nn.Module, path: str | Path) -> nn.Module:
    """Load a file written by :func:`save_packed` into ``model`` (the FP architecture or an MBOK one): layers named
    in the file become :class:`MultiBooleanLinear` with the saved kernels; other saved tensors are copied in."""
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        meta = json.loads((f.metadata() or {}).get("mbok", "{}"))
    if not meta:
        raise ValueError(f"{path} is not an MBOK file (no 'mbok' metadata); write it with save_packed")
    tensors = load_file(str(path))
    tied = meta.pop("__tied__", {})
    for name, (k, out_f, in_f, has_bias) in meta.items():
        layer = MultiBooleanLinear(in_f, out_f, k=k, bias=has_bias)
        layer.signs.copy_(unpack_signs(tensors.pop(f"{name}.signs"), (k, out_f, in_f)))
        layer.a.data = tensors.pop(f"{name}.a").clone()
        layer.b.data = tensors.pop(f"{name}.b").clone()
        if has_bias:
            layer.bias.data = tensors.pop(f"{name}.bias").clone()
        _set_module(model, name, layer)
    state = model.state_dict()
    for key, t in tensors.items():
        state[key].copy_(t)
    for key, src in tied.items():
        state[key].copy_(tensors[src])
    return model


def bits_per_weight(model: nn.Module, path: str | Path, scale_dtype=torch.float16) -> float:
    """Measured: size of the packed file of the quantised layers (kernels + scalings + biases) in bits, divided by
    the number of weights those layers replace."""
    n = sum(m.n_weights for _, m in boolean_layers(model))
    size = save_packed(model, path, layers_only=True, scale_dtype=scale_dtype)
    return 8.0 * size / n
