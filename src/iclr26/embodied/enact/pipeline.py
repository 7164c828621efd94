"""ENACT's data pipeline on MiniHome: raw rollouts, key-frame extraction, KFTS sampling, forward/inverse QA items.

1. A scripted random policy acts in `HouseholdEnv`; each symbolic change is held for several raw frames, with idle
   frames and one-frame perception glitches ("flickers") in between (the paper replays 30 Hz demonstrations).
2. Key frames (ENACT §3.2): a frame is kept when its visible diff to the last key frame is non-empty and the new
   graph persists for at least ``min_stable`` frames (paper: 40 frames at 30 Hz; ours: 3), so glitches are dropped.
3. KFTS (ENACT Algorithm 1): nodes are key frames, E[j, i] = 1 iff j < i and Vis(delta(s_j, s_i)) is non-empty;
   DP[1, i] = 1, DP[l, i] = sum_j DP[l-1, j] E[j, i]; the end node is drawn proportional to DP[L, i] and each
   predecessor j of i proportional to DP[l-1, j] E[j, i], which is exactly uniform over all valid length-L paths.
4. Each sampled path gives one forward item (order the shuffled future frames given o_0 and the actions) and one
   inverse item (order the shuffled actions given the frames). Answers are 1-based lists: answer[p] is the choice
   placed at position p + 1.

Item format (one JSON object per line, see `write_jsonl`)::

    {"id": "for-t3-L4-0", "task": "forward" | "inverse", "L": 4, "trajectory": 3,
     "context": <scene graph of o_0>,
     "steps":   forward: the L-1 actions in order; inverse: the L-1 future frames (graphs) in order,
     "choices": forward: the L-1 future frames shuffled; inverse: the L-1 actions shuffled,
     "gt_answer": [2, 3, 1],                        # 1-based; scoring only: do not show it to the model
     "frames": [<graph o_0>, ..., <graph o_{L-1}>]} # scoring only: the key frames in true order

A scene graph is a sorted list of facts ``[pred, a, b]`` (b = "" for unary facts); an action is
``{"text": "...", "signatures": [[gamma, pred, a, b], ...]}`` (its visible changes).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

from .env import HouseholdEnv
from .world import ACTIONS, SceneGraph, Signature, action_text, apply, visible_diff


def rollout(seed: int, n_changes: int = 12, n_objects: int = 3, hold=(3, 6), p_idle=0.3, p_flicker=0.2):
    """Raw frames (scene graphs) of one episode of a random valid policy, deterministic in ``seed``."""
    if hold[0] < 1 or hold[1] < hold[0]:
        raise ValueError(f"hold must be (lo, hi) with 1 <= lo <= hi, got {hold!r}")
    env = HouseholdEnv(n_objects=n_objects, max_steps=10 * n_changes)
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed + 1_000_003)
    frames = [info["graph"]] * int(rng.integers(hold[0], hold[1] + 1))
    for _ in range(n_changes):
        if rng.random() < p_idle:  # idle motion: frames that change nothing
            frames += [env.graph] * int(rng.integers(1, hold[1] + 1))
        valid = env.valid_actions()
        if rng.random() < p_flicker:  # a one-frame glitch showing a change that does not happen
            frames.append(apply(env.graph, ACTIONS[valid[rng.integers(len(valid))]]))
        env.step(valid[rng.integers(len(valid))])
        frames += [env.graph] * int(rng.integers(hold[0], hold[1] + 1))
    return frames


def extract_keyframes(frames: list[SceneGraph], min_stable: int = 3) -> list[int]:
    """Indices of key frames: frame 0, then every frame whose visible diff to the last key frame is non-empty and
    whose graph stays unchanged for ``min_stable`` frames (temporal stability, ENACT §3.2)."""
    if min_stable < 1:
        raise ValueError(f"min_stable must be >= 1, got {min_stable!r}")
    keys = [0]
    for t in range(1, len(frames)):
        stable = t + min_stable <= len(frames) and all(frames[u] == frames[t] for u in range(t, t + min_stable))
        if stable and frames[t - 1] != frames[t] and visible_diff(frames[keys[-1]], frames[t]):
            keys.append(t)
    return keys


def edges(graphs: list[SceneGraph]) -> np.ndarray:
    """E[j, i] = 1 iff j < i and the visible change between key frames j and i is non-empty."""
    m = len(graphs)
    e = np.zeros((m, m), dtype=np.int64)
    for j in range(m):
        for i in range(j + 1, m):
            e[j, i] = bool(visible_diff(graphs[j], graphs[i]))
    return e


def count_paths(e: np.ndarray, length: int) -> np.ndarray:
    """DP[l-1, i]: number of valid paths with l nodes ending at i (Algorithm 1: DP[1, i] = 1, DP[l] = DP[l-1] E)."""
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length!r}")
    dp = np.zeros((length, len(e)), dtype=object)  # exact integers: counts grow like C(M, L)
    dp[0] = 1
    for ell in range(1, length):
        dp[ell] = dp[ell - 1].dot(e.astype(object))
    return dp


def kfts_sample(e: np.ndarray, length: int, n: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """n paths drawn uniformly (with replacement) from all valid length-L paths of the key-frame DAG."""
    dp = count_paths(e, length)
    total = int(dp[-1].sum())
    if total == 0:
        return []
    out = []
    for _ in range(n):
        w = dp[-1].astype(float)
        i = int(rng.choice(len(w), p=w / w.sum()))  # end node ~ DP[L, i] / sum
        path = [i]
        for ell in range(length - 2, -1, -1):  # backtrack: predecessor j ~ DP[l-1, j] E[j, i]
            w = (dp[ell] * e[:, i]).astype(float)
            i = int(rng.choice(len(w), p=w / w.sum()))
            path.append(i)
        out.append(tuple(reversed(path)))
    return out


def enumerate_paths(e: np.ndarray, length: int) -> list[tuple[int, ...]]:
    """Every valid path by brute force (for tests of the sampler)."""
    return [p for p in itertools.combinations(range(len(e)), length) if all(e[a, b] for a, b in zip(p, p[1:]))]


def _action(prev: SceneGraph, nxt: SceneGraph) -> dict:
    ch = visible_diff(prev, nxt)
    return {"text": action_text(ch), "signatures": sorted(list(c) for c in ch)}


def make_items(graphs: list[SceneGraph], path, rng: np.random.Generator, trajectory: int = 0, tag: str = ""):
    """The forward and the inverse item of one key-frame path (shuffles drawn from ``rng``)."""
    frames = [graphs[i] for i in path]
    L = len(frames)
    if L < 2:
        raise ValueError(f"a key-frame path needs at least 2 frames (one step to order), got {L}: use lengths >= 2")
    acts = [_action(a, b) for a, b in zip(frames, frames[1:])]
    js = [g.to_json() for g in frames]
    out = []
    for task in ("forward", "inverse"):  # ids: "for-..." and "inv-..."
        perm = rng.permutation(L - 1)  # choice k shows true step perm[k] (0-based)
        gt = [int(np.flatnonzero(perm == p)[0]) + 1 for p in range(L - 1)]
        steps, pool = (acts, js[1:]) if task == "forward" else (js[1:], acts)
        out.append({
            "id": f"{task[:3]}-t{trajectory}-L{L}-{tag}", "task": task, "L": L, "trajectory": trajectory,
            "context": js[0], "steps": steps, "choices": [pool[k] for k in perm], "gt_answer": gt, "frames": js,
        })  # fmt: skip
    return out


def build_items(seeds, lengths, per_length: int, min_stable: int = 3, sample_seed: int = 42, **rollout_kw):
    """Items from one trajectory per seed: for each L, ``per_length`` KFTS paths per trajectory (paper: 30 per
    (activity, L), seed 42)."""
    lengths = list(lengths)
    if not lengths or min(lengths) < 2:
        raise ValueError(f"lengths must be horizons L >= 2 (key frames per item), got {lengths!r}")
    if per_length < 1:
        raise ValueError(f"per_length must be >= 1, got {per_length!r}")
    rng = np.random.default_rng(sample_seed)
    items = []
    for s in seeds:
        raw = rollout(int(s), **rollout_kw)
        graphs = [raw[k] for k in extract_keyframes(raw, min_stable)]
        e = edges(graphs)
        for L in lengths:
            for n, path in enumerate(kfts_sample(e, L, per_length, rng)):
                items += make_items(graphs, path, rng, trajectory=int(s), tag=str(n))
    return items


def signatures(action: dict) -> frozenset:
    return frozenset(Signature(*c) for c in action["signatures"])


def write_jsonl(items, path) -> Path:
    path = Path(path)
    path.write_text("".join(json.dumps(it) + "\n" for it in items))
    return path


def read_jsonl(path) -> list[dict]:
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            it = json.loads(line)
            missing = {"task", "L", "choices", "gt_answer", "frames"} - set(it)
            if missing:
                raise ValueError(f"{path}:{n}: item lacks {sorted(missing)}; see iclr26.embodied.enact.pipeline")
            out.append(it)
    return out
