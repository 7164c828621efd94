"""Lifelong navigation on minigrid: (scene, instruction-style) tasks for Uni-Walker-style lifelong learning.

A *scene* is a fixed minigrid house (an 8 x 8 grid split into two rooms by a wall with one or two openings, a wall
colour and a floor colour as its palette, and four objects: two colours x two types). A *task* is one scene with one
instruction style, as in the LENL benchmark of Uni-Walker (arXiv:2603.06073):

- ``vln``: a step-by-step route from the shortest path ("fwd 2 left fwd 3 stop"); success = stop on the goal cell;
- ``oln``: an object goal ("find the red ball"); success = stop facing the object;
- ``dun``: a two-turn dialogue that is ambiguous turn by turn ("q which a not the key" / "q colour a red"); the target
  is the only object of that colour that is not of the negated type; success = stop facing it.

BabyAI's own levels carry one mission grammar (object goals, BabyAI's "go to the red ball"), so they can express the
OLN style only; we keep minigrid's engine, observations and gymnasium API (egocentric 5 x 5 view of (type, colour,
state) cells, ``MiniGridEnv.step``) and write the missions of the three styles ourselves. The scripted expert is a BFS
over poses (x, y, heading); the demos follow its shortest path and carry the style-specific "thought" labels used for
the NSCoT analogue. Everything is deterministic given the scene seed and the reset seed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces
from minigrid.core.constants import COLOR_NAMES, DIR_TO_VEC
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.core.world_object import Ball, Box, Floor, Key, Wall
from minigrid.minigrid_env import MiniGridEnv

STYLES = ("vln", "oln", "dun")
TYPES = ("ball", "box", "key")
_OBJ = {"ball": Ball, "box": Box, "key": Key}
WORDS = ("<pad>", "<vln>", "<oln>", "<dun>", "fwd", "left", "right", "stop", "1", "2", "3", "4", "5", "6",
         "find", "the", "q", "a", "not", "which", "colour") + TYPES + tuple(COLOR_NAMES)  # fmt: skip
WORD_ID = {w: i for i, w in enumerate(WORDS)}
ACTIONS = ("left", "right", "forward", "done")  # policy actions -> minigrid actions 0, 1, 2, 6
TO_MINIGRID = (0, 1, 2, 6)
INSTR_LEN, HIST_LEN, VIEW = 18, 12, 5
# thought labels (NSCoT analogue): vln 0..7 = index of the current sub-instruction; oln 8..12 = where the target is
# (facing, ahead, left, right, behind); dun 13..30 = the resolved target (type, colour)
N_THOUGHT = 8 + 5 + len(TYPES) * len(COLOR_NAMES)
SIZE = 8


@dataclass(frozen=True)
class Scene:
    seed: int
    wall_colour: str
    floor_colour: str
    walls: tuple  # internal wall cells (x, y)
    objects: tuple  # (x, y, type, colour)


def _blocked(walls, objects) -> set:
    return set(walls) | {(x, y) for x, y, *_ in objects}


def _free_cells(blocked) -> list:
    return [(x, y) for y in range(1, SIZE - 1) for x in range(1, SIZE - 1) if (x, y) not in blocked]


def _connected(free) -> bool:
    free = set(free)
    start = next(iter(free))
    seen, todo = {start}, [start]
    while todo:
        x, y = todo.pop()
        for dx, dy in DIR_TO_VEC:
            n = (x + int(dx), y + int(dy))
            if n in free and n not in seen:
                seen.add(n), todo.append(n)
    return len(seen) == len(free)


PALETTE = ("grey", "yellow")  # the shared (wall, floor) palette of `make_scene(seed, palette=PALETTE)`


def make_scene(seed: int, palette: tuple[str, str] | None = None) -> Scene:
    """A random two-room house, fixed by `seed` (retries until every free cell is connected). ``palette``: a fixed
    (wall colour, floor colour) shared by scenes (then only the layout and the objects tell scenes apart, and the
    object colours are drawn from the four other colours); None: a random palette per scene."""
    rng = np.random.default_rng(seed)
    if palette is not None:
        bad = [c for c in palette if c not in COLOR_NAMES]
        if len(palette) != 2 or bad or palette[0] == palette[1]:
            raise ValueError(f"palette must be two distinct minigrid colours of {COLOR_NAMES}, got {palette!r}")
    for _ in range(1000):
        if palette is None:
            wall_c, floor_c, c1, c2 = (str(c) for c in rng.permutation(COLOR_NAMES)[:4])
        else:
            wall_c, floor_c = palette
            c1, c2 = (str(c) for c in rng.permutation([c for c in COLOR_NAMES if c not in palette])[:2])
        k, vertical = int(rng.integers(3, SIZE - 3)), bool(rng.integers(2))
        gaps = set(rng.choice(np.arange(1, SIZE - 1), size=int(rng.integers(1, 3)), replace=False).tolist())
        walls = tuple((k, j) if vertical else (j, k) for j in range(1, SIZE - 1) if j not in gaps)
        cells = _free_cells(set(walls))
        pos = [cells[i] for i in rng.choice(len(cells), size=4, replace=False)]
        types = [rng.permutation(TYPES)[:2] for _ in range(2)]
        objects = tuple((*pos[2 * i + j], str(types[i][j]), c) for i, c in enumerate((c1, c2)) for j in range(2))
        if _connected(_free_cells(_blocked(walls, objects))):
            return Scene(seed, wall_c, floor_c, walls, objects)
    raise RuntimeError(f"make_scene: no connected layout for seed {seed!r}")


def _vln_words(actions: list[int]) -> tuple[list[str], list[int]]:
    """Compress a shortest path into route words and, per action (and the final stop), its sub-instruction index."""
    words, seg, i, k = [], [], 0, 0
    while i < len(actions):
        j = i + 1
        if actions[i] == 2:
            while j < len(actions) and actions[j] == 2 and j - i < 6:
                j += 1
            words += ["fwd", str(j - i)]
        else:
            words.append(ACTIONS[actions[i]])
        seg += [min(k, 7)] * (j - i)
        i, k = j, k + 1
    return words + ["stop"], seg + [min(k, 7)]


class LifelongNavEnv(MiniGridEnv):
    """One task = (scene, style). ``reset(seed=s)`` draws a start pose and a goal with a 3..10-action shortest path.

    Observations: minigrid's ``image`` (5 x 5 x 3) and ``direction``, plus ``pos`` (x, y), ``instruction`` (word ids,
    padded to 18) and ``history`` (the last 12 policy actions, 4 = none). ``info["success"]`` is set on ``done``.
    """

    def __init__(self, scene: Scene, style: str, max_steps: int = 24, min_len: int = 3, max_len: int = 10):
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        if not 1 <= min_len <= max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {min_len!r}, {max_len!r}")
        self.scene, self.style, self.min_len, self.max_len = scene, style, min_len, max_len
        super().__init__(mission_space=MissionSpace(mission_func=lambda: style), grid_size=SIZE, max_steps=max_steps,
                         agent_view_size=VIEW, see_through_walls=True)  # fmt: skip
        n = len(WORDS)
        self.observation_space = spaces.Dict({
            **self.observation_space.spaces,
            "pos": spaces.Box(0, SIZE - 1, (2,), np.int64),
            "instruction": spaces.Box(0, n - 1, (INSTR_LEN,), np.int64),
            "history": spaces.Box(0, len(ACTIONS), (HIST_LEN,), np.int64),
        })  # fmt: skip

    # --- grid and goal -------------------------------------------------------------------------------------------
    def _gen_grid(self, width, height):
        s = self.scene
        self.grid = Grid(width, height)
        for x in range(width):
            for y in range(height):
                edge = x in (0, width - 1) or y in (0, height - 1)
                self.grid.set(x, y, Wall(s.wall_colour) if edge or (x, y) in s.walls else Floor(s.floor_colour))
        for x, y, t, c in s.objects:
            self.grid.set(x, y, _OBJ[t](c))
        self.blocked = _blocked(s.walls, s.objects)
        free = _free_cells(self.blocked)
        rng = self.np_random
        while True:
            start = (*free[int(rng.integers(len(free)))], int(rng.integers(4)))
            dist, parent = self._bfs(start)
            if self.style == "vln":
                cand = sorted({p[:2] for p, d in dist.items() if self.min_len <= d <= self.max_len})
                cand = [c for c in cand if min(dist.get((*c, h), 99) for h in range(4)) >= self.min_len]
                goals = [((c,), None) for c in cand]
            else:
                goals = [(self._facing_cells(o), o) for o in s.objects]
                goals = [g for g in goals if self.min_len <= self._dist_to(dist, g[0]) <= self.max_len]
            if goals:
                break
        cells, obj = goals[int(rng.integers(len(goals)))]
        self.agent_pos, self.agent_dir = np.array(start[:2]), start[2]
        self.target, self.goal_cells = obj, cells
        end = min((p for p in dist if self._success_pose(p)), key=lambda p: (dist[p], p))
        self.plan = self._path(parent, end)  # shortest action sequence (policy action ids, without "done")
        self.shortest = len(self.plan)
        self.words = self._mission_words(rng)
        self.mission = " ".join(self.words)
        self.history = []
        self._enc = None

    def _facing_cells(self, obj) -> tuple:
        """Poses (x, y, heading) that face object `obj`."""
        x, y = obj[:2]
        return tuple((x - int(dx), y - int(dy), h) for h, (dx, dy) in enumerate(DIR_TO_VEC)
                     if (x - int(dx), y - int(dy)) not in self.blocked and 0 < x - dx < SIZE - 1
                     and 0 < y - dy < SIZE - 1)  # fmt: skip

    def _success_pose(self, p) -> bool:
        if self.style == "vln":
            return p[:2] in self.goal_cells
        return p in self.goal_cells

    @staticmethod
    def _dist_to(dist, poses) -> int:
        return min((dist[p] for p in poses if p in dist), default=99)

    def _bfs(self, start):
        """Shortest paths over poses; actions tried in the order left, right, forward (deterministic ties)."""
        dist, parent, todo = {start: 0}, {start: None}, deque([start])
        while todo:
            p = todo.popleft()
            for a, q in enumerate(self._moves(p)):
                if q not in dist:
                    dist[q], parent[q] = dist[p] + 1, (p, a)
                    todo.append(q)
        return dist, parent

    def _moves(self, p):
        x, y, h = p
        dx, dy = DIR_TO_VEC[h]
        fwd = (x + int(dx), y + int(dy))
        ok = fwd not in self.blocked and 0 < fwd[0] < SIZE - 1 and 0 < fwd[1] < SIZE - 1
        return [(x, y, (h - 1) % 4), (x, y, (h + 1) % 4), (*fwd, h) if ok else p]

    @staticmethod
    def _path(parent, end) -> list[int]:
        out = []
        while parent[end] is not None:
            end, a = parent[end]
            out.append(a)
        return out[::-1]

    def _mission_words(self, rng) -> list[str]:
        if self.style == "vln":
            words, self.vln_seg = _vln_words(self.plan)
            return ["<vln>"] + words
        _, _, t, c = self.target
        if self.style == "oln":
            return ["<oln>", "find", "the", c, t]
        other = next(o for o in self.scene.objects if o[3] == c and o != self.target)  # same colour, other type
        turns = [["q", "which", "a", "not", "the", other[2]], ["q", "colour", "a", c]]
        if rng.integers(2):
            turns = turns[::-1]
        return ["<dun>"] + turns[0] + turns[1]

    # --- thought labels (NSCoT analogue) --------------------------------------------------------------------------
    def thought(self, step: int) -> int:
        """The style-specific reasoning label at the current pose (`step` = index along the expert plan)."""
        if self.style == "vln":
            return self.vln_seg[step]
        if self.style == "dun":
            return 13 + TYPES.index(self.target[2]) * len(COLOR_NAMES) + COLOR_NAMES.index(self.target[3])
        pose = (*map(int, self.agent_pos), int(self.agent_dir))
        if pose in self.goal_cells:
            return 8
        vx, vy = self.target[0] - pose[0], self.target[1] - pose[1]
        fx, fy = DIR_TO_VEC[pose[2]]
        ahead, right = vx * fx + vy * fy, -vx * fy + vy * fx
        if abs(ahead) >= abs(right):
            return 9 if ahead > 0 else 12
        return 11 if right > 0 else 10

    # --- gymnasium API ---------------------------------------------------------------------------------------------
    def _view(self) -> np.ndarray:
        """minigrid's egocentric encoding (see-through walls), by numpy slicing of the encoded grid: ~20x faster."""
        if self._enc is None:
            v = VIEW
            self._enc = np.zeros((SIZE + 2 * v, SIZE + 2 * v, 3), dtype=np.uint8)
            self._enc[..., :2] = (2, 5)  # outside the grid: grey walls, as Grid.slice
            self._enc[v : v + SIZE, v : v + SIZE] = self.grid.encode()
        tx, ty, *_ = self.get_view_exts(VIEW)
        img = np.rot90(self._enc[tx + VIEW : tx + 2 * VIEW, ty + VIEW : ty + 2 * VIEW], k=3 - self.agent_dir)
        img = img.copy()
        img[VIEW // 2, VIEW - 1] = (1, 0, 0)  # the agent's own cell encodes as empty
        return img

    def gen_obs(self):
        if self.see_through_walls and self.carrying is None and hasattr(self, "_enc"):
            obs = {"image": self._view(), "direction": self.agent_dir, "mission": self.mission}
        else:
            obs = super().gen_obs()
        ids = [WORD_ID[w] for w in getattr(self, "words", [])][:INSTR_LEN]
        hist = getattr(self, "history", [])[-HIST_LEN:]
        obs["pos"] = np.asarray(self.agent_pos, dtype=np.int64)
        obs["instruction"] = np.array(ids + [0] * (INSTR_LEN - len(ids)), dtype=np.int64)
        obs["history"] = np.array([len(ACTIONS)] * (HIST_LEN - len(hist)) + hist, dtype=np.int64)
        return obs

    def step(self, action):
        """Minigrid action ids (0 left, 1 right, 2 forward, 6 done); `done` ends the episode with reward = success."""
        a = int(action)
        if a in TO_MINIGRID:
            self.history.append(TO_MINIGRID.index(a))
        if a in (3, 4, 5):  # pickup, drop, toggle may change the grid
            self._enc = None
        obs, reward, terminated, truncated, info = super().step(a)
        pose = (*map(int, self.agent_pos), int(self.agent_dir))
        info["on_goal"] = self._success_pose(pose)
        if a == self.actions.done:
            terminated, info["success"] = True, info["on_goal"]
            reward = float(info["on_goal"])
        return obs, reward, terminated, truncated, info


def demos(scene: Scene, style: str, seeds) -> dict[str, np.ndarray]:
    """Teacher-forcing data: the expert's shortest path (plus `done`) of each episode seed, one row per step."""
    env, rows = LifelongNavEnv(scene, style), []
    for s in seeds:
        obs, _ = env.reset(seed=int(s))
        for i, a in enumerate(env.plan + [3]):
            rows.append((obs, a, env.thought(i)))
            obs, *_ = env.step(TO_MINIGRID[a])
    return stack_obs([r[0] for r in rows]) | {
        "action": np.array([r[1] for r in rows]),
        "thought": np.array([r[2] for r in rows]),
    }


def stack_obs(obs: list[dict]) -> dict[str, np.ndarray]:
    """A list of observations -> arrays (image, direction, pos, instruction, history)."""
    return {
        "image": np.stack([o["image"] for o in obs]).astype(np.int64),
        "direction": np.array([o["direction"] for o in obs], dtype=np.int64),
        "pos": np.stack([o["pos"] for o in obs]),
        "instruction": np.stack([o["instruction"] for o in obs]),
        "history": np.stack([o["history"] for o in obs]),
    }
