"""Hyper-parameters of PERK and of its FT-ICR baseline (TRL style: one dataclass each, help text says where a value
comes from, ``__post_init__`` checks ranges)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

INNER_OPTIMIZERS = ("adam", "sgd")


@dataclass
class PERKConfig:
    # ---- the LoRA memory (peft)
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank r (paper code default lora_r 16; meta_train 256)"})
    lora_alpha: float = field(default=32.0, metadata={"help": "LoRA alpha (paper code default 32)"})
    use_rslora: bool = field(
        default=True, metadata={"help": "rank-stabilised scaling alpha/sqrt(r) (paper code: True)"}
    )
    target_modules: tuple[str, ...] | None = field(
        default=None,
        metadata={"help": "module names to adapt; None = every attention and MLP projection (paper code)"},
    )
    # ---- the inner loop (test-time learning, Eq. inner: phi_{k+1} = phi_k - alpha_k * update(grad L_in))
    inner_steps: int = field(default=4, metadata={"help": "K inner gradient steps (paper code n_inner_iter 4)"})
    unroll_last: int = field(
        default=2,
        metadata={"help": "T last inner steps kept second order in meta-training (paper code: K - unroll_start = 2)"},
    )
    inner_optimizer: str = field(
        default="adam", metadata={"help": "'adam' (paper code: differentiable AdamW) or 'sgd' (dossier's variant)"}
    )
    inner_lr: float = field(default=5e-5, metadata={"help": "initial per-step inner lr (paper code inner_lr 5e-5)"})
    inner_betas: tuple[float, float] = field(default=(0.9, 0.95), metadata={"help": "inner AdamW betas (paper code)"})
    inner_weight_decay: float = field(default=0.01, metadata={"help": "inner AdamW weight decay (paper code 0.01)"})
    inner_eps: float = field(default=1e-8, metadata={"help": "inner Adam epsilon (torch default)"})
    learn_inner_lr: bool = field(
        default=True, metadata={"help": "meta-learn one lr per inner step and LoRA tensor (paper: LSLR, dyna_lr)"}
    )
    seg_len: int = field(
        default=256, metadata={"help": "tokens per context segment, segments encoded as a batch (dossier: 256-1024)"}
    )
    # ---- the outer loop (meta-training)
    outer_lr: float = field(default=1e-4, metadata={"help": "outer AdamW lr (paper code 1e-5 at 0.5B; dossier 1e-4)"})
    outer_betas: tuple[float, float] = field(default=(0.9, 0.95), metadata={"help": "outer AdamW betas (paper code)"})
    outer_weight_decay: float = field(default=0.01, metadata={"help": "outer AdamW weight decay (paper code 0.01)"})
    warmup: float = field(default=0.03, metadata={"help": "share of outer steps in linear warm-up (paper code 0.03)"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "outer gradient-norm clip (paper code 1.0)"})

    def __post_init__(self):
        _finite(self, ("lora_alpha", "inner_lr", "inner_weight_decay", "inner_eps", "outer_lr", "outer_weight_decay",
                       "warmup", "max_grad_norm", *(f"inner_betas[{i}]" for i in range(2)),
                       *(f"outer_betas[{i}]" for i in range(2))))  # fmt: skip
        if self.lora_rank < 1:
            raise ValueError(f"PERKConfig.lora_rank must be >= 1, got {self.lora_rank!r}")
        if self.inner_steps < 1:
            raise ValueError(f"PERKConfig.inner_steps must be >= 1, got {self.inner_steps!r}")
        if not 0 <= self.unroll_last <= self.inner_steps:
            raise ValueError(
                f"PERKConfig.unroll_last must lie in [0, inner_steps={self.inner_steps}], got {self.unroll_last!r}"
            )
        if self.inner_optimizer not in INNER_OPTIMIZERS:
            raise ValueError(
                f"PERKConfig.inner_optimizer must be one of {INNER_OPTIMIZERS}, got {self.inner_optimizer!r}"
            )
        for name in ("inner_lr", "outer_lr", "lora_alpha", "inner_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"PERKConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not all(0 <= b < 1 for b in (*self.inner_betas, *self.outer_betas)):
            raise ValueError(f"PERKConfig betas must lie in [0, 1), got {self.inner_betas!r}, {self.outer_betas!r}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"PERKConfig.warmup must lie in [0, 1), got {self.warmup!r}")
        if self.seg_len < 2:
            raise ValueError(f"PERKConfig.seg_len must be >= 2 tokens, got {self.seg_len!r}")
        if self.inner_weight_decay < 0 or self.outer_weight_decay < 0:
            raise ValueError("PERKConfig weight decays must be >= 0")


@dataclass
class FTICRConfig:
    """FT-ICR: fine-tune the model on (context + question -> answer) with the whole context in the prompt."""

    lr: float = field(default=1e-4, metadata={"help": "AdamW lr (tuned on validation in the reproduction)"})
    full: bool = field(default=True, metadata={"help": "fine-tune every weight (True) or a LoRA of lora_rank"})
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank when full=False (as PERK's)"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (paper code 0.01)"})
    warmup: float = field(default=0.03, metadata={"help": "share of steps in linear warm-up (paper code 0.03)"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient-norm clip (paper code 1.0)"})

    def __post_init__(self):
        _finite(self, ("lr", "weight_decay", "warmup", "max_grad_norm"))
        if not self.lr > 0:
            raise ValueError(f"FTICRConfig.lr must be > 0, got {self.lr!r}")
        if self.lora_rank < 1:
            raise ValueError(f"FTICRConfig.lora_rank must be >= 1, got {self.lora_rank!r}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"FTICRConfig.warmup must lie in [0, 1), got {self.warmup!r}")


def _finite(cfg, names) -> None:
    """Every named field (``x[i]``: an item of a tuple field) is a finite number, or a ValueError naming it."""
    for name in names:
        field_name, _, idx = name.partition("[")
        v = getattr(cfg, field_name)
        if idx:
            v = v[int(idx.rstrip("]"))]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(
                f"{type(cfg).__name__}.{name} must be a finite number, got {v!r} (a NaN or infinite value would "
                "silently give NaN weights)"
            )
