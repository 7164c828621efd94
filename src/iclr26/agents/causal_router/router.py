"""The Meta-Router: correct preference labels by the estimated bias, then learn the quality gain from both sources.

Given GS-labelled queries (X_G, Y_G) and PB-labelled queries (X_P, Y_P), the meta-router

1. stacks them with the mechanism indicator T (1 = GS, 0 = PB) and estimates the PB bias δ̂(x) (the CATE) with the
   R- or the DR-learner (`learners.py`);
2. corrects every PB label, Ỹ_P = Y_P + δ̂(X_P), an approximately unbiased proxy of its GS label since
   η(x) = E[Y(0) | x] + δ(x);
3. regresses η̂ on (X_G, Y_G) ∪ (X_P, Ỹ_P), PB samples weighted by λ (the released experiment: λ = 1);
4. routes a query to the primary model when η̂(x) > 0, or the top ρ fraction by η̂ under a usage budget ρ.

The baselines of the paper are `SourceRouter`s: the same final forest on GS labels only (Golden-only), PB labels only
(Preference-only), or both without correction (Pooled, the common practice).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone

from .evaluation import route
from .learners import CateConfig, ForestConfig, make_learner


@dataclass(frozen=True)
class MetaRouterConfig:
    learner: str = field(
        default="dr",
        metadata={"help": "'r' (R-learner) or 'dr' (DR-learner) for the PB bias; 't' / 'shift': controls"},
    )
    cate: CateConfig = field(default_factory=CateConfig, metadata={"help": "the CATE learner (learners.CateConfig)"})
    final: ForestConfig = field(default_factory=ForestConfig, metadata={"help": "η̂ forest (code: 100 trees, depth 20)"})
    lam: float = field(default=1.0, metadata={"help": "weight λ of corrected PB samples in η̂ (released code: 1)"})
    seed: int = field(default=0, metadata={"help": "seed of the cross-fitting folds"})

    def __post_init__(self):
        if self.learner not in ("r", "dr", "t", "shift"):
            raise ValueError(f"MetaRouterConfig.learner must be 'r', 'dr', 't' or 'shift', got {self.learner!r}")
        if not self.lam >= 0:
            raise ValueError(f"MetaRouterConfig.lam must be ≥ 0, got {self.lam!r}")


def _check_xy(X, y, name):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(-1)
    if X.ndim != 2 or len(X) != len(y) or len(y) == 0:
        raise ValueError(f"{name}: X must be (n, d) with n ≥ 1 labels; got X {X.shape}, y {y.shape}")
    for what, a in (("X", X), ("y", y)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name}: {what} holds NaN or inf ({int((~np.isfinite(a)).sum())} entries); drop or "
                             "impute them (a forest would otherwise fail or route on garbage)")  # fmt: skip
    return X, y


class _Router:
    def predict_gain(self, X) -> np.ndarray:
        """η̂(x): the predicted quality gain of the primary model over the alternative."""
        return self.eta_model_.predict(np.asarray(X, dtype=float))

    def route(self, X, usage_ratio: float | None = None, threshold: float = 0.0) -> np.ndarray:
        """Mask of the queries sent to the primary model (see `evaluation.route`)."""
        return route(self.predict_gain(X), usage_ratio, threshold)


class MetaRouter(_Router):
    """`MetaRouter(cfg).fit(X_gs, y_gs, X_pb, y_pb)`; then `.predict_gain(X)`, `.route(X, usage_ratio=0.5)`."""

    def __init__(self, cfg: MetaRouterConfig | None = None, **models):
        self.cfg = cfg or MetaRouterConfig()
        self.models = models  # optional outcome=, propensity_model=, cate_model= estimators (sklearn API)

    def fit(self, X_gs, y_gs, X_pb, y_pb) -> MetaRouter:
        X_gs, y_gs = _check_xy(X_gs, y_gs, "gold-standard data")
        X_pb, y_pb = _check_xy(X_pb, y_pb, "preference data")
        if X_gs.shape[1] != X_pb.shape[1]:
            raise ValueError(f"GS and PB features differ in width: {X_gs.shape[1]} vs {X_pb.shape[1]}")
        X = np.vstack([X_gs, X_pb])
        Y = np.concatenate([y_gs, y_pb])
        T = np.concatenate([np.ones(len(y_gs)), np.zeros(len(y_pb))])  # the treatment: 1 = GS mechanism
        self.cate_ = make_learner(self.cfg.learner, self.cfg.cate, **self.models).fit(X, Y, T, seed=self.cfg.seed)
        self._data = (X_gs, y_gs, X_pb, y_pb)
        return self._fit_final(self.cfg.final)

    def _fit_final(self, final: ForestConfig) -> MetaRouter:
        X_gs, y_gs, X_pb, y_pb = self._data
        self.bias_pb_ = self.cate_.predict(X_pb)  # δ̂(X_P)
        self.corrected_pb_ = y_pb + self.bias_pb_  # Ỹ_P = Y_P + δ̂(X_P)
        w = np.concatenate([np.ones(len(y_gs)), np.full(len(y_pb), self.cfg.lam)])
        self.eta_model_ = final.make().fit(
            np.vstack([X_gs, X_pb]), np.concatenate([y_gs, self.corrected_pb_]), sample_weight=w
        )
        return self

    def predict_bias(self, X) -> np.ndarray:
        """δ̂(x) = estimated E[GS label − PB label | x] (add it to a PB label to correct it)."""
        return self.cate_.predict(X)

    def refit(self, cate: ForestConfig | None = None, final: ForestConfig | None = None) -> MetaRouter:
        """A copy with the δ̂ and/or η̂ forests refitted (same nuisances): for tuning on a validation split."""
        new = object.__new__(MetaRouter)
        new.__dict__.update(self.__dict__)
        if cate is not None:
            new.cate_ = self.cate_.refit_final(cate.make())
        return new._fit_final(final or self.cfg.final)


@dataclass(frozen=True)
class SourceRouterConfig:
    source: str = field(default="pooled", metadata={"help": "'golden', 'preference' or 'pooled' (no correction)"})
    final: ForestConfig = field(default_factory=ForestConfig, metadata={"help": "η̂ forest (code: 100 trees, depth 20)"})

    def __post_init__(self):
        if self.source not in ("golden", "preference", "pooled"):
            raise ValueError(f"SourceRouterConfig.source must be golden|preference|pooled, got {self.source!r}")


class SourceRouter(_Router):
    """The paper's single-source / naive baselines: one forest on GS, PB, or GS ∪ PB labels taken at face value."""

    def __init__(self, cfg: SourceRouterConfig | None = None):
        self.cfg = cfg or SourceRouterConfig()

    def fit(self, X_gs, y_gs, X_pb=None, y_pb=None) -> SourceRouter:
        parts = []
        if self.cfg.source in ("golden", "pooled"):
            parts.append(_check_xy(X_gs, y_gs, "gold-standard data"))
        if self.cfg.source in ("preference", "pooled"):
            if X_pb is None:
                raise ValueError(f"source={self.cfg.source!r} needs preference data X_pb, y_pb")
            parts.append(_check_xy(X_pb, y_pb, "preference data"))
        X = np.vstack([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        self.eta_model_ = clone(self.cfg.final.make()).fit(X, y)
        return self
