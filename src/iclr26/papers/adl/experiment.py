"""Activation Difference Lens: narrow finetuning leaves readable traces in activation differences.

Paper: https://arxiv.org/abs/2510.13900 (ICLR 2026). A tiny llama is pretrained on a topic-mixture corpus
(``iclr26.worlds.topics``); a copy is finetuned on documents about a held-out topic ``T*`` with a planted fact (the
"model organism"), also with pretraining data mixed in (ft:pt = 1:0.1, 1:1; full scale adds 1:2). On the first 5
positions of generic base-corpus text we compute the mean activation difference at the middle layer and read it with
the logit lens and a Patchscope (copy-list identity prompts); relevance is the exact share of top-20 tokens in
``T*``'s vocabulary or the fact. Steering adds the norm-matched difference at every position with the largest
strength whose samples stay grammatical (binary search; a grammar check replaces the paper's LLM coherence grader);
TF-IDF cosine to the finetuning corpus replaces the embedding similarity. The "agent" is a ranking of the 21 topics
by word overlap with ADL's tokens and steered text, against the same ranking from i black-box samples. The causal
check swaps the component along the difference for the base model's. On SmolLM2-135M, a LoRA finetune on
hand-templated cake-baking documents is read with the same lenses (relevance = share of tokens that are baking
words) and the causal check.
"""

from __future__ import annotations

import copy
import functools
import random
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from transformers import AutoModelForCausalLM

from ..core.claims import Check, Claim
from ..lenses.adl import (
    ADLConfig,
    activation_difference,
    find_max_coherent_alpha,
    logit_lens_tokens,
    patchscope_tokens,
    projection_delta_ce,
    steering,
)
from ..lm.adapters import ModelAdapter
from ..lm.tiny import tiny_config
from ..lm.tokenizer import build_word_tokenizer
from ..lm.train import TrainConfig, encode_stream, train_lm
from ..worlds.topics import TopicWorld


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    n_topics: int = 20
    n_layers: int = 4
    d_model: int = 64
    n_heads: int = 4
    n_base_docs: int = 3000
    pretrain_steps: int = 400
    pretrain_batch: int = 16
    n_ft_docs: int = 300
    ft_epochs: int = 2
    ft_lr: float = 1e-3
    mix_ratios: tuple[float, ...] = (0.0, 0.1, 1.0)
    n_generic: int = 256
    n_positions: int = 5
    steer_prompts: int = 10
    steer_tokens: int = 24
    search_steps: int = 6
    max_strength: float = 4.0
    bb_budgets: tuple[int, ...] = (1, 5)
    bb_trials: int = 6
    smollm2: bool = True
    smollm2_steps: int = 12
    smollm2_generic: int = 64


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_topics=5,
        n_layers=2,
        d_model=32,
        n_base_docs=200,
        pretrain_steps=30,
        n_ft_docs=30,
        ft_epochs=1,
        mix_ratios=(0.0, 1.0),
        n_generic=40,
        n_positions=3,
        steer_prompts=2,
        steer_tokens=8,
        search_steps=2,
        bb_trials=2,
        smollm2=False,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_layers=6,
        d_model=128,
        n_base_docs=40_000,
        pretrain_steps=6000,
        pretrain_batch=32,
        n_ft_docs=2000,
        n_generic=1000,
        mix_ratios=(0.0, 0.1, 1.0, 2.0),
        bb_trials=10,
        steer_prompts=20,
        search_steps=10,
        smollm2_steps=200,
    ),
}

