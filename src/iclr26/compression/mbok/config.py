"""Hyper-parameters of MBOK: one dataclass, each field saying where its value comes from."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .optim import KERNEL_CHOICES


@dataclass
class MBOKConfig:
    k: int = field(default=2, metadata={"help": "Boolean kernels per linear layer (paper: 2 ≈ 2 bits, 3 ≈ FP16)"})
    kernels: str = field(
        default="last", metadata={"help": "kernels finetuned in the Boolean domain: 'last' (paper §4) or 'all'"}
    )
    boolean_lr: float = field(
        default=0.05,
        metadata={"help": "η of the flip rule on the RMS-normalised signal (not stated; ours, tuned on validation)"},
    )
    fp_lr: float = field(
        default=1e-4, metadata={"help": "AdamW lr of the scalings a_k, b_k, norms and biases (not stated; ours)"}
    )
    steps: int = field(default=300, metadata={"help": "finetuning steps (paper: not stated at our scale; ours)"})
    batch_size: int = field(default=16, metadata={"help": "sequences per finetuning step (ours)"})
    gamma: float = field(
        default=1.0, metadata={"help": "weight of the hidden-state MSE in the KD loss (not stated; OneBit-style: 1)"}
    )
    accum_dtype: str = field(
        default="float16", metadata={"help": "dtype of the Boolean accumulator (paper: one 16-bit momentum)"}
    )
    normalize: bool = field(default=True, metadata={"help": "divide the Boolean signal by its RMS (ours)"})
    seed: int = field(default=0, metadata={"help": "finetuning data order"})

    def __post_init__(self):
        if not 1 <= self.k <= 8:
            raise ValueError(f"MBOKConfig.k must be in [1, 8] kernels, got {self.k!r}")
        if self.kernels not in KERNEL_CHOICES:
            raise ValueError(f"MBOKConfig.kernels must be one of {KERNEL_CHOICES}, got {self.kernels!r}")
        for name in ("boolean_lr", "fp_lr", "gamma"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"MBOKConfig.{name} must be a finite number, got {v!r} (NaN or inf would give NaN)")
        for name in ("boolean_lr", "fp_lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"MBOKConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if self.steps < 0:
            raise ValueError(f"MBOKConfig.steps must be ≥ 0, got {self.steps!r}")
        if self.batch_size < 1:
            raise ValueError(f"MBOKConfig.batch_size must be ≥ 1, got {self.batch_size!r}")
        if self.gamma < 0:
            raise ValueError(f"MBOKConfig.gamma must be ≥ 0, got {self.gamma!r}")
        if self.accum_dtype not in ("float16", "bfloat16", "float32"):
            raise ValueError(f"MBOKConfig.accum_dtype must be float16, bfloat16 or float32, got {self.accum_dtype!r}")
