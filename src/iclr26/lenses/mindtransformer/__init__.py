"""The Mind's Transformer (ICLR 2026): transformer-block states of a causal LM (`blockstates`) and voxel-wise encoding
models of them (`encoding`); the synthetic brain with planted regions is `world`.

Paper: https://openreview.net/forum?id=PgIlCCNxdB; official code https://github.com/cheng-yeh/MindTransformer.
"""

from .blockstates import ROPE_STATES, STATES, available_states, block_states, state_dims, word_states
from .encoding import (
    HRFS,
    EncodingConfig,
    RunRidge,
    SVDRidge,
    encode,
    encode_combined,
    encode_fmri,
    hrf,
    hrf_design,
    prepare_run,
    select_alpha,
    winners,
)

__all__ = [
    "HRFS", "ROPE_STATES", "STATES", "EncodingConfig", "RunRidge", "SVDRidge", "available_states", "block_states",
    "encode", "encode_combined", "encode_fmri", "hrf", "hrf_design", "prepare_run", "select_alpha", "state_dims",
    "winners", "word_states",
]  # fmt: skip
