"""PERK (Chen et al., ICLR 2026, https://arxiv.org/abs/2507.06415): long contexts encoded into a LoRA adapter by a
few test-time gradient steps, meta-trained with truncated unrolling; and its FT-ICR baseline.

Modules: ``config`` (PERKConfig, FTICRConfig), ``inner`` (the differentiable inner loop, losses), ``model`` (PERK),
``fticr`` (the baseline), ``measure`` (peak memory and time of encoding vs prompting).
"""

from .config import FTICRConfig, PERKConfig
from .fticr import FTICR, icr_prompts
from .inner import answer_loss, clm_loss, inner_loop
from .model import DEFAULT_TARGETS, PERK, Example, qa_batch

__all__ = [
    "PERK",
    "PERKConfig",
    "FTICR",
    "FTICRConfig",
    "Example",
    "DEFAULT_TARGETS",
    "inner_loop",
    "clm_loss",
    "answer_loss",
    "qa_batch",
    "icr_prompts",
]
