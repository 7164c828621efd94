"""The temporal-abstention reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

from transformers.utils import logging as hf_logging

from iclr26.rlft.abstention import abstention_metrics, extract_answer, generate
from iclr26.rlft.abstention.world import make_temporal_qa

from . import Cfg, units
from .policy import base_policy, tokenizer, untrained_policy
from .real import real_model_check
from .stages import NATURAL, evaluate


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    import datasets

    datasets.disable_progress_bars()  # TRL's dataset preparation bars, once per trainer
    if getattr(ctx, "model", None) and not cfg.real_steps:
        raise ValueError(
            "temporal-abstention: --model runs the real-model half (LoRA CoT-SFT + GRPO on your LM), which is opt-in: "
            "add `--set real_steps=6` (and `--set micro=false` to skip the micro-policy arms)"
        )
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
    lrs = {"sft_lr": cfg.sft_lr, "grpo_lr": cfg.grpo_lr}  # pre-declared (VERSION 6; was a tuning run)
    sft_u = units.sft_unit(cfg, seed, base, tok, lrs, log=ctx.log)
    out["sft_epochs"], out["seconds_sft"] = float(sft_u["epochs"]), sft_u["seconds"]
    sft = units.policy(base, sft_u["state"])
    out.update(evaluate(sft, tok, test, cfg, "sft"))
    sft_answers = answers(sft, tok, test, cfg)
    ctx.log(f"seed {seed}: SFT ({sft_u['epochs']} ep, validation EM per epoch {sft_u.get('val_em_curve')}, "
            f"{sft_u['seconds']:.0f} s) test EM {out['sft_em']:.3f} TP {out['sft_tp']:.3f}")  # fmt: skip

    for name, u in units.arm_units(cfg, seed, base, tok, lrs, log=ctx.log).items():
        out[f"{name}_reward_first"], out[f"{name}_reward_last"] = u["reward_first"], u["reward_last"]
        out[f"{name}_seconds"], out[f"{name}_steps"] = u["seconds"], float(u["steps"])
        arm = units.policy(base, u["state"])
        out.update(evaluate(arm, tok, test, cfg, name))
        out[f"{name}_tp_gain"] = out[f"{name}_tp"] - out["sft_tp"]
        out[f"{name}_changed"] = sum(a != b for a, b in zip(answers(arm, tok, test, cfg), sft_answers)) / len(test)
        ctx.log(f"seed {seed}: {name} EM {out[f'{name}_em']:.3f} TP {out[f'{name}_tp']:.3f} "
                f"over-abst {out[f'{name}_over_abstention']:.3f}; answers changed {out[f'{name}_changed']:.3f}; "
                f"{u['steps']} steps ({u['seconds']:.0f} s)")  # fmt: skip
    steps = [out[f"{a}_steps"] for a in units.ARMS]
    out["steps_spread"] = max(steps) / max(1.0, min(steps)) - 1.0
    # a later seed's SFT policy and arms, trained while no worker is free for that seed yet
    units.prepare(cfg, seed, getattr(ctx, "seeds", (seed,)), base, tok, lrs, log=ctx.log)
    return out


def answers(model, tok, items, cfg: Cfg) -> list[str | None]:
    """The extracted greedy answers of a policy (None where no <answer> block): what "the arm moved" compares."""
    outs = generate(model, tok, [it.prompt for it in items], max_new_tokens=cfg.max_new_tokens, batch_size=64)
    return [extract_answer(o) for o in outs]


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
