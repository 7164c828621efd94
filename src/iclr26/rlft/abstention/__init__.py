"""Abstention-aware RL for temporal QA (Zhou et al., *When Silence Is Golden: Can LLMs Learn to Abstain in Temporal
QA and Beyond?*, ICLR 2026, https://arxiv.org/abs/2602.04755; code https://github.com/Blackzxy/AbstentionTemporalQA).

Two stages on TRL: CoT-SFT (`cot_sft_trainer`, an `SFTTrainer`) and GRPO with the rule-based abstention-aware
reward (`abstention_grpo_trainer`, a `GRPOTrainer` with `AbstentionReward().reward_funcs`); `abstention_metrics`
scores EM, true positives on unanswerables and over-abstention; `HeldOutRewardStopping` trains GRPO until its held-out
greedy reward stops improving.
"""

from .metrics import abstention_metrics
from .reward import FORMAT_RE, NO_ANSWER, AbstentionReward, em_only_reward, extract_answer, rouge_l
from .stopping import HeldOutRewardStopping, ScoreStopping
from .tokenizer import exact_word_tokenizer
from .trainers import (
    SYSTEM,
    abstention_grpo_trainer,
    cot_sft_trainer,
    generate,
    grpo_config,
    grpo_dataset,
    sft_config,
    sft_dataset,
    uses_chat,
)

__all__ = [
    "FORMAT_RE",
    "NO_ANSWER",
    "SYSTEM",
    "AbstentionReward",
    "HeldOutRewardStopping",
    "ScoreStopping",
    "abstention_grpo_trainer",
    "abstention_metrics",
    "cot_sft_trainer",
    "em_only_reward",
    "exact_word_tokenizer",
    "extract_answer",
    "generate",
    "grpo_config",
    "grpo_dataset",
    "rouge_l",
    "sft_config",
    "sft_dataset",
    "uses_chat",
]
