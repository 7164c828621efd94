"""The VTA reproduction's reasoner: CoT-SFT (early-stopped on the validation MSE of its greedy forecasts, its learning
rate tuned once per config by that same score with `tune_on_grid` on a tuning market of its own, `TUNE_SEED`, cached
and reused by every seed), then Time-GRPO on TRL for a fixed, pre-declared number of steps at a fixed learning rate,
its final weights kept (since VERSION 4: no checkpoint selection, so the GRPO arm cannot silently be the SFT
reasoner; VERSION 3 tuned the GRPO lr by validation MSE and every pick stayed within 1e-4 of SFT)."""

from __future__ import annotations

import copy
import hashlib
import json
import tempfile
import time

import numpy as np
import torch
from transformers import PrinterCallback, TrainerCallback

from iclr26.core.locks import cached_json
from iclr26.core.paths import trained_cache_dir
from iclr26.core.tuning import tune_on_grid
from iclr26.rlft.abstention import generate
from iclr26.rlft.vta import (
    TimeGRPOReward,
    grpo_config,
    grpo_dataset,
    sft_config,
    sft_dataset,
    sft_trainer,
    time_grpo_trainer,
)
from iclr26.rlft.vta.text import generate as sample

from . import Cfg
from .data import BINS, build
from .policy import base_reasoner, clone, tokenizer

REWARD = TimeGRPOReward(parse=BINS.parse, to_target=BINS.to_target, row_columns=("last", "mu", "sd"))
MAX_NEW = 32  # completion tokens: 4 rationale words + 10 bins + tags (26) with slack
TUNE_SEED = 77  # market seed of the tuning data, disjoint from the reproduction seeds' markets


def decode(texts, split) -> tuple[np.ndarray, np.ndarray]:
    """Completions -> (N, H) standardised paths (naive fallback where unparsed) and the parsed mask."""
    paths, ok = np.repeat(split.x[:, -1:], split.y.shape[1], 1).copy(), np.zeros(len(texts), bool)
    for i, (t, r) in enumerate(zip(texts, split.rows())):
        p = REWARD.forecast(t, r)
        if p is not None:
            paths[i], ok[i] = p, True
    return paths, ok


def reason(model, tok, split) -> tuple[list[str], np.ndarray, np.ndarray]:
    texts = generate(model, tok, split.prompts, max_new_tokens=MAX_NEW, batch_size=512)
    return (texts, *decode(texts, split))


def err(pred, y) -> tuple[float, float]:
    return float(np.mean((pred - y) ** 2)), float(np.mean(np.abs(pred - y)))


def val_mse(model, tok, split) -> float:
    """Validation MSE of the reasoner's greedy forecasts (its stopping and tuning score)."""
    _, path, _ = reason(model, tok, split)
    return err(path, split.y)[0]


class _ValKeeper(TrainerCallback):
    """Early stopping of the reasoner's SFT: validation MSE at each epoch end, the best epoch's weights kept."""

    def __init__(self, model, tok, val):
        self.model, self.tok, self.val = model, tok, val
        self.best, self.at, self.state = float("inf"), 0, None

    def on_epoch_end(self, args, state, control, **kw):
        mse = val_mse(self.model, self.tok, self.val)
        if mse < self.best:
            self.best, self.at, self.state = mse, round(state.epoch), copy.deepcopy(self.model.state_dict())


def sft_stage(base, tok, data, cfg: Cfg, seed: int, lr: float):
    """CoT-SFT from the base on the analyst rationales; best epoch by validation MSE. -> (model, keeper)."""
    torch.manual_seed(seed)
    model = clone(base, cfg, tok)
    keep = _ValKeeper(model, tok, data["val"])
    with tempfile.TemporaryDirectory() as tmp:
        args = sft_config(tmp, learning_rate=lr, num_train_epochs=cfg.sft_max_epochs,
                          per_device_train_batch_size=32, max_length=96, use_cpu=True, seed=seed, disable_tqdm=True,
                          logging_steps=10_000, warmup_steps=20, weight_decay=0.0)  # fmt: skip
        tr = sft_trainer(model, tok, sft_dataset(data["train"].prompts, data["train"].sft), args, callbacks=[keep])
        tr.remove_callback(PrinterCallback)
        tr.train()
    model.load_state_dict(keep.state)
    return model.eval(), keep


