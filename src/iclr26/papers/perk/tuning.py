"""The PERK reproduction's data splits, trainers and its one learning-rate rule, run once per config on its own
tuning seed and cached.

Every learning rate (the untrained control's inner lr, which is also PERK's initial inner lr; PERK's outer lr; FT-ICR's
lr) comes from `iclr26.core.tuning.tune_on_grid` (a ×3 grid that grows past any edge pick) on the validation split
of the tuning seed's world (`TUNE_SEED`, not a reported seed), scored by the best validation accuracy of the run (the
quantity early stopping keeps). The values land in ``<cache>/zoo/perk-lrs-<hash>.json`` with every grid score; every
reported seed then trains once with them, early-stopped on its own validation split.

Early stopping (PERK and FT-ICR alike): validation every ``eval_every`` steps, the best state kept, stop after
``patience`` evaluations without improvement but never before ``min_frac`` of the step cap, so that a learner on a
plateau (PERK's meta-training sits at chance for its first 100-150 outer steps) is given the time to leave it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
import time

import numpy as np
import torch

from iclr26.core.locks import cached_json
from iclr26.core.paths import trained_cache_dir
from iclr26.core.seeding import stage_seed
from iclr26.core.tuning import tune_on_grid
from iclr26.latent.perk import FTICR, PERK, FTICRConfig, PERKConfig
from iclr26.latent.perk.world import TASKS, KVWorld

from . import Cfg
from .base import to_example

TUNE_SEED = 100  # world seed of the tuning data; the reproduction's seeds are 0-9
NOT_KEYS = {"seeds", "n_test", "test_segs", "smollm2", "smol_tokens", "smol_steps", "smol_lr"}
STAGES = ("floor", "untrained", "perk", "fticr", "smollm2")


def seed_stage(seed: int, stage: str) -> None:
    """Every stage draws (LoRA's A, dropout, sampling order) from its own seed (VERSION 5). Before, the draws followed
    whatever the base training and the lr tuning had consumed, so a rerun that loaded them from the cache gave the
    untrained control another LoRA initialisation; and each candidate lr of a grid now starts from the same draws."""
    torch.manual_seed(stage_seed(seed, stage, STAGES))


@dataclasses.dataclass
class Split:
    world: KVWorld
    val: list  # contexts at the training length, n_val per task
    test: dict  # (task, n_seg) -> contexts
    seed: int

    def sample(self, k: int, train_segs: int):
        """Training batches of ``k`` contexts at the training length, a random stream of this seed."""

        def draw(step):
            r = random.Random(hash((self.seed, step, 7)) & 0xFFFFFFFF)
            return [to_example(self.world.sample(r.choice(TASKS), train_segs, r)) for _ in range(k)]

        return draw


def split(cfg: Cfg, seed: int, test: bool = True) -> Split:
    w = KVWorld(cfg.sents_per_seg, cfg.n_keys, cfg.n_keys)
    rng_val, rng_test = random.Random(10_000 + seed), random.Random(20_000 + seed)
    val = [w.sample(t, cfg.train_segs, rng_val) for t in TASKS for _ in range(cfg.n_val)]
    tst = {(t, L): [w.sample(t, L, rng_test) for _ in range(cfg.n_test)] for L in cfg.test_segs for t in TASKS}
    return Split(w, val, tst if test else {}, seed)


def perk_correct(perk: PERK, c, encode: bool = True, adapter: bool = True) -> list[bool]:
    phi = perk.encode(list(c.segments)) if encode else None
    return perk.exact_match(list(c.questions), list(c.answers), phi, adapter=adapter)


def acc(fn, contexts) -> float:
    return float(np.mean([x for c in contexts for x in fn(c)]))


def perk_config(cfg: Cfg, w: KVWorld, **kw) -> PERKConfig:
    return PERKConfig(seg_len=w.seg_tokens + 1, lora_rank=cfg.lora_rank, inner_steps=cfg.inner_steps,
                      unroll_last=cfg.unroll_last, **kw)  # fmt: skip


def untrained(base, tok, cfg: Cfg, w: KVWorld, inner_lr: float) -> PERK:
    """PERK's inner loop from peft's initialisation (B = 0), no meta-training: the control."""
    return PERK(copy.deepcopy(base), tok, perk_config(cfg, w, inner_lr=inner_lr))


def train_perk(base, tok, cfg: Cfg, sp: Split, inner_lr: float, outer_lr: float, ctx) -> tuple[PERK, dict]:
    p = PERK(copy.deepcopy(base), tok, perk_config(cfg, sp.world, inner_lr=inner_lr, outer_lr=outer_lr))
    h = p.meta_train(sp.sample(cfg.meta_batch, cfg.train_segs), cfg.meta_steps,
                     lambda: acc(lambda c: perk_correct(p, c), sp.val), eval_every=cfg.eval_every,
                     patience=cfg.patience, progress=not getattr(ctx, "quiet", True),
                     min_steps=int(cfg.min_frac * cfg.meta_steps))  # fmt: skip
    return p, h


def train_fticr(base, tok, cfg: Cfg, sp: Split, lr: float, ctx) -> tuple[FTICR, dict]:
    f = FTICR(copy.deepcopy(base), tok, FTICRConfig(lr=lr))
    h = f.train(sp.sample(cfg.icr_batch, cfg.train_segs), cfg.icr_steps,
                lambda: acc(lambda c: f.exact_match(to_example(c)), sp.val), eval_every=cfg.eval_every,
                patience=cfg.patience, progress=not getattr(ctx, "quiet", True),
                min_steps=int(cfg.min_frac * cfg.icr_steps))  # fmt: skip
    return f, h


def cache_path(cfg: Cfg, base_key: str):
    """The cache file of ``cfg``'s tuned lrs: keyed by the base and everything that shapes training (not the seeds,
    the test set or SmolLM2)."""
    keyed = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_KEYS}
    spec = json.dumps([base_key, TUNE_SEED, keyed, "stage-seeded"], sort_keys=True, default=str)  # VERSION 5
    return trained_cache_dir() / "zoo" / f"perk-lrs-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"


def tuned_lrs(cfg: Cfg, base, tok, base_key: str, ctx) -> dict:
    """inner_lr, outer_lr and icr_lr of ``cfg`` on the tuning seed (computed once, then read from the cache)."""

    def compute():
        t0, out, sp = time.time(), {}, split(cfg, TUNE_SEED, test=False)

        def report(name, g, steps=None):
            out[name], out[f"{name}_at_edge"] = g.best, g.at_edge
            out[f"{name}_scores"] = {f"{k:g}": v for k, v in sorted(g.scores.items())}
            if steps is not None:
                out[f"{name}_best_step"] = steps
            scores = ", ".join(f"{k:g}: {v:.3f}" for k, v in sorted(g.scores.items()))
            ctx.log(f"tuning {name}: {g.best:g} (validation {scores}" + (f"; best step {steps})" if steps else ")"))

        def inner(lr):
            seed_stage(TUNE_SEED, "untrained")
            return acc(lambda c: perk_correct(untrained(base, tok, cfg, sp.world, lr), c), sp.val), None

        g = tune_on_grid(inner, cfg.inner_lr_grid, max_extensions=cfg.max_extensions)
        report("inner_lr", g)

        def meta(lr):
            seed_stage(TUNE_SEED, "perk")
            h = train_perk(base, tok, cfg, sp, g.best, lr, ctx)[1]
            return max(h["val"]), h["best_step"]

        gp = tune_on_grid(meta, cfg.outer_lr_grid, max_extensions=cfg.max_extensions)
        report("outer_lr", gp, gp.payload)

        def icr(lr):
            seed_stage(TUNE_SEED, "fticr")
            h = train_fticr(base, tok, cfg, sp, lr, ctx)[1]
            return max(h["val"]), h["best_step"]

        gi = tune_on_grid(icr, cfg.icr_lr_grid, max_extensions=cfg.max_extensions)
        report("icr_lr", gi, gi.payload)
        out["seconds"] = time.time() - t0
        return out

    return cached_json(cache_path(cfg, base_key), "the PERK learning-rate tuning", compute,
                       quiet=getattr(ctx, "quiet", True))  # fmt: skip
