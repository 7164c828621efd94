"""Feature rows for the three meta-agents: each decision is a set of *candidates*, one row per candidate.

A meta-agent scores a candidate row (its context concatenated with the candidate action's description) and takes a
softmax over the candidates, as an LLM meta-agent scores the text of an action given its prompt. The Implementer's
candidates are backbones described by their features (skill on the task's type, margin over the task's difficulty,
cost), never by an id, so backbones added to the pool at test time are scored without retraining (the paper's
cross-backbone generalisation).
"""

from __future__ import annotations

import math

import numpy as np

from iclr26.agents.mas2.world import ACTIONS, ROLE_KINDS, ROLES, TEMPLATES, TYPES, VALID, Backbone, Task, Trigger

GEN_ACTIONS = tuple((t, tools) for t in TEMPLATES for tools in (False, True))
_COST_SCALE = math.log(16.0)


def task_features(task: Task) -> np.ndarray:
    x = np.zeros(len(TYPES) + 5 + 1, dtype=np.float32)
    x[task.kind] = 1.0
    x[len(TYPES) + task.difficulty - 1] = 1.0
    x[-1] = task.difficulty / 5.0
    return x


def backbone_features(b: Backbone, task: Task) -> np.ndarray:
    s = b.skill[task.kind]
    return np.array(
        [s, s - task.difficulty / 6.0, math.log(b.cost) / _COST_SCALE, float(np.mean(b.skill))], dtype=np.float32
    )


def _onehot(i: int, n: int) -> np.ndarray:
    x = np.zeros(n, dtype=np.float32)
    x[i] = 1.0
    return x


def generator_candidates(task: Task) -> np.ndarray:
    """[12, F]: task ⊕ (template, tools) for every generator action, in GEN_ACTIONS order."""
    t = task_features(task)
    return np.stack(
        [np.concatenate([t, _onehot(TEMPLATES.index(a), len(TEMPLATES)), [float(tools)]]) for a, tools in GEN_ACTIONS]
    )


def implementer_candidates(task: Task, template: str, tools: bool, pool: list[Backbone]) -> np.ndarray:
    """[n_roles, |pool|, F]: task ⊕ template ⊕ role ⊕ backbone features, one factor per role."""
    ctx = np.concatenate([task_features(task), _onehot(TEMPLATES.index(template), len(TEMPLATES)), [float(tools)]])
    rows = [
        [np.concatenate([ctx, _onehot(ROLE_KINDS.index(r), len(ROLE_KINDS)), backbone_features(b, task)]) for b in pool]
        for r in ROLES[template]
    ]
    return np.asarray(rows, dtype=np.float32)


def rectifier_candidates(trig: Trigger) -> tuple[np.ndarray, tuple[str, ...]]:
    """[n_valid, F] over the actions valid for this trigger, and those actions."""
    b = trig.backbone
    ctx = np.concatenate(
        [
            task_features(trig.task),
            _onehot(0 if trig.reason == "failure" else 1, 2),
            _onehot(ROLE_KINDS.index(trig.role), len(ROLE_KINDS)),
            [float(trig.tools), b.skill[trig.task.kind] - trig.task.difficulty / 6.0, math.log(b.cost) / _COST_SCALE],
            [trig.n_rect / 3.0, min(trig.cost / trig.budget, 3.0)],
        ]
    )
    valid = VALID[trig.reason]
    return np.stack([np.concatenate([ctx, _onehot(ACTIONS.index(a), len(ACTIONS))]) for a in valid]), valid


GEN_DIM = generator_candidates(Task(0, 1)).shape[1]
IMP_DIM = task_features(Task(0, 1)).size + len(TEMPLATES) + 1 + len(ROLE_KINDS) + 4
REC_DIM = task_features(Task(0, 1)).size + 2 + len(ROLE_KINDS) + 3 + 2 + len(ACTIONS)
