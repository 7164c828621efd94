"""Iterative (online) Step-DPO with TSMC preferences (paper §3.3, Algorithm; repository `main.py` + DPO scripts).

Each round: roll out the current two-level system on training problems; at a random stage of each trace take the
prefix at one level (the planner's choice of the next descriptor, or the executor's execution of a given descriptor);
sample K candidates there, score them by TSMC weights (`tsmc.step_pairs`) and keep (chosen, rejected) pairs that share
the prefix; then Step-DPO the executor (backbone, adapter off) on the executor pairs and the planner (LoRA, adapter on,
now on the updated backbone) on the planner pairs; the next round regenerates data with the updated policy.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .dpo import step_dpo
from .system import MLRSystem, Traj
from .tsmc import step_pairs


def set_trainable(system: MLRSystem, level: str) -> None:
    """Planner: only the LoRA weights train; executor: only the backbone; without the split: everything."""
    for n, p in system.model.named_parameters():
        p.requires_grad = (not system.split) or (("lora_" in n) == (level == "planner"))


def prefix_groups(trajs: list[Traj], levels, rng: random.Random) -> list[tuple[Traj, str]]:
    """One prefix per finished trajectory: a uniformly drawn stage m and a level drawn from ``levels``."""
    out = []
    for t in trajs:
        if not t.steps:
            continue
        m, lv = rng.randrange(len(t.steps)), rng.choice(list(levels))
        if lv == "planner":
            out.append((Traj(t.prompt, t.steps[:m], stages=m), lv))
        else:
            out.append((Traj(t.prompt, t.steps[:m], pending=t.steps[m][0], stages=m + 1), lv))
    return out


def collect_pairs(system: MLRSystem, prompts: list[str], verifier: Callable[[str, str], bool], n_pairs: int,
                  rng: random.Random) -> tuple[list[dict], dict]:  # fmt: skip
    """Up to ``n_pairs`` step pairs from online rollouts of the current system on batches of ``prompts``."""
    pairs, stats = [], {"prefixes": 0, "batches": 0}
    batch, max_batches = system.cfg.prefix_batch, system.cfg.max_prefix_batches
    while len(pairs) < n_pairs and stats["batches"] < max_batches:
        trajs = system.solve(rng.sample(prompts, min(batch, len(prompts))))
        groups = prefix_groups(trajs, system.cfg.levels, rng)
        pairs += step_pairs(system, groups, verifier, rng)
        stats["prefixes"] += len(groups)
        stats["batches"] += 1
    return pairs[:n_pairs], stats


def train_on_pairs(system: MLRSystem, pairs: list[dict], seed: int = 0) -> dict[str, list[float]]:
    """Step-DPO: the executor on its pairs first, then the planner on the updated backbone."""
    cfg, losses = system.cfg, {}
    for level in ("executor", "planner"):
        ps = [p for p in pairs if p["level"] == level]
        if not ps:
            continue
        set_trainable(system, level)
        lr = cfg.dpo_lr_planner if level == "planner" and system.split else cfg.dpo_lr_executor
        with system.level(level):
            losses[level] = step_dpo(system.model, system.tok, ps, beta=cfg.beta, lr=lr, epochs=cfg.dpo_epochs,
                                     batch_size=cfg.dpo_batch_size, seed=seed)  # fmt: skip
    for p in system.model.parameters():
        p.requires_grad = False
    return losses


def iterative_step_dpo(system: MLRSystem, prompts: list[str], verifier: Callable[[str, str], bool],
                       pairs_per_round: int, seed: int = 0, evaluate: Callable[[], float] | None = None,
                       log: Callable[[str], None] | None = None) -> dict:  # fmt: skip
    """``cfg.rounds`` rounds of online pair collection + Step-DPO. With ``evaluate`` (validation score, higher is
    better) the weights of the best *trained* round are kept: round 0 (the starting system) is scored and reported in
    ``scores[0]`` but never kept, so a trained arm cannot fall back to its start unnoticed. Returns a history
    (``pairs`` per round, ``scores`` with round 0 first, ``losses``, ``kept`` = the round kept, 1-based)."""
    rng = random.Random(seed)
    hist = {"pairs": [], "scores": [], "losses": [], "kept": system.cfg.rounds}
    named = dict(system.model.named_parameters())
    best_state, best = None, -float("inf")
    if evaluate is not None:
        hist["scores"].append(evaluate())  # round 0: reported, not a candidate
    for r in range(system.cfg.rounds):
        pairs, stats = collect_pairs(system, prompts, verifier, pairs_per_round, rng)
        losses = train_on_pairs(system, pairs, seed + r)
        hist["pairs"].append(len(pairs))
        hist["losses"].append(losses)
        if log:
            lv = {k: sum(1 for p in pairs if p["level"] == k) for k in ("planner", "executor")}
            log(f"round {r + 1}: {len(pairs)} pairs {lv} from {stats['prefixes']} prefixes")
        if evaluate is not None:
            s = evaluate()
            hist["scores"].append(s)
            if s > best:
                best, best_state = s, {n: p.detach().clone() for n, p in named.items()}
                hist["kept"] = r + 1
    if best_state is not None:
        for n, v in best_state.items():
            named[n].data.copy_(v)
    return hist
