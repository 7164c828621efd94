"""Key covariance statistics ``C = E[k kᵀ]`` of the MLP key (input of the down projection) at chosen layers.

ROME (Meng et al. 2022, §3.1) and MEMIT (Meng et al. 2023, §4.2) estimate ``C`` from 100,000 Wikipedia samples; it
stands for the keys of everything the layer already stores (``K₀K₀ᵀ ∝ C``). Here the corpus is any list of texts
(default: the ``wikipedia`` domain of :mod:`iclr26.worlds.text`), cut into chunks of ``max_len`` tokens, and the cost is
bounded by ``n_tokens``. The pass is streaming: each batch's keys are folded into a running ``Σ k kᵀ`` (float64,
``[d_ff, d_ff]``) and dropped, and the forward pass stops after the last needed layer, so memory stays at one batch of
activations plus one ``d_ff × d_ff`` matrix per layer. Results are cached on disk under
``cache_dir()/editing_stats``, keyed by the model (config and a fingerprint of its embedding weights), the layer, and
a hash of the exact token chunks used.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence

import torch

from ..lm.adapters import ModelAdapter
from ..lm.loading import cache_dir


class _Stop(Exception):
    pass


def model_fingerprint(model) -> str:
    """A short hash of the model's config and of its (never edited) token embedding."""
    ad = ModelAdapter(model)
    h = hashlib.sha1(model.config.to_json_string(use_diff=False).encode())
    emb = ad.embed.weight.detach().float().flatten()
    h.update(emb[: 1 << 16].cpu().numpy().tobytes())
    h.update(emb[-(1 << 12) :].cpu().numpy().tobytes())
    return h.hexdigest()[:12]


def token_chunks(tok, texts: Sequence[str], n_tokens: int, max_len: int) -> list[list[int]]:
    """The texts tokenised one after another (each with the tokenizer's special prefix, e.g. ``<bos>``), packed into
    chunks of ``max_len`` tokens, ``n_tokens`` tokens in all (fewer if the corpus is shorter)."""
    stream: list[int] = []
    for text in texts:
        stream.extend(tok(text[: max_len * 12])["input_ids"])  # long documents: their head is enough
        if len(stream) >= n_tokens:
            break
    stream = stream[:n_tokens]
    return [c for c in (stream[i : i + max_len] for i in range(0, len(stream), max_len)) if len(c) >= 2]


@torch.no_grad()
def _compute(model, chunks, layers: Sequence[int], batch_size: int, progress: bool) -> dict[int, torch.Tensor]:
    from tqdm.auto import tqdm

    from .compute import encode_batch

    ad = ModelAdapter(model)
    dev = next(model.parameters()).device
    sums: dict[int, torch.Tensor] = {}
    count = 0
    cur_mask: list[torch.Tensor] = []
    last = max(layers)

    def make(layer):
        def fn(args, kwargs):
            a = args[0] if args else kwargs["hidden_states"]
            k = a[cur_mask[0].bool()].double()  # [n_real_tokens, d_ff]
            sums[layer] = sums.get(layer, 0) + k.T @ k
            if layer == last:
                raise _Stop  # nothing after the last needed layer is used

        return fn

    handles = []
    try:
        for lay in layers:
            mod = ad.mlp_out(lay)
            fn = make(lay)
            handles.append(mod.register_forward_pre_hook(lambda m, a, kw, fn=fn: fn(a, kw), with_kwargs=True))
        pad = type("P", (), {"pad_token_id": 0})()
        it = range(0, len(chunks), batch_size)
        for i in tqdm(it, desc="key covariance", leave=False, disable=not progress):
            ids, mask = encode_batch(pad, chunks[i : i + batch_size])
            cur_mask[:] = [mask.to(dev)]
            with contextlib.suppress(_Stop):
                model(input_ids=ids.to(dev), attention_mask=mask.to(dev))
            count += int(mask.sum())
    finally:
        for h in handles:
            h.remove()
    d_ff = next(iter(sums.values())).shape[0]
    if count < d_ff:
        raise ValueError(
            f"the corpus gave {count} tokens, fewer than the MLP key width d_ff={d_ff}: the key covariance would be "
            f"singular and the editors' solves meaningless. Pass a larger corpus (and stats_n_tokens ≥ {d_ff}; the "
            f"papers use ~100k samples)"
        )
    return {lay: (s / count).cpu() for lay, s in sums.items()}


def key_covariances(
    model,
    tok,
    layers: Sequence[int],
    texts: Sequence[str] | None = None,
    n_tokens: int = 100_000,
    max_len: int = 128,
    batch_size: int = 8,
    use_cache: bool = True,
    progress: bool = True,
) -> dict[int, torch.Tensor]:
    """``{layer: E[k kᵀ]}`` (float64, ``[d_ff, d_ff]``) over ``n_tokens`` tokens of ``texts``; cached on disk."""
    if n_tokens < 1:
        raise ValueError(f"n_tokens must be ≥ 1, got {n_tokens}")
    layers = sorted(set(int(x) for x in layers))
    ad = ModelAdapter(model)
    for lay in layers:
        ad.block(lay)  # range check with a clear message
    if texts is None:
        from ..worlds.text import load_domain

        texts = load_domain("wikipedia")
    n_pos = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
    chunks = token_chunks(tok, texts, n_tokens, min(max_len, n_pos or max_len))
    if not chunks:
        raise ValueError("the corpus gave no tokens for the key covariance: pass non-empty texts")
    h = hashlib.sha1(repr(chunks).encode()).hexdigest()[:12]
    folder = cache_dir() / "editing_stats"
    fp = model_fingerprint(model)
    paths = {lay: folder / f"{ad.model_type}-{fp}-L{lay}-{h}.pt" for lay in layers}
    out: dict[int, torch.Tensor] = {}
    if use_cache:
        for lay, p in paths.items():
            if p.exists():
                out[lay] = torch.load(p, weights_only=True)
    todo = [lay for lay in layers if lay not in out]
    if todo:
        was = model.training
        model.eval()
        new = _compute(model, chunks, todo, batch_size, progress)
        model.train(was)
        out.update(new)
        if use_cache:
            folder.mkdir(parents=True, exist_ok=True)
            for lay in todo:
                tmp = paths[lay].with_suffix(".tmp")
                torch.save(new[lay], tmp)
                tmp.replace(paths[lay])
    return out
