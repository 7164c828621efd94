"""Shared pieces of the presses in this package: budgets, hooks found through the model adapters, window attention.

kvpress registers its hooks on ``model.model.layers[i].self_attn`` and reads the window queries through ``q_proj`` and
the RoPE ``position_embeddings``; that covers llama, mistral and qwen2 but not GPT-2 (``transformer.h[i].attn`` with a
fused ``c_attn`` and absolute positions). :class:`AdapterHooks` registers the same kvpress ``forward_hook`` logic on
every attention module that :class:`iclr26.lm.adapters.ModelAdapter` finds, and :func:`window_queries` extracts the
(rotated) queries of the last tokens for either layout, so the presses written here work on all three architectures.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
from kvpress import BasePress
from kvpress.presses.base_press import is_prefilling
from kvpress.utils import compute_n_kept, get_prerope_query_states
from torch import nn
from transformers.models.llama.modeling_llama import repeat_kv, rotate_half

from ..lm.adapters import ModelAdapter, UnsupportedModelError, weight_of


def check_budget(compression_ratio: float | None, budget: int | None) -> None:
    """Exactly one of ``compression_ratio`` (in [0, 1)) and ``budget`` (tokens per head, ≥ 1) may be set."""
    if compression_ratio is not None and budget is not None:
        raise ValueError("give either compression_ratio or budget (tokens kept per head), not both")
    if compression_ratio is not None and not 0.0 <= compression_ratio < 1.0:
        raise ValueError(
            f"compression_ratio must be in [0, 1) (fraction of the cache evicted), got {compression_ratio}"
        )
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        raise ValueError(f"budget must be an int ≥ 1 (KV pairs kept per layer and head), got {budget!r}")


def n_kept(k_len: int, compression_ratio: float | None, budget: int | None) -> int:
    """KV pairs kept per head out of ``k_len``: the fixed ``budget``, or kvpress's own count at a ratio
    (``compute_n_kept``: ``max(1, int(k_len·(1 − ratio)))``), so a ratio keeps what kvpress's presses keep."""
    if budget is not None:
        return min(budget, k_len)
    return min(k_len, compute_n_kept(k_len, compression_ratio or 0.0))


def ratio_for(k: int, k_len: int) -> float:
    """A compression ratio at which kvpress keeps exactly ``k`` of ``k_len`` pairs: ``int(k_len·(1 − r)) == k`` and
    ``round(k_len·(1 − r)) == k`` (PyramidKV's fallback rounds), i.e. ``k_len·(1 − r) = k + 1/4``."""
    r = 1.0 - (k + 0.25) / k_len
    assert compute_n_kept(k_len, r) == k and round(k_len * (1 - r)) == k, (k, k_len, r)
    return r


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """The self-attention module of every block (gpt2, llama, qwen2, mistral, qwen3), found through the adapter."""
    ad = ModelAdapter(model)
    return [ad.attn(i) for i in range(ad.n_layers)]


def head_dims(module: nn.Module) -> tuple[int, int, int]:
    """(query heads, KV heads, head dim) of an attention module."""
    cfg = module.config
    n_heads = cfg.num_attention_heads
    n_kv = getattr(cfg, "num_key_value_heads", None) or n_heads
    return n_heads, n_kv, module.head_dim


def attn_scaling(module: nn.Module) -> float:
    """The factor multiplying q·k in this module's attention logits."""
    if hasattr(module, "scaling"):  # llama-like
        return float(module.scaling)
    s = 1.0 / math.sqrt(module.head_dim) if getattr(module, "scale_attn_weights", True) else 1.0
    if getattr(module, "scale_attn_by_inverse_layer_idx", False):
        s /= float(module.layer_idx + 1)
    return s


def output_projection(module: nn.Module) -> torch.Tensor:
    """W_O as ``[d_model, n_heads·head_dim]`` (``o_proj`` of llama-likes, ``c_proj`` of GPT-2)."""
    proj = module.o_proj if hasattr(module, "o_proj") else module.c_proj
    return weight_of(proj)


