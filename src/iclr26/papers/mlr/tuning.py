"""The one learning-rate rule of the MLR reproduction, run once per config on its own tuning seed and cached.

Every trained stage gets its learning rate from `iclr26.core.tuning.tune_on_grid` (a factor-2 grid that grows
past any edge pick) on the validation split of the tuning seed's world (`TUNE_SEED`, not a reported seed), scored by
the same validation quantity that stops that stage:

1. SFT of the single policy on all traces (`sft_full`): minus the validation NLL;
2. SFT of MLR's backbone on the 10 % traces (`sft_small`, also `mlr_nosplit`'s start): minus the validation NLL;
3. the planner LoRA's SFT on the 10 % traces, on the tuned backbone: minus the planner's validation NLL;
4. MLR's Step-DPO (executor lr; the planner's is `dpo_planner_ratio` times it, the repository's 10:1) from the tuned
   two-level SFT model: the best validation accuracy after a round of training (round 0 excluded, so that a
   learning rate is judged by what its training did);
5. outcome-reward GRPO from the tuned `sft_full`: the best validation accuracy after training started.

The values land in ``<cache>/zoo/mlr-lrs-<hash>.json`` with every grid score; every seed and arm then uses them (the
Step-DPO ablations and control share MLR's lr: one change each).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

from iclr26.core.locks import cached_json
from iclr26.core.paths import trained_cache_dir
from iclr26.core.tuning import tune_on_grid

from . import Cfg

TUNE_SEED = 100  # world seed of the tuning data; the reproduction's seeds are 0-4
LR_FIELDS = ("sft_lr", "small_lr", "planner_lr", "dpo_lr", "grpo_lr")
GRIDS = {k: f"{k}_grid" for k in LR_FIELDS}
NOT_KEYS = {"seeds", "arms", "n_test", "test_horizons", "tune", *LR_FIELDS, "dpo_lr_planner"}


def with_lrs(cfg: Cfg, lrs: dict) -> Cfg:
    """``cfg`` with the tuned learning rates (the planner's Step-DPO lr keeps the repository's ratio)."""
    return dataclasses.replace(
        cfg, **{k: lrs[k] for k in LR_FIELDS}, dpo_lr_planner=cfg.dpo_planner_ratio * lrs["dpo_lr"]
    )


def _set(cfg: Cfg, name: str, lr: float) -> Cfg:
    return with_lrs(cfg, {**{k: getattr(cfg, k) for k in LR_FIELDS}, name: lr})


def cache_path(cfg: Cfg, base_version: int):
    """The cache file of ``cfg``'s tuned lrs: keyed by everything that shapes training (not seeds, arms, test set)."""
    keyed = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_KEYS}
    spec = json.dumps([base_version, TUNE_SEED, keyed], sort_keys=True, default=str)
    return trained_cache_dir() / "zoo" / f"mlr-lrs-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"


def tuned_lrs(cfg: Cfg, ctx, stages=None) -> dict:
    """The tuned learning rates of ``cfg`` (computed once, then read from the cache). ``stages`` (tests) replaces the
    training functions: a dict name -> callable(cfg, prev) -> (score, payload) for each of
    `LR_FIELDS`, where ``prev`` holds the payloads of the earlier stages' chosen values."""
    from . import bench as E

    def compute():
        fns = stages or E.tuning_stages(TUNE_SEED, ctx)
        t0, out, prev, cur = time.time(), {}, {}, cfg
        for name in LR_FIELDS:  # in pipeline order: each stage starts from the earlier stages' tuned models

            def score(lr, name=name, cur=cur):
                return fns[name](_set(cur, name, lr), prev)

            g = tune_on_grid(score, getattr(cfg, GRIDS[name]), max_extensions=cfg.max_extensions)
            prev[name], out[name] = g.payload, g.best
            out[f"{name}_scores"] = {f"{k:g}": v for k, v in sorted(g.scores.items())}
            out[f"{name}_at_edge"] = g.at_edge
            cur = _set(cur, name, g.best)
            ctx.log(f"tuning {name}: {g.best:g} (validation " + ", ".join(f"{k:g}: {v:.3f}" for k, v in
                                                                          sorted(g.scores.items())) + ")")  # fmt: skip
        out["seconds"] = time.time() - t0
        return out

    return cached_json(cache_path(cfg, E.BASE_VERSION), "the MLR learning-rate tuning", compute,
                       quiet=getattr(ctx, "quiet", True))  # fmt: skip
