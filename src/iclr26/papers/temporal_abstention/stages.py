"""The training stages of the temporal-abstention reproduction, shared by its seeds and its tuning: greedy evaluation,
a policy copy, CoT-SFT with early stopping on validation EM, and one GRPO arm trained until its held-out reward stops
improving (imported only to run)."""

from __future__ import annotations

import copy
import tempfile

import torch
from transformers import AutoModelForCausalLM, PrinterCallback, TrainerCallback

from iclr26.rlft.abstention import (
    HeldOutRewardStopping,
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
