"""Reinforcement finetuning of causal LMs on TRL: ReMix (off-policy GRPO with mixed rollouts, KL-Convex and policy
reincarnation), abstention-aware GRPO for temporal QA, and VTA's Time-GRPO. Each paper has its own subpackage
(``rlft.remix``, ``rlft.abstention``, ``rlft.vta``); this package imports none of them, so that it stays light.
"""
