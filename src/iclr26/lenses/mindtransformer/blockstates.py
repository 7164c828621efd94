"""The 13 intermediate states of a transformer block, captured by hooks (MindTransformer's feature inventory).

Paper: *The Mind's Transformer: Computational Neuroanatomy of LLM-Brain Alignment* (Chen & Sivakumar, ICLR 2026),
https://openreview.net/forum?id=PgIlCCNxdB — official code https://github.com/cheng-yeh/MindTransformer.

The usual LLM-brain encoding feature is the residual stream entering a block. MindTransformer opens the block and uses
each of its 13 intermediate states as a separate feature space. For a pre-norm LLaMA-style block ``l`` with input ``x``:

    input_hidden_state      x                                   (residual stream entering the block)
    pre_attn_norm           n = RMSNorm₁(x)
    per_head_q/k/v          q = W_Q n,  k = W_K n,  v = W_V n   (all heads concatenated; GQA: k, v have n_kv heads)
    per_head_q_rope/k_rope  R(pos) q,  R(pos) k                 (the rotated queries/keys the attention really uses)
    per_head_context_vector c_h = Σ_m softmax(q̃_h·k̃_m/√d) v_m   (heads concatenated, the input of W_O)
    attn_output             a = W_O c
    post_attn_hidden_state  h = x + a
    pre_ffn_norm            m = RMSNorm₂(h)
    ffn_activated_state     act(W_gate m) ⊙ W_up m              (the input of the down projection, width d_ff)
    ffn_output              W_down · act(...)

HF modules do not expose the rotated q/k, so (as in the official code) they are recomputed from the hooked ``q_proj`` /
``k_proj`` outputs with the model's own ``apply_rotary_pos_emb`` and the ``(cos, sin)`` the attention module received.
GPT-2 has no RoPE: its blocks expose the 11 other states (q, k, v are split from the fused ``c_attn``).

    with block_states(model, layers=[1, 3]) as st:
        model(**batch)
    st["per_head_q_rope", 1]        # [batch, seq, n_heads * d_head]
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from scipy import sparse
from tqdm.auto import tqdm

from iclr26.lm.adapters import ModelAdapter, UnsupportedModelError

STATES = (
    "input_hidden_state",
    "pre_attn_norm",
    "per_head_q",
    "per_head_k",
    "per_head_v",
    "per_head_q_rope",
    "per_head_k_rope",
    "per_head_context_vector",
    "attn_output",
    "post_attn_hidden_state",
    "pre_ffn_norm",
    "ffn_activated_state",
    "ffn_output",
)
ROPE_STATES = ("per_head_q_rope", "per_head_k_rope")
_ROPE_FREE = ("gpt2",)  # architectures with learned absolute positions instead of RoPE


def available_states(model) -> tuple[str, ...]:
    """The states :func:`block_states` can capture on ``model`` (all 13 for llama-family, 11 for GPT-2)."""
    ad = ModelAdapter(model)
    if ad.model_type in _ROPE_FREE:
        return tuple(s for s in STATES if s not in ROPE_STATES)
    return STATES


def state_dims(model) -> dict[str, int]:
    """Width of every available state of one block (GQA: k, v and their RoPE versions have n_kv_heads · d_head)."""
    c = model.config
    d = c.hidden_size if hasattr(c, "hidden_size") else c.n_embd
    n_h = c.num_attention_heads if hasattr(c, "num_attention_heads") else c.n_head
    d_head = getattr(c, "head_dim", None) or d // n_h
    n_kv = getattr(c, "num_key_value_heads", None) or n_h
    d_ff = getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) or 4 * d
    dims = dict(
        input_hidden_state=d,
        pre_attn_norm=d,
        per_head_q=n_h * d_head,
        per_head_k=n_kv * d_head,
        per_head_v=n_kv * d_head,
        per_head_q_rope=n_h * d_head,
        per_head_k_rope=n_kv * d_head,
        per_head_context_vector=n_h * d_head,
        attn_output=d,
        post_attn_hidden_state=d,
        pre_ffn_norm=d,
        ffn_activated_state=d_ff,
        ffn_output=d,
    )
    return {s: dims[s] for s in available_states(model)}


def _check(model, layers: Iterable[int], states: Sequence[str]) -> tuple[ModelAdapter, list[int], list[str]]:
    ad = ModelAdapter(model)
    states = list(states)
    unknown = [s for s in states if s not in STATES]
    if unknown:
        raise ValueError(f"unknown block state(s) {unknown}; choose from {', '.join(STATES)}")
    have = available_states(model)
    missing = [s for s in states if s not in have]
    if missing:
        raise UnsupportedModelError(
            f"{ad.model_type} has no rotary position embedding, so {missing} do not exist; "
            f"request only {', '.join(have)}"
        )
    if not states:
        raise ValueError("states is empty: request at least one of " + ", ".join(have))
    layers = sorted({ad.n_layers + l if l < 0 else l for l in layers})
    for l in layers:
        ad.block(l)  # raises IndexError with the valid range
    if not layers:
        raise ValueError("layers is empty: give at least one block index")
    return ad, layers, states


def _rotate(attn, x: torch.Tensor, n_heads: int, cos, sin, norm=None) -> torch.Tensor:
    """RoPE of a ``[B, S, n_heads·d_head]`` projection with the attention module's own ``apply_rotary_pos_emb``."""
    rope = sys.modules[type(attn).__module__].apply_rotary_pos_emb
    b, s, _ = x.shape
    h = x.view(b, s, n_heads, -1)
    if norm is not None:  # qwen3-style per-head q/k norm, applied before RoPE
        h = norm(h)
    h = h.transpose(1, 2)  # [B, H, S, d_head]
    r = cos.shape[-1]  # partial rotary: only the first r dims rotate
    rot, rest = h[..., :r], h[..., r:]
    rot, _ = rope(rot, rot, cos.to(x.dtype), sin.to(x.dtype))
    return torch.cat([rot, rest], dim=-1).transpose(1, 2).reshape(b, s, -1)


