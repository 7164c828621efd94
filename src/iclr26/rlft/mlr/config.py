"""MLR's hyper-parameters in one dataclass (TRL style: each field says where its value comes from)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MLRConfig:
    # --- the two levels (paper §3; repository `SFT_highLevel.py`) ---
    lora_r: int = field(default=16, metadata={"help": "planner LoRA rank (repo: 16)"})
    lora_alpha: int = field(default=32, metadata={"help": "planner LoRA alpha (repo: 32)"})
    lora_dropout: float = field(default=0.1, metadata={"help": "planner LoRA dropout (repo: 0.1)"})
    lora_targets: tuple[str, ...] | None = field(
        default=None, metadata={"help": "modules the LoRA wraps; None = attention q/k/v/o of the architecture (repo)"}
    )
    max_stages: int = field(
        default=20, metadata={"help": "plan-execute stages before the final step is forced (repo: 20)"}
    )
    max_plan_tokens: int = field(default=128, metadata={"help": "planner tokens per step (repo: 128)"})
    max_exec_tokens: int = field(default=1024, metadata={"help": "executor tokens per step (repo: 1024)"})
    max_rollout_tokens: int = field(
        default=16384, metadata={"help": "tokens of one fast Monte-Carlo rollout to the end of the trace (repo: 16384)"}
    )
    temperature: float = field(default=0.6, metadata={"help": "sampling temperature of both levels (repo: 0.6)"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling (repo: 0.95)"})
    skip_repeated_plans: bool = field(
        default=True, metadata={"help": "skip a step whose descriptor repeats the previous one (repo: yes)"}
    )
    # --- TSMC step rewards (repo `utils.obtain_TSMC_rewards`) ---
    n_rollouts: int = field(default=8, metadata={"help": "N, Monte-Carlo rollouts per twist estimate (repo: 8)"})
    k_candidates: int = field(default=4, metadata={"help": "candidates sampled per prefix (dossier: 4; not stated)"})
    candidate_temperature: float = field(
        default=1.0, metadata={"help": "temperature of the K candidates (not stated; ours, for diversity)"}
    )
    eps: float = field(default=1e-3, metadata={"help": "eps inside the log-weights (repo: 1e-3)"})
    clip: float = field(default=5.0, metadata={"help": "clip of the log-weight to [-clip, clip] (repo: 5)"})
    likelihood_terms: bool = field(
        default=False,
        metadata={
            "help": "divide the twists by p = exp(mean token log-prob) as the repo's helper does; off = proposal "
            "equals the target, the probabilities cancel (standard TSMC, the dossier's default)"
        },
    )
    pair_gap: float = field(default=0.1, metadata={"help": "min r(chosen) - r(rejected) to keep a pair (not stated)"})
    prefix_batch: int = field(default=64, metadata={"help": "online rollouts (one prefix each) per collection batch"})
    max_prefix_batches: int = field(
        default=4, metadata={"help": "collection batches per round at most (caps the rollout cost; ours)"}
    )
    pair_rule: str = field(
        default="tsmc",
        metadata={"help": "'tsmc' (paper), 'outcome' (one rollout per candidate, binary), 'random' (control)"},
    )
    # --- Step-DPO (repo `stepDPO_highLevel.py`, `stepDPO_lowLevel.py`: TRL DPOTrainer) ---
    beta: float = field(default=0.1, metadata={"help": "DPO beta (repo: 0.1)"})
    dpo_lr_planner: float = field(default=5e-5, metadata={"help": "planner Step-DPO lr (repo: 5e-5)"})
    dpo_lr_executor: float = field(default=5e-6, metadata={"help": "executor Step-DPO lr (repo: 5e-6)"})
    dpo_epochs: int = field(default=2, metadata={"help": "epochs per round (repo: 2)"})
    dpo_batch_size: int = field(default=16, metadata={"help": "pairs per step (repo: 2 x 8 accumulation)"})
    rounds: int = field(default=3, metadata={"help": "online Step-DPO iterations (not stated; dossier: 2-3)"})
    levels: tuple[str, ...] = field(default=("planner", "executor"), metadata={"help": "levels that get pairs"})

    def __post_init__(self):
        for name in ("lora_r", "max_stages", "max_plan_tokens", "max_exec_tokens", "max_rollout_tokens", "n_rollouts",
                     "dpo_epochs", "prefix_batch", "max_prefix_batches", "dpo_batch_size", "rounds"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"MLRConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.k_candidates < 2:
            raise ValueError(f"MLRConfig.k_candidates must be >= 2 (a pair needs two), got {self.k_candidates!r}")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"MLRConfig.lora_dropout must be in [0, 1), got {self.lora_dropout!r}")
        if not (self.temperature > 0 and self.candidate_temperature > 0 and 0 < self.top_p <= 1):
            raise ValueError("MLRConfig: temperatures must be > 0 and top_p in (0, 1]")
        if not (self.eps > 0 and self.clip > 0 and self.beta > 0 and self.pair_gap >= 0):
            raise ValueError("MLRConfig: eps, clip and beta must be > 0 and pair_gap >= 0")
        if self.pair_rule not in ("tsmc", "outcome", "random"):
            raise ValueError(f"MLRConfig.pair_rule must be 'tsmc', 'outcome' or 'random', got {self.pair_rule!r}")
        if not self.levels or not set(self.levels) <= {"planner", "executor"}:
            raise ValueError(f"MLRConfig.levels must be a non-empty subset of (planner, executor), got {self.levels!r}")
