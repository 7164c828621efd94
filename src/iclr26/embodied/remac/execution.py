"""An exact asynchronous execution harness for chunked policies under an inference delay of d control steps.

Timeline of asynchronous execution with execution horizon h (REMAC / RTC Kinetix, official `eval_flow.py`): chunks
are requested every h steps, at t_k = k h, from the observation o_{t_k}; the result is usable only from t_k + d. While
it is computed, the actions for [t_k, t_k + d) come from the previous chunk (positions h .. h + d - 1 of chunk k - 1,
i.e. positions 0 .. d - 1 in the new chunk's time frame: the committed prefix); then positions d .. h - 1 of the new
chunk run. Needs d <= h <= P - d. The first chunk is computed from o_0 before the clock starts (as in the official
evaluation). Strategies:

- "async": the above; the chunker decides what to do with the committed prefix (naive: ignore it; REMAC:
  prefix-preserved sampling; RTC: guidance towards it).
- "sync": the robot waits for each chunk: request at t from o_t, hold zero acceleration for d steps, then execute
  positions 0 .. h - 1 (each cycle lasts d + h steps).
- "te": temporal ensembling (ACT): a chunk is requested every step (usable d steps later) and the action for time t is
  the average of every usable chunk's prediction for t, weighted by exp(-k i) with i = 0 for the oldest (ACT, k=0.01).

A chunker is a callable `chunker(obs (n, O), prev (n, P, A) or None, d) -> chunk (n, P, A)` (numpy); the first chunk
of an episode, and every chunk of "sync" and "te", is requested with prev = None and d = 0 (nothing committed).
The environment is any object with `obs() -> (n, O)`, `step(actions (n, A)) -> per-env reward` and `done`
(e.g. `BatchCatchBall`).
`record=True` keeps, for every executed step, the request time and position of the chunk entry used (tests).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trace:
    actions: list = field(default_factory=list)  # executed (n, A) per step
    source: list = field(default_factory=list)  # (request time, position) or None (idle), per step
    requests: list = field(default_factory=list)  # request times
    infer_s: float = 0.0  # wall time spent inside the chunker
    n_calls: int = 0


def _check(d: int, h: int, chunk: int, strategy: str):
    if strategy not in ("async", "sync", "te"):
        raise ValueError(f"strategy must be 'async', 'sync' or 'te', got {strategy!r}")
    if d < 0 or h < 1:
        raise ValueError(f"delay d must be >= 0 and horizon h >= 1, got d={d}, h={h}")
    if strategy == "async" and not d <= h <= chunk - d:
        raise ValueError(f"async execution needs d <= h <= P - d, got d={d}, h={h}, P={chunk}; lower d or change h")
    if strategy == "sync" and h > chunk:
        raise ValueError(f"sync execution needs h <= P, got h={h}, P={chunk}")
    if strategy == "te" and d >= chunk:
        raise ValueError(f"temporal ensembling needs d < P, got d={d}, P={chunk}")


def run_episode(env, chunker, d: int, h: int, chunk: int, act_dim: int, strategy: str = "async",
                te_k: float = 0.01, record: bool = False) -> tuple[np.ndarray, Trace]:  # fmt: skip
    """Run `env` to `done` under the chosen schedule; returns (total reward per env, trace)."""
    _check(d, h, chunk, strategy)
    tr, total = Trace(), 0.0

    def call(o, prev, delay):
        t0 = time.perf_counter()
        out = np.asarray(chunker(o, prev, delay), dtype=np.float64)
        tr.infer_s, tr.n_calls = tr.infer_s + time.perf_counter() - t0, tr.n_calls + 1
        return out

    def act(a, src, t):
        nonlocal total
        total = total + env.step(a)
        tr.actions.append(a) if record else None
        tr.source.append(src) if record else None
        return t + 1

    t = 0
    o = env.obs()
    n = o.shape[0]
    if strategy == "sync":
        while not env.done:
            tr.requests.append(t)
            new, t_req = call(env.obs(), None, 0), t
            for _ in range(d):
                if env.done:
                    break
                t = act(np.zeros((n, act_dim)), None, t)
            for p in range(h):
                if env.done:
                    break
                t = act(new[:, p], (t_req, p), t)
        return total, tr
    if strategy == "te":
        chunks = {0: call(o, None, 0)}  # the first chunk is ready at t = 0
        tr.requests.append(0)
        while not env.done:
            if t > 0:
                chunks[t] = call(env.obs(), None, 0)
                tr.requests.append(t)
            usable = sorted(r for r in chunks if (r + d <= t or r == 0) and t - r < chunk)
            w = np.exp(-te_k * np.arange(len(usable)))  # i = 0: the oldest prediction (ACT)
            a = sum(wi * chunks[r][:, t - r] for wi, r in zip(w, usable)) / w.sum()
            for r in [r for r in chunks if t - r >= chunk - 1]:
                del chunks[r]
            t = act(a, tuple(usable), t)
        return total, tr
    # async: `plan` holds the committed actions in the time frame of the chunk requested now
    plan = call(o, None, 0)
    tr.requests.append(0)
    src = {p: (0, p) for p in range(chunk)}  # position in the current frame -> (request time, position)
    while not env.done:
        t_req = t
        new = call(env.obs(), plan, d) if t > 0 else plan
        if t > 0:
            tr.requests.append(t)
        for p in range(h):
            if env.done:
                break
            if p < d:  # committed prefix: the previous chunk, computed from an older observation
                t = act(plan[:, p], src[p], t)
            else:
                t = act(new[:, p], (t_req, p), t)
        plan = np.concatenate([new[:, h:], np.zeros((n, h, act_dim))], axis=1)  # shift into the next frame
        src = {p: (t_req, p + h) for p in range(chunk - h)}
    return total, tr
