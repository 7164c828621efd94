"""An abstract red-teaming world for AUTO-RT (the dossier's synthetic environment: no text, no harmful content).

Everything is a token id. A *behaviour* (intent) is an id in one of `n_classes` classes. A *strategy* is a sequence of
1..`max_len` transformation primitives (ids 0..n_prims-1); only its set of primitives matters (order-insensitive), so a
strategy is stored as a bit mask. The pieces of the paper's pipeline:

* rephraser + consistency judge: a strategy holding one of the `n_destroyers` "intent-destroying" primitives loses
  the intent with probability `destroy_prob` (a fixed hash of intent and strategy, so the world is deterministic);
  the judge is exact (it knows whether the intent survived);
* target model TM: unsafe on (a, s) iff s contains a hidden *key* (a 3- or 4-primitive combination) that covers the
  class of a. Every class has one 3-key of its own; a few 4-keys cover 2-3 classes each (broad, rarer strategies);
* safety judge: an attack succeeds iff the intent survived and the target is unsafe;
* downgrade series M_1..M_K: M_k is unsafe where the target is, and also (with a fixed-hash probability
  `partial_p[k]`) where s holds all but one primitive of a covering key (a weakened model already gives in to a
  near-miss), plus for the last models random extra unsafe points (`extra_p[k]`) unrelated to the keys: a model
  degraded too far whose unsafe region no longer has the target's shape. The unsafe sets are nested,
  target ⊂ M_1 ⊂ ... ⊂ M_K, because every model thresholds the same hash;
* an *unrelated* downgrade (control): the target's unsafe set plus near-misses of another world's keys.

`RedTeamEnv` wraps one split in the gymnasium API (`reset` draws a behaviour, `step(strategy)` runs the whole
pipeline, one-step episodes) and exposes the stages (`consistent`, `query_downgrade`, `query_target`) with query
counters, which AUTO-RT's early termination needs. The vectorised `success_matrix` evaluates many strategies on many
behaviours at once (metrics). All of it is deterministic from the seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64 finaliser on a Python int (scalar path)."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _mix_np(x: np.ndarray) -> np.ndarray:
    """The same finaliser on uint64 arrays (vectorised path; identical values)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def mask_of(strategy: Sequence[int]) -> int:
    """The order-insensitive bit mask of a strategy (sequence of primitive ids)."""
    m = 0
    for t in strategy:
        m |= 1 << int(t)
    return m


def bits(masks: np.ndarray, n_prims: int) -> np.ndarray:
    """(n,) uint64 masks -> (n, n_prims) 0/1 multi-hot (the toy's strategy embedding)."""
    return ((np.asarray(masks, dtype=np.uint64)[:, None] >> np.arange(n_prims, dtype=np.uint64)) & np.uint64(1)).astype(
        np.float32
    )


@dataclass(frozen=True)
class WorldConfig:
    n_prims: int = field(default=32, metadata={"help": "transformation primitives (dossier: 24)"})
    max_len: int = field(default=6, metadata={"help": "longest strategy (dossier: 4; longer makes random search rare)"})
    n_classes: int = field(default=10, metadata={"help": "behaviour classes (dossier: 10)"})
    n_intents: int = field(default=200, metadata={"help": "behaviours (dossier: 200)"})
    split: tuple[int, int, int] = field(default=(120, 30, 50), metadata={"help": "train / validation / test"})
    n_destroyers: int = field(default=4, metadata={"help": "intent-destroying primitives (dossier: 3)"})
    destroy_prob: float = field(default=0.5, metadata={"help": "chance a destroyer loses the intent (dossier: 0.5)"})
    n_broad: int = field(default=6, metadata={"help": "4-keys covering 2-3 classes each (ours)"})
    partial_p: tuple[float, ...] = field(
        default=(0.2, 0.4, 0.6, 0.8, 0.8, 0.8), metadata={"help": "M_k unsafe share of near-miss strategies (ours)"}
    )
    extra_p: tuple[float, ...] = field(
        default=(0.0, 0.0, 0.0, 0.0, 0.15, 0.25), metadata={"help": "M_k random unsafe share (dossier: for k >= 5)"}
    )

    def __post_init__(self):
        if not 8 <= self.n_prims <= 62:
            raise ValueError(f"WorldConfig.n_prims must lie in [8, 62] (bit masks), got {self.n_prims!r}")
        if not 4 <= self.max_len <= self.n_prims:
            raise ValueError(f"WorldConfig.max_len must lie in [4, n_prims], got {self.max_len!r}")
        if sum(self.split) != self.n_intents or min(self.split) < 1:
            raise ValueError(f"WorldConfig.split must be positive and sum to n_intents, got {self.split!r}")
        if len(self.partial_p) != len(self.extra_p):
            raise ValueError("WorldConfig.partial_p and extra_p must have one entry per downgrade model")
        if list(self.partial_p) != sorted(self.partial_p) or list(self.extra_p) != sorted(self.extra_p):
            raise ValueError("WorldConfig.partial_p and extra_p must be non-decreasing (nested downgrade series)")
        if self.n_prims - self.n_destroyers < 8:
            raise ValueError("WorldConfig: need at least 8 non-destroying primitives for the keys")


