"""AUTO-RT (Liu et al., ICLR 2026, https://arxiv.org/abs/2501.01830): reinforcement learning over attack *strategies*
with dynamic strategy pruning (early-terminated exploration, Eq. 3) and progressive reward tracking through a
downgraded target chosen by the First Inverse Rate (Eq. 4, FIR).

The generator is a compact torch policy over abstract strategy tokens (`StrategyPolicy`, the reproduction's) or any
Hugging Face causal LM decoding under the same constraints (`LMStrategyPolicy`), trained by PPO with a KL penalty to
its initial state; it runs against any environment with the staged interface of
`iclr26.rlft.autort.world.RedTeamEnv` (`reset`, `consistent`, `query_downgrade`, `query_target`). The world is abstract:
no harmful text is involved.
"""

from .config import AutoRTConfig
from .lm_policy import LMStrategyPolicy
from .metrics import asr_top_k, semantic_diversity
from .policy import PolicyDivergedError, StrategyPolicy, fit_supervised, to_strategies, to_tokens
from .prt import ProgressiveRewardTracker, first_inverse_rate, select_downgrade, shaped_reward
from .pruning import DynamicStrategyPruner, multi_hot
from .trainer import AutoRT

__all__ = [
    "AutoRT",
    "AutoRTConfig",
    "DynamicStrategyPruner",
    "LMStrategyPolicy",
    "PolicyDivergedError",
    "ProgressiveRewardTracker",
    "StrategyPolicy",
    "asr_top_k",
    "first_inverse_rate",
    "fit_supervised",
    "multi_hot",
    "select_downgrade",
    "semantic_diversity",
    "shaped_reward",
    "to_strategies",
    "to_tokens",
]
