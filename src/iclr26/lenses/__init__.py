"""Interpretability lenses: logit lens and language control, selective layer tuning, the Activation Difference Lens,
representation dispersion, transformer-block states and voxel-wise encoding."""

from . import language_control as _lc
from . import mindtransformer as _mt
from .adl import (
    ActivationDifference,
    ADLConfig,
    activation_difference,
    find_max_coherent_alpha,
    logit_lens_tokens,
    patchscope_tokens,
    projection_delta_ce,
    remove_projection,
    steering,
)
from .dispersion import PushAway, PushAwayConfig, binned_pearson, dispersion, dispersion_gap, segment_stats
from .language_control import *  # noqa: F403  (its __all__)
from .logit_lens import (
    crosslingual_similarity,
    crosslingual_similarity_contrast,
    language_probs_by_layer,
    lens_logits,
    logit_lens,
    residuals,
    token_probs_by_layer,
    token_ranks_by_layer,
)
from .mindtransformer import *  # noqa: F403  (its __all__)

__all__ = [
    "ADLConfig",
    "ActivationDifference",
    "activation_difference",
    "find_max_coherent_alpha",
    "logit_lens_tokens",
    "patchscope_tokens",
    "projection_delta_ce",
    "remove_projection",
    "steering",
    "crosslingual_similarity",
    "crosslingual_similarity_contrast",
    "language_probs_by_layer",
    "lens_logits",
    "logit_lens",
    "residuals",
    "token_probs_by_layer",
    "token_ranks_by_layer",
    "PushAway",
    "PushAwayConfig",
    "binned_pearson",
    "dispersion",
    "dispersion_gap",
    "segment_stats",
    *_lc.__all__,
    *_mt.__all__,
]
