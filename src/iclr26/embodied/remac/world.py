"""CatchBall: a dynamic 1-D catching task with a scripted expert, for action chunking under inference delay (REMAC).

A paddle on the floor is a double integrator (the action is its acceleration, so a wrong action is felt for many
steps); balls fall one after another from the top with a random horizontal velocity, bounce off the side walls and,
with probability `p_gust`, get a random horizontal kick mid-flight (so a plan made from an old observation goes
stale). A ball counts as caught when it reaches the floor within `catch_width` of the paddle and the paddle moves
slower than `catch_speed` (a soft catch: arriving is not enough, the paddle must also have braked). Control runs at
20 Hz; every ball falls in exactly `fall_steps` steps, so all episodes have the same length and a batch of
environments runs in lockstep.

Why not a gymnasium built-in: Pendulum, MountainCarContinuous and CartPole have no success criterion on a moving
target and no scripted expert whose plans go stale; LunarLanderContinuous needs Box2D and MuJoCo tasks need mujoco,
neither installed here, and all are far slower per step than this numpy simulator, which steps hundreds of
environments at once (`BatchCatchBall`). `CatchBallEnv` wraps one of them in the gymnasium API.

The expert (`expert_action`) predicts the landing point by ballistic extrapolation with wall reflections (it does not
foresee gusts) and steers a PD law towards it; demonstrations add temporally correlated (Ornstein-Uhlenbeck) noise to
the executed acceleration and record the executed action, so chunks given one observation vary, and the rest of a
chunk responds to its own beginning (what a prefix-conditioned policy can use).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

OBS_DIM = 7  # paddle x, paddle v, ball x, ball y, ball vx, ball vy, fraction of the fall left
ACT_DIM = 1


@dataclass(frozen=True)
class CatchBallConfig:
    dt: float = field(default=0.05, metadata={"help": "control period in s (20 Hz; the paper's real robot: 15 Hz)"})
    fall_steps: int = field(default=24, metadata={"help": "steps each ball falls (ours)"})
    n_balls: int = field(default=3, metadata={"help": "balls per episode (dossier: 3)"})
    max_acc: float = field(default=7.0, metadata={"help": "paddle acceleration at |action| = 1 (ours)"})
    max_speed: float = field(default=2.5, metadata={"help": "paddle speed limit (ours)"})
    ball_speed: float = field(default=1.0, metadata={"help": "initial |vx| bound of a ball (ours)"})
    p_gust: float = field(default=0.5, metadata={"help": "probability of a mid-flight kick per ball (ours)"})
    gust: float = field(default=1.2, metadata={"help": "kick size bound on vx (ours)"})
    catch_width: float = field(default=0.12, metadata={"help": "half-width of the paddle (ours)"})
    catch_speed: float = field(default=0.8, metadata={"help": "largest paddle speed of a soft catch (ours)"})

    def __post_init__(self):
        if self.fall_steps < 8 or self.n_balls < 1:
            raise ValueError(f"fall_steps must be >= 8 and n_balls >= 1, got {self.fall_steps}, {self.n_balls}")
        if not 0 <= self.p_gust <= 1:
            raise ValueError(f"p_gust must lie in [0, 1], got {self.p_gust!r}")

    @property
    def horizon(self) -> int:
        return self.fall_steps * self.n_balls

    @property
    def gravity(self) -> float:  # y = 1 - g t^2 / 2 reaches 0 after exactly fall_steps steps
        return 2.0 / (self.fall_steps * self.dt) ** 2


def _reflect(x: np.ndarray) -> np.ndarray:
    """Position in [-1, 1] after elastic bounces off the walls at ±1."""
    y = np.mod(x + 1.0, 4.0)
    return np.where(y > 2.0, 4.0 - y, y) - 1.0


class BatchCatchBall:
    """`n` independent CatchBall environments stepped together (numpy, deterministic given the seed)."""

    def __init__(self, n: int, seed: int, cfg: CatchBallConfig | None = None):
        if n < 1:
            raise ValueError(f"n (number of environments) must be >= 1, got {n!r}")
        self.cfg, self.n = cfg or CatchBallConfig(), n
        self.rng = np.random.default_rng(seed)
        self.px, self.pv = self.rng.uniform(-0.5, 0.5, n), np.zeros(n)
        self.t, self.caught, self.landed = 0, np.zeros(n), 0
        self._spawn()

    def _spawn(self):
        c, n = self.cfg, self.n
        self.bx0 = self.rng.uniform(-0.9, 0.9, n)
        self.bvx = self.rng.uniform(-c.ball_speed, c.ball_speed, n)
        self.bx, self.k = self.bx0.copy(), 0
        self.gust_at = np.where(self.rng.random(n) < c.p_gust, self.rng.integers(4, c.fall_steps - 9, n), -1)
        self.gust_dv = self.rng.uniform(-c.gust, c.gust, n)

    def obs(self) -> np.ndarray:
        c, s = self.cfg, self.k * self.cfg.dt
        by, bvy = 1.0 - 0.5 * c.gravity * s**2, -c.gravity * s
        left = (c.fall_steps - self.k) / c.fall_steps
        cols = (self.px, self.pv, self.bx, np.full(self.n, by), self.bvx, np.full(self.n, bvy), np.full(self.n, left))
        return np.stack(cols, axis=1).astype(np.float32)

    def step(self, action: np.ndarray) -> np.ndarray:
        """Apply one acceleration per environment (clipped to [-1, 1]); returns the catch indicator of the balls that
        landed at this step (zeros otherwise)."""
        c = self.cfg
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(self.n), -1.0, 1.0)
        self.pv = np.clip(self.pv + a * c.max_acc * c.dt, -c.max_speed, c.max_speed)
        self.px = self.px + self.pv * c.dt
        wall = np.abs(self.px) > 1.0
        self.px, self.pv = np.clip(self.px, -1.0, 1.0), np.where(wall, 0.0, self.pv)
        self.k += 1
        kick = self.gust_at == self.k
        self.bvx = np.where(kick, np.clip(self.bvx + self.gust_dv, -1.5, 1.5), self.bvx)
        raw = self.bx + self.bvx * c.dt
        self.bvx = np.where(np.abs(raw) > 1.0, -self.bvx, self.bvx)
        self.bx, self.t = _reflect(raw), self.t + 1
        out = np.zeros(self.n)
        if self.k == c.fall_steps:
            out = ((np.abs(self.px - self.bx) < c.catch_width) & (np.abs(self.pv) < c.catch_speed)).astype(float)
            self.caught, self.landed = self.caught + out, self.landed + 1
            self._spawn()
        return out

    @property
    def done(self) -> bool:
        return self.t >= self.cfg.horizon


def expert_action(obs: np.ndarray, cfg: CatchBallConfig | None = None, kp: float = 16.0, kd: float = 6.0) -> np.ndarray:
    """Scripted expert: a PD law (gains ours, tuned for a soft catch) towards the predicted landing point.

    obs: (n, OBS_DIM). Returns accelerations in [-1, 1], shape (n,)."""
    c = cfg or CatchBallConfig()
    t_left = obs[:, 6] * c.fall_steps * c.dt
    target = _reflect(obs[:, 2] + obs[:, 4] * t_left)
    return np.clip((kp * (target - obs[:, 0]) - kd * obs[:, 1]) / c.max_acc * 1.0, -1.0, 1.0)


def expert_chunker(prefix_aware: bool, chunk: int = 8, cfg: CatchBallConfig | None = None,
                   kp: float = 16.0, kd: float = 6.0):  # fmt: skip
    """The expert as a chunk planner (for `execution.run_episode`): it simulates its PD law for ``chunk`` steps on the
    paddle's known dynamics towards the landing point predicted from the observation (fixed over the chunk).

    ``prefix_aware=False`` plans from the observed state, ignoring the committed prefix (naive async with a perfect
    model); ``prefix_aware=True`` first simulates the committed prefix prev[:, :d] and plans the rest from the state it
    leads to (the ideal of REMAC: a continuation consistent with the prefix). Their gap at large delays is the headroom
    a prefix-conditioned policy can win."""
    c = cfg or CatchBallConfig()

    def step(px, pv, a):
        pv = np.clip(pv + a * c.max_acc * c.dt, -c.max_speed, c.max_speed)
        px = px + pv * c.dt
        wall = np.abs(px) > 1.0
        return np.clip(px, -1.0, 1.0), np.where(wall, 0.0, pv)

    def chunker(obs, prev, d):
        obs = np.asarray(obs, dtype=np.float64)
        target = _reflect(obs[:, 2] + obs[:, 4] * obs[:, 6] * c.fall_steps * c.dt)
        px, pv = obs[:, 0].copy(), obs[:, 1].copy()
        out = np.zeros((len(obs), chunk, 1))
        k0 = d if (prefix_aware and prev is not None) else 0
        for tau in range(k0):
            out[:, tau, 0] = prev[:, tau, 0]
            px, pv = step(px, pv, prev[:, tau, 0])
        for tau in range(k0, chunk):
            a = np.clip((kp * (target - px) - kd * pv) / c.max_acc, -1.0, 1.0)
            out[:, tau, 0] = a
            px, pv = step(px, pv, a)
        return out

    return chunker


class OUNoise:
    """Ornstein-Uhlenbeck noise per environment: x <- rho x + sigma sqrt(1 - rho^2) N(0, 1) (stationary std sigma)."""

    def __init__(self, n: int, sigma: float, rho: float, rng: np.random.Generator):
        self.x, self.sigma, self.rho, self.rng = np.zeros(n), sigma, rho, rng

    def __call__(self) -> np.ndarray:
        z = self.rng.standard_normal(self.x.shape)
        self.x = self.rho * self.x + self.sigma * np.sqrt(1 - self.rho**2) * z
        return self.x


def demonstrations(n_episodes: int, seed: int, chunk: int, noise: float = 0.25, rho: float = 0.8,
                   cfg: CatchBallConfig | None = None) -> tuple[np.ndarray, np.ndarray, float]:  # fmt: skip
    """Roll out the noisy expert; returns (obs (N, OBS_DIM), chunks (N, chunk, ACT_DIM), expert catch rate).

    A chunk is the `chunk` executed actions from each step on (padded by repeating the last action at the episode end,
    as the RTC/REMAC Kinetix data pads by zeros after `done`)."""
    c = cfg or CatchBallConfig()
    env = BatchCatchBall(n_episodes, seed, c)
    ou = OUNoise(n_episodes, noise, rho, np.random.default_rng(seed + 7919))
    obs, acts = [], []
    while not env.done:
        o = env.obs()
        a = np.clip(expert_action(o, c) + ou(), -1.0, 1.0)
        obs.append(o), acts.append(a)
        env.step(a)
    obs, acts = np.stack(obs, 1), np.stack(acts, 1)  # (E, T, ...)
    pad = np.concatenate([acts, np.repeat(acts[:, -1:], chunk - 1, axis=1)], axis=1)
    chunks = np.stack([pad[:, i : i + acts.shape[1]] for i in range(chunk)], axis=2)  # (E, T, chunk)
    rate = float(env.caught.sum() / (env.landed * env.n))
    return obs.reshape(-1, OBS_DIM), chunks.reshape(-1, chunk, ACT_DIM).astype(np.float32), rate


class CatchBallEnv(gym.Env):
    """One CatchBall environment in the gymnasium API; reward 1 per caught ball; `info["caught"]` counts them."""

    metadata = {"render_modes": []}

    def __init__(self, cfg: CatchBallConfig | None = None):
        self.cfg = cfg or CatchBallConfig()
        self.observation_space = gym.spaces.Box(-3.0, 3.0, (OBS_DIM,), np.float32)  # all features lie in [-2.5, 2.5]
        self.action_space = gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)
        self._env: BatchCatchBall | None = None

    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        self._env = BatchCatchBall(1, int(self.np_random.integers(2**31)), self.cfg)
        return self._env.obs()[0], {"caught": 0}

    def step(self, action):
        if self._env is None:
            raise RuntimeError("CatchBallEnv.step called before reset(); call env.reset(seed=...) first")
        r = float(self._env.step(np.asarray(action, dtype=np.float64).reshape(1))[0])
        info = {"caught": int(self._env.caught[0]), "landed": self._env.landed}
        return self._env.obs()[0], r, self._env.done, False, info
