"""Preference-label bias as a CATE: the R-learner and the DR-learner on random forests.

Meta-Router (Zhang, Xie, Yang, Wu; ICLR 2026, https://arxiv.org/abs/2509.25535) treats *which evaluation mechanism
produced a label* as a treatment: T = 1 for a gold-standard (GS) label, T = 0 for a preference-based (PB) label. The
observed label is Y = T·Y(1) + (1 − T)·Y(0), and the systematic error of PB labels,

    δ(x) = E[Y(1) − Y(0) | X = x] = μ₁(x) − μ₀(x),                                       (the CATE)

is identified under unconfoundedness and overlap 0 < e(x) = P(T = 1 | X = x) < 1. Two meta-learners estimate it:

- **R-learner** (Nie & Wager): δ̂ = argmin_τ Σᵢ [(Yᵢ − m̂(Xᵢ)) − (Tᵢ − ê(Xᵢ)) τ(Xᵢ)]², with m(x) = E[Y | X = x];
  solved by a weighted regression of the pseudo-outcome (Y − m̂)/(T − ê) on X with weights (T − ê)².
- **DR-learner** (Kennedy): regress the doubly robust pseudo-outcome
  φ = (T − ê)/(ê(1 − ê))·(Y − μ̂_T(X)) + μ̂₁(X) − μ̂₀(X) on X.

Nuisances (m, e, μ) are random forests as in the released code. The released code fits them *in sample*; theory asks
for K-fold cross-fitting (each nuisance prediction comes from forests that did not see that sample), which is our
default (`crossfit=5`); `crossfit=0` reproduces the released code. `CateConfig.released_code()` sets the released
clipping and trimming constants as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.base import clone
from sklearn.ensemble import RandomForestRegressor
from sklearn.model_selection import KFold


@dataclass(frozen=True)
class ForestConfig:
    """A random-forest regressor (scikit-learn). Defaults: the released code's nuisance / η forests."""

    n_estimators: int = field(default=100, metadata={"help": "trees (released code: 100; CATE forest 200)"})
    max_depth: int | None = field(default=20, metadata={"help": "tree depth (released code: 20; CATE forest 30)"})
    min_samples_leaf: int = field(default=1, metadata={"help": "leaf size (released code: 1; CATE forest 2)"})
    min_samples_split: int = field(default=2, metadata={"help": "split size (released code: 2; CATE forest 5)"})
    max_features: str | float | None = field(default="sqrt", metadata={"help": "features per split (code: sqrt)"})
    random_state: int = field(default=42, metadata={"help": "forest seed (released code: 42)"})

    def __post_init__(self):
        for name, lo in (("n_estimators", 1), ("min_samples_leaf", 1), ("min_samples_split", 2)):
            if getattr(self, name) < lo:
                raise ValueError(f"ForestConfig.{name} must be ≥ {lo}, got {getattr(self, name)!r}")
        if self.max_depth is not None and self.max_depth < 1:
            raise ValueError(f"ForestConfig.max_depth must be ≥ 1 or None, got {self.max_depth!r}")

    def make(self) -> RandomForestRegressor:
        return RandomForestRegressor(
            n_estimators=self.n_estimators,
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            min_samples_split=self.min_samples_split,
            max_features=self.max_features,
            random_state=self.random_state,
            n_jobs=1,
        )


# the δ̂ forest: the released code's (200 trees, depth 30, split 5) with leaves of 50 instead of 2. With cross-fitted
# nuisances the R pseudo-outcome (Y − m̂)/(T − ê) of a preference label is ~1/ê ≈ 20× its residual, and leaves of 2
# fit that noise (normalised gain 0.24 at n_G = 100, below Golden-only's 0.72); 50 was the median leaf the VERSION 3
# validation tuning picked (ours)
CATE_FOREST = ForestConfig(n_estimators=200, max_depth=30, min_samples_leaf=50, min_samples_split=100)
CATE_FOREST_CODE = ForestConfig(n_estimators=200, max_depth=30, min_samples_leaf=2, min_samples_split=5)


