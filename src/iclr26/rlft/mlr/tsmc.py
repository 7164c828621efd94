"""Step-level preferences from Twisted Sequential Monte Carlo weights (paper §3.3; repository
`utils.obtain_TSMC_rewards`).

Target: traces drawn in proportion to pi(trace) * 1[answer correct]. The optimal twist psi(h) is the probability that
a continuation of prefix h ends correct, estimated by N Monte-Carlo rollouts of the current two-level system:

    psi(h) = (1/N) sum_n 1[rollout_n from h is correct]

A candidate step c at prefix h (K candidates per prefix, all at the same level) gets the incremental log-weight

    r(c) = log( psi(h + c) / p(c | h) + eps ) - log( psi(h) / p_prev + eps ),   clipped to [-5, 5]      (TSMC)

where p are length-normalised likelihoods in the repository's variant (``likelihood_terms=True``); with the proposal
equal to the target they cancel and r = log(psi(h + c) + eps) - log(psi(h) + eps) (standard TSMC, the default).
Within a group (same prefix) chosen = argmax r, rejected = argmin r, ties broken uniformly at random; groups whose
spread is below ``pair_gap`` give no pair (e.g. psi = 0 for every candidate).

With the default ``likelihood_terms=False``, psi(h) is shared by every candidate of a group and cancels from the
ranking: a "TSMC" pair is then the candidates ranked by their N-rollout success rate psi(h + c) (a step-level Monte-
Carlo value), and psi(h) matters only through the clip (when psi(h) ~ 0 every candidate with psi(h + c) >= ~0.15
sits at +clip: a tie) and the ``pair_gap`` filter. The 'outcome' rule ranks by one rollout's 0/1 outcome, so
'tsmc' vs 'outcome' compares N rollouts per candidate with one. Rollouts are the repository's fast rollouts: the
backbone continues the raw text to the end in one pass (for a planner candidate it first writes the step, then the
rest).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from .dpo import completion_logps
from .system import MLRSystem, Traj


def tsmc_log_weight(psi_before: float, psi_after: float, p_before: float = 1.0, p_after: float = 1.0,
                    eps: float = 1e-3, clip: float = 5.0) -> float:  # fmt: skip
    """r = log(psi_after / p_after + eps) - log(psi_before / p_before + eps), clipped (repo)."""
    if not (0 <= psi_before <= 1 and 0 <= psi_after <= 1):
        raise ValueError(f"twists are probabilities in [0, 1], got {psi_before!r}, {psi_after!r}")
    r = math.log(psi_after / p_after + eps) - math.log(psi_before / p_before + eps)
    return max(-clip, min(clip, r))


def mc_twist(system: MLRSystem, states: list[Traj], n: int, verifier: Callable[[str, str], bool]) -> list[float]:
    """psi(h) for each state: the share of ``n`` fast rollouts from it (`MLRSystem.complete`, one batched pass) whose
    text ``verifier(prompt, text)`` accepts; a finished state is scored as it is."""
    runs = [s for s in states for _ in range(n)]
    live = [i for i, s in enumerate(runs) if not s.done]
    texts = [system.executor_view(s) for s in runs]
    for i, t in zip(live, system.complete([system.rollout_prefix(runs[i]) for i in live]), strict=True):
        texts[i] = t
    ok = [float(verifier(s.prompt, t)) for s, t in zip(runs, texts, strict=True)]
    return [sum(ok[i * n : (i + 1) * n]) / n for i in range(len(states))]


def _after(state: Traj, level: str, cand: str, final: str) -> Traj:
    t = state.copy()
    if level == "planner":
        t.pending, t.stages = cand, t.stages + 1
    else:
        t.steps.append((t.pending, cand))
        t.done, t.pending = t.pending == final, None
    return t


def _likelihoods(system: MLRSystem, state: Traj, level: str, cands: list[str]) -> tuple[list[float], float]:
    """p(c | h) = exp(mean token log-prob) of each candidate under its level, and p of the preceding step at the
    other level (1 at the first step), as the repository's helper computes them."""
    f = system.fmt
    marker = f.exec_open if level == "planner" else f.step_close
    prefix = system.plan_prefix(state) if level == "planner" else system.exec_prefix(state)
    with system.level(level):
        lp = completion_logps(system.model, system.tok, [prefix] * len(cands), [f"{c} {marker}" for c in cands], True)
    p_after = [math.exp(x) for x in lp.tolist()]
    if level == "executor":  # the preceding step is this descriptor
        with system.planner():
            prev = completion_logps(
                system.model, system.tok, [system.plan_prefix(state)], [f"{state.pending} {f.exec_open}"], True
            )
        return p_after, math.exp(float(prev[0]))
    if not state.steps:
        return p_after, 1.0
    last = Traj(state.prompt, state.steps[:-1])
    d, c = state.steps[-1]
    with system.executor():
        prev = completion_logps(system.model, system.tok, [system.exec_prefix(last, d)], [f"{c} {f.step_close}"], True)
    return p_after, math.exp(float(prev[0]))


