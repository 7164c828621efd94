"""Answerers for ENACT items: the symbolic oracle, a random permutation and a learned transition scorer.

All three share one decoder. A transition score s(i -> j | a) says how well action a explains the change from frame
i to frame j. Forward: the order of the future frames maximising sum_p s(pred_{p-1} -> pred_p | a_p), found exactly
by dynamic programming over subsets (Held-Karp, O(2^k k^2)); inverse: the frames are fixed, so the actions are
assigned to transitions by `scipy.optimize.linear_sum_assignment`.

- `oracle_answer` reads the true scene graphs: s = 1 iff the action's (visible) changes are contained in the diff
  between the two frames; it must score task accuracy 1.
- `TransitionScorer` perceives each frame through a noisy symbolic sensor (every visible fact flipped with probability
  ``noise``, fixed per item and frame) and scores a transition with a logistic regression on the agreement of the
  perceived change with the action's signatures, trained on transitions of other trajectories.
- `FrameScorer` sees rendered frames (noisy pixels of `render.raster`) and scores a transition with a small MLP of a
  stated capacity: the answerer of the reproduction, which can fail the way a VLM does (confusing objects and states).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

from .pipeline import signatures
from .world import FACT_INDEX, FACTS, SceneGraph, diff, visible_diff


def decode(item, score) -> list[int]:
    """The best 1-based answer under a transition score ``score(p, i, j, k)``: step p (0-based) goes from frame
    index i to frame index j with action/choice k. Forward: i, j index [o_0] + choices; inverse: frames in order."""
    k = item["L"] - 1
    if item["task"] == "forward":
        # s[p, i, j]: position p, from node i (0 = o_0, c + 1 = choice c) to choice j
        s = np.array([[[score(p, i, j + 1, p) for j in range(k)] for i in range(k + 1)] for p in range(k)])
        best = {(1 << j, j): (s[0, 0, j], [j]) for j in range(k)}
        for size in range(1, k):
            nxt = {}
            for (mask, last), (val, seq) in best.items():
                if bin(mask).count("1") != size:
                    continue
                for j in range(k):
                    if not mask >> j & 1:
                        key, v = (mask | 1 << j, j), val + s[size, last + 1, j]
                        if key not in nxt or v > nxt[key][0]:
                            nxt[key] = (v, seq + [j])
            best = nxt
        seq = max(best.values(), key=lambda t: t[0])[1]
        return [j + 1 for j in seq]
    cost = -np.array([[score(p, p, p + 1, c) for c in range(k)] for p in range(k)])
    _, cols = linear_sum_assignment(cost)  # Hungarian assignment of actions to the fixed transitions
    return [int(c) + 1 for c in cols]


def _nodes(item) -> list[SceneGraph]:
    g = [SceneGraph.from_json(item["context"])]
    return g + [SceneGraph.from_json(x) for x in (item["choices"] if item["task"] == "forward" else item["steps"])]


def _actions(item) -> list[frozenset]:
    return [signatures(a) for a in (item["steps"] if item["task"] == "forward" else item["choices"])]


def oracle_answer(item) -> list[int]:
    nodes, acts = _nodes(item), _actions(item)

    def score(p, i, j, k):  # the verifier's subset rules (forward and inverse alike: action ⊆ full diff)
        return float(acts[k] <= diff(nodes[i], nodes[j]))

    return decode(item, score)


def random_answer(item, rng: np.random.Generator) -> list[int]:
    return [int(x) + 1 for x in rng.permutation(item["L"] - 1)]


def change_vector(changes) -> np.ndarray:
    """+1 for an added fact, -1 for a removed one, over the fixed fact layout."""
    v = np.zeros(len(FACTS))
    for c in changes:
        v[FACT_INDEX[c.fact]] = 1.0 if c.gamma == "add" else -1.0
    return v


def features(xa: np.ndarray, xb: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per fact: agreement of the perceived change with the action, and unexplained perceived change (rows of a
    batch, or one vector)."""
    d = xb.astype(float) - xa.astype(float)
    return np.concatenate([c * d, (1 - np.abs(c)) * np.abs(d), np.abs(c) * (1 - np.abs(d))], axis=-1)


@dataclass
class ScorerConfig:
    noise: float = field(default=0.04, metadata={"help": "per-fact flip probability of the perception (ours)"})
    C: float = field(default=1.0, metadata={"help": "inverse L2 strength of the logistic regression (ours)"})
    negatives: int = field(default=3, metadata={"help": "negative transitions per positive in training (ours)"})

    def __post_init__(self):
        if not 0.0 <= self.noise < 0.5:
            raise ValueError(f"ScorerConfig.noise must be in [0, 0.5), got {self.noise!r}")
        if self.C <= 0 or self.negatives < 1:
            raise ValueError(f"ScorerConfig: C must be > 0 and negatives >= 1, got {self.C!r}, {self.negatives!r}")


