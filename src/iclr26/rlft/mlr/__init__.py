"""MLR: *Enhancing Language Model Reasoning with Structured Multi-Level Modeling* (Xiong, Payani, Fekri, ICLR 2026,
https://openreview.net/forum?id=PlkzZhqBCd; code https://github.com/xiongsiheng/MLR).

One backbone serves two levels: the executor is the model with the adapter off, the planner a LoRA adapter on the
same weights (`system.MLRSystem`, `add_planner`). Decoding alternates plan -> execute. Training: SFT of each level
(`dpo.masked_sft`), then iterative online Step-DPO (`trainer.iterative_step_dpo`, loss `dpo.step_dpo_loss`) whose
step-level pairs share a prefix and are ranked by Twisted SMC incremental importance weights estimated from
Monte-Carlo rollouts (`tsmc.tsmc_log_weight`, `tsmc.step_pairs`). Works on any HF causal LM whose tokenizer has the
step markers written by its tokenizer (`StepFormat`; a marker may span several tokens).
"""

from .config import MLRConfig
from .dpo import completion_logps, encode_parts, masked_logps, masked_sft, step_dpo, step_dpo_loss
from .system import MLRSystem, StepFormat, Traj, add_marker_tokens, add_planner, final_text, planner_lora_config
from .trainer import collect_pairs, iterative_step_dpo, prefix_groups, set_trainable, train_on_pairs
from .tsmc import mc_twist, step_pairs, tsmc_log_weight

__all__ = [
    "MLRConfig", "MLRSystem", "StepFormat", "Traj", "add_marker_tokens", "add_planner", "collect_pairs",
    "completion_logps", "encode_parts", "final_text", "iterative_step_dpo", "masked_logps", "masked_sft", "mc_twist",
    "planner_lora_config", "prefix_groups", "set_trainable", "step_dpo", "step_dpo_loss", "step_pairs",
    "train_on_pairs", "tsmc_log_weight",
]  # fmt: skip
