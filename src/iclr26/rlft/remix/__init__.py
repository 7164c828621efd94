"""ReMix: Reincarnating Mix-policy Proximal Policy Gradient (Liang et al., *Squeeze the Soaked Sponge: Efficient
Off-policy Reinforcement Finetuning for Large Language Model*, ICLR 2026, https://arxiv.org/abs/2507.06892), on TRL.

On-policy RFT (PPO, GRPO) uses each rollout for one update. ReMix reuses the rollouts of the last N policies:
Mix-PPG trains on batches that mix fresh rollouts with replayed ones (importance ratio against each rollout's
behaviour policy, clip interval re-centred at pi_k / pi_{k-i}) for m > 1 passes per batch; the KL-Convex constraint
pulls towards a convex combination of the base and the previous policy with a decaying weight; policy reincarnation
at iteration T makes the current policy the new base and finishes with on-policy GRPO.

    from trl import GRPOConfig  # ReMixConfig has every GRPOConfig field
    from iclr26.rlft.remix import ReMixConfig, ReMixTrainer
    args = ReMixConfig(output_dir="out", off_policy_ratio=0.4, history_window=2, utd=2, reincarnate_at=50, beta=0.001)
    trainer = ReMixTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train(); print(trainer.rollouts)

Modules: `losses` (the equations as tensor functions), `buffer` (the replay TRL lacks), `config`, `trainer`.
"""

from .buffer import MixPolicyBuffer, cat_batches
from .config import ReMixConfig
from .evaluate import greedy_accuracy
from .losses import group_advantages, kl_convex, kl_k3, lambda_schedule, mix_ppg_token_loss
from .trainer import ReMixTrainer

__all__ = [
    "ReMixConfig", "ReMixTrainer", "MixPolicyBuffer", "cat_batches", "group_advantages", "mix_ppg_token_loss",
    "kl_k3", "kl_convex", "lambda_schedule", "greedy_accuracy",
]  # fmt: skip
