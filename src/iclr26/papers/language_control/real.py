"""The language-control reproduction's real-model half: hand-written parallel sentences and words in four languages,
the logit-lens probes on SmolLM2-135M (or the model given with `--model`)."""

from __future__ import annotations

import functools
import random

import numpy as np
import torch

from ...lenses.logit_lens import (
    pooled_states,
    token_probs_by_layer,
    token_ranks_by_layer,
)
from . import Cfg
from . import texts as _TEXTS


# ---- SmolLM2: hand-written parallel data --------------------------------------------------------------------------
def _mid(curve) -> float:
    """Mean over the middle third of the blocks (curve indexed by block)."""
    n = len(curve)
    lo, hi = n // 3, max(n // 3 + 1, (2 * n) // 3)
    return float(np.mean(curve[lo:hi]))


SENTENCES, WORDS = _TEXTS.SENTENCES, _TEXTS.WORDS  # en, fr, es, de rows (texts.py)
_LANG_LABEL = {1: "Français", 2: "Español", 3: "Deutsch"}


def _translation_prompt(src: int, tgt: int, i: int) -> str:
    shots = [j for j in range(len(WORDS)) if j != i][:3]
    lines = [f'{_LANG_LABEL[src]}: "{WORDS[j][src]}" - {_LANG_LABEL[tgt]}: "{WORDS[j][tgt]}"' for j in shots]
    lines.append(f'{_LANG_LABEL[src]}: "{WORDS[i][src]}" - {_LANG_LABEL[tgt]}: "')
    return "\n".join(lines)


REAL_MODEL = "smollm2-135m"  # the real-model probes' default; `iclr26 run language-control --model X` replaces it


