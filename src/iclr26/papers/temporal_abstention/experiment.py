"""The temporal-abstention reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import hashlib
import json
import tempfile
import time

import torch
from transformers import AutoModelForCausalLM, PrinterCallback, TrainerCallback
from transformers.utils import logging as hf_logging

from iclr26.core.locks import cached_json
from iclr26.core.paths import trained_cache_dir
from iclr26.probing.tuning import tune_on_grid
from iclr26.rlft.abstention import (
    AbstentionReward,
    HeldOutRewardStopping,
    abstention_grpo_trainer,
    abstention_metrics,
    cot_sft_trainer,
    em_only_reward,
    generate,
    grpo_config,
    grpo_dataset,
    sft_config,
    sft_dataset,
)
from iclr26.worlds.abstention import make_temporal_qa

from . import Cfg
from .policy import base_policy, tokenizer, untrained_policy
from .real import real_model_check

NATURAL = 0.25  # unanswerable share of validation and test sets


def evaluate(model, tok, items, cfg: Cfg, prefix: str) -> dict[str, float]:
    """Greedy completions scored by the paper's metrics, named ``<prefix>_<metric>``."""
    outs = generate(model, tok, [it.prompt for it in items], max_new_tokens=cfg.max_new_tokens, batch_size=64)
    m = abstention_metrics(outs, [it.answer for it in items], [it.kind for it in items])
    keys = {"em": "em", "em_easy": "em_easy", "em_hard": "em_hard", "em_answerable": "em_answerable",
            "tp": "tp_unanswerable", "over_abstention": "over_abstention", "format_rate": "format_rate"}  # fmt: skip
    out = {f"{prefix}_{k}": m[v] for k, v in keys.items()}
    out[f"{prefix}_confidence_gap"] = (1 - m["tp_unanswerable"]) - m["over_abstention"]
    return out


def clone(model):
    """A fresh copy of a policy. Not `copy.deepcopy`: TRL's trainers patch `forward` on the model instance, and a deep
    copy keeps that bound method, so the copy would run the *original* weights (measured: GRPO arms on deep copies
    of the SFT policy scored exactly like SFT)."""
    new = AutoModelForCausalLM.from_config(model.config, dtype=torch.float32)
    new.load_state_dict(model.state_dict())
    new.generation_config = copy.deepcopy(model.generation_config)
    return new.eval()


class _KeepBest(TrainerCallback):
    """Early stopping for CoT-SFT: validation EM after every epoch; the best epoch's weights are restored."""

    def __init__(self, model, tok, val, cfg):
        self.model, self.tok, self.val, self.cfg = model, tok, val, cfg
        self.best, self.best_epoch, self.state = -1.0, 0, None

    def on_epoch_end(self, args, state, control, **kw):
        em = evaluate(self.model, self.tok, self.val, self.cfg, "v")["v_em"]
        if em > self.best:
            self.best, self.best_epoch = em, round(state.epoch)
            self.state = copy.deepcopy(self.model.state_dict())


def cot_sft(base, tok, items, val, cfg: Cfg, seed: int, ctx, lr: float):
    model = clone(base)
    keep = _KeepBest(model, tok, val, cfg)
    with tempfile.TemporaryDirectory() as tmp:
        args = sft_config(tmp, learning_rate=lr, num_train_epochs=cfg.sft_max_epochs,
                          per_device_train_batch_size=32, max_length=192, use_cpu=True, seed=seed,
                          disable_tqdm=True, logging_steps=1000, warmup_steps=10)  # fmt: skip
        trainer = cot_sft_trainer(model, tok, sft_dataset(items), args, callbacks=[keep])
        trainer.remove_callback(PrinterCallback)  # no per-step log dicts on stdout
        trainer.train()
    model.load_state_dict(keep.state)
    return model.eval(), keep.best_epoch