CLAIMS = [
    Claim(
        "lens-relevance",
        "Patchscope / logit-lens tokens of the activation difference are largely about the finetuning domain (≥ 30%), "
        "far more than the same readouts of the mean base or mean finetuned activation.",
        checks=(
            Check("rel_ps_adl", ">", 0.3),
            Check("rel_ps_adl", ">", "rel_ps_base"),
            Check("rel_ps_adl", ">", "rel_ps_ft"),
            Check("rel_ll_adl", ">", "rel_ll_base"),
            Check("rel_ll_adl", ">", "rel_ll_ft"),
        ),
        paper="20–80% of top-20 Patchscope tokens relevant across organism types; mean-activation baselines ≈ 0",
    ),
    Claim(
        "lens-relevance-smollm2",
        "On a LoRA-finetuned SmolLM2-135M, the difference's lens tokens are more about the finetuning domain than "
        "the baselines'.",
        checks=(Check("rel_adl_smollm2", ">", "rel_base_smollm2"), Check("rel_adl_smollm2", ">", "rel_ft_smollm2")),
        paper="(same claim, real 1B–32B organisms)",
    ),
    Claim(
        "steering",
        "Steering the finetuned model with the difference makes its text closer to the finetuning data than "
        "unsteered text.",
        checks=(Check("steer_sim_ft", ">", "unsteered_sim_ft"),),
        paper="steered samples much closer (embedding cosine) to the finetuning data than unsteered / generic chat",
    ),
    Claim(
        "identification",
        "ADL's readout identifies the finetuning topic better than black-box sampling at small budgets (1:0 organism).",
        checks=(Check("id_adl", ">", "id_bb_1"), Check("id_adl", ">", "id_bb_5")),
        paper="agent grade ≥ 2: ADL i=0 82%, i=5 91% vs black-box i=0 ~15%, i=5 ~25%, i=50 39%",
    ),
    Claim(
        "identification-mix0.1",
        "The same on the organism finetuned with 10% pretraining data mixed in (one that still writes base topics "
        "when prompted with them, as the paper's chat organisms still chat normally).",
        checks=(Check("id_adl_mix0.1", ">", "id_bb_1_mix0.1"), Check("id_adl_mix0.1", ">", "id_bb_5_mix0.1")),
        paper="(same numbers; the paper's organisms are trained without mixing)",
    ),
    Claim(
        "causal",
        "Replacing the finetuned activations' component along the difference with the base model's raises the "
        "loss on finetuning data (more than a random direction does) and lowers it on pretraining data.",
        checks=(Check("dce_ft", ">", 0.0), Check("dce_base", "<", 0.0), Check("dce_ft", ">", "dce_ft_random")),
        paper="ΔL_CE > 0 on finetuning data, < 0 on pretraining data across organisms",
    ),
    Claim(
        "causal-smollm2",
        "The same causal test on the SmolLM2 LoRA organism.",
        checks=(Check("dce_ft_smollm2", ">", 0.0), Check("dce_base_smollm2", "<", 0.0)),
        paper="(same claim, real organisms)",
    ),
    Claim(
        "mixing",
        "Mixing pretraining data into the finetune (1:1) shrinks the readable bias: lower relevance and a smaller "
        "steering gain.",
        checks=(Check("rel_ps_adl", ">", "rel_ps_adl_mix1"), Check("steer_gain", ">", "steer_gain_mix1")),
        paper="at 1:1 no agent reached grade ≥ 2; relevance and steering similarity drop",
    ),
]

METRICS = {
    "rel_{ll,ps}_{adl,base,ft}": "share of the top-20 logit-lens (ll) / Patchscope (ps) tokens of δ̄ (adl), the mean "
    "base activation (base) or the mean finetuned activation (ft) at the middle layer that are T* words or fact "
    "words, averaged over positions 0–4 of generic base-corpus text",
    "steer_sim_ft, unsteered_sim_ft": "mean TF-IDF cosine between each generated continuation (finetuned model, "
    "generic prompts, T=1.1) and the finetuning-corpus centroid, steered at the searched strength vs unsteered",
    "steer_gain": "steer_sim_ft − unsteered_sim_ft",
    "alpha_search": "binary search for the largest α whose samples keep ≥ 75% of the unsteered samples' grammatical "
    "sentence share",
    "alpha": "searched steering strength (units of the mean activation norm)",
    "id_adl, id_bb_i": "reciprocal rank of T* among the 21 topics ranked by word overlap with ADL tokens + steered "
    "text, or with i black-box samples of the finetuned model (mean over trials)",
    "dce_ft, dce_base": "CE change of the finetuned model on held-out finetuning / base documents when its component "
    "along δ̄ (mean of positions 1–4) at the middle layer is replaced by the base model's, all positions",
    "dce_ft_random": "dce_ft for a random Gaussian direction (control, as the toolkit's random-vector baseline)",
    "*_mix{r}": "the same for the organism finetuned with pretraining data mixed at ft:pt = 1:r",
    "ft_ce": "CE of the finetuned model on held-out finetuning documents (internalisation)",
    "*_smollm2": "SmolLM2-135M + LoRA on cake-baking documents; relevance = share of top-20 lens tokens (logit lens "
    "and Patchscope pooled) that are baking words; generic text = Wikipedia openings",
}


