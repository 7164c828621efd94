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


# ---- SmolLM2: hand-written parallel data --------------------------------------------------------------------------
def _mid(curve) -> float:
    """Mean over the middle third of the blocks (curve indexed by block)."""
    n = len(curve)
    lo, hi = n // 3, max(n // 3 + 1, (2 * n) // 3)
    return float(np.mean(curve[lo:hi]))


SENTENCES = [  # en, fr, es, de
    (
        "The cat sleeps on the warm bed.",
        "Le chat dort sur le lit chaud.",
        "El gato duerme en la cama caliente.",
        "Die Katze schläft auf dem warmen Bett.",
    ),
    (
        "My brother drinks coffee every morning.",
        "Mon frère boit du café chaque matin.",
        "Mi hermano bebe café cada mañana.",
        "Mein Bruder trinkt jeden Morgen Kaffee.",
    ),
    (
        "The children are playing in the garden.",
        "Les enfants jouent dans le jardin.",
        "Los niños juegan en el jardín.",
        "Die Kinder spielen im Garten.",
    ),
    (
        "We are going to the sea tomorrow.",
        "Nous allons à la mer demain.",
        "Vamos al mar mañana.",
        "Wir fahren morgen ans Meer.",
    ),
    (
        "This book is very interesting.",
        "Ce livre est très intéressant.",
        "Este libro es muy interesante.",
        "Dieses Buch ist sehr interessant.",
    ),
    (
        "The train leaves at eight o'clock.",
        "Le train part à huit heures.",
        "El tren sale a las ocho.",
        "Der Zug fährt um acht Uhr ab.",
    ),
    (
        "She buys bread at the bakery.",
        "Elle achète du pain à la boulangerie.",
        "Ella compra pan en la panadería.",
        "Sie kauft Brot in der Bäckerei.",
    ),
    (
        "It is raining and the street is wet.",
        "Il pleut et la rue est mouillée.",
        "Llueve y la calle está mojada.",
        "Es regnet und die Straße ist nass.",
    ),
    (
        "My grandmother lives in a small village.",
        "Ma grand-mère habite dans un petit village.",
        "Mi abuela vive en un pueblo pequeño.",
        "Meine Großmutter wohnt in einem kleinen Dorf.",
    ),
    (
        "The doctor works at the hospital.",
        "Le médecin travaille à l'hôpital.",
        "El médico trabaja en el hospital.",
        "Der Arzt arbeitet im Krankenhaus.",
    ),
    (
        "I would like a glass of water.",
        "Je voudrais un verre d'eau.",
        "Quisiera un vaso de agua.",
        "Ich möchte ein Glas Wasser.",
    ),
    (
        "The sun rises in the east.",
        "Le soleil se lève à l'est.",
        "El sol sale por el este.",
        "Die Sonne geht im Osten auf.",
    ),
]
WORDS = [  # en, fr, es, de
    ("book", "livre", "libro", "Buch"),
    ("water", "eau", "agua", "Wasser"),
    ("flower", "fleur", "flor", "Blume"),
    ("house", "maison", "casa", "Haus"),
    ("dog", "chien", "perro", "Hund"),
    ("moon", "lune", "luna", "Mond"),
    ("tree", "arbre", "árbol", "Baum"),
    ("bread", "pain", "pan", "Brot"),
    ("cat", "chat", "gato", "Katze"),
    ("sun", "soleil", "sol", "Sonne"),
    ("city", "ville", "ciudad", "Stadt"),
    ("friend", "ami", "amigo", "Freund"),
    ("night", "nuit", "noche", "Nacht"),
    ("king", "roi", "rey", "König"),
    ("window", "fenêtre", "ventana", "Fenster"),
    ("horse", "cheval", "caballo", "Pferd"),
    ("mountain", "montagne", "montaña", "Berg"),
    ("fish", "poisson", "pez", "Fisch"),
]
_LANG_LABEL = {1: "Français", 2: "Español", 3: "Deutsch"}


