"""MAS² inference (generate → implement → execute with rectification) and CTO training with early stopping.

Inference, as in the paper:  M_temp = Generator(Q); M = Implementer(Q, M_temp); run M; whenever the trigger
A_R(s_t) = 1[C(s_t) > θ_C or O(s_t) = Failure] fires, M ← Rectifier(M, s_t) (at most `max_rectifications` times).
Decisions are greedy (argmax of each meta-policy) at test time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from iclr26.agents.mas2.world import ROLES, AgentSystemsWorld, MASSpec, Outcome, Task, Trigger

from .cto import CTOConfig, build_dataset
from .dpo import DPOConfig, DPOTrainerLite, PreferenceSet
from .features import GEN_ACTIONS, generator_candidates, implementer_candidates, rectifier_candidates
from .policies import MetaAgents

ROLES3 = ("generator", "implementer", "rectifier")


def retry_rule(trigger: Trigger) -> str:
    """The one-line rectifier every baseline may use: retry a failed tool call, ignore a budget overrun."""
    return "retry" if trigger.reason == "failure" else "ignore"


class MAS2:
    """A trained meta-MAS: `solve(task, seed)` builds, runs and repairs a target MAS in `world`.

    `rule` (a callable Trigger -> edit, e.g. `retry_rule`) replaces the trained Rectifier (a control)."""

    def __init__(self, agents: MetaAgents, world: AgentSystemsWorld, rectify: bool = True, rule=None):
        self.agents, self.world, self.rectify, self.rule = agents, world, rectify or rule is not None, rule
        self._plans: dict[Task, MASSpec] = {}

    def plan(self, task: Task) -> MASSpec:
        if task not in self._plans:
            pool = list(self.world.pool.values())
            template, tools = GEN_ACTIONS[self.agents.generator.greedy(generator_candidates(task))[0]]
            a = self.agents.implementer.greedy(implementer_candidates(task, template, tools, pool))
            self._plans[task] = MASSpec(template, tools, tuple(pool[i].name for i in a))
        return self._plans[task]

    def rectifier(self, trig: Trigger) -> str:
        if self.rule is not None:
            return self.rule(trig)
        rows, valid = rectifier_candidates(trig)
        return valid[self.agents.rectifier.greedy(rows)[0]]

    def solve(self, task: Task, seed) -> Outcome:
        return self.world.execute(task, self.plan(task), seed, rectifier=self.rectifier if self.rectify else None)


class RandomMAS(MAS2):
    """Uniformly random meta-agents (the random meta-policy baseline): random plan, random valid edits."""

    def __init__(self, world: AgentSystemsWorld, seed: int, rectify: bool = True):
        super().__init__(None, world, rectify)
        self.rng = np.random.default_rng(seed)

    def plan(self, task: Task) -> MASSpec:
        template, tools = GEN_ACTIONS[self.rng.integers(len(GEN_ACTIONS))]
        names = list(self.world.pool)
        return MASSpec(template, tools, tuple(names[self.rng.integers(len(names))] for _ in ROLES[template]))

    def rectifier(self, trig: Trigger) -> str:
        _, valid = rectifier_candidates(trig)
        return valid[self.rng.integers(len(valid))]


class FixedMAS(MAS2):
    """A hand-designed or searched MAS (baselines): the same spec for every task, or one per task; no Rectifier
    unless a `rule` is given (e.g. `retry_rule`)."""

    def __init__(self, world: AgentSystemsWorld, spec: MASSpec | dict[Task, MASSpec], rule=None):
        super().__init__(None, world, rectify=False, rule=rule)
        self.spec = spec

    def plan(self, task: Task) -> MASSpec:
        return self.spec[task] if isinstance(self.spec, dict) else self.spec


class MixedMAS(MAS2):
    """A mixture of two fixed systems: each run uses `spec_a` with probability `lam` (drawn from the run's seed),
    else `spec_b`; it interpolates the cost–success frontier between them (a baseline at exactly a given cost)."""

    def __init__(self, world: AgentSystemsWorld, spec_a: MASSpec, spec_b: MASSpec, lam: float, rule=None):
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"MixedMAS: lam must be in [0, 1], got {lam!r}")
        super().__init__(None, world, rectify=False, rule=rule)
        self.spec_a, self.spec_b, self.lam = spec_a, spec_b, lam

    def solve(self, task: Task, seed) -> Outcome:
        key = seed if isinstance(seed, tuple) else (seed,)
        spec = self.spec_a if np.random.default_rng((*key, 7_919)).random() < self.lam else self.spec_b
        return self.world.execute(task, spec, seed, rectifier=self.rectifier if self.rectify else None)


def evaluate(system: MAS2, tasks: list[Task], seed: int) -> dict[str, float]:
    """Success rate, mean cost and utility U = mean 1[success]·c_ref(Q)/C over `tasks` (one run each)."""
    w = system.world
    outs = [system.solve(t, (seed, i)) for i, t in enumerate(tasks)]
    succ = np.array([o.success for o in outs], dtype=float)
    cost = np.array([o.cost for o in outs])
    ref = np.array([w.reference_cost(t) for t in tasks])
    return {
        "success": float(succ.mean()),
        "cost": float(cost.mean()),
        "utility": float(np.mean(succ * ref / cost)),
        "rect_rate": float(np.mean([o.n_rect > 0 for o in outs])),
    }


def backbone_share(system: MAS2, tasks: list[Task], name: str, kind: int | None = None) -> float:
    """Fraction of the Implementer's role assignments that pick backbone `name` (on tasks of type `kind`)."""
    picks = [b for t in tasks if kind is None or t.kind == kind for b in system.plan(t).backbones]
    return float(np.mean([b == name for b in picks])) if picks else float("nan")


def backbone_prob(system: MAS2, tasks: list[Task], name: str, kind: int | None = None) -> float:
    """Mean Implementer probability of backbone `name`, over the roles of the greedy templates (on tasks of `kind`).

    A continuous companion of `backbone_share`: a share of 0 on every seed says nothing about how close the policy
    was to picking the backbone; the probability mass does.
    """
    pool = list(system.world.pool.values())
    j = [b.name for b in pool].index(name)
    probs = []
    for t in tasks:
        if kind is not None and t.kind != kind:
            continue
        spec = system.plan(t)
        lp = system.agents.implementer.decision_logprobs(implementer_candidates(t, spec.template, spec.tools, pool))
        probs.extend(np.exp(lp[:, j]).tolist())
    return float(np.mean(probs)) if probs else float("nan")


@dataclass(frozen=True)
class MAS2Config:
    cto: CTOConfig = field(default_factory=CTOConfig)
    dpo: DPOConfig = field(default_factory=DPOConfig)
    max_epochs: int = field(default=20, metadata={"help": "epochs cap (dossier: 5; we early-stop on validation)"})
    patience: int = field(
        default=3, metadata={"help": "stop after this many epochs without a lower held-out L_CTO (convergence; ours)"}
    )
    rel_tol: float = field(
        default=0.01, metadata={"help": "a held-out L_CTO counts as lower if it drops by this fraction (ours)"}
    )
    hidden: int = field(default=128, metadata={"help": "MLP width of each meta-policy (ours; paper: Qwen3-8B+LoRA)"})

    def __post_init__(self):
        if self.max_epochs < 1 or self.patience < 1 or self.hidden < 1:
            raise ValueError(f"MAS2Config: max_epochs, patience, hidden must be ≥ 1; got {self}")


def train_cto(
    train_tasks: list[Task],
    val_tasks: list[Task],
    world: AgentSystemsWorld,
    cfg: MAS2Config,
    seed: int,
    prefs=None,
    val_prefs=None,
    quiet: bool = True,
) -> tuple[MetaAgents, dict]:
    """CTO: trees on `train_tasks` from the initial (uniform) meta-agents, then value-scaled DPO for each meta-agent.

    Training runs until the held-out L_CTO (pairs from trees on `val_tasks`) has not improved for `patience` epochs
    (convergence); the checkpoint kept is the one with the best validation utility. `prefs` / `val_prefs` reuse
    trees already built from the same initial agents."""
    init = MetaAgents.init(seed, cfg.hidden)
    stats = {}
    if prefs is None:
        prefs, stats = build_dataset(train_tasks, world, init, cfg.cto, seed, quiet)
    if val_prefs is None:
        val_prefs, _ = build_dataset(val_tasks, world, init, cfg.cto, seed + 10_007, quiet)
    agents = init.copy()
    trainers, held_out = {}, {}
    for i, role in enumerate(ROLES3):
        mine, theirs = [p for p in prefs if p.role == role], [p for p in val_prefs if p.role == role]
        if mine and theirs:
            ref = init.role(role).frozen_copy()
            trainers[role] = DPOTrainerLite(
                agents.role(role), PreferenceSet(mine, ref, cfg.dpo.value_scaled), cfg.dpo, seed * 7 + i
            )
            held_out[role] = PreferenceSet(theirs, ref, cfg.dpo.value_scaled)

    def val_loss() -> float:
        with torch.no_grad():
            return sum(float(d.loss(agents.role(r), torch.arange(len(d)), cfg.dpo.beta)) for r, d in held_out.items())

    best, best_u = agents.copy(), evaluate(MAS2(agents, world), val_tasks, seed)["utility"]
    best_epoch, best_loss, since, curve, losses = 0, val_loss(), 0, [], []
    for ep in tqdm(range(1, cfg.max_epochs + 1), desc="value-scaled DPO", disable=quiet, leave=False):
        for tr in trainers.values():
            tr.epoch()
        u, loss = evaluate(MAS2(agents, world), val_tasks, seed)["utility"], val_loss()
        curve.append(u)
        losses.append(loss)
        if u > best_u:
            best, best_u, best_epoch = agents.copy(), u, ep
        if loss < best_loss * (1.0 - cfg.rel_tol):
            best_loss, since = loss, 0
        else:
            since += 1
            if since >= cfg.patience:
                break
    return best, {
        **stats,
        "val_utility": best_u,
        "best_epoch": best_epoch,
        "curve": curve,
        "val_loss": losses,
        "prefs": prefs,
    }