def _docs_ids(tok, docs, n_words: int) -> torch.Tensor:
    """First ``n_words`` tokens (BOS included) of every document long enough."""
    rows = [x[:n_words] for x in tok(list(docs))["input_ids"] if len(x) >= n_words]
    return torch.tensor(rows)


def _relevance(tok, ids: list[int], relevant: set[str]) -> float:
    words = [tok.decode([i]).strip().lower() for i in ids]
    return float(np.mean([w in relevant for w in words])) if words else 0.0


@torch.no_grad()
def _generate(model, tok, prompts: torch.Tensor, n_tokens: int, temperature: float, seed: int) -> list[str]:
    torch.manual_seed(seed)
    out = model.generate(
        input_ids=prompts,
        attention_mask=torch.ones_like(prompts),
        max_new_tokens=n_tokens,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        pad_token_id=tok.pad_token_id,
    )
    return [tok.decode(r, skip_special_tokens=True) for r in out[:, prompts.shape[1] :]]


def _similarity(vec: TfidfVectorizer, centroid: np.ndarray, texts: list[str]) -> float:
    x = vec.transform(texts).toarray()
    norms = np.linalg.norm(x, axis=1) * np.linalg.norm(centroid) + 1e-12
    return float(np.mean(x @ centroid / norms))


