"""Reinforcement finetuning and preference/safety training of causal LMs on TRL and peft: ReMix (off-policy GRPO with
mixed rollouts, KL-Convex and policy reincarnation), abstention-aware GRPO for temporal QA, VTA's Time-GRPO, MLR
(planner/executor with TSMC Step-DPO), Antibody (a defence against harmful fine-tuning) and AUTO-RT (RL red-teaming in
an abstract world). Each paper has its own subpackage (``rlft.remix``, ``rlft.abstention``, ``rlft.vta``,
``rlft.mlr``, ``rlft.antibody``, ``rlft.autort``); this package imports none of them, so that it stays light.
"""