@dataclass(frozen=True)
class CateConfig:
    """Hyper-parameters of the R- and DR-learners (defaults: cross-fitted; see `released_code()`)."""

    nuisance: ForestConfig = field(default_factory=ForestConfig, metadata={"help": "m̂, ê, μ̂ forests (code values)"})
    cate: ForestConfig = field(
        default_factory=lambda: CATE_FOREST, metadata={"help": "δ̂ forest (code values but leaf 50, code 2; ours)"}
    )
    crossfit: int = field(
        default=5, metadata={"help": "K folds for the nuisances; 0 = in-sample as in the released code (our choice: 5)"}
    )
    propensity_clip: float = field(
        default=0.02,
        metadata={"help": "ê clipped to [c, 1−c] (code: 0.1 for R, 0.05 for DR; our choice 0.02: caps 1/ê at 50)"},
    )
    r_min: float = field(default=0.0, metadata={"help": "R: keep samples with |T − ê| > r_min (code: 0.05)"})
    trim: float = field(default=0.0, metadata={"help": "DR: keep samples with ê(1 − ê) > trim (code: 0.05)"})
    clip_effect: float = field(default=1.2, metadata={"help": "δ̂ predictions clipped to [−c, c] (code: 1.2)"})

    def __post_init__(self):
        if self.crossfit == 1 or self.crossfit < 0:
            raise ValueError(f"CateConfig.crossfit must be 0 (in-sample) or ≥ 2 folds, got {self.crossfit!r}")
        if not 0.0 <= self.propensity_clip < 0.5:
            raise ValueError(f"CateConfig.propensity_clip must be in [0, 0.5), got {self.propensity_clip!r}")
        if not 0.0 <= self.r_min < 1.0:
            raise ValueError(f"CateConfig.r_min must be in [0, 1), got {self.r_min!r}")
        if not 0.0 <= self.trim < 0.25:
            raise ValueError(f"CateConfig.trim must be in [0, 0.25), got {self.trim!r}")
        if not self.clip_effect > 0:
            raise ValueError(f"CateConfig.clip_effect must be > 0, got {self.clip_effect!r}")

    @classmethod
    def released_code(cls, learner: str) -> CateConfig:
        """The constants of the released script (PC50_varstd_RF_100G.py): in-sample nuisances, its clips/trims."""
        if learner == "r":
            return cls(cate=CATE_FOREST_CODE, crossfit=0, propensity_clip=0.1, r_min=0.05)
        if learner == "dr":
            return cls(cate=CATE_FOREST_CODE, crossfit=0, propensity_clip=0.05, trim=0.05)
        raise ValueError(f"learner must be 'r' or 'dr', got {learner!r}")


def _as_arrays(X, Y, T):
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float).reshape(-1)
    T = np.asarray(T, dtype=float).reshape(-1)
    if X.ndim != 2 or len(X) != len(Y) or len(Y) != len(T):
        raise ValueError(f"X must be (n, d) with Y, T of length n; got X {X.shape}, Y {Y.shape}, T {T.shape}")
    for name, a in (("X", X), ("Y", Y)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} holds NaN or inf ({int((~np.isfinite(a)).sum())} entries); drop or impute them")
    if not np.isin(T, (0.0, 1.0)).all():
        raise ValueError("T must be 0/1 (1 = gold-standard label, 0 = preference label)")
    if T.min() == T.max():
        raise ValueError("T has one value only: the bias needs both gold-standard (T=1) and preference (T=0) labels")
    return X, Y, T


