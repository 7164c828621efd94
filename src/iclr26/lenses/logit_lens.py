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
    return input_ids


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
    hs = residuals(model, input_ids, attention_mask)
    layers = range(len(hs)) if layers is None else layers
    pos = slice(None) if positions is None else list(positions)
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
    if len(positions) != input_ids.shape[0]:
        raise ValueError(f"positions has {len(positions)} rows for a batch of {input_ids.shape[0]}")
    lens = logit_lens(model, input_ids, attention_mask)  # [L, B, T, V]
    counts = {lang: np.zeros(lens.shape[0]) for lang in languages}
    total = sum(len(p) for p in positions)
    if total == 0:
        raise ValueError("no positions given: pass the output positions of each sequence")
    top = lens.argmax(-1)  # [L, B, T]
    cache: dict[int, str | None] = {}
    for b, pos in enumerate(positions):
        for t in pos:
            for layer in range(top.shape[0]):
                tid = int(top[layer, b, t])
                if tid not in cache:
                    cache[tid] = token_language(tid)
                lang = cache[tid]
                if lang in counts:
                    counts[lang][layer] += 1
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
def crosslingual_similarity(model, tok, pairs: Sequence[tuple[str, str]], skip_bos: bool = True) -> np.ndarray:
    """``s_ℓ = mean_n cos(h̄_ℓ^(E,n), h̄_ℓ^(A,n))`` for parallel text pairs; ``[n_layers + 1]`` (index 0: embeddings)."""
    if not pairs:
        raise ValueError("give at least one (english, target-language) text pair")
    a = _pooled_states(model, tok, [p[0] for p in pairs], skip_bos)
    b = _pooled_states(model, tok, [p[1] for p in pairs], skip_bos)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).mean(1).numpy()