def seed_items(seed: int, n_items: int, n_pool: int) -> list[int]:
    """The items (indices into a pool of ``n_pool``) that seed ``seed`` measures: slice ``seed mod k`` of a fixed
    shuffle cut into ``k = n_pool // n_items`` disjoint slices, so that the seeds of a run (0, 1, 2, …) are
    independent samples of the hand-written pool, not overlapping resamples of it."""
    if not 1 <= n_items <= n_pool:
        raise ValueError(f"each seed needs 1..{n_pool} items of the pool, got {n_items}")
    order = list(range(n_pool))
    random.Random(1234).shuffle(order)
    part = seed % (n_pool // n_items)
    return sorted(order[part * n_items : (part + 1) * n_items])


@functools.lru_cache(maxsize=2)
def _load(model_name: str):
    from ...lm import zoo

    return zoo.load(model_name)


def _sentence_curves(model, tok, idx: list[int]) -> dict:
    """Per sentence n of ``idx`` and language j: parallel similarity cos(EN_n, L_n), the mismatched baseline
    cos(EN_n, L_{n+1}) (within the seed's sentences), and both after centring (subtracting the mean pooled state over
    the EN and L texts at each layer); curves [layer] averaged over sentences and the three languages."""
    cos = torch.nn.functional.cosine_similarity
    en = pooled_states(model, tok, [SENTENCES[i][0] for i in idx])  # [L+1, n, d]
    sims, sims_mis, gaps = [], [], []
    for j in (1, 2, 3):
        tg = pooled_states(model, tok, [SENTENCES[i][j] for i in idx])
        mu = torch.cat([en, tg], 1).mean(1, keepdim=True)
        par, mm = cos(en, tg, dim=-1), cos(en, tg.roll(-1, dims=1), dim=-1)  # [L+1, n]
        par_c, mm_c = cos(en - mu, tg - mu, dim=-1), cos(en - mu, (tg - mu).roll(-1, dims=1), dim=-1)
        sims.append(par.mean(1))
        sims_mis.append(mm.mean(1))
        gaps.append((par_c - mm_c).mean(1))
    return {k: torch.stack(v).mean(0).numpy() for k, v in (("sim", sims), ("sim_mis", sims_mis), ("gap", gaps))}


def _lens_items(model, tok, idx: list[int]) -> list[tuple]:
    """Few-shot word translation (FR→DE and DE→ES) of the concepts ``idx``: per item, the lens probability and
    log10(1 + rank) of the English word's and of the target word's first token, per layer."""
    items = []
    for i in idx:
        for src, tgt in ((1, 3), (3, 2)):
            first = {
                lang: tok(w, add_special_tokens=False)["input_ids"][0]
                for lang, w in (("en", WORDS[i][0]), ("target", WORDS[i][tgt]))
            }
            if first["en"] == first["target"]:
                continue  # the lens cannot tell the two words apart
            cand = {"en": [WORDS[i][0]], "target": [WORDS[i][tgt]]}
            c = token_probs_by_layer(model, tok, [_translation_prompt(src, tgt, i)], cand)
            r = token_ranks_by_layer(model, tok, [_translation_prompt(src, tgt, i)], cand)
            items.append((i, c["en"], c["target"], r["en"], r["target"]))
    return items


_TOP10 = float(np.log10(11.0))  # log10(1 + rank) below this: rank < 10


def smollm2_probes(cfg: Cfg, seed: int, model_name: str | None = None) -> tuple[dict[str, float], dict]:
    """The real-model probes on ``model_name`` (any local HF causal LM; default SmolLM2-135M); metrics end in
    ``_smollm2``, the claims' name for the real-model setting. Each seed measures its own disjoint slice of the
    hand-written sentences (``cfg.smollm2_sentences``) and concepts (``cfg.smollm2_concepts``)."""
    name = model_name or REAL_MODEL
    model, tok = _load(name)
    sents = seed_items(seed, min(cfg.smollm2_sentences, len(SENTENCES)), len(SENTENCES))
    if len(sents) < 2:
        raise ValueError("the mismatched baseline needs at least 2 sentences per seed (Cfg.smollm2_sentences)")
    concepts = seed_items(seed, min(cfg.smollm2_concepts, len(WORDS)), len(WORDS))
    curves = _sentence_curves(model, tok, sents)
    rows = _lens_items(model, tok, concepts)
    if not rows:
        raise ValueError(
            f"{name!r}: its tokenizer gives the same first token to every English word and its translation, so the "
            "logit lens cannot tell the languages apart"
        )
    sim, sim_mis, gap = curves["sim"], curves["sim_mis"], curves["gap"]
    p_en, p_tg = np.mean([r[1] for r in rows], 0), np.mean([r[2] for r in rows], 0)
    r_en, r_tg = np.mean([r[3] for r in rows], 0), np.mean([r[4] for r in rows], 0)
    m = {
        "sim_emb_smollm2": sim[0],
        "sim_mid_smollm2": _mid(sim[1:]),
        "sim_last_smollm2": sim[-1],
        "sim_mis_emb_smollm2": sim_mis[0],
        "sim_mis_mid_smollm2": _mid(sim_mis[1:]),
        "sim_mis_last_smollm2": sim_mis[-1],
        "sim_gap_emb_smollm2": gap[0],
        "sim_gap_mid_smollm2": _mid(gap[1:]),
        "sim_gap_last_smollm2": gap[-1],
        "sim_gap_max_smollm2": float(np.max(gap)),
        "p_en_mid_smollm2": _mid(p_en),
        "p_target_mid_smollm2": _mid(p_tg),
        "p_en_last_smollm2": p_en[-1],
        "p_target_last_smollm2": p_tg[-1],
        "rank_en_mid_smollm2": _mid(r_en),
        "rank_target_mid_smollm2": _mid(r_tg),
        "rank_en_last_smollm2": r_en[-1],
        "rank_target_last_smollm2": r_tg[-1],
        # testbed: the model does the translation task at all (the target word's first token at the last layer)
        "top1_target_last_smollm2": float(np.mean([r[4][-1] == 0 for r in rows])),
        "top10_target_last_smollm2": float(np.mean([r[4][-1] < _TOP10 for r in rows])),
        "n_lens_items_smollm2": float(len(rows)),
    }
    out = {"sim": sim, "sim_mis": sim_mis, "sim_gap": gap, "p_en": p_en, "p_target": p_tg, "rank_en": r_en}
    return {k: float(v) for k, v in m.items()}, {k: v.tolist() for k, v in {**out, "rank_target": r_tg}.items()}
