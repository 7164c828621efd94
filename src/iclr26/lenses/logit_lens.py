"""The logit lens, per-layer language probabilities and cross-lingual hidden-state similarity.

LinguaMap (Ben Tamo et al., ICLR 2026, https://arxiv.org/abs/2601.20009) tracks *which language* a multilingual LM is
"thinking in" at each layer. The logit lens (nostalgebraist, 2020) decodes the residual stream after block ``l`` as if
it were the last one: pseudo-logits ``z^(l) = W_U · norm_f(h^(l))`` (the model's own final norm, then its unembedding).
Reading the top-1 token at the positions of the output and identifying its language gives ``P^(l)(ℓ)``, the share of
output words in language ``ℓ`` at layer ``l``. The paper's second probe is the cosine similarity between mean-pooled
hidden states of parallel prompts (English vs target language): it rises in the first layers, plateaus near 1 in the
language-agnostic middle and drops in the last layers that produce the output language.

Everything goes through :class:`iclr26.lm.ModelAdapter` and the ``resid`` hooks, so it works on gpt2, llama, qwen2
and the other registered architectures. At the last layer the lens equals the model's own logits exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from ..lm.adapters import ModelAdapter
from ..lm.hooks import capture


def _check_ids(input_ids: torch.Tensor) -> torch.Tensor:
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise ValueError("input_ids must be a [batch, seq] LongTensor; tokenise with tok(texts, return_tensors='pt')")
    if input_ids.numel() == 0:
        raise ValueError(
            f"input_ids is empty (shape {tuple(input_ids.shape)}); give at least one sequence of at least one token"
        )
    return input_ids


def _check_layers(model, layers: Sequence[int] | None) -> list[int]:
    """Block indices (negative = from the end) checked against the model before any forward pass."""
    n = ModelAdapter(model).n_layers
    if layers is None:
        return list(range(n))
    layers = list(layers)
    bad = [x for x in layers if not (isinstance(x, int | np.integer) and -n <= x < n)]
    if bad or not layers:
        raise ValueError(f"layers {layers!r}: the model has {n} blocks, so give block indices in -{n}..{n - 1}")
    return [int(x) % n for x in layers]


def _check_positions(positions: Sequence[int], seq_len: int, what: str = "positions") -> list[int]:
    positions = [int(t) for t in positions]
    bad = [t for t in positions if not -seq_len <= t < seq_len]
    if bad:
        raise ValueError(f"{what} {bad} are outside a sequence of {seq_len} tokens (valid: -{seq_len}..{seq_len - 1})")
    return positions


@torch.no_grad()
def residuals(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The residual stream leaving every block, ``[n_layers]`` tensors of ``[batch, seq, d]`` (no final norm)."""
    ad = ModelAdapter(model)
    points = [("resid", layer) for layer in range(ad.n_layers)]
    with capture(model, points) as acts:
        model(input_ids=_check_ids(input_ids), attention_mask=attention_mask)
    return [acts[p] for p in points]


@torch.no_grad()
def lens_logits(model, h: torch.Tensor) -> torch.Tensor:
    """Logit lens of any residual vector(s) ``h [..., d]``: ``W_U · norm_f(h)``."""
    ad = ModelAdapter(model)
    if h.shape[-1] != ad.d_model:
        raise ValueError(f"vector has size {h.shape[-1]}, the model's residual stream has {ad.d_model}")
    return ad.logits_from_resid(h.to(ad.embed.weight.dtype))


@torch.no_grad()
def logit_lens(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    layers: Sequence[int] | None = None,
    positions: Sequence[int] | None = None,
) -> torch.Tensor:
    """``[n_layers, batch, seq, vocab]`` logits of every block's output read through the final norm and ``lm_head``.

    ``positions`` restricts the read-out to some token positions (saves memory on large vocabularies).
    """
    layers = _check_layers(model, layers)  # before the forward pass: a bad index must not cost a full pass
    _check_ids(input_ids)
    pos = slice(None) if positions is None else _check_positions(positions, input_ids.shape[1])
    hs = residuals(model, input_ids, attention_mask)
    # z^(l) = W_U norm_f(h^(l)); at l = L-1 this is exactly the model's forward pass.
    return torch.stack([lens_logits(model, hs[layer][:, pos]) for layer in layers])