def grpo_stage(sft, tok, data, cfg: Cfg, seed: int, lr: float):
    """Time-GRPO from a copy of the SFT reasoner for ``cfg.grpo_steps`` steps at ``lr`` (cosine schedule with 10 %
    warm-up, the official config); the final weights are returned. -> (model, per-step total rewards)."""
    model = clone(sft, cfg, tok)
    rows = data["train"].rows()
    rng = np.random.default_rng(seed)
    n_prompts = cfg.grpo_steps * cfg.grpo_batch // cfg.num_generations
    items = [rows[i] for i in rng.choice(len(rows), n_prompts, replace=n_prompts > len(rows))]
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        args = grpo_config(tmp, learning_rate=lr, max_steps=cfg.grpo_steps, gradient_accumulation_steps=1,
                           per_device_train_batch_size=cfg.grpo_batch, num_generations=cfg.num_generations,
                           max_completion_length=MAX_NEW, beta=cfg.beta, weight_decay=0.0, use_cpu=True, seed=seed,
                           disable_tqdm=True, logging_steps=1, bf16=False)  # fmt: skip
        tr = time_grpo_trainer(model, tok, grpo_dataset(items, extra_columns=("last", "mu", "sd")), args,
                               reward=REWARD)  # fmt: skip
        tr.remove_callback(PrinterCallback)
        tr.train()
    rewards = [h["reward"] for h in tr.state.log_history if "reward" in h]
    return clone(tr.model, cfg, tok), rewards


@torch.no_grad()
def sampled_reward(model, tok, split, k: int, seed: int) -> tuple[float, float]:
    """What Time-GRPO maximises, on held-out windows: the mean total reward (and its inverse-MSE term) of ``k``
    completions per window sampled at temperature 1 (GRPO's rollout temperature)."""
    torch.manual_seed(seed)
    rows = split.rows()
    prompts = [p for p in split.prompts for _ in range(k)]
    texts = sample(model, tok, prompts, max_new_tokens=MAX_NEW, batch_size=512, do_sample=True)
    total, corr = [], []
    for i, t in enumerate(texts):
        r = rows[i // k]
        total.append(REWARD.total(t, r["target"], r))
        corr.append(REWARD.correctness(t, r["target"], r))
    return float(np.mean(total)), float(np.mean(corr))


def tuned_lrs(base, tok, cfg: Cfg, ctx) -> dict:
    """The one rule, once per config on the tuning market: the SFT lr by validation MSE (epochs early-stopped), the
    grid grown past an edge pick. (Time-GRPO's lr is pre-declared since VERSION 4: ``cfg.grpo_lr``.)"""
    keys = ("n_stocks", "n_days", "lookback", "horizon", "d_model", "n_layers", "base_steps", "base_stocks",
            "sft_lr_grid", "sft_max_epochs", "max_extensions")  # fmt: skip
    spec = json.dumps({k: getattr(cfg, k) for k in keys}, sort_keys=True)
    path = trained_cache_dir() / "zoo" / f"vta-sft-lr-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"

    def compute():
        t0, data = time.time(), build(cfg, TUNE_SEED)

        def sft_score(lr):
            model, keep = sft_stage(base, tok, data, cfg, TUNE_SEED, lr)
            return -keep.best, None

        g_sft = tune_on_grid(sft_score, cfg.sft_lr_grid, max_extensions=cfg.max_extensions)
        ctx.log(f"tuning: SFT lr {g_sft.best:g} (val MSE {_fmt(g_sft.scores)})")
        return {"sft_lr": g_sft.best, "sft_at_edge": g_sft.at_edge,
                "sft_scores": {str(k): -v for k, v in g_sft.scores.items()}, "seconds": time.time() - t0}  # fmt: skip

    return cached_json(path, "the VTA reasoner SFT learning-rate tuning", compute)


def _fmt(scores: dict) -> str:
    return ", ".join(f"{k:g}:{-v:.4f}" for k, v in sorted(scores.items()))


def train_reasoners(cfg: Cfg, data, seed: int, ctx):
    """(tokenizer, SFT reasoner, Time-GRPO reasoner, info) of one seed."""
    tok = tokenizer()
    base, spent = base_reasoner(cfg, tok, progress=not ctx.quiet)
    if spent:
        ctx.log(f"base reasoner pre-trained in {spent:.0f} s (cached from now on)")
    lrs = tuned_lrs(base, tok, cfg, ctx)
    t0 = time.time()
    sft, keep = sft_stage(base, tok, data, cfg, seed, lrs["sft_lr"])
    ctx.log(f"seed {seed}: reasoner SFT {time.time() - t0:.0f} s, val MSE {keep.best:.4f} at epoch {keep.at}")
    sft_epochs, t0 = keep.at, time.time()
    model, rewards = grpo_stage(sft, tok, data, cfg, seed, cfg.grpo_lr)
    ctx.log(f"seed {seed}: Time-GRPO {cfg.grpo_steps} steps at lr {cfg.grpo_lr:g} in {time.time() - t0:.0f} s")
    k = max(1, len(rewards) // 10)
    delta = sum(float((a - b).pow(2).sum()) for a, b in zip(model.state_dict().values(), sft.state_dict().values()))
    info = {"sft_epochs": sft_epochs, "grpo_steps": float(len(rewards)),
            "grpo_reward_first": float(np.mean(rewards[:k])), "grpo_reward_last": float(np.mean(rewards[-k:])),
            "sft_lr": lrs["sft_lr"], "grpo_lr": cfg.grpo_lr,
            "lrs_at_edge": float(lrs["sft_at_edge"]), "grpo_weight_change": delta**0.5}  # fmt: skip
    return tok, sft, model, info
