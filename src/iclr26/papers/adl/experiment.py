"""The adl reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import random

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from transformers import AutoModelForCausalLM

from iclr26.lenses.adl.world import TopicWorld

from ...lenses.adl import (
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
from . import Cfg
from .real import _relevance, smollm2_adl


def _docs_ids(tok, docs, n_words: int) -> torch.Tensor:
    """First ``n_words`` tokens (BOS included) of every document long enough."""
    rows = [x[:n_words] for x in tok(list(docs))["input_ids"] if len(x) >= n_words]
    return torch.tensor(rows)


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
    # negative control: a random direction, norm-matched, through the same readouts
    g = torch.Generator().manual_seed(seed + 17)
    rand = torch.randn(d.diff.shape, generator=g) * d.diff.norm(dim=-1, keepdim=True)
    ll, ps = [], []
    for j in range(cfg.n_positions):
        ll.append(_relevance(tok, logit_lens_tokens(ft, rand[j], acfg.top_k), world.relevant))
        ps.append(
            _relevance(tok, patchscope_tokens(ft, tok, rand[j], layer, d.act_norm, acfg, prompts)[0], world.relevant)
        )
    rel["rel_ll_random"], rel["rel_ps_random"] = float(np.mean(ll)), float(np.mean(ps))
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
    # negative control: steering along a random direction of the same norm, at the same strength
    u = torch.randn(v.shape, generator=torch.Generator().manual_seed(seed + 23))
    with steering(ft, u / u.norm() * d.act_norm, layer, alpha):
        steered_random = _generate(ft, tok, sp, cfg.steer_tokens, 1.1, seed + 1)
    s_sim, u_sim = _similarity(tfidf, centroid, steered), _similarity(tfidf, centroid, unsteered)
    # headroom: held-out finetuning text itself, cut to the generated length (the most similar text there can be)
    oracle_text = [" ".join(x.split()[: cfg.steer_tokens]) for x in held["ft_text"][: cfg.steer_prompts]]
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
        base_ce = base(input_ids=held["ft"], labels=held["ft"]).loss.item()
    return {
        **rel,
        "steer_sim_ft": s_sim,
        "unsteered_sim_ft": u_sim,
        "steer_gain": s_sim - u_sim,
        "steer_sim_random": _similarity(tfidf, centroid, steered_random),
        "oracle_sim_ft": _similarity(tfidf, centroid, oracle_text),
        "alpha": alpha,
        "id_adl": id_adl,
        **ids,
        **{f"id_room_{b}": 1.0 - ids[f"id_bb_{b}"] for b in cfg.bb_budgets},
        "dce_ft": dce_ft,
        "dce_ft_random": dce_ft_random,
        "dce_base": dce_base,
        "ft_ce": ft_ce,
        "ce_gain": base_ce - ft_ce,
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
    held_ft_docs = world.finetune_corpus(40, random.Random(f"heldft-{seed}"))
    held = {
        "ft_text": held_ft_docs,
        "ft": encode_stream(tok, held_ft_docs, 64),
        "base": encode_stream(tok, world.base_corpus(60, random.Random(f"heldbase-{seed}"), copy_frac=0.0), 64),
    }
    tfidf = TfidfVectorizer(token_pattern=r"[^ ]+").fit(base_docs + ft_docs)
    centroid = np.asarray(tfidf.transform(ft_docs).mean(0)).ravel()
    extra = {"pretrain_loss": losses[::10]}
    # organisms: the 1:0, 1:r mixed ones, and the null twin (negative control): the same finetune, as many base-corpus
    # documents as T* documents, no T* at all
    organisms = [(f"mix{r:g}", r, None) for r in cfg.mix_ratios]
    if cfg.null_organism:
        organisms.append(("null", 0.0, world.base_corpus(len(ft_docs), random.Random(f"null-{seed}"))))
    for label, ratio, null_docs in organisms:
        if null_docs is None:
            mixed = ft_docs + world.base_corpus(int(ratio * len(ft_docs)), random.Random(f"mix-{seed}-{ratio}"))
        else:
            mixed = null_docs
        ft = copy.deepcopy(base)
        steps = max(1, cfg.ft_epochs * len(mixed) * 64 // (16 * 64))
        train_lm(
            ft,
            tok,
            mixed,
            TrainConfig(steps=steps, batch_size=16, lr=cfg.ft_lr, warmup=5, seq_len=64, mode="stream", seed=seed),
            desc=f"finetune {label}",
        )
        res = analyse(base, ft, tok, world, cfg, seed, generic, tfidf, centroid, held)
        extra[f"samples_{label}"] = res.pop("_samples")
        suffix = "_null" if null_docs is not None else "" if ratio == 0 else f"_mix{ratio:g}"
        metrics.update({k + suffix: v for k, v in res.items()})
        ctx.log(
            f"{label}: rel ps {res['rel_ps_adl']:.2f} (base {res['rel_ps_base']:.2f}, ft {res['rel_ps_ft']:.2f})"
            f", steer {res['steer_sim_ft']:.3f} vs {res['unsteered_sim_ft']:.3f}, id {res['id_adl']:.2f}, "
            f"dce {res['dce_ft']:+.3f}/{res['dce_base']:+.3f}"
        )
    ctx.save_artifact(f"adl-seed{seed}", extra)
    # claimed organisms this scale does not train (smoke: no 1:0.1 mix): missing metrics (a failed seed, not absent)
    from . import CLAIMS

    named = {n for c in CLAIMS for ch in c.checks for n in ch.metrics()}
    metrics.update({k: float("nan") for k in named if "_mix" in k and k not in metrics})
    return metrics


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
