"""Routing worlds with exact ground truth for Meta-Router: queries, a true quality gain, and a biased judge.

Every query has features x, a true expected gain η(x) of the primary LLM over the alternative, a gold-standard (GS)
label Y(1) = η(x) + ε_G and a preference-based (PB) label Y(0) = η(x) − δ(x) + ε_P, where δ(x) is the judge's
systematic error (the bias the Meta-Router estimates as a CATE). Which label a training query gets is assigned at
random (the first n_gold of a shuffled pool get GS labels, the rest PB), so unconfoundedness holds by design, and the
same pool serves every n_gold for a seed (a paired design across n_gold); `confounding=c` instead gives GS labels
preferentially to queries with a large x₁ (the synthetic world), the case the R- and DR-learners are built for.

- `synthetic_routing`: the dossier's testbed. x ~ N(0, I_d);
  η(x) = 0.3·tanh(x₁ + 0.5x₂) + 0.1x₃ − 0.05, ε_G ~ N(0, 0.2²);
  δ(x) = 0.25·σ(2x₄) − 0.1x₁ (heterogeneous: the judge over-credits the primary on some query types and under-credits
  it where the primary is better), ε_P ~ N(0, 0.3²). `bias="none"` sets δ ≡ 0 (the control world), `"constant"`
  sets δ ≡ 0.15.
- `digits_routing`: semi-real. x = the top principal components of scikit-learn's bundled handwritten digits (1,797
  real 8×8 images), standardised; the gain depends on the real digit class (the primary model helps on the "hard"
  digits 2, 3, 5, 8) and the judge's bias on the real amount of ink (a verbosity proxy) and on the class:
  η = 0.3·1[hard] − 0.12 + 0.05·tanh(x₂), δ = 0.25·σ(2·ink) + 0.15·1[hard] − 0.1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RoutingData:
    X_gs: np.ndarray  # GS-labelled training queries
    y_gs: np.ndarray  # their GS labels
    X_pb: np.ndarray  # PB-labelled training queries
    y_pb: np.ndarray  # their PB labels
    y_pb_gold: np.ndarray  # the GS labels the PB queries would have had (All-golden upper bound only)
    delta_pb: np.ndarray  # true bias δ at the PB queries
    X_val: np.ndarray  # validation queries with GS labels (hyper-parameter selection of every arm)
    y_val: np.ndarray
    X_test: np.ndarray  # test queries
    eta_test: np.ndarray  # their true expected gain η (what routing is scored on)
    delta_test: np.ndarray  # true bias δ at the test queries
    y_test: np.ndarray  # their GS labels (noisy)

    @property
    def n_gold(self) -> int:
        return len(self.y_gs)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _split(seed, X, eta, delta, n_gold, n_val, n_test, noise_gs, noise_pb, confounding: float = 0.0) -> RoutingData:
    rng = np.random.default_rng([seed, 1])  # label noise: independent of the feature draw
    n = len(X)
    y1 = eta + noise_gs * rng.standard_normal(n)  # GS label, Y(1)
    y0 = eta - delta + noise_pb * rng.standard_normal(n)  # PB label, Y(0)
    n_train = n - n_test - n_val
    if not 1 <= n_gold < n_train:
        raise ValueError(
            f"n_gold must be in [1, {n_train - 1}] (the training pool has {n_train} queries); got {n_gold}"
        )
    if not np.isfinite(confounding) or confounding < 0:
        raise ValueError(f"confounding must be a finite number ≥ 0, got {confounding!r}")
    te, va = np.arange(n_test), np.arange(n_test, n_test + n_val)
    pool = np.arange(n_test + n_val, n)
    if confounding:  # GS labels go preferentially to queries with a large x₁ (Gumbel top-k: sampling ∝ exp(c·x₁))
        key = confounding * X[pool, 0] + np.random.default_rng([seed, 2]).gumbel(size=len(pool))
        order = pool[np.argsort(-key, kind="stable")]
        g, p = np.sort(order[:n_gold]), np.sort(order[n_gold:])
    else:  # random assignment: the first n_gold of the (already shuffled) pool
        g, p = pool[:n_gold], pool[n_gold:]
    return RoutingData(X[g], y1[g], X[p], y0[p], y1[p], delta[p], X[va], y1[va], X[te], eta[te], delta[te], y1[te])


def synthetic_eta(X: np.ndarray) -> np.ndarray:
    return 0.3 * np.tanh(X[:, 0] + 0.5 * X[:, 1]) + 0.1 * X[:, 2] - 0.05


def synthetic_delta(X: np.ndarray, bias: str = "heterogeneous") -> np.ndarray:
    if bias == "heterogeneous":
        return 0.25 * _sigmoid(2 * X[:, 3]) - 0.1 * X[:, 0]
    if bias == "constant":
        return np.full(len(X), 0.15)
    if bias == "none":
        return np.zeros(len(X))
    raise ValueError(f"bias must be 'heterogeneous', 'constant' or 'none', got {bias!r}")


def synthetic_routing(
    seed: int,
    n_gold: int = 100,
    n_pool: int = 2200,
    n_val: int = 300,
    n_test: int = 500,
    d: int = 20,
    bias: str = "heterogeneous",
    noise_gs: float = 0.2,
    noise_pb: float = 0.3,
    confounding: float = 0.0,
) -> RoutingData:
    """The dossier's synthetic testbed; `n_pool` training queries (n_gold GS, the rest PB), deterministic in seed.

    `confounding` c > 0 makes the assignment depend on the query: the n_gold GS queries are drawn without replacement
    with probability ∝ exp(c·x₁) (x₁ drives both the gain and the judge's bias), so the GS and PB queries differ in
    distribution; unconfoundedness given x still holds, and overlap is e(x) ∈ (0, 1)."""
    if d < 4:
        raise ValueError(f"d must be ≥ 4 (η uses x₁..x₃ and δ uses x₄), got {d}")
    X = np.random.default_rng([seed, 0]).standard_normal((n_test + n_val + n_pool, d))
    return _split(seed, X, synthetic_eta(X), synthetic_delta(X, bias), n_gold, n_val, n_test, noise_gs, noise_pb,
                  confounding)  # fmt: skip


HARD_DIGITS = (2, 3, 5, 8)


def digits_features(n_pcs: int = 20):
    """(X, digit class, standardised ink) of scikit-learn's bundled digits; X = standardised top PCs."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    data = load_digits()
    Z = PCA(n_pcs, random_state=0).fit_transform(data.data)
    X = (Z - Z.mean(0)) / Z.std(0)
    ink = data.data.sum(1)
    return X, data.target, (ink - ink.mean()) / ink.std()


def digits_routing(
    seed: int,
    n_gold: int = 100,
    n_val: int = 300,
    n_test: int = 500,
    n_pcs: int = 20,
    bias: str = "heterogeneous",
    noise_gs: float = 0.2,
    noise_pb: float = 0.3,
) -> RoutingData:
    """Semi-real: real digit images as queries (all 1,797: n_test + n_val + the rest for training)."""
    X, cls, ink = digits_features(n_pcs)
    order = np.random.default_rng([seed, 0]).permutation(len(X))
    X, cls, ink = X[order], cls[order], ink[order]
    hard = np.isin(cls, HARD_DIGITS).astype(float)
    # η: the primary helps on hard digits, hurts a little elsewhere; a mild dependence on the second component
    eta = 0.3 * hard - 0.12 + 0.05 * np.tanh(X[:, 1])
    if (
        bias == "heterogeneous"
    ):  # the judge's error grows with ink (verbosity); it under-credits the primary on hard digits
        delta = 0.25 * _sigmoid(2 * ink) + 0.15 * hard - 0.1
    elif bias == "none":
        delta = np.zeros(len(X))
    else:
        raise ValueError(f"bias must be 'heterogeneous' or 'none', got {bias!r}")
    return _split(seed, X, eta, delta, n_gold, n_val, n_test, noise_gs, noise_pb)


def csv_routing(path, seed: int, n_gold: int = 100, n_val: int = 0, n_test: int = 500) -> RoutingData:
    """The released experiment's data layout (e.g. `1_PC50_varstd.csv` of github.com/yichistat/Meta-router, which a
    user must supply): columns `embd.PC1..PC50` (query features), `GL` (GS gain) and `PL` (PB gain) per query. Split
    as in the released code: a random permutation by `seed`, n_test test, then n_gold GS (and n_val validation), the
    rest PB. Here the truth is the noisy GS label: `eta_test` = `y_test` = GL, and `delta_*` = GL − PL."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or "GL" not in rows[0] or "PL" not in rows[0]:
        raise ValueError(f"{path}: expected columns embd.PC1.., GL, PL (the released Meta-router CSV layout)")
    pcs = sorted((k for k in rows[0] if k.startswith("embd.PC")), key=lambda k: int(k[7:]))
    X = np.array([[float(r[k]) for k in pcs] for r in rows])
    gl, pl = np.array([float(r["GL"]) for r in rows]), np.array([float(r["PL"]) for r in rows])
    idx = np.random.default_rng(seed).permutation(len(rows))
    te, va = idx[:n_test], idx[n_test : n_test + n_val]
    g, p = idx[n_test + n_val : n_test + n_val + n_gold], idx[n_test + n_val + n_gold :]
    if len(p) == 0:
        raise ValueError(f"{path}: {len(rows)} rows leave no preference-labelled queries for n_gold={n_gold}")
    return RoutingData(
        X[g], gl[g], X[p], pl[p], gl[p], gl[p] - pl[p], X[va], gl[va], X[te], gl[te], gl[te] - pl[te], gl[te]
    )
