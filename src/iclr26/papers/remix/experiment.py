"""The ReMix reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
import time

import numpy as np
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from transformers.utils import logging as hf_logging
from trl import GRPOConfig, GRPOTrainer

from iclr26.core.cache import cached_folder
from iclr26.core.paths import trained_cache_dir
from iclr26.core.threads import run_threads
from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer
from iclr26.lm.train import TrainConfig, train_lm
from iclr26.rlft.remix import ReMixConfig, ReMixTrainer
from iclr26.rlft.remix.world import ArithmeticWorld, reward

from . import Cfg
from .curves import cost_to, level_for, speedup

SFT_VERSION = 2  # bump when the world or the SFT recipe changes (cached policies are retrained)
NULL_SEED_OFFSET = 500  # the null arm: GRPO again from the same SFT policy with another sampling / data-order seed

# ReMix's three components per arm: (mixing + UTD, KL-Convex, reincarnation); "grpo"/"shuffled" use TRL's trainer.
ABLATIONS = {
    "remix": dict(),
    "no_utd": dict(utd=1),
    "no_klc": dict(kl_convex=False),
    "no_reinc": dict(reincarnate_at=None),
    "mix_ppg": dict(utd=1, kl_convex=False, reincarnate_at=None),
}


@torch.no_grad()
def evaluate(model, tok, problems, k: int, seed: int, max_new: int) -> tuple[float, float]:
    """Sampled (T = 1) accuracy and mean response length (tokens, EOS included) over k samples per problem."""
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    prompts = [p.prompt for p in problems for _ in range(k)]
    enc = tok(prompts, return_tensors="pt", padding=True)
    out = model.generate(**enc, do_sample=True, temperature=1.0, top_k=0, max_new_tokens=max_new,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    comp = out[:, enc["input_ids"].size(1) :]
    ends = (comp == tok.eos_token_id).int()
    lengths = torch.where(ends.any(1), ends.argmax(1) + 1, torch.full_like(ends[:, 0], comp.size(1)))
    texts = tok.batch_decode(comp, skip_special_tokens=True)
    acc = np.mean([reward(t, p) for t, p in zip(texts, [p for p in problems for _ in range(k)], strict=True)])
    model.train(was_training)
    return float(acc), float(lengths.float().mean())


class _Curve(TrainerCallback):
    """Evaluates every `every` iterations, records (rollouts, accuracy, length, training seconds), stops at the budget.

    Training seconds exclude the evaluations' own time (the wall-clock a user would pay without them).
    """

    def __init__(self, cfg: Cfg, eval_fn, per_iter: int):
        self.cfg, self.eval_fn, self.per_iter, self.trainer = cfg, eval_fn, per_iter, None
        self.points: list[tuple[int, float, float, float]] = []
        self.t0, self.eval_s = 0.0, 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        tr = self.trainer
        if isinstance(tr, ReMixTrainer):
            if tr._slices:  # iteration not finished (UTD passes left)
                return
            it, ro = tr.iteration, tr.rollouts
        else:
            it, ro = state.global_step, state.global_step * self.per_iter
        done = ro >= self.cfg.budget
        if it % self.cfg.eval_every == 0 or done:
            t = time.perf_counter()
            acc, length = self.eval_fn(tr.model)
            self.points.append((ro, acc, length, t - self.t0 - self.eval_s))
            self.eval_s += time.perf_counter() - t
        if done:
            control.should_training_stop = True


def _sft(cfg: Cfg, seed: int, world: ArithmeticWorld, ctx):
    """The SFT policy of a seed, trained once on the noisy teacher and cached (like the zoo's models)."""
    key = json.dumps([SFT_VERSION, seed, cfg.d_model, cfg.n_layers, cfg.sft_steps, cfg.sft_examples, cfg.noise,
                      cfg.pad_prob, cfg.n_test])  # fmt: skip
    d = trained_cache_dir() / "remix-sft" / hashlib.sha1(key.encode()).hexdigest()[:12]

    def build(tmp):  # digest-verified folder: a damaged or half-built policy is moved aside and rebuilt
        model, tok = _train_sft(cfg, seed, world, ctx)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        return {"seed": seed, "steps": cfg.sft_steps}

    cached_folder(d, "the ReMix SFT policy", build, record="sft.json", log=ctx.log, quiet=ctx.quiet)
    tok = AutoTokenizer.from_pretrained(d)
    tok.padding_side = "left"
    return AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval(), tok


def _train_sft(cfg: Cfg, seed: int, world: ArithmeticWorld, ctx):
    tok = build_word_tokenizer(world.vocabulary_texts())
    torch.manual_seed(seed)
    model = tiny_model("llama", seed=seed, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4,
                       max_len=32)  # fmt: skip
    texts = world.sft_texts(cfg.sft_examples, seed, cfg.noise, cfg.pad_prob)
    tc = TrainConfig(steps=cfg.sft_steps, batch_size=64, lr=3e-3, seq_len=16, warmup=20, seed=seed)
    train_lm(model, tok, texts, tc, progress=not ctx.quiet, desc="SFT")
    return model, tok


def _train_arm(arm: str, cfg: Cfg, seed: int, path: str, tok, world, eval_fn, out_dir: str):
    answers = {p.prompt: p for p in world.train}
    rng = random.Random(seed)

    def correct(prompts, completions, **kw):
        return [reward(c, answers[p]) for p, c in zip(prompts, completions, strict=True)]

    def shuffled(prompts, completions, **kw):  # control: the batch's rewards, permuted across rollouts
        r = correct(prompts, completions)
        rng.shuffle(r)
        return r

    per_iter = cfg.prompts_per_iter * cfg.num_generations
    # fp32 throughout (bf16=False): TRL's configs default to a CPU bfloat16 autocast, under which the RL curve points
    # would be scored in another precision than the SFT point (VERSION 1)
    rl_seed = seed + NULL_SEED_OFFSET if arm == "grpo_null" else seed
    common = dict(output_dir=out_dir, per_device_train_batch_size=per_iter, num_generations=cfg.num_generations,
                  max_completion_length=cfg.max_completion_length, learning_rate=cfg.lr, lr_scheduler_type="constant",
                  beta=cfg.beta, epsilon=cfg.epsilon, loss_type="bnpo", temperature=1.0, top_k=0, max_steps=10**6,
                  logging_steps=10**6, report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                  bf16=False, seed=rl_seed, data_seed=rl_seed)  # fmt: skip
    ds = Dataset.from_list([{"prompt": p.prompt} for p in world.train])
    if arm in ("grpo", "shuffled", "grpo_null"):
        args, cls = GRPOConfig(**common), GRPOTrainer
    else:
        knobs = dict(off_policy_ratio=cfg.off_policy_ratio, history_window=cfg.history_window, utd=cfg.utd,
                     reincarnate_at=cfg.reincarnate_at, kl_lambda_start=cfg.kl_lambda_start,
                     kl_lambda_every=cfg.kl_lambda_every)  # fmt: skip
        common["learning_rate"] = cfg.lr_remix
        args, cls = ReMixConfig(**common, **{**knobs, **ABLATIONS[arm]}), ReMixTrainer
    curve = _Curve(cfg, eval_fn, per_iter)
    rf = shuffled if arm == "shuffled" else correct
    tr = cls(model=path, reward_funcs=rf, args=args, train_dataset=ds, processing_class=tok, callbacks=[curve])
    curve.trainer = tr
    t0 = time.perf_counter()
    tr.train()
    return curve.points, time.perf_counter() - t0, int(tr.state.global_step)


def _final(points) -> float:
    return float(np.mean([p[1] for p in points[-2:]]))


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if getattr(ctx, "model", None) and not cfg.real_iters:
        raise ValueError(
            "remix: --model runs the real-model half (ReMix vs GRPO on your LM), which is opt-in: add "
            "`--set real_iters=8` (and `--set micro=false` to skip the micro-policy arms)"
        )
    with run_threads():
        m = _run(cfg, seed, ctx) if cfg.micro else {}
        if cfg.real_iters:  # opt-in: ReMix vs GRPO on a real LM (SmolLM2, or --model)
            from .real import real_model_check

            m.update(real_model_check(cfg, seed, ctx))
    return m


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    world = ArithmeticWorld(seed, n_test=cfg.n_test)
    t0 = time.perf_counter()
    model, tok = _sft(cfg, seed, world, ctx)
    test = world.test

    def eval_fn(m):
        return evaluate(m, tok, test, cfg.eval_samples, seed + 7, cfg.max_completion_length)

    sft_acc, sft_len = eval_fn(model)
    ctx.log(f"seed {seed}: SFT acc {sft_acc:.3f} len {sft_len:.2f} ({time.perf_counter() - t0:.0f} s)")
    curves, walls, steps = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(f"{tmp}/sft")
        tok.save_pretrained(f"{tmp}/sft")
        for arm in cfg.arms:
            pts, wall, steps[arm] = _train_arm(arm, cfg, seed, f"{tmp}/sft", tok, world, eval_fn, f"{tmp}/{arm}")
            curves[arm], walls[arm] = [(0, sft_acc, sft_len, 0.0), *pts], wall
            ctx.log(f"seed {seed}: {arm:9s} final acc {_final(curves[arm]):.3f} after {pts[-1][0]} rollouts, "
                    f"{steps[arm]} optimizer steps ({wall:.0f} s)")  # fmt: skip
    m = {"sft_acc": sft_acc, "sft_len": sft_len}
    for arm, pts in curves.items():
        m[f"acc_{arm}"] = _final(pts)
        m[f"auc_{arm}"] = float(np.mean([p[1] for p in pts]))
        m[f"rollouts_{arm}"] = float(pts[-1][0])
        m[f"steps_{arm}"] = float(steps[arm])
    m["grpo_gain"] = m["acc_grpo"] - sft_acc
    if "shuffled" in curves:
        m["shuffled_gain"] = m["acc_shuffled"] - sft_acc
    ro = [m[f"rollouts_{a}"] for a in curves]
    m["rollout_spread"] = max(ro) / min(ro) - 1.0
    # one rule for every arm (curves.py): smoothed curves, one level (sft + q (GRPO's final - sft)), first crossing
    level = level_for([p[1] for p in curves["grpo"]], sft_acc, cfg.reach_q, cfg.smooth_window)
    m["reach_level"] = level
    g_cost = cost_to(curves["grpo"], level, 0, cfg.smooth_window)
    g_secs = cost_to(curves["grpo"], level, 3, cfg.smooth_window)
    m["grpo_rollouts_to_level"] = g_cost
    for arm in ("remix", "grpo_null"):
        if arm in curves:
            cost = cost_to(curves[arm], level, 0, cfg.smooth_window)
            name = "remix" if arm == "remix" else "null"
            m[f"{name}_rollouts_to_level"] = cost if np.isfinite(cost) else float("nan")
            m[f"{name}_speedup"] = speedup(g_cost, cost)
            m[f"{name}_wall_speedup"] = speedup(g_secs, cost_to(curves[arm], level, 3, cfg.smooth_window))
    # response length at the end of the mix phase (iteration T) vs GRPO after as many rollouts
    per_iter = cfg.prompts_per_iter * cfg.num_generations
    t_rollouts = per_iter + (cfg.reincarnate_at - 1) * _fresh_per_iter(cfg)
    remix_at_t = min(curves["remix"], key=lambda p: abs(p[0] - t_rollouts))
    g = np.array([p[:3] for p in curves["grpo"]])
    m["remix_len_drop"] = sft_len - remix_at_t[2]
    m["grpo_len_drop"] = sft_len - float(np.interp(remix_at_t[0], g[:, 0], g[:, 2]))
    m["remix_wall_s"], m["grpo_wall_s"] = walls["remix"], walls["grpo"]
    m["remix_train_s"], m["grpo_train_s"] = curves["remix"][-1][3], curves["grpo"][-1][3]
    ctx.save_artifact(f"curves_seed{seed}", {a: [list(p) for p in pts] for a, pts in curves.items()})
    return m


def _fresh_per_iter(cfg: Cfg) -> int:
    groups = cfg.prompts_per_iter
    return max(1, round((1 - cfg.off_policy_ratio) * groups)) * cfg.num_generations


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    if not cfg.micro:
        return []
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for arm in cfg.arms:
        xs, ys = [], []
        for seed in cfg.seeds:
            f = run_dir / "artifacts" / f"curves_seed{seed}.json"
            if f.exists():
                pts = np.array(json.loads(f.read_text())[arm])
                xs.append(pts[:, 0])
                ys.append(pts[:, 1])
        if xs:
            grid = np.linspace(0, cfg.budget, 40)
            mean = np.mean([np.interp(grid, x, y) for x, y in zip(xs, ys, strict=True)], axis=0)
            ax.plot(grid, mean, label=arm, lw=2.2 if arm in ("grpo", "remix") else 1.1)
    ax.axvline(cfg.budget, color="grey", lw=0.5)
    ax.set(xlabel="cumulative fresh rollouts", ylabel="held-out sampled accuracy", title="ReMix vs GRPO (seed mean)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return [("accuracy_vs_rollouts", fig)]