@torch.no_grad()
def language_probs_by_layer(
    model,
    input_ids: torch.Tensor,
    positions: Sequence[Sequence[int]],
    token_language: Callable[[int], str | None],
    languages: Sequence[str],
    attention_mask: torch.Tensor | None = None,
) -> dict[str, np.ndarray]:
    """``P^(l)(ℓ)``: at each layer, the share of the given positions whose top-1 lens token is in language ``ℓ``.

    ``positions[b]`` lists the positions of sequence ``b`` that *predict* output words (the paper's generation
    positions); ``token_language(token_id)`` returns a language code or None (punctuation, unknown), counted in no
    language. Returns ``{language: array [n_layers]}``.
    """
    _check_ids(input_ids)
    if len(positions) != input_ids.shape[0]:
        raise ValueError(f"positions has {len(positions)} rows for a batch of {input_ids.shape[0]}")
    rows = [(b, t) for b, pos in enumerate(positions) for t in _check_positions(pos, input_ids.shape[1])]
    if not rows:
        raise ValueError("no positions given: pass the output positions of each sequence")
    hs = residuals(model, input_ids, attention_mask)
    bi, ti = torch.tensor([r[0] for r in rows]), torch.tensor([r[1] for r in rows])
    counts = {lang: np.zeros(len(hs)) for lang in languages}
    cache: dict[int, str | None] = {}
    for layer, h in enumerate(hs):
        # Only the M requested positions are decoded, one layer at a time: memory M × vocab, not L × B × T × vocab.
        for tid in lens_logits(model, h[bi, ti]).argmax(-1).tolist():
            if tid not in cache:
                cache[tid] = token_language(tid)
            lang = cache[tid]
            if lang in counts:
                counts[lang][layer] += 1
    total = len(rows)
    # Eq.: P^(l)(ℓ) = (1/M) Σ_j p_j^(l)(ℓ), with one-hot p_j from the word's language.
    return {lang: c / total for lang, c in counts.items()}


@torch.no_grad()
def token_probs_by_layer(
    model, tok, prompts: Sequence[str], candidates: dict[str, Sequence[str]]
) -> dict[str, np.ndarray]:
    """Lens probability of the next word in each language, per layer (for real models with parallel prompts).

    ``candidates[ℓ][i]`` is the expected next word of ``prompts[i]`` in language ``ℓ`` (e.g. the target-language answer
    and its English translation). The probability of a word is that of its first token at the last prompt position.
    Returns ``{ℓ: array [n_layers]}`` averaged over prompts.
    """
    for lang, words in candidates.items():
        if len(words) != len(prompts):
            raise ValueError(f"candidates[{lang!r}] has {len(words)} words for {len(prompts)} prompts")
    out = {lang: [] for lang in candidates}
    for i, prompt in enumerate(prompts):
        ids = tok(prompt, return_tensors="pt")["input_ids"]
        probs = torch.softmax(logit_lens(model, ids, positions=[-1])[:, 0, -1].float(), -1)  # [L, V]
        for lang, words in candidates.items():
            first = tok(words[i], add_special_tokens=False)["input_ids"][0]
            out[lang].append(probs[:, first].numpy())
    return {lang: np.mean(v, axis=0) for lang, v in out.items()}


@torch.no_grad()
def token_ranks_by_layer(
    model, tok, prompts: Sequence[str], candidates: dict[str, Sequence[str]]
) -> dict[str, np.ndarray]:
    """Lens *rank* of the next word in each language, per layer: mean over prompts of log10(1 + rank), rank 0 = top.

    Where the lens gives every candidate a near-zero probability (early and middle layers of a real model), the
    probabilities cannot say which language is closer to the top; the rank still can. Same arguments as
    :func:`token_probs_by_layer`.
    """
    for lang, words in candidates.items():
        if len(words) != len(prompts):
            raise ValueError(f"candidates[{lang!r}] has {len(words)} words for {len(prompts)} prompts")
    out = {lang: [] for lang in candidates}
    for i, prompt in enumerate(prompts):
        ids = tok(prompt, return_tensors="pt")["input_ids"]
        logits = logit_lens(model, ids, positions=[-1])[:, 0, -1].float()  # [L, V]
        for lang, words in candidates.items():
            first = tok(words[i], add_special_tokens=False)["input_ids"][0]
            rank = (logits > logits[:, first : first + 1]).sum(-1)  # tokens strictly above the candidate
            out[lang].append(np.log10(1.0 + rank.numpy()))
    return {lang: np.mean(v, axis=0) for lang, v in out.items()}