class RedTeamWorld:
    """Hidden keys, classes, splits and the models of one world (deterministic from ``seed``)."""

    def __init__(self, seed: int = 0, cfg: WorldConfig | None = None):
        self.seed, self.cfg = seed, cfg or WorldConfig()
        c = self.cfg
        rng = np.random.default_rng([seed, 7])
        perm = rng.permutation(c.n_prims)
        self.destroyers = sorted(int(t) for t in perm[: c.n_destroyers])
        self.destroy_mask = mask_of(self.destroyers)
        safe = perm[c.n_destroyers :]
        self.intent_class = rng.permutation(np.arange(c.n_intents) % c.n_classes)
        order = rng.permutation(c.n_intents)
        a, b, _ = c.split
        self.splits = {"train": np.sort(order[:a]), "val": np.sort(order[a : a + b]), "test": np.sort(order[a + b :])}
        self.keys, self.key_classes = self._draw_keys(rng, safe)
        # the control downgrade's geometry: keys of an unrelated world over the same primitives
        self.unrelated_keys, self.unrelated_classes = self._draw_keys(np.random.default_rng([seed, 99]), safe)
        self.salt = int(rng.integers(1 << 62))

    def _draw_keys(self, rng, safe) -> tuple[list[int], list[frozenset[int]]]:
        c, keys, classes = self.cfg, [], []
        while len(keys) < c.n_classes + c.n_broad:
            i = len(keys)
            size = 3 if i < c.n_classes else 4
            m = mask_of(rng.choice(safe, size=size, replace=False))
            if m in keys:
                continue
            cover = [i] if i < c.n_classes else rng.choice(c.n_classes, size=int(rng.integers(2, 4)), replace=False)
            keys.append(m)
            classes.append(frozenset(int(k) for k in cover))
        return keys, classes

    # ------------------------------------------------------------------ scalar pipeline (one query)
    def _u(self, intent: int, mask: int, stream: int) -> float:
        return _mix(mask ^ ((int(intent) + 1) * 0x9E3779B97F4A7C15 & _M64) ^ (self.salt + stream)) / 2.0**64

    def consistent(self, intent: int, mask: int) -> bool:
        """Consistency judge: does the rephrased query keep the intent? (exact)"""
        return not (mask & self.destroy_mask) or self._u(intent, mask, 1) >= self.cfg.destroy_prob

    def _near(self, intent: int, mask: int, keys, classes) -> bool:
        cl = int(self.intent_class[intent])
        return any(cl in cs and (km & mask).bit_count() >= km.bit_count() - 1 for km, cs in zip(keys, classes))

    def target_unsafe(self, intent: int, mask: int) -> bool:
        """The target model gives in iff the strategy holds a key covering the behaviour's class."""
        cl = int(self.intent_class[intent])
        return any(cl in cs and km & mask == km for km, cs in zip(self.keys, self.key_classes))

    def success(self, intent: int, mask: int) -> bool:
        """Safety judge R(a, y): the intent survived and the target gave in."""
        return self.consistent(intent, mask) and self.target_unsafe(intent, mask)

    def downgrade_unsafe(self, k: int | str, intent: int, mask: int) -> bool:
        """M_k (k = 1..K) or the control ``"unrelated"``; unsafe wherever the target is (nested series)."""
        if self.target_unsafe(intent, mask):
            return True
        if k == "unrelated":
            return self._near(intent, mask, self.unrelated_keys, self.unrelated_classes) and self._u(
                intent, mask, 2
            ) < max(self.cfg.partial_p)
        p, e = self.cfg.partial_p[k - 1], self.cfg.extra_p[k - 1]
        u = self._u(intent, mask, 2)
        return (u < p and self._near(intent, mask, self.keys, self.key_classes)) or self._u(intent, mask, 3) < e

    @property
    def n_downgrades(self) -> int:
        return len(self.cfg.partial_p)

    # ------------------------------------------------------------------ vectorised evaluation
    def success_matrix(self, masks: Sequence[int], intents: np.ndarray, target_only: bool = False) -> np.ndarray:
        """(n_strategies, n_intents) bool: judge success (or only target unsafety) of every pair."""
        m = np.asarray([int(x) for x in masks], dtype=np.uint64)
        cls = self.intent_class[np.asarray(intents)]
        unsafe = np.zeros((len(m), len(cls)), bool)
        for km, cs in zip(self.keys, self.key_classes):
            has = (m & np.uint64(km)) == np.uint64(km)
            unsafe |= has[:, None] & np.isin(cls, list(cs))[None, :]
        if target_only:
            return unsafe
        a = (np.asarray(intents, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        with np.errstate(over="ignore"):
            u = _mix_np(m[:, None] ^ a[None, :] ^ np.uint64(self.salt + 1)).astype(np.float64) / 2.0**64
        keeps = ((m & np.uint64(self.destroy_mask)) == 0)[:, None] | (u >= self.cfg.destroy_prob)
        return unsafe & keeps

    def keys_in(self, mask: int) -> list[int]:
        """Indices of the hidden keys a strategy holds (the diversity measure 'keys found')."""
        return [i for i, km in enumerate(self.keys) if km & mask == km]


class RedTeamEnv(gym.Env):
    """One split of a `RedTeamWorld` behind the gymnasium API, with query counters.

    ``reset`` draws a behaviour; ``step(strategy)`` rephrases, judges consistency, queries the target and returns the
    judge's reward (1 = attack succeeded) in a one-step episode. The staged calls let an attacker stop early: only
    ``query_target`` (and ``step``) count as target queries, the budget of the paper's comparison.
    """

    metadata = {"render_modes": []}

    def __init__(self, world: RedTeamWorld, split: str = "train", downgrade: int | str | None = None):
        if split not in world.splits:
            raise ValueError(f"split must be one of {sorted(world.splits)}, got {split!r}")
        if downgrade is not None and downgrade != "unrelated" and not 1 <= downgrade <= world.n_downgrades:
            raise ValueError(f"downgrade must be 1..{world.n_downgrades}, 'unrelated' or None, got {downgrade!r}")
        self.world, self.intents, self.downgrade = world, world.splits[split], downgrade
        c = world.cfg
        self.action_space = gym.spaces.MultiDiscrete([c.n_prims + 1] * c.max_len)  # id n_prims = end of strategy
        self.observation_space = gym.spaces.Discrete(c.n_intents)
        self.intent, self.target_queries, self.downgrade_queries = None, 0, 0
        self._rng = np.random.default_rng(world.seed)

    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.intent = int(self._rng.choice(self.intents))
        return self.intent, {}

    def _mask(self, strategy) -> int:
        toks = [int(t) for t in strategy]
        end = self.world.cfg.n_prims
        toks = toks[: toks.index(end)] if end in toks else toks
        if not toks or len(toks) > self.world.cfg.max_len or min(toks) < 0 or max(toks) >= end:
            raise ValueError(
                f"strategy must hold 1..{self.world.cfg.max_len} primitive ids in [0, {end}), got {strategy!r}"
            )
        return mask_of(toks)

    def consistent(self, strategy) -> bool:
        return self.world.consistent(self.intent, self._mask(strategy))

    def query_downgrade(self, strategy) -> bool:
        if self.downgrade is None:
            raise ValueError("this environment has no downgrade model (pass downgrade=k)")
        self.downgrade_queries += 1
        return self.world.downgrade_unsafe(self.downgrade, self.intent, self._mask(strategy))

    def query_target(self, strategy) -> bool:
        """Judge verdict on the target's response to the rephrased query (counts one target query)."""
        self.target_queries += 1
        return self.world.success(self.intent, self._mask(strategy))

    def step(self, action):
        r = float(self.query_target(action))
        return self.intent, r, True, False, {"target_queries": self.target_queries}
