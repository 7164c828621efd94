"""The real-LM half of the VTA reproduction (opt-in: ``real_steps > 0``): the paper's reasoner pipeline, LoRA SFT on
windows with the official answer layout and then Time-GRPO with the four official rewards, on SmolLM2-135M-Instruct
or on any local HF causal LM given with ``--model``.

Per seed: one synthetic stock (the reproduction's market, its own seed), closes standardised on the first 70 % of the
days; prompts are the released code's default closes-only annotation (`annotate_window(..., simplified=True)`: the
full 13-indicator prompt is ~5x longer, too slow for a CPU); SFT targets are a one-sentence rule reading of the window
plus the true next 10 closes (`trend_rationale`, `answer_text`; the paper's stage 2 fine-tunes on rejection-sampled
traces). The held-out windows come from the last 30 % of the days. Scored before SFT (control), after SFT and after
Time-GRPO: the greedy answer's parse rate and MSE, and the mean total reward of completions sampled at T = 1 (what
Time-GRPO optimises). A CPU affords a few GRPO steps, so the claim that reads them is gated on GRPO having changed the
greedy completions at all.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
import torch
from transformers import PrinterCallback
from transformers.utils import logging as hf_logging

from iclr26.lm.loading import load_model
from iclr26.rlft.vta import (
    TimeGRPOReward,
    answer_text,
    generate,
    grpo_config,
    grpo_dataset,
    sft_config,
    sft_dataset,
    sft_trainer,
    time_grpo_trainer,
    trend_rationale,
    window_rows,
)
from iclr26.rlft.vta.world import make_market

MAX_NEW = 96  # a short rationale (~25 tokens) and 10 numbers of 2 decimals (~50 tokens) with slack
N_DAYS, TRAIN_SHARE = 400, 0.7
REWARD = TimeGRPOReward()


def lora_config():
    from peft import LoraConfig

    return LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")


def windows(seed: int, n_held: int) -> tuple[list[dict], list[dict]]:
    """(train rows, held-out rows) of one stock of the market of this seed."""
    frame = make_market(n_stocks=1, n_days=N_DAYS, seed=1000 * seed + 9).frames[0]
    split = int(N_DAYS * TRAIN_SHARE)
    rows = window_rows(frame, train_days=split, simplified=True)
    train = [r for r in rows if r["day"] + 10 < split]
    held = [r for r in rows if r["day"] >= split][:: max(1, (N_DAYS - split - 10) // n_held)][:n_held]
    return train, held


def scores(model, tok, rows, seed: int) -> tuple[dict[str, float], list[str]]:
    """Greedy parse rate and MSE (unparsed: the naive forecast), sampled total reward (2 per window)."""
    greedy = generate(model, tok, [r["prompt"] for r in rows], max_new_tokens=MAX_NEW)
    parsed = [REWARD.forecast(t) for t in greedy]
    mse = [np.mean((np.asarray(p if p is not None else [r["last"]] * 10) - r["target"]) ** 2)
           for p, r in zip(parsed, rows, strict=True)]  # fmt: skip
    torch.manual_seed(seed)
    sampled = generate(model, tok, [r["prompt"] for r in rows for _ in range(2)], max_new_tokens=MAX_NEW,
                       do_sample=True)  # fmt: skip
    rew = [REWARD.total(t, rows[i // 2]["target"]) for i, t in enumerate(sampled)]
    return {"parse": float(np.mean([p is not None for p in parsed])), "mse": float(np.mean(mse)),
            "reward": float(np.mean(rew))}, greedy  # fmt: skip


def real_model_check(cfg, seed: int, ctx) -> dict[str, float]:
    """LoRA SFT then Time-GRPO on a real LM, one seed; metrics ``real_*`` (see the card's METRICS)."""
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    name = getattr(ctx, "model", None) or cfg.real_model
    t0 = time.time()
    model, tok = load_model(name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    train, held = windows(seed, cfg.real_eval)
    out: dict[str, float] = {}
    m, _ = scores(model, tok, held, seed)
    out["real_parse_base"] = m["parse"]
    out["real_naive_mse"] = float(np.mean([np.mean((r["last"] - np.asarray(r["target"])) ** 2) for r in held]))
    rng = np.random.default_rng(seed)
    sft_rows = [train[i] for i in rng.choice(len(train), min(len(train), 8 * cfg.real_sft_steps), replace=False)]
    targets = [answer_text(r["target"], trend_rationale(r["closes"])) for r in sft_rows]
    with tempfile.TemporaryDirectory() as tmp:
        args = sft_config(f"{tmp}/sft", learning_rate=1e-3, max_steps=cfg.real_sft_steps, per_device_train_batch_size=8,
                          lr_scheduler_type="constant_with_warmup", warmup_steps=2, max_length=512, use_cpu=True,
                          bf16=False, seed=seed, disable_tqdm=True, logging_steps=1000)  # fmt: skip
        tr = sft_trainer(model, tok, sft_dataset([r["prompt"] for r in sft_rows], targets), args,
                         peft_config=lora_config())  # fmt: skip
        tr.remove_callback(PrinterCallback)
        tr.train()
        model = tr.model
        m, sft_greedy = scores(model, tok, held, seed)
        out.update(real_parse_sft=m["parse"], real_mse_sft=m["mse"], real_reward_sft=m["reward"])
        ctx.log(f"seed {seed}: real LM {name} after LoRA SFT: {m}")
        items = [train[i] for i in rng.choice(len(train), 2 * cfg.real_steps, replace=len(train) < 2 * cfg.real_steps)]
        args = grpo_config(f"{tmp}/grpo", learning_rate=1e-4, max_steps=cfg.real_steps, per_device_train_batch_size=8,
                           gradient_accumulation_steps=1, num_generations=4, max_completion_length=MAX_NEW,
                           use_cpu=True, bf16=False, seed=seed, disable_tqdm=True, logging_steps=1)  # fmt: skip
        tr = time_grpo_trainer(model, tok, grpo_dataset(items), args, reward=REWARD)
        tr.remove_callback(PrinterCallback)
        tr.train()
        m, grpo_greedy = scores(tr.model, tok, held, seed)
    out.update(real_parse_grpo=m["parse"], real_mse_grpo=m["mse"], real_reward_grpo=m["reward"])
    out["real_changed"] = float(np.mean([a != b for a, b in zip(sft_greedy, grpo_greedy, strict=True)]))
    out["real_seconds"] = time.time() - t0
    ctx.log(f"seed {seed}: real LM after {cfg.real_steps} Time-GRPO steps: {m}; changed {out['real_changed']:.2f}")
    return out
