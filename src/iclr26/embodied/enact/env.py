"""`HouseholdEnv`: MiniHome (the scene graph of `world`) as a gymnasium environment, rendered by `render`."""

from __future__ import annotations

import gymnasium as gym

from .render import frame_array
from .world import ACTIONS, FACTS, OBJECTS, SceneGraph, apply, diff, random_start


class HouseholdEnv(gym.Env):
    """Gymnasium environment of MiniHome. Observation: the visible facts (MultiBinary); info carries the full graph."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, n_objects: int = 3, max_steps: int = 40, render_mode: str | None = None):
        if not 1 <= n_objects <= len(OBJECTS):
            raise ValueError(f"n_objects must be in [1, {len(OBJECTS)}], got {n_objects!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
        self.n_objects, self.max_steps, self.render_mode = n_objects, max_steps, render_mode
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        self.observation_space = gym.spaces.MultiBinary(len(FACTS))
        self.graph: SceneGraph | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.graph, self.t = random_start(self.np_random, self.n_objects), 0
        return self.graph.vector(), {"graph": self.graph}

    def valid_actions(self) -> list[int]:
        return [i for i, a in enumerate(ACTIONS) if apply(self.graph, a) is not None]

    def step(self, action: int):
        if self.graph is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an int in [0, {len(ACTIONS)}), got {action!r}")
        nxt = apply(self.graph, ACTIONS[int(action)])
        prev, self.t = self.graph, self.t + 1
        self.graph = nxt if nxt is not None else prev
        info = {"graph": self.graph, "valid": nxt is not None, "changes": diff(prev, self.graph)}
        return self.graph.vector(), 0.0, False, self.t >= self.max_steps, info

    def render(self):
        return frame_array(self.graph)