def _translation_prompt(src: int, tgt: int, i: int) -> str:
    shots = [j for j in range(len(WORDS)) if j != i][:3]
    lines = [f'{_LANG_LABEL[src]}: "{WORDS[j][src]}" - {_LANG_LABEL[tgt]}: "{WORDS[j][tgt]}"' for j in shots]
    lines.append(f'{_LANG_LABEL[src]}: "{WORDS[i][src]}" - {_LANG_LABEL[tgt]}: "')
    return "\n".join(lines)


REAL_MODEL = "smollm2-135m"  # the real-model probes' default; `iclr26 run language-control --model X` replaces it


@functools.lru_cache(maxsize=2)
def _smollm2_curves(model_name: str = REAL_MODEL) -> dict:
    """Per-item curves on the real model (computed once per process and model; seeds subsample items)."""
    from ...lm import zoo

    model, tok = zoo.load(model_name)
    # per sentence n and language j: parallel similarity cos(EN_n, L_n), the mismatched baseline cos(EN_n, L_{n+1}),
    # and both after centring (subtracting the mean pooled state over the EN and L texts at each layer)
    cos = torch.nn.functional.cosine_similarity
    en = pooled_states(model, tok, [row[0] for row in SENTENCES])  # [L+1, n, d]
    sims, sims_mis, gaps = [], [], []
    for j in (1, 2, 3):
        tg = pooled_states(model, tok, [row[j] for row in SENTENCES])
        mu = torch.cat([en, tg], 1).mean(1, keepdim=True)
        par, mm = cos(en, tg, dim=-1), cos(en, tg.roll(-1, dims=1), dim=-1)  # [L+1, n]
        par_c, mm_c = cos(en - mu, tg - mu, dim=-1), cos(en - mu, (tg - mu).roll(-1, dims=1), dim=-1)
        sims.append(par.T.tolist())
        sims_mis.append(mm.T.tolist())
        gaps.append((par_c - mm_c).T.tolist())
    # reorder to [sentence][language][layer]
    sims, sims_mis, gaps = (
        [[x[j][i] for j in range(3)] for i in range(len(SENTENCES))] for x in (sims, sims_mis, gaps)
    )
    lens = []
    for i in range(len(WORDS)):
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
            lens.append((i, c["en"].tolist(), c["target"].tolist(), r["en"].tolist(), r["target"].tolist()))
    return {"sims": sims, "sims_mis": sims_mis, "gaps": gaps, "lens": lens}


def smollm2_probes(cfg: Cfg, seed: int, model_name: str | None = None) -> tuple[dict[str, float], dict]:
    """The real-model probes on ``model_name`` (any local HF causal LM; default SmolLM2-135M); metrics end in
    ``_smollm2``, the claims' name for the real-model setting."""
    curves = _smollm2_curves(model_name or REAL_MODEL)
    if not curves["lens"]:
        raise ValueError(
            f"{model_name or REAL_MODEL!r}: its tokenizer gives the same first token to every English word and its "
            "translation, so the logit lens cannot tell the languages apart"
        )
    rng = random.Random(f"smollm2-{seed}")
    concepts = set(rng.sample(range(len(WORDS)), min(cfg.smollm2_concepts, len(WORDS))))
    sents = rng.sample(range(len(SENTENCES)), max(2, (2 * len(SENTENCES)) // 3))
    sim, sim_mis, gap = (np.mean([np.mean(curves[k][i], 0) for i in sents], 0) for k in ("sims", "sims_mis", "gaps"))
    rows = [r for r in curves["lens"] if r[0] in concepts]
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
        "p_en_mid_smollm2": _mid(p_en),
        "p_target_mid_smollm2": _mid(p_tg),
        "p_en_last_smollm2": p_en[-1],
        "p_target_last_smollm2": p_tg[-1],
        "rank_en_mid_smollm2": _mid(r_en),
        "rank_target_mid_smollm2": _mid(r_tg),
        "rank_en_last_smollm2": r_en[-1],
        "rank_target_last_smollm2": r_tg[-1],
    }
    out = {"sim": sim, "sim_mis": sim_mis, "sim_gap": gap, "p_en": p_en, "p_target": p_tg, "rank_en": r_en}
    return m, {k: v.tolist() for k, v in {**out, "rank_target": r_tg}.items()}
