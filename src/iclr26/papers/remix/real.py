"""The real-LM half of the ReMix reproduction (opt-in: ``real_iters > 0``): ReMix vs GRPO on SmolLM2-135M-Instruct,
or on any local HF causal LM given with ``--model``.

The same arithmetic world, asked as a chat question when the tokenizer has a chat template ("What is 3 + 9 + 8? Reply
with the number only.") and as the plain prompt "3 + 9 + 8 =" otherwise; the reward is 1 iff the first integer of the
completion is the sum. From the model as given, GRPO (`GRPOTrainer`) and ReMix (`ReMixTrainer`, the card's p, N, m,
with reincarnation half way) each generate ``real_iters`` GRPO iterations' worth of fresh rollouts (full fine-tuning,
fp32, the same learning rate); the held-out greedy accuracy is scored before and after each arm on the same problems.
A CPU affords a few iterations, so the claim that reads it is gated: GRPO itself must raise the held-out accuracy at
this budget (headroom), or nothing can be said about a saving.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
from datasets import Dataset
from transformers import PrinterCallback, TrainerCallback
from transformers.utils import logging as hf_logging
from trl import GRPOConfig, GRPOTrainer

from iclr26.lm.loading import load_model
from iclr26.rlft.remix import ReMixConfig, ReMixTrainer
from iclr26.rlft.remix.evaluate import greedy_accuracy as accuracy
from iclr26.rlft.remix.world import ArithmeticWorld, chat_prompt, first_int_reward

MAX_NEW = 8


def uses_chat(tok) -> bool:
    return bool(getattr(tok, "chat_template", None))


class _Budget(TrainerCallback):
    """Stops a GRPO / ReMix run once its fresh rollouts reach the budget (at the end of an iteration)."""

    def __init__(self, budget: int, per_iter: int):
        self.budget, self.per_iter, self.trainer = budget, per_iter, None

    def rollouts(self, state) -> int:
        tr = self.trainer
        return tr.rollouts if isinstance(tr, ReMixTrainer) else state.global_step * self.per_iter

    def on_step_end(self, args, state, control, **kw):
        if isinstance(self.trainer, ReMixTrainer) and self.trainer._slices:
            return
        if self.rollouts(state) >= self.budget:
            control.should_training_stop = True


def real_model_check(cfg, seed: int, ctx) -> dict[str, float]:
    """ReMix vs GRPO on a real LM, one seed; metrics ``real_*`` (see the card's METRICS)."""
    name = getattr(ctx, "model", None) or cfg.real_model
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    t0 = time.time()
    base, tok = load_model(name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    chat = uses_chat(tok)
    world = ArithmeticWorld(seed)
    held = world.test[: cfg.real_eval]
    answers = {str(chat_prompt(p, chat)): p for p in world.train}

    def reward(prompts, completions, **kw):
        return [first_int_reward(c, answers[str(p)]) for p, c in zip(prompts, completions, strict=True)]

    out = {"real_acc_start": accuracy(base, tok, held, chat)}
    ctx.log(f"seed {seed}: real LM {name}: held-out greedy accuracy {out['real_acc_start']:.3f} before RL")
    G, per_iter = cfg.real_generations, cfg.real_prompts_per_iter * cfg.real_generations
    budget = cfg.real_iters * per_iter
    ds = Dataset.from_list([{"prompt": chat_prompt(p, chat)} for p in world.train])
    with tempfile.TemporaryDirectory() as tmp:
        base.save_pretrained(f"{tmp}/start")
        tok.save_pretrained(f"{tmp}/start")
        del base
        for arm in ("grpo", "remix"):
            common = dict(output_dir=f"{tmp}/{arm}", per_device_train_batch_size=per_iter, num_generations=G,
                          max_completion_length=MAX_NEW, learning_rate=cfg.real_lr, lr_scheduler_type="constant",
                          beta=cfg.beta, epsilon=cfg.epsilon, loss_type="bnpo", temperature=1.0, max_steps=10**6,
                          logging_steps=1, report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                          bf16=False, seed=seed, data_seed=seed)  # fmt: skip
            if arm == "grpo":
                args, cls = GRPOConfig(**common), GRPOTrainer
            else:
                half = max(1, cfg.real_iters // 2)
                args = ReMixConfig(**common, off_policy_ratio=cfg.off_policy_ratio, history_window=cfg.history_window,
                                   utd=cfg.utd, reincarnate_at=half, kl_lambda_start=1,
                                   kl_lambda_every=max(1, half // 5))  # fmt: skip
                cls = ReMixTrainer
            stop = _Budget(budget, per_iter)
            tr = cls(model=f"{tmp}/start", reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok,
                     callbacks=[stop])  # fmt: skip
            stop.trainer = tr
            tr.remove_callback(PrinterCallback)
            tr.train()
            rewards = [h["reward"] for h in tr.state.log_history if "reward" in h]
            out[f"real_reward_{arm}"] = float(np.mean(rewards)) if rewards else float("nan")
            out[f"real_rollouts_{arm}"] = float(stop.rollouts(tr.state))
            out[f"real_steps_{arm}"] = float(tr.state.global_step)
            out[f"real_acc_{arm}"] = accuracy(tr.model, tok, held, chat)
            if arm == "remix":
                mix = [h["off_policy_frac"] for h in tr.history if not h["reincarnated"] and h["iteration"] > 1]
                out["real_offpolicy_share"] = float(np.mean(mix)) if mix else 0.0
            ctx.log(f"seed {seed}: real LM {arm}: accuracy {out[f'real_acc_{arm}']:.3f} after "
                    f"{out[f'real_rollouts_{arm}']:.0f} rollouts, {out[f'real_steps_{arm}']:.0f} steps")  # fmt: skip
            del tr
    ro = (out["real_rollouts_grpo"], out["real_rollouts_remix"])
    out["real_rollout_spread"] = max(ro) / min(ro) - 1.0
    out["real_seconds"] = time.time() - t0
    return out
