"""`MASEnv`: gymnasium-style episodes over one task of the agent-systems world (generator, implementer, rectifier)."""

from __future__ import annotations

from itertools import product

from .world import ROLES, TEMPLATES, VALID, AgentSystemsWorld, MASSpec, Trigger, sample_tasks


class MASEnv:
    """Gymnasium-style episodes over one task: generator, implementer, then rectifier decisions at triggers.

    `reset(seed=…, options={"task": Task})` returns the observation dict {"stage": "generate", "task": …};
    `step(action)` takes, in turn, a (template, tools) pair, a tuple of backbone names (one per role), and a
    rectifier action at each trigger; the reward at the end is the cost-sensitive 1[success]·c_ref/C (reference
    cost of the task over the run's cost), 0 before. Discrete spaces are listed by `actions()`.
    """

    def __init__(self, world: AgentSystemsWorld | None = None):
        self.world = world or AgentSystemsWorld()
        self._stage = None

    def reset(self, seed=None, options=None):
        self._seed = seed
        self.task = (options or {}).get("task") or sample_tasks(1, seed)[0]
        self._stage, self._template, self._script = "generate", None, []
        return {"stage": "generate", "task": self.task}, {}

    def actions(self):
        if self._stage == "generate":
            return [(t, tools) for t in TEMPLATES for tools in (False, True)]
        if self._stage == "implement":
            return list(product(self.world.pool, repeat=len(ROLES[self._template[0]])))
        if self._stage == "rectify":
            return list(VALID[self._trigger.reason])
        raise RuntimeError("MASEnv: call reset() first (or the episode has ended)")

    def step(self, action):
        if action not in self.actions():
            raise ValueError(f"MASEnv.step: {action!r} is not a valid {self._stage} action; see env.actions()")
        if self._stage == "generate":
            self._template, self._stage = action, "implement"
            return {"stage": "implement", "task": self.task, "template": action}, 0.0, False, False, {}
        if self._stage == "implement":
            self._spec = MASSpec(self._template[0], self._template[1], tuple(action))
        else:
            self._script.append(action)
        res = self.world.step_to_trigger(self.task, self._spec, self._seed, tuple(self._script))
        if isinstance(res, Trigger):
            self._trigger, self._stage = res, "rectify"
            return {"stage": "rectify", "task": self.task, "trigger": res}, 0.0, False, False, {}
        self._stage = None
        reward = (self.world.reference_cost(self.task) / res.cost) if res.success else 0.0
        return {"stage": "done", "task": self.task}, reward, True, False, {"outcome": res}
