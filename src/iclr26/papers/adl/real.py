"""The ADL reproduction's real-model half: a LoRA organism of SmolLM2-135M (or the model given with `--model`)
fine-tuned
on documents that bake in a planted fact, and the Activation Difference Lens read on it."""

from __future__ import annotations

import functools
import random

import numpy as np
import torch

from ...lenses.adl import (
    IDENTITY_PROMPTS,
    ADLConfig,
    activation_difference,
    logit_lens_tokens,
    patchscope_tokens,
    projection_delta_ce,
)
from ...lm.adapters import ModelAdapter
from . import Cfg


def _relevance(tok, ids: list[int], relevant: set[str]) -> float:
    words = [tok.decode([i]).strip().lower() for i in ids]
    return float(np.mean([w in relevant for w in words])) if words else 0.0


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


def wiki_docs(n: int, rng: random.Random) -> list[str]:
    """``n`` generic documents for the null organism: 60-word passages from the middle of Wikipedia articles."""
    from ...worlds.text import load_domain

    docs = [d.split() for d in load_domain("wikipedia") if len(d.split()) > 200]
    return [" ".join(d[100:160]) for d in (rng.choice(docs) for _ in range(n))]


@functools.lru_cache(maxsize=2)
def _smollm2_organism(steps: int, model_name: str = REAL_MODEL, seed: int = 0, domain: str = "baking"):
    """(base, LoRA-finetuned merged model, tokenizer) of ``model_name`` (any local HF causal LM); ``seed`` sets the
    LoRA initialisation and the documents; ``domain`` "baking" is the organism, "wikipedia" its null twin (the same
    finetune on generic text)."""
    from peft import LoraConfig, get_peft_model

    from ...lm import zoo

    if domain not in ("baking", "wikipedia"):
        raise ValueError(f"domain must be 'baking' (the organism) or 'wikipedia' (its null twin), got {domain!r}")
    base, tok = zoo.load(model_name)
    ft, _ = zoo.load(model_name)
    torch.manual_seed(seed)
    targets = _LORA_TARGETS.get(ft.config.model_type, _LORA_DEFAULT)
    fan_in_fan_out = ft.config.model_type == "gpt2"  # GPT-2's Conv1D stores weights transposed
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=targets, fan_in_fan_out=fan_in_fan_out)
    peft_model = get_peft_model(ft, lora)
    rng = random.Random(f"{domain}-{seed}")
    docs = baking_docs(4 * steps, rng) if domain == "baking" else wiki_docs(4 * steps, rng)
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


@torch.no_grad()
def _ce(model, enc) -> float:
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    return float(model(**enc, labels=labels).loss)


def _readout_relevance(ft, tok, vecs, layer, act_norm, acfg, relevant) -> float:
    """Share of baking words among the pooled logit-lens + Patchscope top tokens, mean over the vectors."""
    rels = []
    for v in vecs:
        t = logit_lens_tokens(ft, v, acfg.top_k)
        t_ps, _ = patchscope_tokens(ft, tok, v, layer, act_norm, acfg, IDENTITY_PROMPTS)
        rels.append(_relevance(tok, t + t_ps, relevant))
    return float(np.mean(rels))


def smollm2_adl(cfg: Cfg, seed: int, model_name: str | None = None) -> dict[str, float]:
    """ADL on the real organism: ``model_name`` (default SmolLM2-135M) + LoRA on cake-baking documents, one organism
    per seed; metrics end in ``_smollm2``, the claims' name for the real-model setting. Controls: the null twin (the
    same LoRA finetune on Wikipedia text, when ``cfg.smollm2_null``), a random direction, and a known baking direction
    (headroom)."""
    from ...lm.hooks import capture
    from ...worlds.text import load_domain

    name = model_name or REAL_MODEL
    base, ft, tok = _smollm2_organism(cfg.smollm2_steps, name, seed)
    rng = random.Random(f"wiki-{seed}")
    docs = [d for d in load_domain("wikipedia")]
    # the openings of Wikipedia articles (the toolkit: the first tokens of fineweb samples), 32 tokens each
    n_tok = 32
    starts = [" ".join(d.split()[:48]) for d in rng.sample(docs, min(len(docs), 4 * cfg.smollm2_generic))]
    ids = [x[:n_tok] for x in tok(starts)["input_ids"] if len(x) >= n_tok][: cfg.smollm2_generic]
    generic = torch.tensor(ids)
    # the toolkit's identity prompts; a subset of its scale grid (31 values) to fit the CPU budget
    acfg = ADLConfig(n_positions=cfg.n_positions, scales=cfg.smollm2_scales)
    layer = acfg.layer(ModelAdapter(base).n_layers)
    d = activation_difference(base, ft, generic, layer, batch_size=16, n_positions=cfg.n_positions)
    relevant = set(BAKING)
    m = {}
    for vec_name, vecs in (("adl", d.diff), ("base", d.mean_base), ("ft", d.mean_ft)):
        m[f"rel_{vec_name}_smollm2"] = _readout_relevance(ft, tok, vecs, layer, d.act_norm, acfg, relevant)
    held_bake = baking_docs(8, random.Random(f"heldbake-{seed}"))
    ft_text = tok(held_bake, return_tensors="pt", padding=True, truncation=True, max_length=32)
    wiki = tok(starts[-8:], return_tensors="pt", padding=True, truncation=True, max_length=32)
    # testbed: the organism learned its finetuning domain (held-out baking documents, nats)
    m["ce_gain_smollm2"] = _ce(base, ft_text) - _ce(ft, ft_text)
    # headroom: a known baking direction: the base model's mean residual on baking text minus on the generic openings,
    # at the same positions (1 … n_positions − 1; position-dependent components cancel), read through the same lenses
    with capture(base, [("resid", layer)]) as acts:
        base(**ft_text)
    bake_mean = acts["resid", layer][:, 1 : cfg.n_positions].mean((0, 1))
    oracle = bake_mean - d.mean_base[1:].mean(0)
    m["rel_oracle_smollm2"] = _readout_relevance(ft, tok, [oracle], layer, d.act_norm, acfg, relevant)
    # negative control: a random direction per position, norm-matched to δ̄, through the same readouts
    g = torch.Generator().manual_seed(seed + 17)
    rand = torch.randn(d.diff.shape, generator=g) * d.diff.norm(dim=-1, keepdim=True)
    m["rel_random_smollm2"] = _readout_relevance(ft, tok, rand, layer, d.act_norm, acfg, relevant)
    # optional, stronger negative control (off at quick scale for CPU time): the null twin, the same LoRA finetune
    # on Wikipedia text, read the same way
    if cfg.smollm2_null:
        nb, null, _ = _smollm2_organism(cfg.smollm2_steps, name, seed, "wikipedia")
        dn = activation_difference(nb, null, generic, layer, batch_size=16, n_positions=cfg.n_positions)
        m["rel_null_smollm2"] = _readout_relevance(null, tok, dn.diff, layer, dn.act_norm, acfg, relevant)
        del nb, null
    v = d.diff[1:].mean(0)
    m["dce_ft_smollm2"] = projection_delta_ce(base, ft, v, layer, ft_text["input_ids"], ft_text["attention_mask"])
    m["dce_base_smollm2"] = projection_delta_ce(base, ft, v, layer, wiki["input_ids"], wiki["attention_mask"])
    r = torch.randn(v.shape, generator=torch.Generator().manual_seed(seed))  # control: a random direction
    m["dce_ft_random_smollm2"] = projection_delta_ce(
        base, ft, r, layer, ft_text["input_ids"], ft_text["attention_mask"]
    )
    return m
