"""LinguaMap (ICLR 2026, https://arxiv.org/abs/2601.20009): where in depth a model decides its output language, read
with the
logit lens (`iclr26.lenses.logit_lens`, shared with the other lenses), and fine-tuning of the few layers that decide it
(`selective_tuning`); the planted multilingual world is `world`.
"""

from .selective_tuning import (
    STRATEGIES,
    SelectiveTuningConfig,
    SelectiveTuningResult,
    encode_parts,
    freeze_except,
    masked_lm_loss,
    select_layers,
    selective_finetune,
    trainable_fraction,
)

__all__ = [
    "STRATEGIES", "SelectiveTuningConfig", "SelectiveTuningResult", "encode_parts", "freeze_except",
    "masked_lm_loss", "select_layers", "selective_finetune", "trainable_fraction",
]  # fmt: skip
