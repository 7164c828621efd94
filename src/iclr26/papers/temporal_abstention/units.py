"""Each seed's CoT-SFT policy and each of its GRPO arms as a cached unit (`core.units`).

The GRPO arms are most of a seed's time (three arms of a fixed number of steps). A unit depends only on its seed,
the config fields of its stage, the (pre-declared) learning rates, the base policy and the code, so
it is built once and saved to ``trained_cache_dir()/abstention``: an interrupted run resumes arm by arm, and a worker
that has finished its own seed trains the SFT policy and the arms of a seed still waiting for a worker (`prepare`),
so that the last seed does not run alone. Every stage starts from its own seed (TRL's trainers call ``set_seed``), so a
unit built in another process is the same tensor for tensor (tested through the metrics: one job vs two).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import torch

from iclr26.core.units import cached_unit, code_digest, unit_path
from iclr26.rlft.abstention import AbstentionReward, em_only_reward
from iclr26.rlft.abstention.world import make_temporal_qa, short_rationale

from . import Cfg
from .policy import start_policy
from .stages import NATURAL, clone, cot_sft, grpo

ARMS = ("grpo", "emonly", "u80")  # abstention reward at 25 %, EM-only reward (control), abstention reward at 80 %
_SFT_FIELDS = ("d_model", "n_layers", "base_steps", "base_items", "base_unanswerable", "n_sft", "sft_unanswerable",
               "sft_max_epochs", "sft_full_loss", "short_rationales", "n_val", "max_new_tokens")  # fmt: skip
_ARM_FIELDS = (*_SFT_FIELDS, "n_rl", "rl_unanswerable", "collapse_unanswerable", "grpo_steps", "grpo_batch",
               "num_generations", "beta")  # fmt: skip


def sft_items(cfg: Cfg, items) -> list:
    """The SFT targets: the world's rationales, cut to the matching tenure when ``cfg.short_rationales``."""
    if not cfg.short_rationales:
        return list(items)
    return [{"prompt": it.prompt, "rationale": short_rationale(it.rationale)} for it in items]


@functools.lru_cache(maxsize=4)
def seed_data(cfg: Cfg, seed: int) -> dict:
    """The seed's training and validation sets (world seeds 1000 * seed + 2..5; the test set is drawn by the run).
    Every arm and the SFT stage are judged on the same natural-ratio validation / test questions (VERSION 6)."""
    s = 1000 * seed
    return {
        "val": make_temporal_qa(cfg.n_val, unanswerable_frac=NATURAL, seed=s + 2),
        "sft": sft_items(cfg, make_temporal_qa(cfg.n_sft, unanswerable_frac=cfg.sft_unanswerable, seed=s + 3)),
        "rl": make_temporal_qa(cfg.n_rl, unanswerable_frac=cfg.rl_unanswerable, seed=s + 4),
        "u80": make_temporal_qa(cfg.n_rl, unanswerable_frac=cfg.collapse_unanswerable, seed=s + 5),
    }


def arm_setup(cfg: Cfg, seed: int, arm: str):
    """(training prompts, reward) of an arm."""
    d = seed_data(cfg, seed)
    return {"grpo": (d["rl"], AbstentionReward()), "emonly": (d["rl"], em_only_reward()),
            "u80": (d["u80"], AbstentionReward())}[arm]  # fmt: skip


@functools.lru_cache(maxsize=1)
def _code() -> str:
    import iclr26.rlft.abstention as rl
    import iclr26.rlft.abstention.world as world

    here = Path(__file__).parent
    files = [*sorted(Path(rl.__file__).parent.glob("*.py")), Path(world.__file__)]
    return code_digest([*files, here / "stages.py", here / "policy.py", Path(__file__)])


def _spec(cfg: Cfg, seed: int, fields, lrs: dict) -> dict:
    return {"seed": seed, "code": _code(), "sft_lr": lrs["sft_lr"], "grpo_lr": lrs["grpo_lr"],
            **{k: getattr(cfg, k) for k in fields}}  # fmt: skip


def sft_path(cfg: Cfg, seed: int, lrs: dict) -> Path:
    return unit_path("abstention", f"s{seed}-sft", _spec(cfg, seed, _SFT_FIELDS, lrs))


def arm_path(cfg: Cfg, seed: int, arm: str, lrs: dict) -> Path:
    return unit_path("abstention", f"s{seed}-{arm}", {**_spec(cfg, seed, _ARM_FIELDS, lrs), "arm": arm})


def policy(base, state: dict):
    """A policy of the base's shape with the given weights."""
    model = clone(base)
    model.load_state_dict(state)
    return model.eval()


def sft_unit(cfg: Cfg, seed: int, base, tok, lrs: dict, wait: bool = True, log=None) -> dict | None:
    """The seed's CoT-SFT policy: {"state", "epochs", "seconds"} (epochs chosen by validation EM)."""

    def build():
        t0, d = time.time(), seed_data(cfg, seed)
        start = start_policy(cfg, tok, base, seed)
        model, epochs, curve = cot_sft(start, tok, d["sft"], d["val"], cfg, seed, None, lr=lrs["sft_lr"])
        return {"state": model.state_dict(), "epochs": epochs, "val_em_curve": curve, "seconds": time.time() - t0}

    return cached_unit(sft_path(cfg, seed, lrs), build, f"the CoT-SFT policy of seed {seed}", wait=wait, log=log)


def arm_unit(cfg: Cfg, seed: int, arm: str, base, tok, lrs: dict, wait: bool = True, log=None) -> dict | None:
    """One GRPO arm from the seed's SFT policy, a fixed number of steps, final weights: {"state", "reward_first",
    "reward_last", "steps", "seconds"}."""

    def build():
        sft = policy(base, sft_unit(cfg, seed, base, tok, lrs, log=log)["state"])
        items, reward = arm_setup(cfg, seed, arm)
        t0 = time.time()
        torch.manual_seed(seed)
        model, first, last, info = grpo(sft, tok, items, reward, cfg, seed, None, lr=lrs["grpo_lr"])
        return {"state": model.state_dict(), "reward_first": first, "reward_last": last, **info,
                "seconds": time.time() - t0}  # fmt: skip

    return cached_unit(arm_path(cfg, seed, arm, lrs), build, f"GRPO arm {arm} of seed {seed}", wait=wait, log=log)


def arm_units(cfg: Cfg, seed: int, base, tok, lrs: dict, log=None) -> dict[str, dict]:
    """This seed's arm units: first those no other process is training, then the rest (waiting for them)."""
    out = {}
    for arm in ARMS:
        if (u := arm_unit(cfg, seed, arm, base, tok, lrs, wait=False, log=log)) is not None:
            out[arm] = u
    return {arm: out[arm] if arm in out else arm_unit(cfg, seed, arm, base, tok, lrs, log=log) for arm in ARMS}


def prepare(cfg: Cfg, seed: int, seeds: tuple[int, ...], base, tok, lrs: dict, log=None) -> None:
    """Train the SFT policies and arms of the seeds after ``seed`` in ``seeds`` that nobody trains yet (work for a
    worker that would otherwise idle at the end of the run); an arm another process holds is skipped, an SFT policy
    is waited for (the arms need it)."""
    for later in seeds[seeds.index(seed) + 1 :] if seed in seeds else ():
        if all(arm_path(cfg, later, a, lrs).exists() for a in ARMS):
            continue
        sft_unit(cfg, later, base, tok, lrs, log=log)
        for arm in ARMS:
            if not arm_path(cfg, later, arm, lrs).exists():
                arm_unit(cfg, later, arm, base, tok, lrs, wait=False, log=log)