@contextmanager
def block_states(model, layers: Iterable[int], states: Sequence[str] = STATES, detach: bool = True):
    """Capture ``states`` of blocks ``layers``; yields ``{(state, layer): tensor [batch, seq, dim]}`` (last pass wins).

    Hooks are registered on entry and removed in ``finally``, also when the body raises.
    """
    ad, layers, states = _check(model, layers, states)
    want = set(states)
    store: dict[tuple[str, int], torch.Tensor] = {}
    handles = []
    c = model.config
    n_h = getattr(c, "num_attention_heads", None) or c.n_head
    n_kv = getattr(c, "num_key_value_heads", None) or n_h

    def put(name, layer, t):
        if name in want:
            store[name, layer] = t.detach() if detach else t

    def out_hook(layer, in_name, out_name):
        """Record a module's input as ``in_name`` and its output as ``out_name``."""

        def hook(mod, args, output):
            if args:
                put(in_name, layer, args[0])
            put(out_name, layer, output[0] if isinstance(output, tuple) else output)

        return hook

    try:
        for l in layers:
            blk = ad.block(l)
            p = ad.spec
            for part, a, b in (
                ("norm_attn", "input_hidden_state", "pre_attn_norm"),
                ("norm_mlp", "post_attn_hidden_state", "pre_ffn_norm"),
                ("attn_out", "per_head_context_vector", "attn_output"),  # W_O: its input is the context vector
                ("mlp_out", "ffn_activated_state", "ffn_output"),  # W_down: its input is the activated state
            ):
                handles.append(ad.part(l, part).register_forward_hook(out_hook(l, a, b)))
            if ad.model_type in _ROPE_FREE:  # GPT-2: q, k, v come out of one fused Conv1D
                d = ad.d_model

                def qkv_hook(mod, args, output, l=l, d=d):
                    q, k, v = output.split(d, dim=-1)
                    put("per_head_q", l, q), put("per_head_k", l, k), put("per_head_v", l, v)

                handles.append(blk.attn.c_attn.register_forward_hook(qkv_hook))
                continue
            attn = ad.attn(l)
            rope: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

            def attn_pre(mod, args, kwargs, rope=rope):
                pe = kwargs.get("position_embeddings")
                if pe is None and len(args) > 1:
                    pe = args[1]
                if pe is None:
                    raise RuntimeError("the attention module got no position_embeddings; cannot rebuild RoPE q/k")
                rope["cs"] = pe

            handles.append(attn.register_forward_pre_hook(attn_pre, with_kwargs=True))

            def proj_hook(name, n_heads, l=l, attn=attn, rope=rope):
                def hook(mod, args, output):
                    put(f"per_head_{name}", l, output)
                    if f"per_head_{name}_rope" in want:
                        cos, sin = rope["cs"]
                        norm = getattr(attn, f"{name}_norm", None)
                        put(f"per_head_{name}_rope", l, _rotate(attn, output, n_heads, cos, sin, norm))

                return hook

            handles.append(_get(blk, p.q_proj).register_forward_hook(proj_hook("q", n_h)))
            handles.append(_get(blk, p.k_proj).register_forward_hook(proj_hook("k", n_kv)))
            handles.append(_get(blk, p.v_proj).register_forward_hook(proj_hook("v", n_kv)))
        yield store
    finally:
        for h in handles:
            h.remove()


