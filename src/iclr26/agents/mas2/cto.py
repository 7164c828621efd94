"""Collaborative Tree Optimisation (CTO), MAS² §3.3: a tree of the meta-agents' joint choices per training query.

For a query Q the tree G_Q has the root, K Generator children (templates + tools, sampled without replacement), under
each N Implementer children (backbone assignments), then the execution; wherever the Rectifier's trigger fires, the
node branches over B of its candidate edits (the run is *replayed* from the same seed with each edit, so siblings see
the same random numbers up to the branch), up to `max_rectifications` deep. Leaves are finished executions.

- Cost-sensitive reward, conditional on success:  R(τ) = 1[τ solves Q] / C_norm(τ),  C_norm = C(τ) / median_{τ'} C(τ')
  over the query's leaves (dossier: normalise per query so R is O(1)).
- Path credit propagation:  V(v) = (1/|T(v)|) Σ_{τ ∈ T(v)} R(τ), the mean reward of the *leaves* below v.
- Preference data per meta-agent: for siblings v', v'' (same context c, the parent's state) with V(v') > V(v''):
  (c, a_win = action(v'), a_lose = action(v''), ΔV = V(v') − V(v'')).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from iclr26.agents.mas2.world import AgentSystemsWorld, MASSpec, Outcome, Task, Trigger

from .features import GEN_ACTIONS, generator_candidates, implementer_candidates, rectifier_candidates
from .policies import MetaAgents


@dataclass(frozen=True)
class CTOConfig:
    K: int = field(default=4, metadata={"help": "Generator samples per query (paper: not given; dossier best guess 4)"})
    N: int = field(default=3, metadata={"help": "Implementer samples per template (not given; dossier 3)"})
    B: int = field(default=2, metadata={"help": "Rectifier branching at a trigger (not given; dossier 2)"})
    rollouts: int = field(
        default=1, metadata={"help": "executions (leaves) per assignment: variance of V (paper: 1 implied; ours)"}
    )
    cost_norm: str = field(default="median", metadata={"help": "C_norm = C / median leaf cost of the query's tree"})

    def __post_init__(self):
        for name in ("K", "N", "B"):
            if getattr(self, name) < 2:
                raise ValueError(
                    f"CTOConfig.{name} must be ≥ 2 (siblings are needed for preferences), got {getattr(self, name)}"
                )
        if self.rollouts < 1:
            raise ValueError(f"CTOConfig.rollouts must be ≥ 1, got {self.rollouts}")
        if self.cost_norm not in ("median", "mean", "none"):
            raise ValueError(f"CTOConfig.cost_norm must be 'median', 'mean' or 'none', got {self.cost_norm!r}")


@dataclass
class Node:
    """A tree node: the action `role` took in `context` to get here; leaves carry the finished run."""

    role: str | None = None  # "generator" / "implementer" / "rectifier" / "execution"; None at the root
    context: Any = None  # the decision's candidate rows (shared by siblings)
    action: tuple[int, ...] | None = None  # candidate index per factor
    children: list[Node] = field(default_factory=list)
    outcome: Outcome | None = None
    reward: float = 0.0
    value: float = 0.0

    def leaves(self) -> list[Node]:
        return [self] if not self.children else [x for c in self.children for x in c.leaves()]


def cost_sensitive_rewards(leaves: list[Node], cost_norm: str = "median") -> None:
    """R(τ) = 1[success] / C_norm(τ); failed runs get exactly 0 whatever their cost."""
    costs = np.array([leaf.outcome.cost for leaf in leaves])
    scale = {"median": np.median(costs), "mean": np.mean(costs), "none": 1.0}[cost_norm]
    for leaf in leaves:
        leaf.reward = float(leaf.outcome.success) * scale / leaf.outcome.cost


def propagate_values(root: Node) -> list[Node]:
    """V(v) = mean reward of the leaves below v (path credit propagation); returns the leaves."""
    if not root.children:
        root.value = root.reward
        return [root]
    leaves = [leaf for c in root.children for leaf in propagate_values(c)]
    root.value = float(np.mean([leaf.reward for leaf in leaves]))
    return leaves


@dataclass(frozen=True)
class Preference:
    role: str
    context: Any
    win: tuple[int, ...]
    lose: tuple[int, ...]
    dv: float


def sibling_preferences(root: Node) -> list[Preference]:
    """Every ordered sibling pair with V(v') > V(v''): (context, a_win, a_lose, ΔV). Siblings share their context."""
    out: list[Preference] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kids = [c for c in node.children if c.role != "execution"]
        for i, a in enumerate(kids):
            for b in kids[i + 1 :]:
                if a.value != b.value:
                    w, lo = (a, b) if a.value > b.value else (b, a)
                    out.append(Preference(w.role, w.context, w.action, lo.action, w.value - lo.value))
        stack.extend(node.children)
    return out


@lru_cache(maxsize=256)
def _gen_rows(task: Task) -> np.ndarray:
    return generator_candidates(task)


def build_cto_tree(
    task: Task,
    world: AgentSystemsWorld,
    agents: MetaAgents,
    cfg: CTOConfig,
    seed: int,
    rng: np.random.Generator,
    cache: dict | None = None,
) -> Node:
    """The tree G_Q of joint choices for one query, with rewards and values filled in. `cache` keeps the
    Generator's and Implementer's log-probs per context across queries (the policies are fixed while trees grow)."""
    pool = list(world.pool.values())
    cache = {} if cache is None else cache
    root = Node()
    g_rows = _gen_rows(task)
    if ("g", task) not in cache:
        cache["g", task] = agents.generator.decision_logprobs(g_rows)
    for g in agents.generator.sample_distinct(g_rows, cfg.K, rng, cache["g", task]):
        template, tools = GEN_ACTIONS[g[0]]
        gnode = Node("generator", g_rows, g)
        root.children.append(gnode)
        key = ("i", task, template, tools)
        if key not in cache:
            cache[key] = (
                (rows := implementer_candidates(task, template, tools, pool)),
                agents.implementer.decision_logprobs(rows),
            )
        i_rows, i_lp = cache[key]
        for a in agents.implementer.sample_distinct(i_rows, cfg.N, rng, i_lp):
            spec = MASSpec(template, tools, tuple(pool[j].name for j in a))
            inode = Node("implementer", i_rows, a)
            gnode.children.append(inode)
            if cfg.rollouts == 1:
                _expand(inode, task, spec, world, agents, cfg, seed, (), rng)
                continue
            for m in range(cfg.rollouts):  # independent executions: not a decision, so never paired
                run = Node("execution")
                inode.children.append(run)
                _expand(run, task, spec, world, agents, cfg, (seed, m), (), rng)
    leaves = root.leaves()
    cost_sensitive_rewards(leaves, cfg.cost_norm)
    propagate_values(root)
    return root


def _expand(node, task, spec, world, agents, cfg, seed, script, rng) -> None:
    res = world.step_to_trigger(task, spec, seed, script)
    if isinstance(res, Outcome):
        node.outcome = res
        return
    trig: Trigger = res
    rows, valid = rectifier_candidates(trig)
    for a in agents.rectifier.sample_distinct(rows, cfg.B, rng):
        child = Node("rectifier", rows, a)
        node.children.append(child)
        _expand(child, task, spec, world, agents, cfg, seed, script + (valid[a[0]],), rng)


def build_dataset(tasks, world, agents, cfg: CTOConfig, seed: int, quiet: bool = True) -> tuple[list[Preference], dict]:
    """Trees for every training query → sibling preferences of all three meta-agents, and tree statistics."""
    rng = np.random.default_rng(seed)
    prefs, n_leaves, cache = [], 0, {}
    for i, task in enumerate(tqdm(tasks, desc="CTO trees", disable=quiet, leave=False)):
        root = build_cto_tree(task, world, agents, cfg, seed * 1_000_003 + i, rng, cache)
        n_leaves += len(root.leaves())
        prefs.extend(sibling_preferences(root))
    stats = {r: sum(p.role == r for p in prefs) for r in ("generator", "implementer", "rectifier")}
    stats["leaves"] = n_leaves
    return prefs, stats
