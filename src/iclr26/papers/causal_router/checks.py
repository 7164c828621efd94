"""The causal-router card's config, checked in the driver before any worker starts (issue 48): every method config
the run builds from the card config (the η̂, nuisance and δ̂ `ForestConfig`s at every leaf size, `CateConfig`,
`MetaRouterConfig` for each meta-learner, `SourceRouterConfig` for each baseline: their own range checks run) and the
ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error naming the field. Kept out of the
experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math
from dataclasses import replace

from iclr26.agents.causal_router import CateConfig, MetaRouterConfig, SourceRouterConfig
from iclr26.agents.causal_router.learners import with_leaf

from . import Cfg
from .experiment import META, _forests

N_DIGITS = 1797  # scikit-learn's bundled digits: the semi-real world's queries
N_FIXED = 100  # the gold labels of the digits, no-bias, shuffled and confounded settings


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_pool": 2, "n_test": 2, "d": 4, "n_trees": 1, "n_trees_cate": 1})
    _need(math.isfinite(cfg.confounding) and cfg.confounding >= 0, "confounding", "finite and ≥ 0 (0: off)",
          cfg.confounding)  # fmt: skip
    lo, hi = cfg.cv_folds, cfg.n_pool - 1  # the baselines' K-fold CV splits the gold labels; one PB query at least
    ok = bool(cfg.n_golds) and all(isinstance(n, int) and lo <= n <= hi for n in cfg.n_golds)
    _need(ok, "n_golds", f"a non-empty tuple of gold-label counts in [{lo}, n_pool − 1 = {hi}] (≥ cv_folds)",
          cfg.n_golds)  # fmt: skip
    if cfg.controls or cfg.confounding:
        _need(cfg.n_pool > N_FIXED, "n_pool", f"> {N_FIXED} (the control / confounded settings' gold labels)",
              cfg.n_pool)  # fmt: skip
    if cfg.digits:
        hi = N_DIGITS - N_FIXED - 1
        _need(cfg.n_test <= hi, "n_test", f"≤ {hi} (the {N_DIGITS} digits hold n_test, {N_FIXED} gold and ≥ 1 PB)",
              cfg.n_test)  # fmt: skip
    final, cate = _forests(cfg, 0)  # ForestConfig: n_estimators ≥ 1
    for leaf in (cfg.final_leaf, *cfg.leaf_grid):
        with_leaf(final, int(leaf))  # min_samples_leaf ≥ 1
    cate_cfg = CateConfig(nuisance=final, cate=cate, crossfit=cfg.crossfit, propensity_clip=cfg.propensity_clip)
    for learner in META:  # MetaRouterConfig: learner name; CateConfig: crossfit 0 or ≥ 2, clip in [0, 0.5)
        MetaRouterConfig(learner, cate_cfg, with_leaf(final, cfg.final_leaf), seed=0)
        if cfg.released_code_arms and learner in ("r", "dr"):
            rel = replace(CateConfig.released_code(learner), nuisance=final)
            rel = replace(rel, cate=replace(rel.cate, n_estimators=cfg.n_trees_cate, random_state=0))
            MetaRouterConfig(learner, rel, with_leaf(final, cfg.final_leaf), seed=0)
    for source in ("golden", "preference", "pooled"):
        SourceRouterConfig(source, with_leaf(final, cfg.final_leaf))
