"""ToyTable: a small tabletop pick-and-place world with language instructions and a scripted expert (the testbed
of the UniVLA reproduction, arXiv:2506.19850; the LIBERO / CALVIN analogue of the dossier).

A point end-effector moves over a 3 x 3 grid of table cells ([0, 1]^2 in continuous coordinates) holding coloured
blocks (red, green, blue) and two target zones (a "left" zone in the left column, a "right" zone in the right one).
Action a = (x, y, grip) in [-1, 1]^3: an absolute position command (the table mapped to [-1, 1]^2) that a
speed-limited controller follows (at most one cell per step and axis); the gripper is closed while grip > 0. Closing
the gripper over a cell grasps the top block of its stack; opening it drops the held block on top of the stack of the
effector's cell. Blocks live on cells (stacks).

Instructions come from a template grammar: a subtask is ``put C in left zone``, ``put C in right zone`` or
``put C on C2``. A *short* task is one subtask on a table with one block (by default); a *long* task chains three
with ``then`` on a table with all three blocks (LIBERO-Long / CALVIN chain analogue: grounding the colours and
tracking progress from the image is what makes it long). Subgoals are checked in order (CALVIN-style: a subgoal
counts when it holds and its block is released); ``info["completed"]`` is the number of consecutive subgoals done,
success means all of them.

`ToyTableEnv` follows the gymnasium API (``reset(seed=...)``, ``step``, Box spaces); observations are 12 x 12 RGB
images (4 x 4 pixels per cell). `expert_action` is a waypoint controller that solves every task; ``embodiment``
"other" is a second robot with a different action space (axes swapped, x mirrored, gripper sign inverted) used for
the post-training corpus.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

GRID = 3
CELL = 1.0 / GRID
PIX = 4  # pixels per cell side: images are 12 x 12
COLORS = ("red", "green", "blue")
RGB = {"red": (220, 40, 40), "green": (40, 190, 60), "blue": (50, 80, 230)}
BG, ZONE_RGB = (200, 185, 150), {"left": (120, 120, 120), "right": (250, 240, 120)}
EE_OPEN, EE_CLOSED = (255, 255, 255), (0, 0, 0)
WORDS = ("put", "in", "on", "zone", "then", "left", "right") + COLORS
EMBODIMENTS = ("target", "other")


def _cell(p: np.ndarray) -> tuple[int, int]:
    return tuple(int(v) for v in np.clip(np.floor(p / CELL), 0, GRID - 1))


def _centre(c) -> np.ndarray:
    return (np.asarray(c, dtype=np.float64) + 0.5) * CELL


def instruction_text(subtasks) -> str:
    """Template grammar: ("red", "zone", "left") -> "put red in left zone"; ("red", "on", "blue") -> "put red on
    blue"; subtasks are joined by "then"."""
    parts = [f"put {b} in {t} zone" if kind == "zone" else f"put {b} on {t}" for b, kind, t in subtasks]
    return " then ".join(parts)


