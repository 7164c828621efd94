"""REMAC: *Real-Time Robot Execution with Masked Action Chunking* (ICLR 2026, https://arxiv.org/abs/2601.20130;
official code https://github.com/hatchetProject/REMAC).

Asynchronous inference computes the next action chunk while the current one runs, so the first d actions of the new
chunk's time window are already committed (from the previous chunk, planned from an older observation) when it
arrives. Naive asynchronous execution ignores this (intra-chunk inconsistency). REMAC fine-tunes a pretrained flow
policy with LoRA so that it generates the rest of a chunk consistently with a committed prefix: delay-conditioned
prefix masking, a self-conditioned curriculum and a residual-alignment loss; at inference, prefix-preserved sampling
clamps the committed prefix; the LoRA is merged, so inference costs what the base costs.

Modules: `policy` (the MLP-Mixer flow policy), `sampling` (plain, prefix-preserved and RTC-guided sampling),
`gated` (the official mask-gated LoRA, which cannot be merged, and FLOP counts per chunk),
`training` (base flow matching, the REMAC objective, peft LoRA and merging), `execution` (the exact asynchronous
execution harness with sync / async / temporal-ensembling schedules).
"""

from .execution import Trace, run_episode
from .gated import GatedLoRAPolicy, MaskGatedLoRALinear, chunk_flops
from .policy import FlowChunkPolicy, MixerConfig, prefix_mask
from .sampling import rtc_weights, sample_flow, sample_prefix_preserved, sample_rtc
from .training import (
    FlowTrainConfig,
    REMACConfig,
    finetune,
    flow_loss,
    masked_flow_loss,
    merge,
    remac_loss,
    self_samples,
    sigma_schedule,
    to_numpy_chunker,
    train_flow,
    with_lora,
)

__all__ = [
    "GatedLoRAPolicy",
    "MaskGatedLoRALinear",
    "chunk_flops",
    "FlowChunkPolicy",
    "FlowTrainConfig",
    "MixerConfig",
    "REMACConfig",
    "Trace",
    "finetune",
    "flow_loss",
    "masked_flow_loss",
    "merge",
    "prefix_mask",
    "remac_loss",
    "rtc_weights",
    "run_episode",
    "sample_flow",
    "sample_prefix_preserved",
    "sample_rtc",
    "self_samples",
    "sigma_schedule",
    "to_numpy_chunker",
    "train_flow",
    "with_lora",
]