def folds(n: int, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cross-fitting splits (train, held-out); k = 0 means one in-sample 'split' (train = predict = all)."""
    if k == 0:
        idx = np.arange(n)
        return [(idx, idx)]
    return list(KFold(k, shuffle=True, random_state=seed).split(np.zeros(n)))


def crossfit_predict(model, X, y, splits) -> np.ndarray:
    """Out-of-fold predictions of `model` (a fresh clone per fold); in-sample when the one split is (all, all)."""
    out = np.empty(len(X))
    for train, test in splits:
        out[test] = clone(model).fit(X[train], y[train]).predict(X[test])
    return out


def propensity(model, X, T, splits, clip: float) -> np.ndarray:
    """ê(x) = P(T = 1 | x): predict_proba of a classifier or the prediction of a regressor, clipped (code)."""
    e = np.empty(len(X))
    for train, test in splits:
        m = clone(model).fit(X[train], T[train])
        e[test] = m.predict_proba(X[test])[:, 1] if hasattr(m, "predict_proba") else m.predict(X[test])
    return np.clip(e, clip, 1.0 - clip)


class _CateLearner:
    def __init__(self, cfg: CateConfig | None = None, *, outcome=None, propensity_model=None, cate_model=None):
        self.cfg = cfg or CateConfig()
        self.outcome = outcome if outcome is not None else self.cfg.nuisance.make()
        self.propensity_model = propensity_model if propensity_model is not None else self.cfg.nuisance.make()
        self.cate_model = cate_model if cate_model is not None else self.cfg.cate.make()

    def predict(self, X) -> np.ndarray:
        """δ̂(x), clipped to [−clip_effect, clip_effect] as in the released code."""
        c = self.cfg.clip_effect
        return np.clip(self.cate_model_.predict(np.asarray(X, dtype=float)), -c, c)

    def refit_final(self, cate_model) -> _CateLearner:
        """Refit only the final δ̂ regression on the stored pseudo-outcomes (nuisances reused: cheap tuning)."""
        new = _copy_with(self, cate_model)
        X, y, w = self.final_data_
        new.cate_model_ = clone(cate_model).fit(X, y, sample_weight=w)
        return new


def _copy_with(learner, cate_model):
    new = object.__new__(type(learner))
    new.__dict__.update(learner.__dict__)
    new.cate_model = cate_model
    return new


class RLearner(_CateLearner):
    """δ̂ by the R-learner: weighted regression of (Y − m̂)/(T − ê) on X with weights (T − ê)²."""

    def fit(self, X, Y, T, seed: int = 0) -> RLearner:
        X, Y, T = _as_arrays(X, Y, T)
        splits = folds(len(X), self.cfg.crossfit, seed)
        m = crossfit_predict(self.outcome, X, Y, splits)  # m̂(x) = E[Y | X = x]
        e = propensity(self.propensity_model, X, T, splits, self.cfg.propensity_clip)
        r = T - e
        keep = np.abs(r) > self.cfg.r_min  # code: |T − ê| > 0.05
        if keep.sum() < 2:
            raise ValueError(f"R-learner: only {keep.sum()} samples have |T − ê| > r_min={self.cfg.r_min}; lower r_min")
        # R-loss Σ [(Y − m̂) − (T − ê)τ]² = Σ (T − ê)² [(Y − m̂)/(T − ê) − τ]²: a weighted regression.
        pseudo, w = (Y - m)[keep] / r[keep], r[keep] ** 2
        self.nuisances_ = {"m": m, "e": e}
        self.final_data_ = (X[keep], pseudo, w)
        self.cate_model_ = clone(self.cate_model).fit(X[keep], pseudo, sample_weight=w)
        return self


def dr_pseudo_outcome(Y, T, e, mu0, mu1) -> np.ndarray:
    """φ = (T − e)/(e(1 − e))·(Y − μ_T) + μ₁ − μ₀ (Kennedy's DR-learner; E[φ | X] = δ(X) if e or μ is right)."""
    muT = np.where(T == 1, mu1, mu0)
    return (T - e) / (e * (1 - e)) * (Y - muT) + mu1 - mu0


class DRLearner(_CateLearner):
    """δ̂ by the DR-learner: regression of the doubly robust pseudo-outcome on X; μ̂ is one forest on [X, T]."""

    def fit(self, X, Y, T, seed: int = 0) -> DRLearner:
        X, Y, T = _as_arrays(X, Y, T)
        splits = folds(len(X), self.cfg.crossfit, seed)
        XT = np.column_stack([X, T])
        mu0, mu1 = np.empty(len(X)), np.empty(len(X))
        for train, test in splits:  # μ̂(x, t): one forest on [X, T] (released code), read at t = 0 and t = 1
            m = clone(self.outcome).fit(XT[train], Y[train])
            mu0[test] = m.predict(np.column_stack([X[test], np.zeros(len(test))]))
            mu1[test] = m.predict(np.column_stack([X[test], np.ones(len(test))]))
        e = propensity(self.propensity_model, X, T, splits, self.cfg.propensity_clip)
        keep = e * (1 - e) > self.cfg.trim  # code: ê(1 − ê) > 0.05
        if keep.sum() < 2:
            raise ValueError(
                f"DR-learner: only {keep.sum()} samples have ê(1−ê) > trim={self.cfg.trim} (max ê(1−ê) = "
                f"{(e * (1 - e)).max():.3g}); lower trim (the released code's 0.05 needs in-sample, overfitted ê)"
            )
        phi = dr_pseudo_outcome(Y, T, e, mu0, mu1)
        self.nuisances_ = {"mu0": mu0, "mu1": mu1, "e": e}
        self.final_data_ = (X[keep], phi[keep], None)
        self.cate_model_ = clone(self.cate_model).fit(X[keep], phi[keep])
        return self


class TLearner(_CateLearner):
    """Control: δ̂ = μ̂₁ − μ̂₀ from two outcome forests, one on the GS labels, one on the PB labels (no propensity,
    no residualisation). Consistent under unconfoundedness, but μ̂₁ sees only the n_G gold labels."""

    def fit(self, X, Y, T, seed: int = 0) -> TLearner:
        X, Y, T = _as_arrays(X, Y, T)
        self.mu1_ = clone(self.outcome).fit(X[T == 1], Y[T == 1])
        self.mu0_ = clone(self.outcome).fit(X[T == 0], Y[T == 0])
        return self

    def predict(self, X) -> np.ndarray:
        X, c = np.asarray(X, dtype=float), self.cfg.clip_effect
        return np.clip(self.mu1_.predict(X) - self.mu0_.predict(X), -c, c)

    def refit_final(self, cate_model):
        raise ValueError("the T-learner has no final δ̂ regression to refit")


class ConstantShift(_CateLearner):
    """Control: one constant bias, δ̂ = mean over the GS queries of (Y_GS − μ̂₀(x)), with μ̂₀ the PB-label forest
    (a regression-adjusted mean difference: unbiased for the average bias even when the GS queries are not a random
    subset). It corrects the judge's average error and none of its heterogeneity."""

    def fit(self, X, Y, T, seed: int = 0) -> ConstantShift:
        X, Y, T = _as_arrays(X, Y, T)
        mu0 = clone(self.outcome).fit(X[T == 0], Y[T == 0])
        self.shift_ = float(np.mean(Y[T == 1] - mu0.predict(X[T == 1])))
        return self

    def predict(self, X) -> np.ndarray:
        c = self.cfg.clip_effect
        return np.full(len(np.asarray(X)), float(np.clip(self.shift_, -c, c)))

    def refit_final(self, cate_model):
        raise ValueError("the constant shift has no final δ̂ regression to refit")


LEARNERS = {"r": RLearner, "dr": DRLearner, "t": TLearner, "shift": ConstantShift}


def make_learner(kind: str, cfg: CateConfig | None = None, **models) -> _CateLearner:
    """'r' (R-learner), 'dr' (DR-learner): the paper's; 't' (T-learner), 'shift' (constant shift): controls."""
    if kind not in LEARNERS:
        raise ValueError(f"unknown CATE learner {kind!r}; expected one of {sorted(LEARNERS)} "
                         "('r' R-learner, 'dr' DR-learner, 't' T-learner, 'shift' constant shift)")  # fmt: skip
    return LEARNERS[kind](cfg, **models)


def with_leaf(cfg: ForestConfig, leaf: int) -> ForestConfig:
    return replace(cfg, min_samples_leaf=leaf, min_samples_split=max(cfg.min_samples_split, 2 * leaf))