def grpo(sft, tok, items, reward, cfg: Cfg, seed: int, ctx, lr: float, val):
    """One GRPO arm from the SFT policy, trained until its greedy reward on the held-out items `val` (drawn like its
    training prompts) stops improving (`HeldOutRewardStopping`: every ``grpo_eval_every`` steps, patience
    ``grpo_patience``, not before ``grpo_min_steps``, at most ``grpo_steps``); the best weights are returned.
    The same rule for every arm and every candidate lr."""
    model = clone(sft)
    stop = HeldOutRewardStopping(model, tok, [it.prompt for it in val], [it.answer for it in val], reward,
                                 eval_every=cfg.grpo_eval_every, patience=cfg.grpo_patience,
                                 min_steps=cfg.grpo_min_steps, max_new_tokens=cfg.max_new_tokens)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        args = grpo_config(tmp, learning_rate=lr, max_steps=cfg.grpo_steps,
                           per_device_train_batch_size=cfg.grpo_batch, num_generations=cfg.num_generations,
                           max_completion_length=cfg.max_new_tokens, beta=cfg.beta, use_cpu=True, seed=seed,
                           logging_steps=1, disable_tqdm=True)  # fmt: skip
        trainer = abstention_grpo_trainer(model, tok, grpo_dataset(items), args, reward=reward, callbacks=[stop])
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    best_step = stop.restore()
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    k = max(1, len(rewards) // 10)
    info = {"steps": trainer.state.global_step, "best_step": best_step, "val_reward": stop.stopper.best,
            "val_reward_start": stop.stopper.scores[0]}  # fmt: skip
    return model.eval(), sum(rewards[:k]) / k, sum(rewards[-k:]) / k, info


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
    """The micro-policy reproduction on one seed: testbed, CoT-SFT, and the three GRPO arms."""
    tok = tokenizer()
    out: dict[str, float] = {}
    s = 1000 * seed
    test = make_temporal_qa(cfg.n_test, unanswerable_frac=NATURAL, seed=s + 1)
    val = make_temporal_qa(cfg.n_val, unanswerable_frac=NATURAL, seed=s + 2)
    sft_items = make_temporal_qa(cfg.n_sft, unanswerable_frac=cfg.sft_unanswerable, seed=s + 3)
    rl_items = make_temporal_qa(cfg.n_rl, unanswerable_frac=cfg.rl_unanswerable, seed=s + 4)
    u80_items = make_temporal_qa(cfg.n_rl, unanswerable_frac=cfg.collapse_unanswerable, seed=s + 5)
    # held-out prompts for each arm's stopping rule, drawn like its training prompts (VERSION 5)
    rl_val = make_temporal_qa(cfg.n_val, unanswerable_frac=cfg.rl_unanswerable, seed=s + 6)
    u80_val = make_temporal_qa(cfg.n_val, unanswerable_frac=cfg.collapse_unanswerable, seed=s + 7)

    # testbed: the teacher's own rationales (oracle) and an untrained policy (control)
    teacher = abstention_metrics([it.rationale for it in test], [it.answer for it in test])
    out["teacher_em"], out["teacher_format"] = teacher["em"], teacher["format_rate"]
    out.update(evaluate(untrained_policy(cfg, tok, seed), tok, test, cfg, "untrained"))

    base, out["base_seconds"] = base_policy(cfg, tok, progress=not ctx.quiet)
    lrs = tuned_lrs(base, tok, cfg, ctx)
    out["sft_lr"], out["grpo_lr"] = lrs["sft_lr"], lrs["grpo_lr"]
    t0 = time.time()
    sft, out["sft_epochs"] = cot_sft(base, tok, sft_items, val, cfg, seed, ctx, lr=lrs["sft_lr"])
    out["seconds_sft"] = time.time() - t0
    out.update(evaluate(sft, tok, test, cfg, "sft"))
    ctx.log(f"seed {seed}: SFT ({out['sft_epochs']} ep) EM {out['sft_em']:.3f} TP {out['sft_tp']:.3f}")

    arms = {"grpo": (rl_items, AbstentionReward(), rl_val), "emonly": (rl_items, em_only_reward(), rl_val),
            "u80": (u80_items, AbstentionReward(), u80_val)}  # fmt: skip
    for name, (items, reward, arm_val) in arms.items():
        t0 = time.time()
        torch.manual_seed(seed)
        pol, out[f"{name}_reward_first"], out[f"{name}_reward_last"], info = grpo(
            sft, tok, items, reward, cfg, seed, ctx, lr=lrs["grpo_lr"], val=arm_val
        )
        out[f"{name}_seconds"] = time.time() - t0
        out[f"{name}_steps"], out[f"{name}_best_step"] = float(info["steps"]), float(info["best_step"])
        out[f"{name}_val_reward"], out[f"{name}_val_reward_start"] = info["val_reward"], info["val_reward_start"]
        out.update(evaluate(pol, tok, test, cfg, name))
        out[f"{name}_tp_gain"] = out[f"{name}_tp"] - out["sft_tp"]
        ctx.log(f"seed {seed}: {name} EM {out[f'{name}_em']:.3f} TP {out[f'{name}_tp']:.3f} "
                f"over-abst {out[f'{name}_over_abstention']:.3f}; {info['steps']} steps, best {info['best_step']} "
                f"({out[f'{name}_seconds']:.0f} s)")  # fmt: skip
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
