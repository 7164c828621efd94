"""MAS²: self-generative, self-configuring, self-rectifying multi-agent systems (Wang et al., ICLR 2026,
https://arxiv.org/abs/2509.24323).

Three meta-agents build a target MAS per query: the Generator (template: roles, protocol, tools), the Implementer
(one backbone from a pool per role, scored by the backbone's features so new backbones need no retraining) and the
Rectifier (edits the running MAS when a tool fails or the budget is overrun). Collaborative Tree Optimisation trains
them offline: a tree of joint choices per query (`cto.build_cto_tree`), cost-sensitive rewards
(`cto.cost_sensitive_rewards`), path credit propagation (`cto.propagate_values`), sibling preferences
(`cto.sibling_preferences`) and value-scaled DPO (`dpo.value_scaled_dpo_loss`), one policy per meta-agent.

Modules: `features` (candidate rows), `policies` (exact discrete meta-policies), `cto`, `dpo`, `system` (inference,
training with early stopping, baselines). The world they act in is `iclr26.agents.mas2.world`.
"""

from .cto import (
    CTOConfig,
    Node,
    Preference,
    build_cto_tree,
    cost_sensitive_rewards,
    propagate_values,
    sibling_preferences,
)
from .dpo import DPOConfig, dpo_loss, value_scaled_dpo_loss
from .policies import MetaAgents, MetaPolicy, MLPScorer
from .system import MAS2, FixedMAS, MAS2Config, MixedMAS, RandomMAS, backbone_share, evaluate, retry_rule, train_cto

__all__ = [
    "CTOConfig",
    "DPOConfig",
    "FixedMAS",
    "MAS2",
    "MAS2Config",
    "MLPScorer",
    "MixedMAS",
    "MetaAgents",
    "MetaPolicy",
    "Node",
    "Preference",
    "RandomMAS",
    "backbone_share",
    "build_cto_tree",
    "cost_sensitive_rewards",
    "dpo_loss",
    "evaluate",
    "propagate_values",
    "retry_rule",
    "sibling_preferences",
    "train_cto",
    "value_scaled_dpo_loss",
]
