"""SCISOR (Baronet et al., ICLR 2026, https://arxiv.org/abs/2511.07390): a discrete diffusion whose forward process only
inserts letters and whose learned reverse only deletes them, trained on the exact alignment-marginalised deletion
target; used to shrink proteins and to score deletion variants. See :mod:`.diffusion` and :mod:`.alignments`."""

from .alignments import log_alignment_count, log_deletion_counts, log_deletion_target
from .diffusion import (
    Denoiser,
    SCISORConfig,
    deletion_logprobs,
    elbo_diffusion_term,
    insert,
    loss_from_batch,
    make_batch,
    sample,
    sample_num_insertions,
    score_deletions,
    shrink,
    train_step,
)

__all__ = [
    "Denoiser",
    "SCISORConfig",
    "deletion_logprobs",
    "elbo_diffusion_term",
    "insert",
    "log_alignment_count",
    "log_deletion_counts",
    "log_deletion_target",
    "loss_from_batch",
    "make_batch",
    "sample",
    "sample_num_insertions",
    "score_deletions",
    "shrink",
    "train_step",
]