def step_pairs(system: MLRSystem, groups: list[tuple[Traj, str]], verifier: Callable[[str, str], bool],
               rng: random.Random) -> list[dict]:  # fmt: skip
    """Preference pairs {prompt, chosen, rejected, level, r_chosen, r_rejected} from prefix states.

    ``groups`` holds (state, level): a planner state has no pending descriptor, an executor state has one. The rule
    is ``system.cfg.pair_rule``: 'tsmc' (the paper), 'outcome' (one rollout per candidate, r = its 0/1 outcome: the
    "no TSMC weights" ablation), 'random' (chosen/rejected drawn at random: the control)."""
    cfg, f = system.cfg, system.fmt
    built = []
    for state, level in groups:
        if (level == "planner") != (state.pending is None) or state.done:
            raise ValueError(f"a {level} prefix must {'not ' if level == 'planner' else ''}hold a pending descriptor")
        prefix = system.plan_prefix(state) if level == "planner" else system.exec_prefix(state)
        cands = system.sample(level, [prefix] * cfg.k_candidates, temperature=cfg.candidate_temperature)
        cands = list(dict.fromkeys(c for c in cands if c))  # distinct, non-empty
        if len(cands) >= 2:
            built.append((state, level, prefix, cands))
    if cfg.pair_rule == "random":
        scores = [[rng.random() for _ in c] for *_, c in built]
    else:
        n = cfg.n_rollouts if cfg.pair_rule == "tsmc" else 1
        after = [_after(s, lv, c, f.final) for s, lv, _, cs in built for c in cs]
        psi_a = mc_twist(system, after, n, verifier)
        psi_b = mc_twist(system, [s for s, *_ in built], n, verifier) if cfg.pair_rule == "tsmc" else [0.0] * len(built)
        scores, k = [], 0
        for (s, lv, _, cs), pb in zip(built, psi_b, strict=True):
            pa = psi_a[k : k + len(cs)]
            k += len(cs)
            if cfg.pair_rule == "outcome":
                scores.append(pa)
                continue
            p_after, p_before = _likelihoods(system, s, lv, cs) if cfg.likelihood_terms else ([1.0] * len(cs), 1.0)
            scores.append(
                [tsmc_log_weight(pb, a, p_before, q, cfg.eps, cfg.clip) for a, q in zip(pa, p_after, strict=True)]
            )
    pairs = []
    marker = {"planner": f.exec_open, "executor": f.step_close}
    for (_, lv, prefix, cs), r in zip(built, scores, strict=True):
        # ties (several candidates at the +clip bound when psi(h) ~ 0, or equal MC estimates) are broken uniformly at
        # random with ``rng``, never by the order in which the candidates were sampled
        w = rng.choice([i for i, x in enumerate(r) if x == max(r)])
        lo = rng.choice([i for i, x in enumerate(r) if x == min(r)])
        if r[w] - r[lo] <= (cfg.pair_gap if cfg.pair_rule != "random" else 0.0):
            continue
        pairs.append({"prompt": prefix, "chosen": f"{cs[w]} {marker[lv]}", "rejected": f"{cs[lo]} {marker[lv]}",
                      "level": lv, "r_chosen": r[w], "r_rejected": r[lo]})  # fmt: skip
    return pairs
