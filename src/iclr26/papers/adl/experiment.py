"""The adl reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import functools
import random

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from transformers import AutoModelForCausalLM

from ...lenses.adl import (
    IDENTITY_PROMPTS,
    ADLConfig,
    activation_difference,
    find_max_coherent_alpha,
    logit_lens_tokens,
    patchscope_tokens,
    projection_delta_ce,
    steering,
)
from ...lm.adapters import ModelAdapter
from ...lm.tiny import tiny_config
from ...lm.tokenizer import build_word_tokenizer
from ...lm.train import TrainConfig, encode_stream, train_lm
from ...worlds.topics import TopicWorld
from . import Cfg


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
    # δ̄ on the first n_positions tokens; norm matching on positions ≥ 5 of the same windows (the toolkit's skip)
    d = activation_difference(base, ft, generic, layer, n_positions=cfg.n_positions, norm_skip=acfg.norm_skip)
    rng = random.Random(f"ps-{seed}")
    prompts = [
        world.copy_list(rng, 3) + " " + world.all_words()[rng.randrange(len(world.all_words()))] for _ in range(3)
    ]
    rel, tokens, scales = {}, [], []
    for name, vecs in (("adl", d.diff), ("base", d.mean_base), ("ft", d.mean_ft)):
        ll, ps = [], []
        for j in range(cfg.n_positions):
            t_ll = logit_lens_tokens(ft, vecs[j], acfg.top_k)
            t_ps, scale = patchscope_tokens(ft, tok, vecs[j], layer, d.act_norm, acfg, prompts)
            ll.append(_relevance(tok, t_ll, world.relevant))
            ps.append(_relevance(tok, t_ps, world.relevant))
            if name == "adl":
                tokens += [tok.decode([i]).strip() for i in t_ll + t_ps]
                scales.append(scale)
        rel[f"rel_ll_{name}"], rel[f"rel_ps_{name}"] = float(np.mean(ll)), float(np.mean(ps))
    # the Patchscope scale chosen for δ̄ (embedding-coherence rule over the toolkit's grid), recorded
    rel["ps_log10_scale_adl"] = float(np.mean(np.log10(scales)))
    rel["ps_scale_at_top_adl"] = float(np.mean([s == max(acfg.scales) for s in scales]))
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
        m = smollm2_adl(cfg, seed, getattr(ctx, "model", None))
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
    # document openings of 12 tokens: δ̄ on the first n_positions, norm matching on positions 5–11 (toolkit: 5–127)
    generic = _docs_ids(tok, world.base_corpus(cfg.n_generic, random.Random(f"generic-{seed}"), copy_frac=0.0), 12)
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
    # claimed organisms this scale does not train (smoke: no 1:0.1 mix): missing metrics (a failed seed, not absent)
    from . import CLAIMS

    named = {n for c in CLAIMS for ch in c.checks for n in ch.metrics()}
    metrics.update({k: float("nan") for k in named if "_mix" in k and k not in metrics})
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


REAL_MODEL = "smollm2-135m"  # the real organism's default base model; `iclr26 run adl --model X` replaces it
# LoRA targets by config.model_type: attention q, v, o and the MLP's down projection (GPT-2 fuses q/k/v in c_attn and
# names both output projections c_proj)
_LORA_TARGETS = {"gpt2": ["c_attn", "c_proj"]}
_LORA_DEFAULT = ["q_proj", "v_proj", "o_proj", "down_proj"]  # llama, qwen2, qwen3, mistral


@functools.lru_cache(maxsize=1)
def _smollm2_organism(steps: int, model_name: str = REAL_MODEL):
    """(base, LoRA-finetuned merged model, tokenizer) of ``model_name`` (any local HF causal LM), trained once per
    process."""
    from peft import LoraConfig, get_peft_model

    from ...lm import zoo

    base, tok = zoo.load(model_name)
    ft, _ = zoo.load(model_name)
    torch.manual_seed(0)
    targets = _LORA_TARGETS.get(ft.config.model_type, _LORA_DEFAULT)
    fan_in_fan_out = ft.config.model_type == "gpt2"  # GPT-2's Conv1D stores weights transposed
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=targets, fan_in_fan_out=fan_in_fan_out)
    peft_model = get_peft_model(ft, lora)
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


def smollm2_adl(cfg: Cfg, seed: int, model_name: str | None = None) -> dict[str, float]:
    """ADL on the real organism: ``model_name`` (default SmolLM2-135M) + LoRA on cake-baking documents; metrics end in
    ``_smollm2``, the claims' name for the real-model setting."""
    from ...worlds.text import load_domain

    base, ft, tok = _smollm2_organism(cfg.smollm2_steps, model_name or REAL_MODEL)
    rng = random.Random(f"wiki-{seed}")
    docs = [d for d in load_domain("wikipedia")]
    # the openings of Wikipedia articles (the toolkit: the first tokens of fineweb samples), 32 tokens each
    n_tok = 32
    starts = [" ".join(d.split()[:48]) for d in rng.sample(docs, min(len(docs), 4 * cfg.smollm2_generic))]
    ids = [x[:n_tok] for x in tok(starts)["input_ids"] if len(x) >= n_tok][: cfg.smollm2_generic]
    generic = torch.tensor(ids)
    # the toolkit's identity prompts; a 9-value subset of its scale grid (31 values) to fit the CPU budget
    acfg = ADLConfig(n_positions=cfg.n_positions, scales=(0.5, 1.0, 1.5, 2.0, 5.0, 10.0, 20.0, 60.0, 200.0))
    layer = acfg.layer(ModelAdapter(base).n_layers)
    d = activation_difference(base, ft, generic, layer, batch_size=16, n_positions=cfg.n_positions)
    relevant = set(BAKING)
    prompts = IDENTITY_PROMPTS
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
