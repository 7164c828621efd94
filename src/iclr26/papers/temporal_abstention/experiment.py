"""The temporal-abstention reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import hashlib
import json
import time

import torch
from transformers.utils import logging as hf_logging

from iclr26.core.locks import cached_json
from iclr26.core.paths import trained_cache_dir
from iclr26.core.tuning import tune_on_grid
from iclr26.rlft.abstention import AbstentionReward, abstention_metrics
from iclr26.rlft.abstention.world import make_temporal_qa

from . import Cfg, units
from .policy import base_policy, tokenizer, untrained_policy
from .real import real_model_check
from .stages import NATURAL, cot_sft, evaluate, grpo

TUNE_SEED = 77  # world seed of the tuning data, disjoint from every reproduction seed's (1000 * seed + 1..8)


def tuned_lrs(base, tok, cfg: Cfg, ctx) -> dict:
    """The one tuning rule, run once per config on its own data (cached like a model): the SFT lr by validation EM
    (epochs early-stopped), then, from that SFT policy, the GRPO lr of the abstention arm by validation EM; each grid
    grows past an edge pick (`tune_on_grid`). Every seed and every GRPO arm then uses these values (the EM-only and
    80 % arms are ablations of the abstention arm: one change each, same lr and budget)."""
    keys = ("d_model", "n_layers", "base_steps", "base_items", "base_unanswerable", "n_sft", "sft_unanswerable",
            "sft_max_epochs", "n_rl", "rl_unanswerable", "grpo_steps", "grpo_eval_every", "grpo_patience",
            "grpo_min_steps", "grpo_batch", "num_generations", "beta",
            "max_new_tokens", "n_val", "sft_lr_grid", "grpo_lr_grid", "max_extensions")  # fmt: skip
    spec = json.dumps({k: getattr(cfg, k) for k in keys}, sort_keys=True)
    path = trained_cache_dir() / "zoo" / f"abstention-lrs-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"

    def compute():
        t0, s = time.time(), 1000 * TUNE_SEED
        val = make_temporal_qa(cfg.n_val, unanswerable_frac=NATURAL, seed=s + 2)
        sft_items = make_temporal_qa(cfg.n_sft, unanswerable_frac=cfg.sft_unanswerable, seed=s + 3)
        rl_items = make_temporal_qa(cfg.n_rl, unanswerable_frac=cfg.rl_unanswerable, seed=s + 4)
        rl_val = make_temporal_qa(cfg.n_val, unanswerable_frac=cfg.rl_unanswerable, seed=s + 6)

        def sft_score(lr):
            pol, _ = cot_sft(base, tok, sft_items, val, cfg, TUNE_SEED, ctx, lr=lr)
            return evaluate(pol, tok, val, cfg, "v")["v_em"], pol

        g_sft = tune_on_grid(sft_score, cfg.sft_lr_grid, max_extensions=cfg.max_extensions)
        ctx.log(
            f"tuning: SFT lr {g_sft.best:g} (val EM {', '.join(f'{k:g}:{v:.3f}' for k, v in g_sft.scores.items())})"
        )  # noqa: E501

        def grpo_score(lr):
            torch.manual_seed(TUNE_SEED)
            pol, *_ = grpo(g_sft.payload, tok, rl_items, AbstentionReward(), cfg, TUNE_SEED, ctx, lr=lr, val=rl_val)
            return evaluate(pol, tok, val, cfg, "v")["v_em"], None

        g_rl = tune_on_grid(grpo_score, cfg.grpo_lr_grid, max_extensions=cfg.max_extensions)
        ctx.log(f"tuning: GRPO lr {g_rl.best:g} (val EM {', '.join(f'{k:g}:{v:.3f}' for k, v in g_rl.scores.items())})")
        out = {"sft_lr": g_sft.best, "grpo_lr": g_rl.best, "sft_scores": {str(k): v for k, v in g_sft.scores.items()},
               "grpo_scores": {str(k): v for k, v in g_rl.scores.items()}, "sft_at_edge": g_sft.at_edge,
               "grpo_at_edge": g_rl.at_edge, "seconds": time.time() - t0}  # fmt: skip
        return out

    return cached_json(path, "the temporal-abstention learning-rate tuning", compute)


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    import datasets

    datasets.disable_progress_bars()  # TRL's dataset preparation bars, once per trainer
    out: dict[str, float] = {}
    if cfg.micro:
        out.update(micro_arms(cfg, seed, ctx))
    if cfg.real_steps:  # opt-in: SmolLM2 through the same TRL path (LoRA), on every seed so that it gets a verdict
        out.update(real_model_check(cfg.real_steps, seed, ctx))
    return out


def micro_arms(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    """The micro-policy reproduction on one seed: testbed, CoT-SFT, and the three GRPO arms (cached units)."""
    tok = tokenizer()
    out: dict[str, float] = {}
    test = make_temporal_qa(cfg.n_test, unanswerable_frac=NATURAL, seed=1000 * seed + 1)

    # testbed: the teacher's own rationales (oracle) and an untrained policy (control)
    teacher = abstention_metrics([it.rationale for it in test], [it.answer for it in test])
    out["teacher_em"], out["teacher_format"] = teacher["em"], teacher["format_rate"]
    out.update(evaluate(untrained_policy(cfg, tok, seed), tok, test, cfg, "untrained"))

    base, out["base_seconds"] = base_policy(cfg, tok, progress=not ctx.quiet)
    lrs = tuned_lrs(base, tok, cfg, ctx)
    out["sft_lr"], out["grpo_lr"] = lrs["sft_lr"], lrs["grpo_lr"]
    sft_u = units.sft_unit(cfg, seed, base, tok, lrs, log=ctx.log)
    out["sft_epochs"], out["seconds_sft"] = float(sft_u["epochs"]), sft_u["seconds"]
    out.update(evaluate(units.policy(base, sft_u["state"]), tok, test, cfg, "sft"))
    ctx.log(f"seed {seed}: SFT ({sft_u['epochs']} ep) EM {out['sft_em']:.3f} TP {out['sft_tp']:.3f}")

    for name, u in units.arm_units(cfg, seed, base, tok, lrs, log=ctx.log).items():
        out[f"{name}_reward_first"], out[f"{name}_reward_last"] = u["reward_first"], u["reward_last"]
        out[f"{name}_seconds"] = u["seconds"]
        out[f"{name}_steps"], out[f"{name}_best_step"] = float(u["steps"]), float(u["best_step"])
        out[f"{name}_val_reward"], out[f"{name}_val_reward_start"] = u["val_reward"], u["val_reward_start"]
        out.update(evaluate(units.policy(base, u["state"]), tok, test, cfg, name))
        out[f"{name}_tp_gain"] = out[f"{name}_tp"] - out["sft_tp"]
        ctx.log(f"seed {seed}: {name} EM {out[f'{name}_em']:.3f} TP {out[f'{name}_tp']:.3f} "
                f"over-abst {out[f'{name}_over_abstention']:.3f}; {u['steps']} steps, best {u['best_step']} "
                f"({u['seconds']:.0f} s)")  # fmt: skip
    # a later seed's SFT policy and arms, trained while no worker is free for that seed yet
    units.prepare(cfg, seed, getattr(ctx, "seeds", (seed,)), base, tok, lrs, log=ctx.log)
    return out


def plots(run_dir, per_seed, cfg: Cfg):
    """EM, TP and over-abstention per arm (mean over seeds, one dot per seed)."""
    import matplotlib.pyplot as plt

    arms, metrics = ("sft", "grpo", "emonly", "u80"), ("em", "tp", "over_abstention")
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ax, m in zip(axes, metrics):
        for i, a in enumerate(arms):
            vals = [s[f"{a}_{m}"] for s in per_seed.values() if f"{a}_{m}" in s]
            ax.bar(i, sum(vals) / max(1, len(vals)), color=f"C{i}", alpha=0.6)
            ax.scatter([i] * len(vals), vals, color="k", s=8)
        ax.set_xticks(range(len(arms)), arms)
        ax.set_title(m)
        ax.set_ylim(0, 1)
    fig.tight_layout()
    return [("arms", fig)]