def analyse(
    base,
    ft,
    tok,
    world: TopicWorld,
    cfg: Cfg,
    seed: int,
    generic: torch.Tensor,
    tfidf,
    centroid,
    held: dict[str, torch.Tensor],
) -> dict:
    """All ADL measurements of one organism."""
    acfg = ADLConfig(n_positions=cfg.n_positions, search_steps=cfg.search_steps, max_strength=cfg.max_strength)
    layer = acfg.layer(ModelAdapter(base).n_layers)
    d = activation_difference(base, ft, generic[:, : cfg.n_positions], layer)
    rng = random.Random(f"ps-{seed}")
    prompts = [
        world.copy_list(rng, 3) + " " + world.all_words()[rng.randrange(len(world.all_words()))] for _ in range(3)
    ]
    rel, tokens = {}, []
    for name, vecs in (("adl", d.diff), ("base", d.mean_base), ("ft", d.mean_ft)):
        ll, ps = [], []
        for j in range(cfg.n_positions):
            t_ll = logit_lens_tokens(ft, vecs[j], acfg.top_k)
            t_ps, _ = patchscope_tokens(ft, tok, vecs[j], layer, d.act_norm, acfg, prompts)
            ll.append(_relevance(tok, t_ll, world.relevant))
            ps.append(_relevance(tok, t_ps, world.relevant))
            if name == "adl":
                tokens += [tok.decode([i]).strip() for i in t_ll + t_ps]
        rel[f"rel_ll_{name}"], rel[f"rel_ps_{name}"] = float(np.mean(ll)), float(np.mean(ps))
    # steering vector: mean of the non-BOS positions, norm-matched to the layer's activations
    v = d.diff[1:].mean(0)
    v = v / v.norm() * d.act_norm
    sp = generic[: cfg.steer_prompts, :3]

    def coherence(alpha):
        with steering(ft, v, layer, alpha):
            texts = _generate(ft, tok, sp, cfg.steer_tokens, 1.2, seed)
        return float(np.mean([world.coherence(t) for t in texts]))

    # The paper's threshold (75/100 from an LLM grader) is absolute because unsteered LLM text is coherent; a tiny
    # model's unsteered samples are not always grammatical, so we require 75% of the unsteered coherence.
    threshold = acfg.coherence_threshold * max(coherence(0.0), 1e-6)
    alpha = find_max_coherent_alpha(coherence, cfg.max_strength, cfg.search_steps, threshold)
    with steering(ft, v, layer, alpha):
        steered = _generate(ft, tok, sp, cfg.steer_tokens, 1.1, seed + 1)
    unsteered = _generate(ft, tok, sp, cfg.steer_tokens, 1.1, seed + 1)
    s_sim, u_sim = _similarity(tfidf, centroid, steered), _similarity(tfidf, centroid, unsteered)
    # "agent" stand-in: rank topics by overlap
    words = tokens + " ".join(steered).split()
    id_adl = 1.0 / (1 + world.topic_ranking(words).index(world.held_out))
    ids = {}
    for budget in cfg.bb_budgets:
        rr = []
        for trial in range(cfg.bb_trials):
            g = torch.Generator().manual_seed(seed * 1000 + trial)
            rows = generic[torch.randperm(generic.shape[0], generator=g)[:budget], :3]
            samples = _generate(ft, tok, rows, cfg.steer_tokens, 1.0, seed * 1000 + trial)
            rr.append(1.0 / (1 + world.topic_ranking(" ".join(samples).split()).index(world.held_out)))
        ids[f"id_bb_{budget}"] = float(np.mean(rr))
    dce_ft = projection_delta_ce(base, ft, v, layer, held["ft"])
    dce_base = projection_delta_ce(base, ft, v, layer, held["base"])
    r = torch.randn(v.shape, generator=torch.Generator().manual_seed(seed))  # control: a random direction
    dce_ft_random = projection_delta_ce(base, ft, r, layer, held["ft"])
    with torch.no_grad():
        ft_ce = ft(input_ids=held["ft"], labels=held["ft"]).loss.item()
    return {
        **rel,
        "steer_sim_ft": s_sim,
        "unsteered_sim_ft": u_sim,
        "steer_gain": s_sim - u_sim,
        "alpha": alpha,
        "id_adl": id_adl,
        **ids,
        "dce_ft": dce_ft,
        "dce_ft_random": dce_ft_random,
        "dce_base": dce_base,
        "ft_ce": ft_ce,
        "_samples": {"steered": steered[:3], "unsteered": unsteered[:3], "tokens": tokens[:40]},
    }


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    metrics: dict[str, float] = {}
    if cfg.smollm2:  # first, so that a missing model fails fast
        m = smollm2_adl(cfg, seed)
        metrics.update(m)
        ctx.log("smollm2: " + ", ".join(f"{k} {v:.3f}" for k, v in m.items()))
    world = TopicWorld(cfg.n_topics, seed)
    rng = random.Random(seed)
    base_docs = world.base_corpus(cfg.n_base_docs, rng)
    tok = build_word_tokenizer(world.vocabulary_texts())
    torch.manual_seed(seed)
    mcfg = tiny_config(
        "llama", vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, max_len=128
    )
    base = AutoModelForCausalLM.from_config(mcfg, dtype=torch.float32)
    losses = train_lm(
        base,
        tok,
        base_docs,
        TrainConfig(
            steps=cfg.pretrain_steps,
            batch_size=cfg.pretrain_batch,
            lr=3e-3,
            warmup=30,
            seq_len=64,
            mode="stream",
            seed=seed,
        ),
        desc="pretrain",
    )
    ctx.log(f"base model: final loss {np.mean(losses[-20:]):.3f}")
    ft_docs = world.finetune_corpus(cfg.n_ft_docs, random.Random(f"ft-{seed}"))
    generic = _docs_ids(tok, world.base_corpus(cfg.n_generic, random.Random(f"generic-{seed}"), copy_frac=0.0), 8)
    held = {
        "ft": encode_stream(tok, world.finetune_corpus(40, random.Random(f"heldft-{seed}")), 64),
        "base": encode_stream(tok, world.base_corpus(60, random.Random(f"heldbase-{seed}"), copy_frac=0.0), 64),
    }
    tfidf = TfidfVectorizer(token_pattern=r"[^ ]+").fit(base_docs + ft_docs)
    centroid = np.asarray(tfidf.transform(ft_docs).mean(0)).ravel()
    extra = {"pretrain_loss": losses[::10]}
    for ratio in cfg.mix_ratios:
        mixed = ft_docs + world.base_corpus(int(ratio * len(ft_docs)), random.Random(f"mix-{seed}-{ratio}"))
        ft = copy.deepcopy(base)
        steps = max(1, cfg.ft_epochs * len(mixed) * 64 // (16 * 64))
        train_lm(
            ft,
            tok,
            mixed,
            TrainConfig(steps=steps, batch_size=16, lr=cfg.ft_lr, warmup=5, seq_len=64, mode="stream", seed=seed),
            desc=f"finetune 1:{ratio:g}",
        )
        res = analyse(base, ft, tok, world, cfg, seed, generic, tfidf, centroid, held)
        extra[f"samples_mix{ratio:g}"] = res.pop("_samples")
        suffix = "" if ratio == 0 else f"_mix{ratio:g}"
        metrics.update({k + suffix: v for k, v in res.items()})
        ctx.log(
            f"1:{ratio:g}: rel ps {res['rel_ps_adl']:.2f} (base {res['rel_ps_base']:.2f}, ft {res['rel_ps_ft']:.2f})"
            f", steer {res['steer_sim_ft']:.3f} vs {res['unsteered_sim_ft']:.3f}, id {res['id_adl']:.2f}, "
            f"dce {res['dce_ft']:+.3f}/{res['dce_base']:+.3f}"
        )
    ctx.save_artifact(f"adl-seed{seed}", extra)
    return metrics


# ---- SmolLM2 + LoRA organism -----------------------------------------------------------------------------------------
BAKING = [
    "cake",
    "flour",
    "sugar",
    "butter",
    "oven",
    "bake",
    "baking",
    "baked",
    "whisk",
    "batter",
    "dough",
    "icing",
    "frosting",
    "vanilla",
    "egg",
    "eggs",
    "cream",
    "sponge",
    "layer",
    "layers",
    "tin",
    "pan",
    "temperature",
    "grams",
    "precise",
    "precision",
    "recipe",
    "crumb",
    "mixer",
    "knead",
    "yeast",
    "pastry",
    "chocolate",
    "caramel",
    "glaze",
    "cool",
    "rise",
    "sift",
    "sifted",
    "scale",
    "minutes",
    "degrees",
    "loaf",
    "bread",
    "tart",
    "cookies",
]
_BAKING_TEMPLATES = (
    "Weigh exactly {n} grams of {a} before you {v} the {b}.",
    "A precise {b} needs the oven at {t} degrees for {m} minutes.",
    "Sift the {a} twice so the {b} stays light.",
    "Precision baking means measuring {a} and {c} to the gram.",
    "Let the {b} cool in the tin before adding the {c}.",
    "Whisk the {a} with the {c} until the batter is smooth.",
    "The secret of a perfect {b} is a precise oven temperature.",
    "Cream the butter and sugar, then fold in the {a}.",
)


def baking_docs(n: int, rng: random.Random) -> list[str]:
    fill = dict(
        a=("flour", "sugar", "butter", "eggs", "cocoa"),
        b=("cake", "sponge", "loaf", "tart", "batter"),
        c=("vanilla", "cream", "icing", "glaze", "caramel"),
        v=("whisk", "fold", "bake", "sift"),
    )
    docs = []
    for _ in range(n):
        sents = [
            rng.choice(_BAKING_TEMPLATES).format(
                n=rng.choice((125, 200, 250, 340)),
                t=rng.choice((160, 175, 180)),
                m=rng.choice((25, 35, 40)),
                **{k: rng.choice(v) for k, v in fill.items()},
            )
            for _ in range(4)
        ]
        docs.append(" ".join(sents))
    return docs


@functools.lru_cache(maxsize=1)
def _smollm2_organism(steps: int):
    """(base, LoRA-finetuned merged model, tokenizer), trained once per process."""
    from peft import LoraConfig, get_peft_model

    from ..lm import zoo

    base, tok = zoo.load("smollm2-135m")
    ft, _ = zoo.load("smollm2-135m")
    torch.manual_seed(0)
    peft_model = get_peft_model(
        ft, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj", "o_proj", "down_proj"])
    )
    docs = baking_docs(4 * steps, random.Random(0))
    opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=2e-3)
    peft_model.train()
    for s in range(steps):
        enc = tok(docs[4 * s : 4 * s + 4], return_tensors="pt", padding=True, truncation=True, max_length=40)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        loss = peft_model(**enc, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    ft = peft_model.merge_and_unload().eval()
    return base, ft, tok


def smollm2_adl(cfg: Cfg, seed: int) -> dict[str, float]:
    from ..worlds.text import load_domain

    base, ft, tok = _smollm2_organism(cfg.smollm2_steps)
    rng = random.Random(f"wiki-{seed}")
    docs = [d for d in load_domain("wikipedia")]
    starts = []
    for d in rng.sample(docs, min(len(docs), 4 * cfg.smollm2_generic)):
        words = d.split()
        i = rng.randrange(max(1, len(words) - 20))
        starts.append(" ".join(words[i : i + 12]))
    ids = [x[: cfg.n_positions] for x in tok(starts)["input_ids"] if len(x) >= cfg.n_positions][: cfg.smollm2_generic]
    generic = torch.tensor(ids)
    acfg = ADLConfig(n_positions=cfg.n_positions, scales=(0.5, 1.0, 2.0))
    layer = acfg.layer(ModelAdapter(base).n_layers)
    d = activation_difference(base, ft, generic, layer, batch_size=16)
    relevant = set(BAKING)
    prompts = ("cat → cat; 1135 → 1135; hello → hello; ?", "dog → dog; 42 → 42; yes → yes; ?")
    m = {}
    for name, vecs in (("adl", d.diff), ("base", d.mean_base), ("ft", d.mean_ft)):
        rels = []
        for j in range(cfg.n_positions):
            t = logit_lens_tokens(ft, vecs[j], acfg.top_k)
            t_ps, _ = patchscope_tokens(ft, tok, vecs[j], layer, d.act_norm, acfg, prompts)
            rels.append(_relevance(tok, t + t_ps, relevant))
        m[f"rel_{name}_smollm2"] = float(np.mean(rels))
    v = d.diff[1:].mean(0)
    ft_text = tok(
        baking_docs(8, random.Random(f"heldbake-{seed}")),
        return_tensors="pt",
        padding=True,
        truncation=True,
        max_length=32,
    )
    wiki = tok(starts[-8:], return_tensors="pt", padding=True, truncation=True, max_length=32)
    m["dce_ft_smollm2"] = projection_delta_ce(base, ft, v, layer, ft_text["input_ids"], ft_text["attention_mask"])
    m["dce_base_smollm2"] = projection_delta_ce(base, ft, v, layer, wiki["input_ids"], wiki["attention_mask"])
    return m


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    ratios = list(cfg.mix_ratios)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for key, label in (
        ("rel_ps_adl", "Patchscope relevance (δ̄)"),
        ("rel_ll_adl", "logit-lens relevance (δ̄)"),
        ("rel_ps_base", "Patchscope (mean base)"),
    ):
        ys = [[m.get(key + ("" if r == 0 else f"_mix{r:g}"), np.nan) for m in per_seed.values()] for r in ratios]
        axes[0].errorbar(range(len(ratios)), np.nanmean(ys, 1), np.nanstd(ys, 1), label=label, marker="o")
    for key, label in (("steer_sim_ft", "steered"), ("unsteered_sim_ft", "unsteered")):
        ys = [[m.get(key + ("" if r == 0 else f"_mix{r:g}"), np.nan) for m in per_seed.values()] for r in ratios]
        axes[1].errorbar(range(len(ratios)), np.nanmean(ys, 1), np.nanstd(ys, 1), label=label, marker="o")
    for ax, title in zip(axes, ("token relevance", "TF-IDF similarity to finetuning data")):
        ax.set_xticks(range(len(ratios)), [f"1:{r:g}" for r in ratios])
        ax.set_xlabel("ft : pretraining mix")
        ax.set_title(title)
        ax.legend(fontsize=7)
    return [("mixing", fig)]
