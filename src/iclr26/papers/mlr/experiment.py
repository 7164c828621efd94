"""The MLR reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import random
import time

import numpy as np
import torch
from transformers.utils import logging as hf_logging

from iclr26.core.seeding import seed_everything, stage_seed
from iclr26.core.threads import run_threads
from iclr26.rlft.mlr import (
    MLRSystem,
    add_planner,
)

from . import Cfg
from .bench import FMT, Bench, _cached, _clone_system, _copy, _grpo, _pretrained_base, _single, _step_dpo, _two_level
from .tuning import LR_FIELDS, tuned_lrs, with_lrs


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    with run_threads():
        return _run(cfg, seed, ctx)


STAGES = ("sft_full", "grpo", "sft_small", "mlr_sft", "mlr", "mlr_outcome", "mlr_random", "mlr_nosplit")


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    lrs = None
    if cfg.tune:  # the one tuning rule, once per config on the tuning seed (cached)
        lrs = tuned_lrs(cfg, ctx)
        cfg = with_lrs(cfg, lrs)
    torch.manual_seed(seed)
    random.seed(seed)
    bench = Bench(cfg, seed)
    base, tok = _pretrained_base(cfg, bench.world, ctx)

    def single_empty():
        return MLRSystem(_copy(base), tok, bench.mcfg(), FMT, split=False)

    def two_level_empty():
        return MLRSystem(add_planner(_copy(base), bench.mcfg()), tok, bench.mcfg(), FMT, split=True)

    systems, secs, extra = {}, {}, {}

    def timed(name, fn):
        # every stage starts from its own seed, so that its sampling does not depend on whether the stages before it
        # were trained (consuming random numbers) or loaded from the cache
        seed_everything(stage_seed(seed, name, STAGES))  # torch, random and numpy
        t = time.process_time()
        systems[name] = fn()
        secs[name] = time.process_time() - t

    def sft(name, n, lr):
        return _cached(cfg, seed, name, lambda: _single(bench, base, tok, n, ctx, name, lr), single_empty, ctx)

    timed("sft_full", lambda: sft("sft_full", cfg.n_traces, cfg.sft_lr))
    if "grpo" in cfg.arms:
        timed("grpo", lambda: _grpo(bench, systems["sft_full"], ctx))
    timed("sft_small", lambda: sft("sft_small", bench.n_small, cfg.small_lr))  # MLR's executor, the nosplit start
    build = lambda: _two_level(bench, systems["sft_small"], tok, ctx)  # noqa: E731
    timed("mlr_sft", lambda: _cached(cfg, seed, "mlr_sft", build, two_level_empty, ctx))
    secs["mlr_sft"] += secs["sft_small"]
    for arm, rule in (("mlr", "tsmc"), ("mlr_outcome", "outcome"), ("mlr_random", "random"), ("mlr_nosplit", "tsmc")):
        if arm not in cfg.arms:
            continue
        start = systems["sft_small" if arm == "mlr_nosplit" else "mlr_sft"]

        def fn(rule=rule, arm=arm, start=start):
            s, extra[f"n_pairs_{arm}"] = _step_dpo(bench, _clone_system(start, bench, pair_rule=rule), ctx, arm)
            return s

        timed(arm, fn)
        secs[arm] += secs["sft_small" if arm == "mlr_nosplit" else "mlr_sft"]
    m: dict[str, float] = {k: float(v) for k, v in extra.items()}  # n_pairs_<arm>
    dpo = [a for a in ("mlr", "mlr_outcome", "mlr_random", "mlr_nosplit") if a in systems]
    pairs = [m[f"n_pairs_{a}"] for a in dpo]
    m["pairs_fill_min"] = min(pairs) / bench.n_pairs  # the pair budget each Step-DPO arm used (measured)
    m["pairs_ratio"] = max(pairs) / max(min(pairs), 1.0)
    for a in dpo:  # how far Step-DPO moved each arm from its start, and which round it kept
        start = systems["sft_small" if a == "mlr_nosplit" else "mlr_sft"]
        m[f"shift_{a}"] = bench.logprob_shift(systems[a], start)
        m[f"kept_{a}"] = float(systems[a].kept_round)
    m.update({k: getattr(cfg, k) for k in LR_FIELDS})
    m["acc_base_k3"] = bench.accuracy(single_empty(), bench.test[min(cfg.test_horizons)], salt=2)  # untrained control
    short = [k for k in cfg.test_horizons if k <= max(cfg.train_horizons)]
    for arm in ("sft_full", "mlr_sft"):  # the testbed: the executor given the gold plan / a random valid plan
        for plan in ("gold", "random"):
            acc = bench.planned_metrics(systems[arm], plan)
            m[f"acc_{plan}_{arm}"] = float(np.mean([acc[k] for k in short]))
            m.update({f"acc_{plan}_{arm}_k{k}": a for k, a in acc.items()})
            ctx.log(f"seed {seed}: {arm} executor, {plan} plan: " + " ".join(f"K{k} {a:.2f}" for k, a in acc.items()))
    lo, hi = min(cfg.test_horizons), max(cfg.test_horizons)
    for arm in cfg.arms:
        if arm not in systems:
            continue
        acc = bench.test_metrics(systems[arm])
        for k, a in acc.items():
            m[f"acc_{arm}_k{k}"] = a
        m[f"acc_{arm}"] = float(np.mean([acc[k] for k in short]))
        # relative loss of the accuracy above chance (1/p: a random answer) from K = 3 to the longest horizon;
        # an arm at chance at K = 3 has nothing to lose (NaN: a failed seed, so the claim cannot pass on it)
        chance = 1.0 / cfg.p
        m[f"deg_{arm}"] = 1.0 - (acc[hi] - chance) / (acc[lo] - chance) if acc[lo] > chance else float("nan")
        m[f"cpu_s_{arm}"] = secs.get(arm, 0.0)
        ctx.log(f"seed {seed}: {arm:11s} " + " ".join(f"K{k} {a:.2f}" for k, a in acc.items())
                + f" ({secs.get(arm, 0):.0f} s CPU)")  # fmt: skip
    return m
