"""Hyper-parameters of LTPO in one dataclass (defaults: the paper's fixed set, Table 7 of arXiv:2510.04182)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ESTIMATORS = ("reinforce", "autograd")


@dataclass
class LTPOConfig:
    num_thoughts: int = field(
        default=8, metadata={"help": "K latent thought embeddings (paper Table 7: 8; robust 1-16)"}
    )
    steps: int = field(default=20, metadata={"help": "T optimisation steps = reward forward passes (paper: 20)"})
    lr: float = field(default=5e-3, metadata={"help": "η, REINFORCE step size or Adam lr (paper Table 7: 5e-3)"})
    sigma: float = field(default=5.0, metadata={"help": "σ0, std of the Gaussian policy (paper Table 7: 5)"})
    sigma_decay: float = field(default=0.9, metadata={"help": "γ_σ, σ ← γ_σ·σ after every step (paper Table 7: 0.9)"})
    sigma_relative: bool = field(
        default=False,
        metadata={"help": "if true, σ0 = sigma × RMS of the input-embedding table (our option for tiny models)"},
    )
    top_k: int = field(default=10, metadata={"help": "k of the top-k confidence reward (paper: 10; robust 5-100)"})
    estimator: str = field(
        default="reinforce",
        metadata={"help": "'reinforce' (the paper's policy gradient) or 'autograd' (Adam, code option)"},
    )
    best_reward: bool = field(
        default=True, metadata={"help": "answer from the best-reward latent (paper); false: the last iterate"}
    )
    reward_threshold: float = field(
        default=-1.0, metadata={"help": "stop early once the reward reaches this value; ≤ 0 disables (code: -1)"}
    )
    include_next_position: bool = field(
        default=True,
        metadata={"help": "reward also reads the position right after the last thought (official code: yes)"},
    )
    use_cache: bool = field(
        default=True, metadata={"help": "encode the prompt prefix once and reuse a copy of its KV cache every step"}
    )
    placeholder: str | None = field(
        default=None,
        metadata={
            "help": "token whose embedding initialises the thoughts (not stated in the paper; default: a reserved "
            "token of the vocabulary, else '...', never a separator such as <|endoftext|>; see problem.placeholder_id)"
        },
    )
    note: str | None = field(
        default=None,
        metadata={"help": "text before the thoughts in a chat prompt, {k} = K; None: the official note (paraphrased)"},
    )
    answer_prefix: str = field(default="", metadata={"help": "text after the assistant header (ours; code: none)"})
    max_new_tokens: int = field(default=64, metadata={"help": "answer length for generate (code: 2048-4096)"})

    def __post_init__(self):
        for name in ("lr", "sigma", "sigma_decay", "reward_threshold"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(
                    f"LTPOConfig.{name} must be a finite number, got {v!r} (a NaN or infinite value would silently "
                    "give CoT-Unk or non-finite thoughts)"
                )
        for name in ("num_thoughts", "steps", "top_k", "max_new_tokens"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool):
                raise ValueError(f"LTPOConfig.{name} must be an integer, got {getattr(self, name)!r}")
        if self.num_thoughts < 1:
            raise ValueError(f"LTPOConfig.num_thoughts must be ≥ 1, got {self.num_thoughts!r}")
        if self.steps < 0:
            raise ValueError(f"LTPOConfig.steps must be ≥ 0, got {self.steps!r}")
        if self.lr < 0:
            raise ValueError(f"LTPOConfig.lr must be ≥ 0, got {self.lr!r}")
        if self.sigma < 0:
            raise ValueError(f"LTPOConfig.sigma must be ≥ 0, got {self.sigma!r}")
        if not 0 < self.sigma_decay <= 1:
            raise ValueError(f"LTPOConfig.sigma_decay must be in (0, 1], got {self.sigma_decay!r}")
        if self.top_k < 1:
            raise ValueError(f"LTPOConfig.top_k must be ≥ 1, got {self.top_k!r}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"LTPOConfig.estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if self.max_new_tokens < 1:
            raise ValueError(f"LTPOConfig.max_new_tokens must be ≥ 1, got {self.max_new_tokens!r}")
