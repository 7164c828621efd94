"""The language-control reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from iclr26.lenses.language_control.selective_tuning import SelectiveTuningConfig, selective_finetune
from iclr26.lenses.language_control.world import LANGS, SCENARIOS, LanguageWorld

from ...lenses.logit_lens import (
    crosslingual_similarity,
    crosslingual_similarity_contrast,
    language_probs_by_layer,
)
from ...lm.tiny import tiny_config
from ...lm.tokenizer import build_word_tokenizer
from ...lm.train import TrainConfig, train_lm
from . import CONDITIONS, TARGETS, Cfg
from .real import _mid, smollm2_probes


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


@torch.no_grad()
def evaluate_english(model, tok, world: LanguageWorld, n: int, seed: int) -> dict[str, float]:
    """Positive control of the consistency metric: English prompts that ask for English (scenario mono, target en)."""
    rng = random.Random(f"eval-{seed}-en")
    cons, task = [], []
    items = [(p, tok(" ".join(world.scenario("mono", "en", p)))["input_ids"]) for p in world.problems(n, rng)]
    for length in sorted({len(x[1]) for x in items}):
        group = [x for x in items if len(x[1]) == length]
        ids = torch.tensor([x[1] for x in group])
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=14, do_sample=False,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
        for (p, _), row in zip(group, out[:, length:]):
            text = tok.decode(row, skip_special_tokens=True)
            cons.append(world.language_of(text) == "en")
            task.append(world.answer_of(text) == p.answer)
    return {"cons": float(np.mean(cons)), "task": float(np.mean(task))}


def probes(model, tok, world: LanguageWorld, n: int, seed: int) -> dict[str, list[float]]:
    """Per-layer target/English lens shares on target-language outputs and EN–Lx cross-lingual similarity."""
    rng = random.Random(f"probe-{seed}")
    p_en, p_tg, pairs, gaps, mis = [], [], [], [], []
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
        # parallel minus mismatched (EN text n vs the Lx text of problem n+1), centred: the content-specific part
        lx_pairs = pairs[-len(probs) :]
        gaps.append(crosslingual_similarity_contrast(model, tok, lx_pairs, center=True)["gap"])
        mis.append(crosslingual_similarity_contrast(model, tok, lx_pairs)["mismatched"])
        ids = tok(texts, return_tensors="pt")["input_ids"]
        shares = language_probs_by_layer(model, ids, positions, lambda t: world.word_language.get(vocab[t]), LANGS)
        p_en.append(shares["en"])
        p_tg.append(shares[lx])
    sim = crosslingual_similarity(model, tok, pairs)
    return {
        "p_en": np.mean(p_en, 0).tolist(),
        "p_target": np.mean(p_tg, 0).tolist(),
        "sim": sim.tolist(),
        "sim_mis": np.mean(mis, 0).tolist(),
        "sim_gap": np.mean(gaps, 0).tolist(),
    }


# ---- the run ------------------------------------------------------------------------------------------------------
def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    metrics: dict[str, float] = {}
    curves: dict = {}
    if cfg.smollm2:  # first, so that a missing model fails fast
        m, c = smollm2_probes(cfg, seed, getattr(ctx, "model", None))
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
        sim_mis_emb=pr["sim_mis"][0],
        sim_mis_mid=_mid(pr["sim_mis"][1:]),
        sim_mis_last=pr["sim_mis"][-1],
        sim_gap_emb=pr["sim_gap"][0],
        sim_gap_mid=_mid(pr["sim_gap"][1:]),
        sim_gap_last=pr["sim_gap"][-1],
        p_en_mid=_mid(pr["p_en"]),
        p_target_mid=_mid(pr["p_target"]),
        p_target_last=pr["p_target"][-1],
        p_en_last=pr["p_en"][-1],
        sim_gap_max=float(np.max(pr["sim_gap"])),
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
            metrics[f"steps_{cond}"] = float(len(res.losses))  # optimizer steps, as run
            curves[f"layers_{cond}"] = res.layers
            if cond == "last":
                curves["probes_tiny_last"] = probes(model, tok, world, cfg.n_probe, seed)
        ev = evaluate(model, tok, world, cfg.n_eval, seed)
        if cond == "pre":
            en = evaluate_english(model, tok, world, cfg.n_eval, seed)
            metrics["cons_pre_en"], metrics["task_pre_en"] = en["cons"], en["task"]
        for key, v in ev.items():
            kind, _, sc = key.partition("_")
            metrics[f"{kind}_{cond}" + (f"_{sc}" if sc else "")] = v
        ctx.log(f"{cond}: consistency {ev['cons']:.3f}, task {ev['task']:.3f}")
    # budget parity of the tuned arms: optimizer steps, and trained parameters among the k-block strategies
    for cond in ("first", "random"):
        metrics[f"budget_dev_{cond}"] = max(
            abs(metrics[f"steps_{cond}"] / metrics["steps_last"] - 1),
            abs(metrics[f"frac_{cond}"] / metrics["frac_last"] - 1),
        )
    metrics["budget_dev_full"] = abs(metrics["steps_full"] / metrics["steps_last"] - 1)  # steps only: full trains all
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
