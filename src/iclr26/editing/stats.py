"""Key covariance statistics ``C = E[k kᵀ]`` of the MLP key (input of the down projection) at chosen layers.

ROME (Meng et al. 2022, §3.1) and MEMIT (Meng et al. 2023, §4.2) estimate ``C`` from 100,000 Wikipedia samples; it
stands for the keys of everything the layer already stores (``K₀K₀ᵀ ∝ C``). Here the corpus is any list of texts
(default: the ``wikipedia`` domain of :mod:`iclr26.worlds.text`), cut into chunks of ``max_len`` tokens, and the cost is
bounded by ``n_tokens``. The pass is streaming: each batch's keys are folded into a running ``Σ k kᵀ`` (float64,
``[d_ff, d_ff]``) and dropped, and the forward pass stops after the last needed layer, so memory stays at one batch of
activations plus one ``d_ff × d_ff`` matrix per layer. Results are cached on disk under
``trained_cache_dir()/editing_stats``, keyed by a fingerprint of the model's weights (:func:`weights_fingerprint`: every
parameter, so a merged LoRA or another fine-tune never gets stale statistics), the layer, and a hash of the exact token
chunks used.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence

import torch

from ..core.paths import trained_cache_dir
from ..lm.adapters import ModelAdapter, weight_of


class _Stop(Exception):
    pass


def weights_fingerprint(model, originals: dict | None = None) -> str:
    """A short hash of the config and of every parameter (shape, sum, sum of squares and a strided sample of up to
    4,096 values each; cheap even for 100M+ parameters). ``originals`` (``{layer: W}``, an edit sequence's original
    down projections) stand in for the current weights of those layers."""
    ad = ModelAdapter(model)
    swap = {id(weight_of(ad.mlp_out(lay))): w for lay, w in (originals or {}).items()}
    h = hashlib.sha1(model.config.to_json_string(use_diff=False).encode())
    with torch.no_grad():
        for name, p in model.named_parameters():
            t = swap.get(id(p), p).detach()
            flat = t.reshape(-1)
            step = max(1, flat.numel() // 4096)
            d = flat.double()
            h.update(f"{name}{tuple(t.shape)}{float(d.sum()):.10e}{float((d * d).sum()):.10e}".encode())
            h.update(flat[::step].float().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def original_weights(model, originals: dict | None):
    """Temporarily write an edit sequence's original down projections back (the statistics describe the unedited
    model), restoring the edited weights on exit."""
    if not originals:
        yield
        return
    ad = ModelAdapter(model)
    saved = {}
    with torch.no_grad():
        try:
            for lay, w in originals.items():
                p = weight_of(ad.mlp_out(lay))
                saved[lay] = p.detach().clone()
                p.copy_(w)
            yield
        finally:
            for lay, w in saved.items():
                weight_of(ad.mlp_out(lay)).copy_(w)


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
    fingerprint: str | None = None,
    originals: dict | None = None,
) -> dict[int, torch.Tensor]:
    """``{layer: E[k kᵀ]}`` (float64, ``[d_ff, d_ff]``) over ``n_tokens`` tokens of ``texts``; cached on disk under
    ``fingerprint`` (default :func:`weights_fingerprint` of the model with ``originals`` in place)."""
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
    folder = trained_cache_dir() / "editing_stats"
    fp = fingerprint or weights_fingerprint(model, originals)
    paths = {lay: folder / f"{ad.model_type}-{fp}-L{lay}-{h}.pt" for lay in layers}
    out: dict[int, torch.Tensor] = {}
    if use_cache:
        from ..core.cache import read_checked, read_tensors

        for lay, p in paths.items():
            got = read_checked(p, read_tensors)  # a damaged file is moved aside and recomputed
            if got is not None:
                out[lay] = got
    todo = [lay for lay in layers if lay not in out]
    if todo:
        was = model.training
        model.eval()
        with original_weights(model, originals):
            new = _compute(model, chunks, todo, batch_size, progress)
        model.train(was)
        out.update(new)
        if use_cache:
            from ..core.cache import write_checked, write_tensors

            for lay in todo:  # atomically, with a content digest
                write_checked(paths[lay], new[lay], write_tensors)
    return out