class _Stop(Exception):
    """Raised after the deepest requested block to end a forward pass early."""


def _get(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _word_of_tokens(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]], n_chars: int) -> np.ndarray:
    """For each token, the index of the word its characters belong to (-1 for specials / spaces)."""
    char_word = np.full(n_chars + 1, -1, dtype=np.int64)
    for i, (s, e) in enumerate(spans):
        char_word[s:e] = i
    out = np.full(len(offsets), -1, dtype=np.int64)
    for j, (a, b) in enumerate(offsets):
        if b > a:
            ws = char_word[a:b]
            ws = ws[ws >= 0]
            if ws.size:
                out[j] = ws[0]
    return out


@torch.no_grad()
def word_states(
    model,
    tok,
    words: Sequence[str],
    layers: Iterable[int],
    states: Sequence[str] | None = None,
    max_tokens: int | None = None,
    context: int | None = None,
    progress: bool = False,
) -> dict[tuple[str, int], np.ndarray]:
    """One feature vector per word, state and layer: ``{(state, layer): array [n_words, dim]}``.

    The words are joined with spaces and tokenized once; a word's vector is the mean of its tokens' states (as in the
    official extraction code). Texts longer than ``max_tokens`` (default: the model's context, at most 2,048) run in
    windows that overlap by ``context`` tokens (default 64, as the official code's stride, or a quarter of a short
    window), so every token after the first window sees at least ``context``
    tokens of left context; each token's state is taken from the first window where it is not in the overlap.
    """
    words = [str(w) for w in words]
    if not words or any(not w.strip() for w in words):
        raise ValueError("words must be a non-empty list of non-blank strings (one entry per presented word)")
    states = list(states) if states is not None else list(available_states(model))
    limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", 2048)
    max_tokens = min(limit, 2048) if max_tokens is None else max_tokens
    if not 1 <= max_tokens <= limit:
        raise ValueError(f"max_tokens={max_tokens} must be in [1, {limit}] (the model's context length)")
    context = min(64, max_tokens // 4) if context is None else context  # official code: 64-token stride
    if not 0 <= context < max_tokens:
        raise ValueError(
            f"context={context} must be in [0, max_tokens={max_tokens}); lower it for short-context models"
        )
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    text = " ".join(words)
    enc = tok(text, return_offsets_mapping=True)
    ids = torch.tensor(enc["input_ids"], dtype=torch.long)
    tw = _word_of_tokens(enc["offset_mapping"], spans, len(text))
    n = len(ids)
    ad, layers, _ = _check(model, layers, states)

    def stop(mod, args, output):
        raise _Stop

    starts = [0]
    while starts[-1] + max_tokens < n:
        starts.append(starts[-1] + max_tokens - context)
    handle = ad.block(max(layers)).register_forward_hook(stop)
    try:
        feats = _windows(model, ids, starts, max_tokens, context, layers, states, progress)
    finally:
        handle.remove()
    return _pool(feats, tw, len(words))


def _windows(model, ids, starts, max_tokens, context, layers, states, progress):
    """Token states of every window, without the overlap each later window shares with the one before."""
    n, feats = len(ids), {}
    for i, s in enumerate(tqdm(starts, desc="block states", disable=not progress, leave=False)):
        e = min(s + max_tokens, n)
        own = 0 if i == 0 else context  # tokens of the overlap were already taken from the previous window
        # _Stop: the deepest requested block is done, skip the rest of the model and the lm_head
        with block_states(model, layers, states) as st, contextlib.suppress(_Stop):
            model(input_ids=ids[s:e][None])
        for key, t in st.items():
            feats.setdefault(key, []).append(t[0, own:].float().cpu().numpy())
    return feats


def _pool(feats, tw, n_words):
    """Mean of each word's token states; words without a token of their own repeat the previous word's vector."""
    valid = np.flatnonzero(tw >= 0)
    counts = np.bincount(tw[valid], minlength=n_words).astype(np.float64)
    # P [n_words, n_tokens]: 1/count where token t belongs to word w, so P @ token_states is the mean per word
    pool = sparse.csr_matrix((1.0 / counts[tw[valid]], (tw[valid], valid)), shape=(n_words, len(tw)))
    empty = np.flatnonzero(counts == 0)
    out = {}
    for key, chunks in feats.items():
        w = np.asarray(pool @ np.concatenate(chunks, axis=0).astype(np.float64))
        for j in empty:  # as the official code: carry the previous word's vector forward (zeros for the first)
            w[j] = w[j - 1] if j else 0.0
        out[key] = w.astype(np.float32)
    return out