class _LearnedScorer:
    """A transition scorer learnt from other trajectories: positives are true (frame, next frame, action) triples,
    negatives a wrong next frame or a wrong action of the same trajectory; decoded by the exact search (`decode`)."""

    def __init__(self, cfg, seed: int = 0):
        self.cfg, self.seed, self.model = cfg, seed, None

    def perceive(self, g: SceneGraph, key: str) -> np.ndarray:  # what the answerer sees of a frame
        raise NotImplementedError

    def features(self, xa: np.ndarray, xb: np.ndarray, c: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def classifier(self):
        raise NotImplementedError

    def fit(self, trajectories: list[list[SceneGraph]], shuffle_labels: bool = False):
        """Train on consecutive key frames of other trajectories (``shuffle_labels``: the control, the same features
        with permuted labels)."""
        rng = np.random.default_rng(self.seed)
        X, y = [], []
        for t, gs in enumerate(trajectories):
            xs = [self.perceive(g, f"train/{t}/{n}") for n, g in enumerate(gs)]
            acts = [change_vector(visible_diff(a, b)) for a, b in zip(gs, gs[1:])]
            for i in range(len(gs) - 1):
                X.append(self.features(xs[i], xs[i + 1], acts[i])), y.append(1)
                for _ in range(self.cfg.negatives):
                    if rng.random() < 0.5:
                        j = int(rng.integers(len(gs)))
                        if gs[j] != gs[i + 1]:
                            X.append(self.features(xs[i], xs[j], acts[i])), y.append(0)
                    else:
                        a = acts[int(rng.integers(len(acts)))]
                        if not np.array_equal(a, acts[i]):
                            X.append(self.features(xs[i], xs[i + 1], a)), y.append(0)
        if not X:
            raise ValueError("fit() got no transitions: give trajectories of at least two key frames")
        y = np.array(y)
        if shuffle_labels:
            y = rng.permutation(y)
        self.model = self.classifier().fit(np.array(X), y)
        return self

    def answer(self, item) -> list[int]:
        if self.model is None:
            raise RuntimeError(f"{type(self).__name__}.answer: call fit() first")
        nodes, acts = _nodes(item), np.array([change_vector(a) for a in _actions(item)])
        xs = np.array([self.perceive(g, f"{item['id']}/{n}") for n, g in enumerate(nodes)])
        n, k = len(nodes), len(acts)
        i, j, c = (g.reshape(-1) for g in np.meshgrid(np.arange(n), np.arange(n), np.arange(k), indexing="ij"))
        logp = self.model.predict_log_proba(self.features(xs[i], xs[j], acts[c]))[:, 1].reshape(n, n, k)
        return decode(item, lambda p, a, b, q: logp[a, b, q])


class TransitionScorer(_LearnedScorer):
    """A logistic-regression transition scorer over noisy perceived *symbolic* frames (the dossier's
    PairwiseTransitionScorer with a linear model): every visible fact is flipped with probability ``noise``, fixed per
    item and frame, so its step errors are independent flips."""

    def __init__(self, cfg: ScorerConfig | None = None, seed: int = 0):
        super().__init__(cfg or ScorerConfig(), seed)

    def perceive(self, g: SceneGraph, key: str) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(f"{self.seed}/{key}".encode()))
        x = g.vector()
        return np.where(rng.random(len(x)) < self.cfg.noise, 1 - x, x)

    def features(self, xa, xb, c):
        return features(xa, xb, c)

    def classifier(self):
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.cfg.C, max_iter=2000)


@dataclass
class FrameConfig:
    hidden: int = field(default=32, metadata={"help": "hidden units of the one-layer MLP: its capacity (ours)"})
    alpha: float = field(default=1e-3, metadata={"help": "L2 strength of the MLP (tuned on validation items; ours)"})
    pixel_noise: float = field(default=0.3, metadata={"help": "std of Gaussian pixel noise on each frame (ours)"})
    negatives: int = field(default=3, metadata={"help": "negative transitions per positive in training (ours)"})
    max_iter: int = field(default=150, metadata={"help": "Adam epochs at most (sklearn; ours)"})

    def __post_init__(self):
        if self.hidden < 1 or self.negatives < 1 or self.max_iter < 1:
            raise ValueError(f"FrameConfig: hidden, negatives, max_iter must be >= 1, got {self}")
        if not self.alpha > 0 or not 0 <= self.pixel_noise < 1:
            raise ValueError(f"FrameConfig: alpha must be > 0 and pixel_noise in [0, 1), got {self}")


class FrameScorer(_LearnedScorer):
    """A learned answerer that *sees frames*: rendered pixels (`render.raster`, 3 x 14 RGB, Gaussian noise fixed per
    item and frame) of both frames and their difference, with the action's change vector (the text's content), into
    a one-hidden-layer MLP of ``hidden`` units that scores the transition. It must learn which colour is which object
    and where each place is, from 126 noisy pixels per frame, so it can confuse objects, places and states (it fails
    by substitution, omission and hallucination, not by independent flips)."""

    def __init__(self, cfg: FrameConfig | None = None, seed: int = 0):
        super().__init__(cfg or FrameConfig(), seed)

    def perceive(self, g: SceneGraph, key: str) -> np.ndarray:
        from .render import raster

        rng = np.random.default_rng(zlib.crc32(f"frame/{self.seed}/{key}".encode()))
        x = raster(g).reshape(-1)
        return x + self.cfg.pixel_noise * rng.standard_normal(x.shape)

    def features(self, xa, xb, c):
        return np.concatenate([xa, xb, xb - xa, c], axis=-1)

    def classifier(self):
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(self.cfg.hidden,), alpha=self.cfg.alpha, max_iter=self.cfg.max_iter,
                             random_state=self.seed)  # fmt: skip
