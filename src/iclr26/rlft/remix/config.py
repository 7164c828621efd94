"""`ReMixConfig`: TRL's `GRPOConfig` plus ReMix's hyper-parameters (defaults: the paper's ReMix-GRPO values)."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig


@dataclass
class ReMixConfig(GRPOConfig):
    r"""Configuration of [`ReMixTrainer`]: every field of `GRPOConfig`, plus Mix-PPG, KL-Convex and reincarnation.

    Switching the new parts off (``off_policy_ratio=0`` or ``history_window=0``, ``utd=1``, ``kl_convex=False``,
    ``reincarnate_at=None``) gives exactly `GRPOTrainer`'s loss, also with TRL's token masks ``top_entropy_quantile``
    and ``off_policy_mask_threshold`` (implemented as TRL does; on replayed rows the off-policy mask measures the KL
    to the behaviour policy pi_{k-i}). ``num_iterations`` must stay 1: the update-to-data ratio of ReMix is ``utd``
    (TRL's ``num_iterations`` would be the same thing, but ReMix switches it off at reincarnation, which TRL's
    sampler cannot follow). Not supported, with an error: loss types other than the clipped ones, sequence-level
    importance sampling, adaptive entropy, vLLM generation and the Liger loss.
    """

    off_policy_ratio: float = field(
        default=0.4,
        metadata={"help": "p: share of each training batch drawn from the replay of past policies' rollouts; the "
                  "fresh rollouts per iteration shrink to (1 - p) of the batch (paper §4 / dossier: 0.4)"},
    )  # fmt: skip
    history_window: int = field(
        default=2, metadata={"help": "N: rollouts of the last N policies are replayed (paper: 2)"}
    )
    utd: int = field(
        default=2,
        metadata={"help": "m: update-to-data ratio, passes of gradient updates over each mixed batch (paper: 2)"},
    )
    kl_convex: bool = field(
        default=True,
        metadata={"help": "KL-Convex: KL to lambda * base + (1 - lambda) * previous policy, weighted by `beta`; False: "
                  "KL to the base only (TRL's KL), i.e. lambda = 1 (paper: on)"},
    )  # fmt: skip
    kl_lambda_start: int = field(default=50, metadata={"help": "lambda(t) = 1 up to this iteration (paper: 50)"})
    kl_lambda_every: int = field(
        default=10, metadata={"help": "then lambda drops by `kl_lambda_drop` every this many iterations (paper: 10)"}
    )
    kl_lambda_drop: float = field(default=0.1, metadata={"help": "drop of lambda per interval (paper: 0.1)"})
    kl_lambda_floor: float = field(default=0.5, metadata={"help": "lower bound of lambda (paper: 0.5)"})
    reincarnate_at: int | None = field(
        default=50,
        metadata={"help": "T: after iteration T the base (KL anchor) becomes the current policy, the replay is "
                  "emptied and training goes on-policy (p = 0, m = 1); None: never (paper ReMix-GRPO: 50)"},
    )  # fmt: skip

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 <= self.off_policy_ratio < 1.0:
            raise ValueError(f"ReMixConfig.off_policy_ratio must be in [0, 1), got {self.off_policy_ratio!r}")
        if self.history_window < 0:
            raise ValueError(f"ReMixConfig.history_window must be >= 0, got {self.history_window!r}")
        if self.utd < 1:
            raise ValueError(f"ReMixConfig.utd must be >= 1, got {self.utd!r}")
        if self.num_iterations != 1:
            raise ValueError(
                f"ReMixConfig.num_iterations must be 1, got {self.num_iterations!r}; set the update-to-data ratio "
                "with `utd` instead"
            )
        if self.kl_lambda_every < 1 or self.kl_lambda_start < 0:
            raise ValueError("ReMixConfig.kl_lambda_every must be >= 1 and kl_lambda_start >= 0")
        if not 0.0 <= self.kl_lambda_floor <= 1.0 or not 0.0 <= self.kl_lambda_drop <= 1.0:
            raise ValueError("ReMixConfig.kl_lambda_floor and kl_lambda_drop must be in [0, 1]")
        if self.reincarnate_at is not None and self.reincarnate_at < 0:
            raise ValueError(f"ReMixConfig.reincarnate_at must be >= 0 or None, got {self.reincarnate_at!r}")
        if self.loss_type not in ("grpo", "bnpo", "dr_grpo", "dapo"):
            raise ValueError(
                f"ReMixConfig.loss_type must be a clipped-ratio loss ('grpo', 'bnpo', 'dr_grpo', 'dapo'), got "
                f"{self.loss_type!r}"
            )
        if self.importance_sampling_level != "token":
            raise ValueError("ReMix uses token-level importance ratios: set importance_sampling_level='token'")
        if self.use_adaptive_entropy:
            raise ValueError("ReMixConfig: use_adaptive_entropy is not supported; use a static entropy_coef")
        if self.use_vllm:
            raise ValueError(
                "ReMixConfig: use_vllm is not supported (vLLM rollouts carry sampler log-probs and importance weights "
                "that the replay does not keep); generate with transformers (use_vllm=False)"
            )
        if self.use_liger_kernel:
            raise ValueError(
                "ReMixConfig: use_liger_kernel is not supported (the Liger GRPO loss would bypass Mix-PPG and "
                "KL-Convex); set use_liger_kernel=False"
            )
        local = self.per_device_train_batch_size * self.steps_per_generation
        if local % self.num_generations:
            raise ValueError(
                f"ReMix replays whole prompt groups: per_device_train_batch_size * steps_per_generation ({local}) must "
                f"be a multiple of num_generations ({self.num_generations})"
            )

    @property
    def mixing(self) -> bool:
        return self.off_policy_ratio > 0 and self.history_window > 0
