"""The training stages of the temporal-abstention reproduction: greedy evaluation, a policy copy, CoT-SFT with the
epoch chosen by EM on the natural-ratio validation set, and one GRPO arm trained for a fixed, pre-declared number of
steps whose final weights are kept (since VERSION 6: no checkpoint selection, so no arm can silently be the SFT
policy, and no arm is selected on a validation set of its own prompt mix; imported only to run)."""

from __future__ import annotations

import copy
import tempfile

import torch
from transformers import AutoModelForCausalLM, PrinterCallback, TrainerCallback

from iclr26.rlft.abstention import (
    abstention_grpo_trainer,
    abstention_metrics,
    cot_sft_trainer,
    generate,
    grpo_config,
    grpo_dataset,
    sft_config,
    sft_dataset,
)

from . import Cfg

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
        self.best, self.best_epoch, self.state, self.curve = -1.0, 0, None, []

    def on_epoch_end(self, args, state, control, **kw):
        em = evaluate(self.model, self.tok, self.val, self.cfg, "v")["v_em"]
        self.curve.append(round(em, 4))
        if em > self.best:
            self.best, self.best_epoch = em, round(state.epoch)
            self.state = copy.deepcopy(self.model.state_dict())


def cot_sft(base, tok, items, val, cfg: Cfg, seed: int, ctx, lr: float):
    """CoT-SFT from ``base`` (a random init when the card trains from scratch) on ``items``; the epoch with the best
    EM on the natural-ratio validation set ``val`` is kept. Loss on the completion only, or on prompt and completion
    (``cfg.sft_full_loss``: a policy trained from scratch must learn to read the context too)."""
    model = clone(base)
    keep = _KeepBest(model, tok, val, cfg)
    with tempfile.TemporaryDirectory() as tmp:
        args = sft_config(tmp, learning_rate=lr, num_train_epochs=cfg.sft_max_epochs,
                          per_device_train_batch_size=32, max_length=192, use_cpu=True, seed=seed,
                          disable_tqdm=True, logging_steps=1000, warmup_steps=10, bf16=False,
                          completion_only_loss=not cfg.sft_full_loss)  # fmt: skip
        trainer = cot_sft_trainer(model, tok, sft_dataset(items), args, callbacks=[keep])
        trainer.remove_callback(PrinterCallback)  # no per-step log dicts on stdout
        trainer.train()
    model.load_state_dict(keep.state)
    return model.eval(), keep.best_epoch, keep.curve


def grpo(sft, tok, items, reward, cfg: Cfg, seed: int, ctx, lr: float):
    """One GRPO arm from the SFT policy: ``cfg.grpo_steps`` steps at ``lr`` (the same for every arm), final weights.
    Returns (model, mean training reward of the first and of the last 10 % of steps, info)."""
    model = clone(sft)
    with tempfile.TemporaryDirectory() as tmp:
        args = grpo_config(tmp, learning_rate=lr, max_steps=cfg.grpo_steps,
                           per_device_train_batch_size=cfg.grpo_batch, num_generations=cfg.num_generations,
                           max_completion_length=cfg.max_new_tokens, beta=cfg.beta, use_cpu=True, seed=seed,
                           logging_steps=1, disable_tqdm=True, bf16=False)  # fmt: skip
        trainer = abstention_grpo_trainer(model, tok, grpo_dataset(items), args, reward=reward)
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    k = max(1, len(rewards) // 10)
    info = {"steps": trainer.state.global_step}
    return clone(trainer.model), sum(rewards[:k]) / k, sum(rewards[-k:]) / k, info
