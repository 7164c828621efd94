"""Tiny configurations of the three architectures the library supports everywhere: gpt2, llama, qwen2.

``tiny_model("llama", vocab_size=500)`` gives a randomly initialised model of about a million parameters; the same
sizes are used by the zoo (trained) and by tests (random).
"""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig, Qwen2Config

ARCHS = ("gpt2", "llama", "qwen2")


def tiny_config(
    arch: str = "llama",
    vocab_size: int = 512,
    d_model: int = 128,
    n_layers: int = 4,
    n_heads: int = 4,
    n_kv_heads: int | None = None,
    d_ff: int | None = None,
    max_len: int = 256,
    tie_embeddings: bool = False,
):
    """An HF config of the given architecture and size (``n_kv_heads < n_heads`` gives grouped-query attention)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of {', '.join(ARCHS)}")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
    n_kv_heads = n_kv_heads or n_heads
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}")
    d_ff = d_ff or 4 * d_model
    if arch == "gpt2":
        if n_kv_heads != n_heads:
            raise ValueError("gpt2 has no grouped-query attention: leave n_kv_heads unset")
        return GPT2Config(
            vocab_size=vocab_size,
            n_positions=max_len,
            n_embd=d_model,
            n_layer=n_layers,
            n_head=n_heads,
            n_inner=d_ff,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            tie_word_embeddings=tie_embeddings,
            bos_token_id=2,
            eos_token_id=3,
            pad_token_id=0,
        )
    cls = LlamaConfig if arch == "llama" else Qwen2Config
    return cls(
        vocab_size=vocab_size,
        hidden_size=d_model,
        intermediate_size=d_ff,
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        num_key_value_heads=n_kv_heads,
        max_position_embeddings=max_len,
        tie_word_embeddings=tie_embeddings,
        bos_token_id=2,
        eos_token_id=3,
        pad_token_id=0,
        rms_norm_eps=1e-6,
    )


def tiny_model(arch: str = "llama", seed: int = 0, **kwargs):
    """A randomly initialised tiny causal LM (float32, eval mode)."""
    torch.manual_seed(seed)
    cfg = tiny_config(arch, **kwargs)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    return model.eval()


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())