class ToyTableEnv(gym.Env):
    """Language-conditioned pick-and-place on a 3 x 3 table (gymnasium API, deterministic given the reset seed)."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, n_subtasks: int = 1, max_steps: int | None = None, embodiment: str = "target",
                 n_blocks: int | None = None):  # fmt: skip
        if n_subtasks not in (1, 2, 3):
            raise ValueError(f"n_subtasks must be 1, 2 or 3, got {n_subtasks!r}")
        self.n_blocks = n_blocks or (1 if n_subtasks == 1 else len(COLORS))
        if not n_subtasks <= self.n_blocks <= len(COLORS):
            raise ValueError(f"n_blocks must be in [n_subtasks, {len(COLORS)}], got {self.n_blocks!r}")
        if embodiment not in EMBODIMENTS:
            raise ValueError(f"embodiment must be one of {EMBODIMENTS}, got {embodiment!r}")
        self.n_subtasks, self.embodiment = n_subtasks, embodiment
        self.max_steps = max_steps or 18 * n_subtasks
        self.action_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.observation_space = gym.spaces.Box(0, 255, (GRID * PIX, GRID * PIX, 3), np.uint8)

    # --- state -------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        rng = self.np_random
        cells = [(x, y) for x in range(GRID) for y in range(GRID)]
        half = GRID // 2  # cells are x-major: the first half * GRID cells have x < half
        self.zones = {
            "left": cells[rng.integers(0, half * GRID)],
            "right": cells[rng.integers((GRID - half) * GRID, GRID * GRID)],
        }
        free = [c for c in cells if c not in self.zones.values()]
        pick = rng.choice(len(free), size=self.n_blocks, replace=False)
        self.colors = [COLORS[i] for i in sorted(rng.choice(len(COLORS), size=self.n_blocks, replace=False))]
        self.stacks = {free[i]: [c] for i, c in zip(pick, self.colors)}  # cell -> blocks bottom..top
        self.pos = _centre(cells[rng.integers(0, len(cells))])
        self.closed, self.held, self.t, self.done_k = False, None, 0, 0
        self.subtasks = self._sample_subtasks(rng)
        self.instruction = instruction_text(self.subtasks)
        return self.render(), self._info()

    def _sample_subtasks(self, rng):
        """Random chain of distinct moved blocks whose every step is executable (moved block on top, target top)."""
        while True:
            order = [self.colors[i] for i in rng.permutation(self.n_blocks)[: self.n_subtasks]]
            sim = {c: list(s) for c, s in self.stacks.items()}
            out, ok = [], True
            for b in order:
                opts = [("zone", "left"), ("zone", "right")] + [("on", o) for o in self.colors if o != b]
                kind, t = opts[rng.integers(0, len(opts))]
                src = next(c for c, s in sim.items() if b in s)
                dst = self.zones[t] if kind == "zone" else next((c for c, s in sim.items() if t in s), None)
                if sim[src][-1] != b or dst == src or (kind == "on" and sim[dst][-1] != t):
                    ok = False
                    break
                sim[src].pop()
                sim.setdefault(dst, []).append(b)
                out.append((b, kind, t))
            if ok:
                return out

    def block_cell(self, b: str):
        if self.held == b:
            return _cell(self.pos)
        return next(c for c, s in self.stacks.items() if b in s)

    def subgoal_holds(self, k: int) -> bool:
        b, kind, t = self.subtasks[k]
        if self.held == b:
            return False
        c = self.block_cell(b)
        s = self.stacks[c]
        if kind == "zone":
            return c == self.zones[t]
        i = s.index(b)
        return i > 0 and s[i - 1] == t

    def _info(self) -> dict:
        return {"instruction": self.instruction, "completed": self.done_k, "n_subtasks": self.n_subtasks,
                "success": self.done_k == self.n_subtasks, "held": self.held}  # fmt: skip

    # --- dynamics ----------------------------------------------------------------------------------------------
    def to_target_action(self, action) -> np.ndarray:
        """Map this embodiment's action into the target robot's frame (identity for "target")."""
        a = np.clip(np.asarray(action, dtype=np.float64), -1, 1)
        if self.embodiment == "other":  # axes swapped, x mirrored, gripper sign inverted
            return np.array([-a[1], a[0], -a[2]])
        return a

    def from_target_action(self, a) -> np.ndarray:
        """Inverse of :meth:`to_target_action`."""
        a = np.asarray(a, dtype=np.float64)
        if self.embodiment == "other":
            return np.array([a[1], -a[0], -a[2]])
        return a

    def step(self, action):
        a = self.to_target_action(action)
        target = (a[:2] + 1) / 2  # absolute position command in [0, 1]^2, reached at one cell per step at most
        self.pos = np.clip(self.pos + np.clip(target - self.pos, -CELL, CELL), 1e-6, 1 - 1e-6)
        closed = bool(a[2] > 0)
        c = _cell(self.pos)
        if closed and not self.closed and self.held is None and self.stacks.get(c):
            self.held = self.stacks[c].pop()  # grasp the top block
            if not self.stacks[c]:
                del self.stacks[c]
        elif not closed and self.closed and self.held is not None:
            self.stacks.setdefault(c, []).append(self.held)  # release onto the stack under the effector
            self.held = None
        self.closed, self.t = closed, self.t + 1
        while self.done_k < self.n_subtasks and self.subgoal_holds(self.done_k):
            self.done_k += 1
        info = self._info()
        return self.render(), float(info["success"]), info["success"], self.t >= self.max_steps, info

    # --- rendering ---------------------------------------------------------------------------------------------
    def render(self) -> np.ndarray:
        """12 x 12 RGB: per cell, the outer ring shows the stack's bottom block (else table or zone colour), the inner
        2 x 2 the top block (a held block is drawn in the effector's cell), the top-left pixel the effector."""
        img = np.zeros((GRID * PIX, GRID * PIX, 3), np.uint8)
        zone_of = {c: z for z, c in self.zones.items()}
        ec = _cell(self.pos)
        for x in range(GRID):
            for y in range(GRID):
                s = list(self.stacks.get((x, y), []))
                if self.held is not None and (x, y) == ec:
                    s.append(self.held)
                base = ZONE_RGB[zone_of[(x, y)]] if (x, y) in zone_of else BG
                patch = img[y * PIX : (y + 1) * PIX, x * PIX : (x + 1) * PIX]
                patch[:] = RGB[s[0]] if s else base
                patch[1:3, 1:3] = RGB[s[-1]] if s else base
                if (x, y) == ec:
                    patch[0, 0] = EE_CLOSED if self.closed else EE_OPEN
        return img

    # --- expert ------------------------------------------------------------------------------------------------
    def expert_action(self) -> np.ndarray:
        """Waypoint controller in this embodiment's action space: go to the block, close, go to the target, open."""
        here = _cell(self.pos)
        if self.done_k >= self.n_subtasks:
            return self.from_target_action(np.array([*(2 * _centre(here) - 1), -1.0 if self.held is None else 1.0]))
        b, kind, t = self.subtasks[self.done_k]
        if self.held is not None and self.held != b:  # holding a wrong block: put it down here
            return self.from_target_action(np.array([*(2 * _centre(here) - 1), -1.0]))
        goal = self.zones[t] if kind == "zone" else self.block_cell(t)
        target = goal if self.held == b else self.block_cell(b)
        arrived = np.abs(_centre(target) - self.pos).max() < 1e-6
        grip = (1.0 if not arrived else -1.0) if self.held == b else (1.0 if arrived else -1.0)
        return self.from_target_action(np.array([*(2 * _centre(target) - 1), grip]))


def expert_episode(seed: int, n_subtasks: int = 1, embodiment: str = "target") -> dict:
    """One expert rollout: frames (T+1, 20, 20, 3), actions (T, 3) in the embodiment's space, instruction, success."""
    env = ToyTableEnv(n_subtasks, embodiment=embodiment)
    obs, info = env.reset(seed=seed)
    frames, actions = [obs], []
    done = False
    while not done:
        a = env.expert_action()
        obs, _, term, trunc, info = env.step(a)
        frames.append(obs)
        actions.append(a)
        done = term or trunc
    return {"frames": np.stack(frames), "actions": np.array(actions, np.float32), "instruction": env.instruction,
            "success": bool(info["success"]), "n_subtasks": n_subtasks, "seed": seed}  # fmt: skip