def window_queries(module: nn.Module, hidden_states: torch.Tensor, kwargs: dict, n: int) -> torch.Tensor:
    """Queries of the last ``n`` tokens, ``[batch, n_heads, n, head_dim]``, RoPE applied where the model uses it."""
    h = hidden_states[:, -n:]
    if hasattr(module, "q_proj") or hasattr(module, "qkv_proj"):  # llama-likes, phi3 (kvpress reads both)
        q = get_prerope_query_states(module, h)
        pe = kwargs.get("position_embeddings")
        if pe is not None:
            cos, sin = pe
            cos, sin = cos[:, -n:].unsqueeze(1), sin[:, -n:].unsqueeze(1)
            q = q * cos + rotate_half(q) * sin
        return q
    if hasattr(module, "c_attn"):  # GPT-2: fused qkv, absolute positions (nothing to rotate)
        n_heads, _, d = head_dims(module)
        q = module.c_attn(h)[..., : n_heads * d]
        return q.view(h.shape[0], n, n_heads, d).transpose(1, 2)
    raise NotImplementedError(f"no query projection found on {type(module).__name__}")


def window_attention(module: nn.Module, hidden_states: torch.Tensor, keys: torch.Tensor, kwargs: dict, n: int):
    """Causal softmax attention of the last ``n`` queries over all ``T`` cached keys: ``[batch, n_heads, n, T]``."""
    n_heads, n_kv, _ = head_dims(module)
    q = window_queries(module, hidden_states, kwargs, n).float()
    k = repeat_kv(keys, n_heads // n_kv).float()
    logits = q @ k.transpose(-1, -2) * attn_scaling(module)
    t = keys.shape[2]
    # window query i sits at position t − n + i and sees keys 0 … t − n + i
    mask = torch.ones(n, t, dtype=torch.bool, device=keys.device).triu(diagonal=t - n + 1)
    return torch.softmax(logits.masked_fill(mask, float("-inf")), dim=-1)


class AdapterHooks:
    """kvpress's hook logic (compress the cache at the end of each attention layer's prefill), registered on every
    attention module the model adapter finds, for gpt2 as well as llama-likes. Mix in before a kvpress press class."""

    def forward_hook(self, module: nn.Module, args, kwargs: dict, output):
        hidden_states = kwargs.get("hidden_states", args[0] if args else None)
        cache = kwargs.get("past_key_values")
        if cache is None or hidden_states is None:
            return output
        if not is_prefilling(kwargs["cache_position"], hidden_states.shape[1]):  # decoding: leave the cache alone
            return output
        layer = cache.layers[module.layer_idx]
        kwargs = {**kwargs, "hidden_states": hidden_states}
        attentions = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        layer.keys, layer.values = self.compress(module, hidden_states, layer.keys, layer.values, attentions, kwargs)
        return output

    @contextmanager
    def __call__(self, model: nn.Module):
        try:
            modules = attention_modules(model)
        except UnsupportedModelError:  # a model kvpress handles but our adapters do not (phi3, gemma3): kvpress's hooks
            with BasePress.__call__(self, model):
                yield
            return
        self.post_init_from_model(model)
        hooks = []
        try:
            for attn in modules:
                hooks.append(attn.register_forward_hook(self.forward_hook, with_kwargs=True))
            yield
        finally:
            for h in hooks:
                h.remove()


def keep_top(keys: torch.Tensor, values: torch.Tensor, scores: torch.Tensor, k: int):
    """Gather the ``k`` highest-scoring KV pairs of each head (in position order): the cache really shrinks."""
    idx = scores.topk(k, dim=-1).indices.sort(dim=-1).values
    idx = idx.unsqueeze(-1).expand(-1, -1, -1, keys.shape[-1])
    return keys.gather(2, idx).contiguous(), values.gather(2, idx).contiguous()