def _pooled_states(model, tok, texts: Sequence[str], skip_bos: bool) -> torch.Tensor:
    """Mean-pooled hidden states ``[n_layers + 1, n_texts, d]`` (embeddings, then each block); one text per pass."""
    n_layers = ModelAdapter(model).n_layers
    points = [("resid_pre", 0)] + [("resid", layer) for layer in range(n_layers)]
    pooled = []
    for text in texts:
        ids = tok(text, return_tensors="pt")["input_ids"]
        with capture(model, points) as acts:
            model(input_ids=ids)
        states = torch.stack([acts[p] for p in points])[:, 0]  # [L+1, T, d]
        if skip_bos and tok.bos_token_id is not None and ids[0, 0] == tok.bos_token_id:
            states = states[:, 1:]  # BOS is identical in both languages and would inflate the similarity
        if states.shape[1] == 0:
            raise ValueError(f"text {text!r} has no tokens besides BOS")
        pooled.append(states.float().mean(1))
    return torch.stack(pooled, 1)


@torch.no_grad()
def pooled_states(model, tok, texts: Sequence[str], skip_bos: bool = True) -> torch.Tensor:
    """Mean-pooled hidden states ``[n_layers + 1, n_texts, d]`` (embeddings, then each block), BOS left out."""
    return _pooled_states(model, tok, texts, skip_bos)


def _pair_states(model, tok, pairs, skip_bos: bool, center: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if not pairs:
        raise ValueError("give at least one (english, target-language) text pair")
    a = _pooled_states(model, tok, [p[0] for p in pairs], skip_bos)
    b = _pooled_states(model, tok, [p[1] for p in pairs], skip_bos)
    if center:
        # Remove the direction every text shares at a layer (the mean over all texts of both languages): hidden states
        # of a causal LM have a large common component that makes any two texts look similar.
        mu = torch.cat([a, b], 1).mean(1, keepdim=True)
        a, b = a - mu, b - mu
    return a, b


@torch.no_grad()
def crosslingual_similarity(
    model, tok, pairs: Sequence[tuple[str, str]], skip_bos: bool = True, center: bool = False
) -> np.ndarray:
    """``s_ℓ = mean_n cos(h̄_ℓ^(E,n), h̄_ℓ^(A,n))`` for parallel text pairs; ``[n_layers + 1]`` (index 0: embeddings).

    ``center=True`` subtracts, per layer, the mean pooled state over all texts of both languages first.
    """
    a, b = _pair_states(model, tok, pairs, skip_bos, center)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).mean(1).numpy()


@torch.no_grad()
def crosslingual_similarity_contrast(
    model, tok, pairs: Sequence[tuple[str, str]], skip_bos: bool = True, center: bool = False
) -> dict[str, np.ndarray]:
    """Parallel vs mismatched similarity per layer (``[n_layers + 1]`` each) and their difference.

    The mismatched baseline pairs English text ``n`` with the translation of text ``n + 1`` (cyclically): the same
    languages and lengths, different content. ``gap = parallel − mismatched`` is the part of the similarity that is
    due to shared *meaning*, not to a direction all texts share.
    """
    if len(pairs) < 2:
        raise ValueError(f"the mismatched baseline needs at least 2 pairs, got {len(pairs)}")
    a, b = _pair_states(model, tok, pairs, skip_bos, center)
    cos = torch.nn.functional.cosine_similarity
    par = cos(a, b, dim=-1).mean(1).numpy()
    mis = cos(a, b.roll(-1, dims=1), dim=-1).mean(1).numpy()
    return {"parallel": par, "mismatched": mis, "gap": par - mis}
