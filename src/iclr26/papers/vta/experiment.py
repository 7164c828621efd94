"""The VTA reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import tempfile
import time

import numpy as np
import torch
from transformers import PrinterCallback, TrainerCallback
from transformers.utils import logging as hf_logging

from iclr26.probing.tuning import tune_on_grid
from iclr26.rlft.abstention import generate
from iclr26.rlft.vta import (
    ConditionalForecaster,
    DLinear,
    ForecasterConfig,
    RevINMLP,
    TimeGRPOReward,
    fit,
    grpo_config,
    grpo_dataset,
    path_stats,
    sft_config,
    sft_dataset,
    sft_trainer,
    time_grpo_trainer,
)
from iclr26.rlft.vta.forecaster import val_mse

from . import Cfg
from .data import BINS, REGIMES, build
from .policy import base_reasoner, clone, tokenizer

REWARD = TimeGRPOReward(parse=BINS.parse, to_target=BINS.to_target, row_columns=("last", "mu", "sd"))
MAX_NEW = 32  # completion tokens: 4 rationale words + 10 bins + tags (26) with slack


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


class _ValKeeper(TrainerCallback):
    """Early stopping of the reasoner: validation MSE of its greedy forecasts at each epoch end (SFT) or every
    ``every`` steps (GRPO); the best weights are kept."""

    def __init__(self, model, tok, val, every: int | None = None):
        self.model, self.tok, self.val, self.every = model, tok, val, every
        self.best, self.at, self.state = float("inf"), 0, None

    def _check(self, at):
        _, path, _ = reason(self.model, self.tok, self.val)
        mse = err(path, self.val.y)[0]
        if mse < self.best:
            self.best, self.at, self.state = mse, at, copy.deepcopy(self.model.state_dict())

    def on_epoch_end(self, args, state, control, **kw):
        if self.every is None:
            self._check(round(state.epoch))

    def on_step_end(self, args, state, control, **kw):
        if self.every is not None and state.global_step % self.every == 0:
            self._check(state.global_step)


def train_reasoners(cfg: Cfg, data, seed: int, ctx):
    tok = tokenizer()
    base, spent = base_reasoner(cfg, tok, progress=not ctx.quiet)
    if spent:
        ctx.log(f"base reasoner pre-trained in {spent:.0f} s (cached from now on)")
    t0 = time.time()
    torch.manual_seed(seed)
    model = clone(base, cfg, tok)
    keep = _ValKeeper(model, tok, data["val"])
    with tempfile.TemporaryDirectory() as tmp:
        args = sft_config(tmp, learning_rate=cfg.sft_lr, num_train_epochs=cfg.sft_max_epochs,
                          per_device_train_batch_size=32, max_length=96, use_cpu=True, seed=seed, disable_tqdm=True,
                          logging_steps=10_000, warmup_steps=20, weight_decay=0.0)  # fmt: skip
        tr = sft_trainer(model, tok, sft_dataset(data["train"].prompts, data["train"].sft), args, callbacks=[keep])
        tr.remove_callback(PrinterCallback)
        tr.train()
    model.load_state_dict(keep.state)
    ctx.log(f"seed {seed}: reasoner SFT {time.time() - t0:.0f} s, val MSE {keep.best:.4f} at epoch {keep.at}")
    t0 = time.time()
    sft = clone(model, cfg, tok)
    sft_epochs = keep.at

    rows = data["train"].rows()
    rng = np.random.default_rng(seed)
    n_prompts = cfg.grpo_steps * cfg.grpo_batch // cfg.num_generations
    items = [rows[i] for i in rng.choice(len(rows), n_prompts, replace=n_prompts > len(rows))]
    keep = _ValKeeper(model, tok, data["val"], every=cfg.grpo_eval_every)
    with tempfile.TemporaryDirectory() as tmp:
        args = grpo_config(tmp, learning_rate=cfg.grpo_lr, max_steps=cfg.grpo_steps, gradient_accumulation_steps=1,
                           per_device_train_batch_size=cfg.grpo_batch, num_generations=cfg.num_generations,
                           max_completion_length=MAX_NEW, beta=cfg.beta, weight_decay=0.0, use_cpu=True, seed=seed,
                           disable_tqdm=True, logging_steps=1)  # fmt: skip
        tr = time_grpo_trainer(model, tok, grpo_dataset(items, extra_columns=("last", "mu", "sd")), args,
                               reward=REWARD, callbacks=[keep])  # fmt: skip
        tr.remove_callback(PrinterCallback)
        tr.train()
    rewards = [h["reward"] for h in tr.state.log_history if "reward" in h]
    model.load_state_dict(keep.state)
    ctx.log(f"seed {seed}: Time-GRPO {time.time() - t0:.0f} s, val MSE {keep.best:.4f} at step {keep.at}")
    k = max(1, len(rewards) // 10)
    info = {"sft_epochs": sft_epochs, "grpo_best_step": keep.at, "grpo_reward_first": float(np.mean(rewards[:k])),
            "grpo_reward_last": float(np.mean(rewards[-k:]))}  # fmt: skip
    return tok, sft.eval(), model.eval(), info


def tensors(split, path=None, ok=None):
    x, y = torch.tensor(split.x, dtype=torch.float32), torch.tensor(split.y, dtype=torch.float32)
    if path is None:
        return (x, y)
    return (x, y, path_stats(torch.tensor(path, dtype=torch.float32)), torch.tensor(ok))


def tuned(make, data_t, cfg: Cfg, seed: int, conditional: bool = False):
    """One rule for every forecaster: lr (and, for VTA, the CFG scale w) by validation MSE with `tune_on_grid`;
    each candidate trained to convergence with early stopping. Returns (model, lr, w)."""

    def w_score(model):
        res = tune_on_grid(lambda w: (-val_mse(model, data_t["val"], guidance=w), None), cfg.w_grid)
        return res.score, res.best

    def by_lr(lr):
        model, best, _ = fit(make(), data_t["train"], data_t["val"], lr=lr, max_epochs=cfg.max_epochs,
                             patience=cfg.patience, seed=seed)  # fmt: skip
        if not conditional:
            return -best, (model, None)
        s, w = w_score(model)
        return s, (model, w)

    res = tune_on_grid(by_lr, cfg.lr_grid)
    model, w = res.payload
    return model, res.best, w


@torch.no_grad()
def test_pred(model, t, w=None):
    if isinstance(model, ConditionalForecaster):
        return model.forecast(*[t[0], *t[2:]], guidance=w).numpy()
    return model(t[0]).numpy()


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    import datasets

    datasets.disable_progress_bars()
    t_start = time.time()
    torch.manual_seed(seed)
    data = build(cfg, seed)
    test = data["test"]
    out: dict[str, float] = {}
    naive = np.repeat(test.x[:, -1:], cfg.horizon, 1)
    out["naive_mse"], out["naive_mae"] = err(naive, test.y)
    out["oracle_mse"], _ = err(test.oracle, test.y)
    out["oracle_gain"] = 1 - out["oracle_mse"] / out["naive_mse"]

    t0 = time.time()
    tok, sft, grpo, info = train_reasoners(cfg, data, seed, ctx)
    out.update(info)
    outs = {name: {s: reason(m, tok, data[s]) for s in data} for name, m in (("sft", sft), ("grpo", grpo))}
    out["seconds_reasoner"] = time.time() - t0
    for name, key in (("sft", "reasoner_sft"), ("grpo", "reasoner")):
        out[f"{key}_mse"], out[f"{key}_mae"] = err(outs[name]["test"][1], test.y)
    out["reasoner_parse_rate"] = float(outs["grpo"]["test"][2].mean())
    ctx.log(f"seed {seed}: naive {out['naive_mse']:.4f} oracle {out['oracle_mse']:.4f} | reasoner SFT "
            f"{out['reasoner_sft_mse']:.4f} (ep {info['sft_epochs']}) GRPO {out['reasoner_mse']:.4f} (step "
            f"{info['grpo_best_step']}, reward {info['grpo_reward_first']:.2f}->{info['grpo_reward_last']:.2f})"
    )  # fmt: skip

    plain = {s: tensors(data[s]) for s in data}
    fc = ForecasterConfig(lookback=cfg.lookback, horizon=cfg.horizon)
    arms = {"dlinear": (lambda: DLinear(cfg.lookback, cfg.horizon), plain, False),
            "backbone": (lambda: RevINMLP(cfg.lookback, cfg.horizon, fc.hidden, fc.dropout), plain, False)}  # fmt: skip
    rng = np.random.default_rng(seed + 7)
    for name, src in (("vta_sft", "sft"), ("vta", "grpo"), ("vta_shuffled", "grpo")):
        cond = {}
        for s in data:
            _, path, ok = outs[src][s]
            if name == "vta_shuffled":  # control: each window gets another window's reasoner output
                perm = rng.permutation(len(path))
                path, ok = path[perm], ok[perm]
            cond[s] = tensors(data[s], path, ok)
        arms[name] = (lambda: ConditionalForecaster(fc), cond, True)
    for name, (make, dt, conditional) in arms.items():
        t1 = time.time()
        model, lr, w = tuned(make, dt, cfg, seed, conditional)
        pred = test_pred(model, dt["test"], w)
        out[f"{name}_mse"], out[f"{name}_mae"] = err(pred, test.y)
        out[f"{name}_lr"] = lr
        if w is not None:
            out[f"{name}_w"] = w
        if name in ("vta", "backbone"):
            for r, reg in enumerate(REGIMES):
                m = test.regime == r
                out[f"{name}_mse_{reg}"] = err(pred[m], test.y[m])[0] if m.any() else float("nan")
        ctx.log(f"seed {seed}: {name} MSE {out[f'{name}_mse']:.4f} MAE {out[f'{name}_mae']:.4f} lr {lr:g}"
                + (f" w {w:g}" if w is not None else "") + f" ({time.time() - t1:.0f} s)")  # fmt: skip
    others = ("naive", "dlinear", "backbone", "reasoner", "vta_sft")
    out["best_other_mse"] = min(out[f"{a}_mse"] for a in others)
    out["best_other_mae"] = min(out[f"{a}_mae"] for a in others)
    out["shuffled_gain"] = 1 - out["vta_shuffled_mse"] / out["backbone_mse"]
    ctx.save_artifact(f"rationales-seed{seed}", examples(outs, test))
    out["seconds_total"] = time.time() - t_start
    return out


def examples(outs, test, per_regime: int = 3) -> dict:
    """A few generated rationales per hidden regime (test windows), SFT-only and Time-GRPO reasoner."""
    res = {}
    for r, reg in enumerate(REGIMES):
        idx = np.flatnonzero(test.regime == r)[:: max(1, int((test.regime == r).sum()) // per_regime)][:per_regime]
        res[reg] = [{"prompt": test.prompts[i].strip(), "sft": outs["sft"]["test"][0][i],
                     "grpo": outs["grpo"]["test"][0][i], "truth": test.sft[i]} for i in idx]  # fmt: skip
    return res


def plots(run_dir, per_seed, cfg: Cfg):
    """Test MSE per forecaster (mean over seeds, one dot per seed) and VTA vs backbone per regime."""
    import matplotlib.pyplot as plt

    arms = ("naive", "oracle", "dlinear", "backbone", "reasoner_sft", "reasoner", "vta_sft", "vta", "vta_shuffled")
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.4))
    for i, a in enumerate(arms):
        vals = [s[f"{a}_mse"] for s in per_seed.values() if f"{a}_mse" in s]
        axes[0].bar(i, np.mean(vals), color=f"C{i}", alpha=0.6)
        axes[0].scatter([i] * len(vals), vals, color="k", s=8)
    axes[0].set_xticks(range(len(arms)), arms, rotation=35, ha="right")
    axes[0].set_ylabel("test MSE (standardised closes)")
    for j, a in enumerate(("backbone", "vta")):
        vals = [np.nanmean([s[f"{a}_mse_{reg}"] for s in per_seed.values()]) for reg in REGIMES]
        axes[1].bar(np.arange(len(REGIMES)) + 0.4 * j, vals, width=0.4, label=a)
    axes[1].set_xticks(np.arange(len(REGIMES)) + 0.2, REGIMES)
    axes[1].legend()
    axes[1].set_title("test MSE by hidden regime")
    fig.tight_layout()
    return [("forecasters", fig)]
