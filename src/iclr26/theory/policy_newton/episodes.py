"""Batches of on-policy episodes from a gymnasium vector environment, and their per-step weights.

Helpers of Policy Newton in RKHS (https://arxiv.org/abs/2506.01597): one episode per parallel environment, up to a
horizon, stored with the action probabilities the policy had when acting (the likelihood-ratio estimators need them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Trajectory", "collect_episodes", "returns_to_go"]


@dataclass
class Trajectory:
    obs: np.ndarray  # (T, obs_dim)
    actions: np.ndarray  # (T,)
    rewards: np.ndarray  # (T,)
    probs: np.ndarray  # (T, A): π(·|s_t) when acting

    @property
    def total_reward(self) -> float:
        return float(self.rewards.sum())


def collect_episodes(envs, policy, horizon: int, rng: np.random.Generator, seed: int | None = None):
    """Run every environment of the vector env `envs` for one episode (≤ horizon steps) with `policy.probs`."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    obs, _ = envs.reset(seed=seed)
    n = envs.num_envs
    alive = np.ones(n, bool)
    O, A, R, P, live = [], [], [], [], []
    for _ in range(horizon):
        probs = policy.probs(obs)
        actions = (rng.random((n, 1)) > np.cumsum(probs, 1)).sum(1).clip(max=probs.shape[1] - 1)
        next_obs, reward, terminated, truncated, _ = envs.step(actions)
        O.append(obs)
        A.append(actions)
        R.append(np.asarray(reward, float))
        P.append(probs)
        live.append(alive.copy())
        alive &= ~(np.asarray(terminated) | np.asarray(truncated))
        obs = next_obs
        if not alive.any():
            break
    O, A, R, P, live = map(np.stack, (O, A, R, P, live))
    return [Trajectory(O[live[:, i], i], A[live[:, i], i], R[live[:, i], i], P[live[:, i], i]) for i in range(n)]


def returns_to_go(rewards: np.ndarray, gamma: float, standardise: bool = True) -> np.ndarray:
    """Ψ_t = Σ_{t'≥t} γ^{t'−t} r_{t'}; optionally standardised within the trajectory (the authors' runner)."""
    if not 0 <= gamma <= 1:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    rewards = np.asarray(rewards, float)
    if rewards.ndim != 1 or not np.all(np.isfinite(rewards)):
        raise ValueError(f"rewards must be a finite 1-D array (one per step), got shape {rewards.shape}")
    out = np.zeros(len(rewards))
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    if standardise and len(out) > 1:
        out = (out - out.mean()) / (out.std() + 1e-8)
    return out
