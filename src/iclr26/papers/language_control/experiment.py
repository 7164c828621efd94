"""LinguaMap (language control): probes find three layer phases; tuning only the last layers fixes the output language.

Paper: https://arxiv.org/abs/2601.20009 (ICLR 2026). Testbed: four synthetic languages with disjoint vocabularies
(``iclr26.worlds.languages``) and an English-dominant pretraining mixture, so a tiny model solves target-language
addition problems but often answers in English (the *language consistency bottleneck*). We then

1. evaluate the four-scenario protocol (monolingual, code-mixed, English distractor, bilingual instruction);
2. probe the layers: logit-lens language probability of the output tokens and cross-lingual cosine similarity of
   mean-pooled hidden states of parallel prompts;
3. fine-tune on 500 target-language examples with the masked loss, training all layers, the last ``k``, the first
   ``k`` or ``k`` random layers, and compare consistency, task accuracy and the fraction of parameters trained.

On the real SmolLM2-135M we run the probes only (hand-written parallel English/French/Spanish/German sentences and
few-shot word-translation prompts); fine-tuning a real model on real multilingual task data is out of our budget.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from dataclasses import dataclass

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from ..core.claims import Check, Claim
from ..lenses.logit_lens import crosslingual_similarity, language_probs_by_layer, token_probs_by_layer
from ..lenses.selective_tuning import SelectiveTuningConfig, selective_finetune
from ..lm.tiny import tiny_config
from ..lm.tokenizer import build_word_tokenizer
from ..lm.train import TrainConfig, train_lm
from ..worlds.languages import LANGS, SCENARIOS, LanguageWorld

TARGETS = LANGS[1:]


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    arch: str = "llama"
    n_layers: int = 6
    d_model: int = 64
    n_heads: int = 4
    n_pretrain: int = 20_000  # examples in the pretraining mixture
    pretrain_steps: int = 400
    batch_size: int = 32
    lr: float = 3e-3
    # pretraining mixture (fractions; the rest is English task data)
    frac_lx_to_en: float = 0.12  # target-language question answered in English (English-dominant responses)
    frac_lx_task: float = 0.02  # target-language question answered in the target language
    frac_mono: float = 0.15  # generic target-language sentences
    frac_parallel: float = 0.08  # "english sentence = target sentence"
    frac_instruction: float = 0.5  # share of task examples that carry an instruction (always truthful)
    n_finetune: int = 400
    ft_epochs: int = 5
    ft_lr: float = 5e-4
    ft_batch: int = 32
    k: int = 1  # of 6 blocks (the paper: 1 of 30 for Bloom, 2 of 64 for Qwen-3-32B)
    n_eval: int = 30  # problems per target language and scenario
    n_probe: int = 40
    smollm2: bool = True
    smollm2_concepts: int = 12  # concepts per seed (subsampled) for the real-model probes


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_layers=3,
        d_model=32,
        n_pretrain=2000,
        pretrain_steps=60,
        n_finetune=40,
        ft_epochs=1,
        n_eval=6,
        n_probe=6,
        smollm2=False,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_layers=8,
        d_model=128,
        n_pretrain=60_000,
        pretrain_steps=6000,
        n_finetune=2500,
        n_eval=300,
        n_probe=200,
        smollm2_concepts=16,
    ),
}

CONDITIONS = ("pre", "full", "last", "first", "random")

CLAIMS = [
    Claim(
        "consistency-bottleneck",
        "The untuned model solves target-language problems but answers in the wrong language, worst when the "
        "instructions are in English (code-mixed): task accuracy exceeds language consistency.",
        checks=(
            Check("task_pre_codemixed", ">", "cons_pre_codemixed", 0.1),
            Check("cons_pre_mono", ">", "cons_pre_codemixed"),
        ),
        paper="Qwen-3-32B code-mixed MMLU: task 60.51%, consistency 8.35%; monolingual MGSM consistency 65.56%",
    ),
    Claim(
        "three-phases",
        "Cross-lingual similarity of parallel prompts rises from the embeddings to a middle plateau and drops in the "
        "last layers; the target language wins the logit lens only at the end (tiny model).",
        checks=(
            Check("sim_mid", ">", "sim_emb"),
            Check("sim_mid", ">", "sim_last"),
            Check("p_target_last", ">", "p_target_mid"),
        ),
        paper="similarity 0.95–0.99 in middle layers, drop after layer ~55 (Qwen-3-32B) / ~24–30 (BLOOM)",
    ),
    Claim(
        "three-phases-smollm2",
        "On SmolLM2-135M: parallel EN/FR/ES/DE sentences are more similar in the middle than at the embeddings and at "
        "the last layer; in the middle layers the lens favours English over the target word, which wins at the end.",
        checks=(
            Check("sim_mid_smollm2", ">", "sim_emb_smollm2"),
            Check("sim_mid_smollm2", ">", "sim_last_smollm2"),
            Check("p_en_mid_smollm2", ">", "p_target_mid_smollm2"),
            Check("p_target_last_smollm2", ">", "p_en_last_smollm2"),
        ),
        paper="middle layers English-dominated; target-language probability overtakes English only in the last layers",
    ),
    Claim(
        "last-k-matches-full",
        "Tuning only the last k layers reaches ≥ 95% consistency, task accuracy within 3 points of full tuning, "
        "training ≤ 25% of the parameters.",
        checks=(
            Check("cons_last", ">", 0.95),
            Check("task_last", ">", "task_full", -0.03),
            Check("frac_last", "<", 0.25),
        ),
        paper="Qwen-3-32B last 2 layers (1.5B/32B params): consistency 99.20–99.83% vs full 99.47–100%",
    ),
    Claim(
        "first-random-worse",
        "Tuning the first k or k random layers gives lower consistency than the last k.",
        checks=(Check("cons_last", ">", "cons_first"), Check("cons_last", ">", "cons_random")),
        paper="random layers, Qwen monolingual MGSM: consistency ~65.9%, task 0.13%",
    ),
]

METRICS = {
    "cons_<cond>_<scenario>": "share of greedy outputs whose majority-vocabulary language is the requested one, "
    "over n_eval problems × 3 target languages; cond ∈ pre/full/last/first/random",
    "task_<cond>_<scenario>": "share of greedy outputs whose last number word (any language) equals a + b",
    "cons_<cond>, task_<cond>": "mean over the four scenarios",
    "frac_<cond>": "trainable parameters / all parameters (tied weights once)",
    "sim_emb, sim_mid, sim_last": "cosine of mean-pooled hidden states of parallel EN/Lx prompts+outputs (BOS "
    "excluded): embeddings, mean over the middle third of blocks, last block",
    "p_en_mid, p_target_mid, p_target_last": "logit-lens top-1 language share at the positions predicting the "
    "reference target-language output (teacher forced), middle third of blocks / last block",
    "*_smollm2": "the same on SmolLM2-135M: similarity of hand-written parallel EN–FR/ES/DE sentences; lens "
    "probability of the first token of the target word vs its English translation in few-shot word translation",
}


# ---- data -------------------------------------------------------------------------------------------------------
def pretraining_corpus(world: LanguageWorld, cfg: Cfg, rng: random.Random) -> list[str]:
    """English-dominant mixture: EN tasks, Lx→EN tasks, a few Lx→Lx tasks, Lx sentences, parallel pairs."""
    texts = []
    probs = world.problems(cfg.n_pretrain, rng)
    for p in probs:
        r = rng.random()
        lx = rng.choice(TARGETS)
        if r < cfg.frac_mono:
            texts.append(world.sentence(lx, p))
            continue
        r -= cfg.frac_mono
        if r < cfg.frac_parallel:
            texts.append(f"{world.sentence('en', p)} = {world.sentence(lx, p)}")
            continue
        r -= cfg.frac_parallel
        if r < cfg.frac_lx_to_en:
            q_lang, out_lang = lx, "en"
        elif r < cfg.frac_lx_to_en + cfg.frac_lx_task:
            q_lang, out_lang = lx, lx
        else:
            q_lang, out_lang = "en", "en"
        ctx_lang = rng.choice((q_lang, "en"))
        ctx = world.preamble(ctx_lang)
        if rng.random() < cfg.frac_instruction:
            ctx += " " + world.instruction(ctx_lang, out_lang)
        texts.append(f"{ctx} {world.question(q_lang, p)} {world.output(out_lang, p)}")
    return texts


def finetune_set(world: LanguageWorld, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """(P+I context, Q+R+A supervised) pairs with target-language answers, mono / code-mixed contexts."""
    out = []
    for p in world.problems(n, rng):
        lx = rng.choice(TARGETS)
        ctx, q = world.scenario(rng.choice(("mono", "codemixed")), lx, p)
        out.append((ctx, f"{q} {world.output(lx, p)}"))
    return out


# ---- evaluation -------------------------------------------------------------------------------------------------
@torch.no_grad()
def evaluate(model, tok, world: LanguageWorld, n: int, seed: int) -> dict[str, float]:
    """Consistency and task accuracy per scenario (greedy decoding, prompts batched by token length)."""
    res = {}
    for sc in SCENARIOS:
        items = []  # (target, problem, prompt ids)
        for lx in TARGETS:
            rng = random.Random(f"eval-{seed}-{sc}-{lx}")
            for p, d in zip(world.problems(n, rng), world.problems(n, rng)):
                items.append((lx, p, tok(" ".join(world.scenario(sc, lx, p, d)))["input_ids"]))
        cons, task = [], []
        for length in sorted({len(x[2]) for x in items}):
            group = [x for x in items if len(x[2]) == length]
            ids = torch.tensor([x[2] for x in group])
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=14,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )
            for (lx, p, _), row in zip(group, out[:, length:]):
                text = tok.decode(row, skip_special_tokens=True)
                cons.append(world.language_of(text) == lx)
                task.append(world.answer_of(text) == p.answer)
        res[f"cons_{sc}"] = float(np.mean(cons))
        res[f"task_{sc}"] = float(np.mean(task))
    res["cons"] = float(np.mean([res[f"cons_{s}"] for s in SCENARIOS]))
    res["task"] = float(np.mean([res[f"task_{s}"] for s in SCENARIOS]))
    return res


def probes(model, tok, world: LanguageWorld, n: int, seed: int) -> dict[str, list[float]]:
    """Per-layer target/English lens shares on target-language outputs and EN–Lx cross-lingual similarity."""
    rng = random.Random(f"probe-{seed}")
    p_en, p_tg, pairs = [], [], []
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    for lx in TARGETS:
        probs = world.problems(n, rng)
        texts, positions = [], []
        for p in probs:
            ctx, q = world.scenario("mono", lx, p)
            prefix = len(tok(f"{ctx} {q}")["input_ids"])
            full = f"{ctx} {q} {world.output(lx, p)}"
            texts.append(full)
            n_tok = len(tok(full)["input_ids"])
            positions.append(list(range(prefix - 1, n_tok - 1)))  # positions predicting the output tokens
            pairs.append(
                (f"{world.question('en', p)} {world.output('en', p)}", f"{world.question(lx, p)} {world.output(lx, p)}")
            )
        ids = tok(texts, return_tensors="pt")["input_ids"]
        shares = language_probs_by_layer(model, ids, positions, lambda t: world.word_language.get(vocab[t]), LANGS)
        p_en.append(shares["en"])
        p_tg.append(shares[lx])
    sim = crosslingual_similarity(model, tok, pairs)
    return {"p_en": np.mean(p_en, 0).tolist(), "p_target": np.mean(p_tg, 0).tolist(), "sim": sim.tolist()}


def _mid(curve) -> float:
    """Mean over the middle third of the blocks (curve indexed by block)."""
    n = len(curve)
    lo, hi = n // 3, max(n // 3 + 1, (2 * n) // 3)
    return float(np.mean(curve[lo:hi]))


# ---- SmolLM2: hand-written parallel data --------------------------------------------------------------------------
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


@functools.lru_cache(maxsize=1)
def _smollm2_curves() -> dict:
    """Per-item curves on SmolLM2 (computed once per process; seeds subsample items)."""
    from ..lm import zoo

    model, tok = zoo.load("smollm2-135m")
    sims = []
    for row in SENTENCES:
        sims.append([crosslingual_similarity(model, tok, [(row[0], row[j])]).tolist() for j in (1, 2, 3)])
    lens = []
    for i in range(len(WORDS)):
        for src, tgt in ((1, 3), (3, 2)):
            first = {
                lang: tok(w, add_special_tokens=False)["input_ids"][0]
                for lang, w in (("en", WORDS[i][0]), ("target", WORDS[i][tgt]))
            }
            if first["en"] == first["target"]:
                continue  # the lens cannot tell the two words apart
            c = token_probs_by_layer(
                model, tok, [_translation_prompt(src, tgt, i)], {"en": [WORDS[i][0]], "target": [WORDS[i][tgt]]}
            )
            lens.append((i, c["en"].tolist(), c["target"].tolist()))
    return {"sims": sims, "lens": lens}


def smollm2_probes(cfg: Cfg, seed: int) -> tuple[dict[str, float], dict]:
    curves = _smollm2_curves()
    rng = random.Random(f"smollm2-{seed}")
    concepts = set(rng.sample(range(len(WORDS)), min(cfg.smollm2_concepts, len(WORDS))))
    sents = rng.sample(range(len(SENTENCES)), max(2, (2 * len(SENTENCES)) // 3))
    sim = np.mean([np.mean(curves["sims"][i], 0) for i in sents], 0)
    rows = [r for r in curves["lens"] if r[0] in concepts]
    p_en, p_tg = np.mean([r[1] for r in rows], 0), np.mean([r[2] for r in rows], 0)
    m = {
        "sim_emb_smollm2": sim[0],
        "sim_mid_smollm2": _mid(sim[1:]),
        "sim_last_smollm2": sim[-1],
        "p_en_mid_smollm2": _mid(p_en),
        "p_target_mid_smollm2": _mid(p_tg),
        "p_en_last_smollm2": p_en[-1],
        "p_target_last_smollm2": p_tg[-1],
    }
    return m, {"sim": sim.tolist(), "p_en": p_en.tolist(), "p_target": p_tg.tolist()}


# ---- the run ------------------------------------------------------------------------------------------------------
def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    metrics: dict[str, float] = {}
    curves: dict = {}
    if cfg.smollm2:  # first, so that a missing model fails fast
        m, c = smollm2_probes(cfg, seed)
        metrics.update(m)
        curves["probes_smollm2"] = c
        ctx.log("smollm2: " + ", ".join(f"{k} {v:.3f}" for k, v in m.items()))
    world = LanguageWorld(seed)
    rng = random.Random(seed)
    texts = pretraining_corpus(world, cfg, rng)
    tok = build_word_tokenizer(world.vocabulary_texts())
    torch.manual_seed(seed)
    mcfg = tiny_config(
        cfg.arch, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, max_len=128
    )
    base = AutoModelForCausalLM.from_config(mcfg, dtype=torch.float32)
    losses = train_lm(
        base,
        tok,
        texts,
        TrainConfig(steps=cfg.pretrain_steps, batch_size=cfg.batch_size, lr=cfg.lr, warmup=50, seq_len=96, seed=seed),
        desc="pretrain",
    )
    ctx.log(f"pretrained: final loss {np.mean(losses[-20:]):.3f}")
    curves["pretrain_loss"] = losses[::10]
    pr = probes(base, tok, world, cfg.n_probe, seed)
    curves["probes_tiny"] = pr
    metrics.update(
        sim_emb=pr["sim"][0],
        sim_mid=_mid(pr["sim"][1:]),
        sim_last=pr["sim"][-1],
        p_en_mid=_mid(pr["p_en"]),
        p_target_mid=_mid(pr["p_target"]),
        p_target_last=pr["p_target"][-1],
        p_en_last=pr["p_en"][-1],
    )
    ft_data = finetune_set(world, cfg.n_finetune, random.Random(f"ft-{seed}"))
    strategies = {"full": "all", "last": "last", "first": "first", "random": "random"}
    for cond in CONDITIONS:
        model = base
        if cond != "pre":
            model = copy.deepcopy(base)
            res = selective_finetune(
                model,
                tok,
                ft_data,
                SelectiveTuningConfig(
                    strategy=strategies[cond],
                    k=cfg.k,
                    epochs=cfg.ft_epochs,
                    lr=cfg.ft_lr,
                    batch_size=cfg.ft_batch,
                    seed=seed,
                ),
            )
            metrics[f"frac_{cond}"] = res.trainable_fraction
            curves[f"layers_{cond}"] = res.layers
            if cond == "last":
                curves["probes_tiny_last"] = probes(model, tok, world, cfg.n_probe, seed)
        ev = evaluate(model, tok, world, cfg.n_eval, seed)
        for key, v in ev.items():
            kind, _, sc = key.partition("_")
            metrics[f"{kind}_{cond}" + (f"_{sc}" if sc else "")] = v
        ctx.log(f"{cond}: consistency {ev['cons']:.3f}, task {ev['task']:.3f}")
    ctx.save_artifact(f"curves-seed{seed}", curves)
    return metrics


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    figs = []
    files = sorted((run_dir / "artifacts").glob("curves*.json"))
    if not files:
        return figs
    data = json.loads(files[-1].read_text())
    panels = [("probes_tiny", "tiny model (before tuning)"), ("probes_smollm2", "SmolLM2-135M")]
    panels = [(k, t) for k, t in panels if k in data]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.5), squeeze=False)
    for ax, (key, title) in zip(axes[0], panels):
        d = data[key]
        ax.plot(range(1, len(d["p_en"]) + 1), d["p_en"], label="lens: English")
        ax.plot(range(1, len(d["p_target"]) + 1), d["p_target"], label="lens: target")
        ax.plot(range(len(d["sim"])), d["sim"], "k--", label="cos sim EN–target")
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_title(title)
        ax.legend(fontsize=7)
    figs.append(("probes", fig))
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for cond in CONDITIONS:
        xs = [m.get(f"task_{cond}", np.nan) for m in per_seed.values()]
        ys = [m.get(f"cons_{cond}", np.nan) for m in per_seed.values()]
        ax.scatter(xs, ys, label=cond)
    ax.set_xlabel("task accuracy")
    ax.set_ylabel("language consistency")
    ax.legend(fontsize=7)
    figs.append(("consistency_vs_task", fig))
    return figs
