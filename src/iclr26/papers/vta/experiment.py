"""The VTA reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import torch
from transformers.utils import logging as hf_logging

from iclr26.core.tuning import tune_on_grid
from iclr26.rlft.vta import ConditionalForecaster, DLinear, ForecasterConfig, RevINMLP, fit, path_stats
from iclr26.rlft.vta.forecaster import val_mse

from . import Cfg
from .data import REGIMES, build
from .reasoner import REWARD, err, reason, sampled_reward, train_reasoners

FORMAT_MAX = 2.0  # think 0.5 + answer 1.0 + xml 4 x 0.125: what a well-formatted answer earns beside correctness


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
    if getattr(ctx, "model", None) and not cfg.real_steps:
        raise ValueError(
            "vta: --model runs the real-LM half (LoRA SFT + Time-GRPO on your LM), which is opt-in: add "
            "`--set real_steps=4` (and `--set micro=false` to skip the micro reproduction)"
        )
    out = micro(cfg, seed, ctx) if cfg.micro else {}
    if cfg.real_steps:
        from iclr26.core.threads import torch_threads

        from .real import real_model_check

        with torch_threads():
            out.update(real_model_check(cfg, seed, ctx))
    return out


def micro(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    """The micro reproduction on one seed: reasoners, forecasters, controls."""
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
    # what Time-GRPO optimises, scored on test windows: the sampled (T = 1) reward; and how far GRPO moved the reasoner
    for m, key in ((sft, "reasoner_sft"), (grpo, "reasoner")):
        out[f"{key}_reward"], out[f"{key}_correct_reward"] = sampled_reward(m, tok, test, cfg.reward_samples, seed)
    out["reasoner_changed"] = float(np.mean([a != b for a, b in zip(outs["sft"]["test"][0], outs["grpo"]["test"][0])]))
    orc = (test.oracle - test.y) ** 2
    out["oracle_reward"] = float(np.mean(REWARD.a / (1 + REWARD.b * orc.mean(1)))) + FORMAT_MAX
    ctx.log(f"seed {seed}: naive {out['naive_mse']:.4f} oracle {out['oracle_mse']:.4f} | reasoner SFT "
            f"{out['reasoner_sft_mse']:.4f} (ep {info['sft_epochs']}) GRPO {out['reasoner_mse']:.4f} (train reward "
            f"{info['grpo_reward_first']:.2f}->{info['grpo_reward_last']:.2f}; test sampled reward SFT "
            f"{out['reasoner_sft_reward']:.3f} GRPO {out['reasoner_reward']:.3f}; "
            f"changed {out['reasoner_changed']:.2f})"
    )  # fmt: skip

    plain = {s: tensors(data[s]) for s in data}
    fc = ForecasterConfig(lookback=cfg.lookback, horizon=cfg.horizon)
    arms = {"dlinear": (lambda: DLinear(cfg.lookback, cfg.horizon), plain, False),
            "backbone": (lambda: RevINMLP(cfg.lookback, cfg.horizon, fc.hidden, fc.dropout), plain, False)}  # fmt: skip
    rng = np.random.default_rng(seed + 7)
    for name, src in (("vta_sft", "sft"), ("vta", "grpo"), ("vta_shuffled", "grpo")):  # vta before its control
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
        if name == "vta_shuffled":  # the control gets the method's own lr and w (VERSION 4; was its own tuning)
            lr, w = out["vta_lr"], out["vta_w"]
            model, _, _ = fit(make(), dt["train"], dt["val"], lr=lr, max_epochs=cfg.max_epochs, patience=cfg.patience,
                              seed=seed)  # fmt: skip
        else:
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
    out["oracle_gain_backbone"] = 1 - out["oracle_mse"] / out["backbone_mse"]
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

    if not cfg.micro:
        return []
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
    figs = [("forecasters", fig)]
    seed = min(per_seed, key=int) if per_seed else None
    path = Path(run_dir) / "artifacts" / f"rationales-seed{seed}.json"
    if path.exists():
        figs.append(("rationales", _rationale_figure(json.loads(path.read_text()), seed)))
    return figs


def _parts(completion: str) -> tuple[str, str]:
    """A completion -> (rationale words, forecast bins); '?' where a tag is missing."""
    think = re.search(r"<think>(.*?)</think>", completion, re.S)
    ans = re.search(r"<answer>(.*?)(</answer>|$)", completion, re.S)
    return (think.group(1).strip() if think else "?", ans.group(1).strip() if ans else "?")


def _rationale_figure(ex: dict, seed):
    """The generated rationales of one seed's test windows as a text figure: per hidden regime, the SFT-only and the
    Time-GRPO reasoner's rationale and forecast bins beside the teacher's rationale and the true bins."""
    import matplotlib.pyplot as plt

    lines = []
    for reg, items in ex.items():
        lines.append(f"regime {reg}")
        for it in items[:2]:
            for who in ("sft", "grpo", "truth"):
                words, bins = _parts(it[who])
                lines.append(f"  {who:>5}: {words:<56.56} | {bins}")
            lines.append("")
    height = 0.19 * len(lines) + 0.6
    fig = plt.figure(figsize=(13, height))
    fig.text(0.01, 1 - 0.35 / height, "\n".join(lines), family="monospace", fontsize=8, va="top")
    fig.suptitle(
        f"generated rationales and forecast bins, test windows of seed {seed} (truth: teacher rule + true future)",
        fontsize=9,
        x=0.01,
        ha="left",
        y=1.0,
    )
    return fig
