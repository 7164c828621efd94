"""`AutoRTConfig`: every hyper-parameter of AUTO-RT's strategy-generator training in one dataclass (TRL style)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AutoRTConfig:
    use_dsp: bool = field(default=True, metadata={"help": "dynamic strategy pruning / early-terminated exploration"})
    use_prt: bool = field(default=True, metadata={"help": "progressive reward tracking with a downgrade model"})
    target_budget: int = field(
        default=2000, metadata={"help": "model queries of a run (the compared budget; see count_downgrade_queries)"}
    )
    count_downgrade_queries: bool = field(
        default=True,
        metadata={
            "help": "downgrade-model queries count toward target_budget (a weakened copy of the target costs a "
            "query too; the paper counts target queries only: False)"
        },
    )
    max_samples_factor: float = field(
        default=10.0, metadata={"help": "cap on generated strategies, in multiples of the budget (ours)"}
    )
    batch_size: int = field(default=64, metadata={"help": "strategies per policy update (not stated; ours)"})
    lr: float | None = field(
        default=None,
        metadata={
            "help": "Adam learning rate (not stated); None: the generator's default_lr (StrategyPolicy 3e-3, "
            "LMStrategyPolicy 1e-6: a pretrained LM diverges at 3e-3); the reproduction tunes it on validation"
        },
    )
    ppo_epochs: int = field(default=2, metadata={"help": "PPO passes per batch (not stated; ours)"})
    clip: float = field(default=0.2, metadata={"help": "PPO clip epsilon (dossier best guess: 0.2)"})
    kl_coef: float = field(default=0.05, metadata={"help": "KL to the initial generator (dossier best guess: 0.05)"})
    sim_threshold: float = field(default=0.85, metadata={"help": "c_1, cosine to the pool (dossier guess: 0.85)"})
    div_penalty: float = field(default=-1.0, metadata={"help": "C for a redundant strategy (dossier guess: -1)"})
    cons_penalty: float = field(default=-1.0, metadata={"help": "C for a lost intent (dossier guess: -1)"})
    hidden: int = field(default=64, metadata={"help": "GRU width of the toy generator (ours; paper: Vicuna-7B)"})
    seed: int = 0

    def __post_init__(self):
        if self.target_budget < 1:
            raise ValueError(f"AutoRTConfig.target_budget must be >= 1, got {self.target_budget!r}")
        if self.max_samples_factor < 1:
            raise ValueError(f"AutoRTConfig.max_samples_factor must be >= 1, got {self.max_samples_factor!r}")
        if self.batch_size < 2:
            raise ValueError(f"AutoRTConfig.batch_size must be >= 2 (advantages need a batch), got {self.batch_size!r}")
        if self.lr is not None and not (isinstance(self.lr, (int, float)) and 0 < self.lr < float("inf")):
            raise ValueError(f"AutoRTConfig.lr must be a finite number > 0 (or None for the default), got {self.lr!r}")
        if not 0 < self.clip < 1:
            raise ValueError(f"AutoRTConfig.clip must lie in (0, 1), got {self.clip!r}")
        if not 0 <= self.kl_coef < float("inf") or self.ppo_epochs < 1:
            raise ValueError("AutoRTConfig.kl_coef must be >= 0 and ppo_epochs >= 1")
        if not 0 < self.sim_threshold <= 1:
            raise ValueError(f"AutoRTConfig.sim_threshold must lie in (0, 1], got {self.sim_threshold!r}")
        if self.div_penalty >= 0 or self.cons_penalty >= 0:
            raise ValueError("AutoRTConfig.div_penalty and cons_penalty must be < 0 (Eq. 3: C(f, c) < 0)")
