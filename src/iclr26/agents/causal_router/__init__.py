"""Meta-Router (ICLR 2026, https://arxiv.org/abs/2509.25535): LLM routing from gold-standard and preference labels.

The bias of preference-based (PB) labels relative to gold-standard (GS) labels is a conditional average treatment
effect between two label mechanisms; R- and DR-learners estimate it, PB labels are corrected, and a router is trained
on GS + corrected PB labels. See `router.MetaRouter`, `learners` (the CATE estimators) and `evaluation` (efficiency
curves over primary-model usage ratios).

    from iclr26.agents.causal_router import MetaRouter, MetaRouterConfig
    router = MetaRouter(MetaRouterConfig(learner="dr")).fit(X_gs, y_gs, X_pb, y_pb)
    to_primary = router.route(X_new, usage_ratio=0.4)
"""

from .evaluation import (
    RATIOS,
    curve_mean,
    efficiency_curve,
    efficiency_gain,
    normalized_gain,
    random_efficiency,
    route,
    total_efficiency,
)
from .learners import (
    CATE_FOREST,
    CATE_FOREST_CODE,
    CateConfig,
    ConstantShift,
    DRLearner,
    ForestConfig,
    RLearner,
    TLearner,
    dr_pseudo_outcome,
    make_learner,
)
from .router import MetaRouter, MetaRouterConfig, SourceRouter, SourceRouterConfig

__all__ = [
    "CATE_FOREST",
    "CATE_FOREST_CODE",
    "ConstantShift",
    "TLearner",
    "RATIOS",
    "CateConfig",
    "DRLearner",
    "ForestConfig",
    "MetaRouter",
    "MetaRouterConfig",
    "RLearner",
    "SourceRouter",
    "SourceRouterConfig",
    "curve_mean",
    "dr_pseudo_outcome",
    "efficiency_curve",
    "efficiency_gain",
    "make_learner",
    "normalized_gain",
    "random_efficiency",
    "route",
    "total_efficiency",
]
