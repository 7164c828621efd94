"""A symbolic agent-system world for MAS² (arXiv:2509.24323): tasks, a backbone pool, MAS templates, tool failures.

No LLM is run. A *task* has a type (arith / lookup / code) and a difficulty d ∈ {1..5}. A *backbone* (a simulated
LLM) has a skill per task type and a cost per call; one call on an effective difficulty d' succeeds with probability

    p = σ(k · (s_b(type) − d'/6)),

the dossier's model. A target MAS (`MASSpec`) is a template (roles and protocol), a tool flag and a backbone per role.
Tools lower the effective difficulty of solver/debater calls (calculator, search, interpreter) but each tool call
fails with probability `tool_fail`, which makes that call's answer wrong and reports a failure. A cumulative cost over
the task's budget θ_C also reports. A *rectifier* (any callable) sees each report and may edit the running MAS
(retry the call, upgrade the role's backbone, drop the tools, downgrade to the cheapest backbone, stop), at most
`max_rectifications` times: the trigger A_R(s_t) = 1[C(s_t) > θ_C or O(s_t) = Failure] of the paper.

Ground truth: `exact_success_cost` gives the exact success probability and expected cost of a spec executed without a
rectifier (closed forms per template); `execute` simulates one run, deterministically from its seed, and can *replay*
a run with a scripted prefix of rectifier actions and pause at the next trigger (how the CTO tree branches and how the
gymnasium-style `env.MASEnv` steps). Everything here is numpy and the standard library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product

import numpy as np

TYPES = ("arith", "lookup", "code")
DIFFICULTIES = (1, 2, 3, 4, 5)
TEMPLATES = ("single", "sc3", "sc5", "verify", "debate", "plan")
ROLES = {
    "single": ("solver",),
    "sc3": ("solver",),
    "sc5": ("solver",),
    "verify": ("solver", "verifier"),
    "debate": ("debater",),
    "plan": ("planner", "solver", "verifier"),
}
ROLE_KINDS = ("solver", "verifier", "planner", "debater")
# Rectifier edits; which are valid depends on the trigger (a failed tool call or a budget overrun).
ACTIONS = ("ignore", "retry", "upgrade", "drop_tools", "downgrade", "stop")
VALID = {
    "failure": ("ignore", "retry", "upgrade", "drop_tools", "stop"),
    "budget": ("ignore", "downgrade", "stop"),
}


@dataclass(frozen=True)
class Backbone:
    """A simulated LLM: skill per task type (arith, lookup, code) and cost per call."""

    name: str
    skill: tuple[float, float, float]
    cost: float

    def __post_init__(self):
        if len(self.skill) != len(TYPES) or not all(0.0 <= s <= 1.0 for s in self.skill):
            raise ValueError(f"Backbone {self.name!r}: skill must be {len(TYPES)} values in [0, 1], got {self.skill}")
        if self.cost <= 0:
            raise ValueError(f"Backbone {self.name!r}: cost must be > 0, got {self.cost}")


# The dossier's pool (skill, cost) = (0.50, 1), (0.65, 2), (0.80, 5), (0.90, 15), with a per-type spread (our choice)
# so that the skill on the task's type, not the name, is what a feature-based implementer must read.
POOL = (
    Backbone("tiny", (0.50, 0.50, 0.45), 1.0),
    Backbone("small", (0.62, 0.70, 0.60), 2.0),
    Backbone("medium", (0.80, 0.75, 0.82), 5.0),
    Backbone("large", (0.90, 0.90, 0.90), 15.0),
)
# Backbones never seen in training: a cheap code specialist (useful) and an expensive weak model (useless: control).
UNSEEN_USEFUL = Backbone("coder-mini", (0.70, 0.65, 0.97), 3.0)
UNSEEN_USELESS = Backbone("legacy-xl", (0.40, 0.40, 0.40), 20.0)


@dataclass(frozen=True)
class Task:
    kind: int  # index into TYPES
    difficulty: int  # 1..5

    def __post_init__(self):
        if self.kind not in range(len(TYPES)) or self.difficulty not in DIFFICULTIES:
            raise ValueError(
                f"Task: kind in 0..{len(TYPES) - 1}, difficulty in 1..5; got {self.kind}, {self.difficulty}"
            )


@dataclass(frozen=True)
class MASSpec:
    """A target MAS M = <R, P, T, B>: template (roles R and protocol P), tools T on/off, backbones B per role."""

    template: str
    tools: bool
    backbones: tuple[str, ...]

    def __post_init__(self):
        if self.template not in ROLES:
            raise ValueError(f"MASSpec.template must be one of {TEMPLATES}, got {self.template!r}")
        if len(self.backbones) != len(ROLES[self.template]):
            raise ValueError(
                f"MASSpec: template {self.template!r} has roles {ROLES[self.template]}, got {len(self.backbones)} "
                "backbones"
            )


@dataclass(frozen=True)
class WorldConfig:
    k: float = field(
        default=20.0,
        metadata={
            "help": "slope of σ(k(s − d/6)) (dossier: unstated; ours, chosen so that the utility-optimal MAS "
            "depends on the task: with k = 10 one config was optimal on 14 of 15 task classes)"
        },
    )
    tool_fail: float = field(default=0.15, metadata={"help": "tool-call failure probability (dossier: 0.15)"})
    tool_gain: tuple[float, float, float] = field(
        default=(1.5, 1.5, 0.5), metadata={"help": "difficulty levels removed by tools per type (our choice)"}
    )
    verify_gain: tuple[float, float, float] = field(
        default=(1.0, 0.0, 2.0), metadata={"help": "verifier works on d − gain (unit tests help code; our choice)"}
    )
    plan_gain: tuple[float, float, float] = field(
        default=(1.5, 0.5, 1.5), metadata={"help": "a successful plan removes this difficulty (our choice)"}
    )
    max_rectifications: int = field(default=3, metadata={"help": "cap on rectifier calls per run (dossier: 3)"})
    budget_factor: float = field(
        default=3.0, metadata={"help": "θ_C = factor × cost of the cheapest config with success ≥ 0.5 (dossier: 3)"}
    )

    def __post_init__(self):
        if not 0.0 <= self.tool_fail < 1.0:
            raise ValueError(f"WorldConfig.tool_fail must be in [0, 1), got {self.tool_fail}")
        if self.k <= 0 or self.budget_factor <= 0 or self.max_rectifications < 0:
            raise ValueError("WorldConfig: k > 0, budget_factor > 0, max_rectifications ≥ 0 required")


@dataclass(frozen=True)
class Trigger:
    """What the rectifier sees: the execution state s_t at a trigger."""

    task: Task
    spec: MASSpec
    reason: str  # "failure" or "budget"
    role: str
    backbone: Backbone
    tools: bool
    cost: float
    budget: float
    n_rect: int


@dataclass(frozen=True)
class Outcome:
    success: bool
    cost: float
    n_rect: int
    actions: tuple[str, ...]
    backbones_used: tuple[str, ...]


class _Pause(Exception):
    def __init__(self, trigger: Trigger):
        self.trigger = trigger


class AgentSystemsWorld:
    """A pool of backbones and the execution of target MASs on tasks (see the module docstring)."""

    def __init__(self, pool=POOL, cfg: WorldConfig | None = None, budget_pool=None):
        self.pool = {b.name: b for b in pool}
        if len(self.pool) != len(pool):
            raise ValueError("AgentSystemsWorld: backbone names must be unique")
        self.cfg = cfg or WorldConfig()
        # budgets θ_C and reference costs are properties of the task: fixed by the pool the world was made with
        self.budget_pool = tuple(budget_pool or pool)

    def with_pool(self, pool) -> AgentSystemsWorld:
        """The same world (budgets included) with another backbone pool, e.g. unseen backbones added at test time."""
        return AgentSystemsWorld(pool, self.cfg, self.budget_pool)

    def with_config(self, **changes) -> AgentSystemsWorld:
        from dataclasses import replace

        return AgentSystemsWorld(tuple(self.pool.values()), replace(self.cfg, **changes), self.budget_pool)

    # --- ground truth -------------------------------------------------------------------------------------------
    def p_call(self, b: Backbone, task: Task, d_eff: float) -> float:
        return 1.0 / (1.0 + math.exp(-self.cfg.k * (b.skill[task.kind] - d_eff / 6.0)))

    def _p(self, role: str, b: Backbone, task: Task, tools: bool, off: float = 0.0) -> float:
        """Probability that one call of `role` is right given that its tool call (if any) did not fail."""
        c, t = self.cfg, task.kind
        if role == "verifier":
            return self.p_call(b, task, task.difficulty - c.verify_gain[t])
        if role == "planner":
            return self.p_call(b, task, task.difficulty)
        return self.p_call(b, task, task.difficulty - off - (c.tool_gain[t] if tools else 0.0))

    def _q(self, role: str, b: Backbone, task: Task, tools: bool, off: float = 0.0) -> float:
        """Probability that one call of `role` is right, tool failures included (no rectifier)."""
        uses_tools = tools and role in ("solver", "debater")
        return self._p(role, b, task, tools, off) * ((1.0 - self.cfg.tool_fail) if uses_tools else 1.0)

    def exact_success_cost(self, task: Task, spec: MASSpec) -> tuple[float, float]:
        """Exact success probability and expected cost of `spec` on `task`, executed without a rectifier."""
        return _exact(self, task, spec)

    def budget(self, task: Task) -> float:
        """θ_C: budget_factor × the cost of the cheapest {single, sc3, verify} config (no tools) with success ≥ ½."""
        return self.cfg.budget_factor * self.reference_cost(task)

    def reference_cost(self, task: Task) -> float:
        return _reference_cost(self, task)

    def all_specs(self, templates=TEMPLATES) -> list[MASSpec]:
        names = list(self.pool)
        return [
            MASSpec(t, tools, bb)
            for t in templates
            for tools in (False, True)
            for bb in product(names, repeat=len(ROLES[t]))
        ]

    # --- simulation ---------------------------------------------------------------------------------------------
    def execute(self, task: Task, spec: MASSpec, seed, rectifier=None, script=(), pause: bool = False) -> Outcome:
        """One run of `spec` on `task`, deterministic in `seed`.

        At the i-th trigger the rectifier action is `script[i]` if given, else `rectifier(trigger)`; with `pause`,
        a trigger beyond the script raises `_Pause` (caught by `step_to_trigger`). `rectifier=None` and no script:
        triggers are ignored (generate-once execution).
        """
        return _Run(self, task, spec, np.random.default_rng(seed), rectifier, tuple(script), pause).result()

    def step_to_trigger(self, task: Task, spec: MASSpec, seed, script=()) -> Outcome | Trigger:
        """Replay the run with the scripted rectifier actions; return the next trigger, or the outcome if none."""
        try:
            return self.execute(task, spec, seed, script=script, pause=True)
        except _Pause as p:
            return p.trigger


class _Run:
    def __init__(self, world, task, spec, rng, rectifier, script, pause):
        self.w, self.task, self.spec, self.rng = world, task, spec, rng
        self.rectifier, self.script, self.pause = rectifier, script, pause
        self.bb = dict(zip(ROLES[spec.template], spec.backbones))
        self.tools, self.cost, self.n_rect, self.stopped, self.budget_fired = spec.tools, 0.0, 0, False, False
        self.budget = world.budget(task)
        self.actions: list[str] = []
        self.used: list[str] = []
        self.rectify = rectifier is not None or pause or len(script) > 0

    def call(self, role: str, off: float = 0.0) -> bool:
        if self.stopped:
            return False
        w, c, t = self.w, self.w.cfg, self.task.kind
        while True:
            b = w.pool[self.bb[role]]
            self.cost += b.cost
            self.used.append(b.name)
            u_fail, u_ok = self.rng.random(), self.rng.random()
            uses_tools = self.tools and role in ("solver", "debater")
            failed = uses_tools and u_fail < c.tool_fail
            ok = (not failed) and u_ok < w._p(role, b, self.task, uses_tools, off)
            reason = "failure" if failed else ("budget" if self.cost > self.budget and not self.budget_fired else None)
            if reason is None or not self.rectify or self.n_rect >= c.max_rectifications:
                return ok
            self.budget_fired |= reason == "budget"
            trig = Trigger(self.task, self.spec, reason, role, b, self.tools, self.cost, self.budget, self.n_rect)
            if self.n_rect < len(self.script):
                action = self.script[self.n_rect]
            elif self.pause:
                raise _Pause(trig)
            else:
                action = self.rectifier(trig)
            if action not in VALID[reason]:
                raise ValueError(f"rectifier action {action!r} is not valid for a {reason} trigger: {VALID[reason]}")
            self.n_rect += 1
            self.actions.append(action)
            if action == "ignore":
                return ok
            if action == "stop":
                self.stopped = True
                return ok
            if action == "downgrade":
                cheapest = min(w.pool.values(), key=lambda x: x.cost).name
                self.bb = {r: cheapest for r in self.bb}
                return ok
            if action == "upgrade":
                self.bb[role] = max(w.pool.values(), key=lambda x: (x.skill[t], -x.cost)).name
            elif action == "drop_tools":
                self.tools = False
            # retry / upgrade / drop_tools: the call is made again

    def verify(self, ok: bool, off: float) -> bool:
        if ok:
            self.call("verifier")  # passes a right answer (its cost is paid)
            return True
        if self.call("verifier"):  # a wrong answer detected: one re-solve
            return self.call("solver", off)
        return False

    def result(self) -> Outcome:
        t = self.spec.template
        if t == "single":
            ok = self.call("solver")
        elif t in ("sc3", "sc5"):
            n = int(t[2])
            ok = sum(self.call("solver") for _ in range(n)) >= n // 2 + 1
        elif t == "verify":
            ok = self.verify(self.call("solver"), 0.0)
        elif t == "debate":
            r1 = [self.call("debater"), self.call("debater")]
            r2 = [self.call("debater", 1.0 if r1[1 - i] else 0.0) or r1[i] for i in range(2)]
            ok = all(r2) or (any(r2) and self.rng.random() < 0.5)  # disagreement: a judge picks one
        else:  # plan
            off = self.w.cfg.plan_gain[self.task.kind] if self.call("planner") else 0.0
            ok = self.verify(self.call("solver", off), off)
        return Outcome(bool(ok), self.cost, self.n_rect, tuple(self.actions), tuple(self.used))


def _exact(world: AgentSystemsWorld, task: Task, spec: MASSpec) -> tuple[float, float]:
    bb = {r: world.pool[n] for r, n in zip(ROLES[spec.template], spec.backbones)}
    q = lambda role, off=0.0: world._q(role, bb[role], task, spec.tools, off)  # noqa: E731
    cost = {r: b.cost for r, b in bb.items()}
    t = spec.template

    def verify(qs, off):  # P(right), E[cost] of solver answer (right w.p. qs) followed by verification
        qv, qr = q("verifier"), q("solver", off)
        return qs + (1 - qs) * qv * qr, cost["verifier"] + (1 - qs) * qv * cost["solver"]

    if t == "single":
        return q("solver"), cost["solver"]
    if t in ("sc3", "sc5"):
        n, p = int(t[2]), q("solver")
        return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n // 2 + 1, n + 1)), n * cost["solver"]
    if t == "verify":
        s, c = verify(q("solver"), 0.0)
        return s, cost["solver"] + c
    if t == "debate":
        p0, p1 = q("debater"), q("debater", 1.0)
        succ = 0.0
        for a, b in product((0, 1), repeat=2):
            pr = (p0 if a else 1 - p0) * (p0 if b else 1 - p0)
            ra = 1.0 if a else (p1 if b else p0)  # round 2: a wrong agent re-tries, helped if the other was right
            rb = 1.0 if b else (p1 if a else p0)
            succ += pr * (ra * rb + 0.5 * (ra * (1 - rb) + rb * (1 - ra)))
        return succ, 4 * cost["debater"]
    qp, gain = q("planner"), world.cfg.plan_gain[task.kind]
    s1, c1 = verify(q("solver", gain), gain)
    s0, c0 = verify(q("solver"), 0.0)
    return qp * s1 + (1 - qp) * s0, cost["planner"] + cost["solver"] + qp * c1 + (1 - qp) * c0


@lru_cache(maxsize=4096)
def _reference_cost_cached(pool_key, cfg, task) -> float:
    world = AgentSystemsWorld(pool_key, cfg)
    best, fallback = math.inf, (-1.0, math.inf)
    for spec in world.all_specs(("single", "sc3", "verify")):
        if spec.tools or len(set(spec.backbones)) > 1:
            continue
        s, c = world.exact_success_cost(task, spec)
        if s >= 0.5:
            best = min(best, c)
        fallback = max(fallback, (s, -c))
    return best if best < math.inf else -fallback[1]


def _reference_cost(world: AgentSystemsWorld, task: Task) -> float:
    return _reference_cost_cached(world.budget_pool, world.cfg, task)


def sample_tasks(n: int, seed) -> list[Task]:
    """`n` tasks with uniform type and difficulty, deterministic in `seed`."""
    rng = np.random.default_rng(seed)
    kinds, diffs = rng.integers(0, len(TYPES), n), rng.integers(1, 6, n)
    return [Task(int(k), int(d)) for k, d in zip(kinds, diffs)]
