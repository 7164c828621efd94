"""The intrinsic confidence reward of LTPO (paper Eq. 4-5).

At every latent-thought position i the frozen model predicts a next-token distribution p_i. Its top-k token
confidence is C_i = −(1/k) Σ_{j≤k} log p_i^(j): large when one token dominates (the other k−1 top probabilities are
tiny), small when the mass is spread. The reward is the mean over the reward positions, R = (1/|P|) Σ_{i∈P} C_i. It
needs one forward pass and no decoding, no label and no verifier.
"""

from __future__ import annotations

import torch


def confidence_reward(logits: torch.Tensor, positions=None, k: int = 10) -> torch.Tensor:
    """R = mean_{i∈P} −(1/k) Σ_{j≤k} log p_i^(j) for logits of shape [..., seq, vocab] (a tensor of shape [...]).

    ``positions`` selects the reward positions P along the sequence axis (all positions when None). The result keeps
    the autograd graph, so the same function serves the REINFORCE (no grad) and autograd estimators.
    """
    if logits.dim() < 2:
        raise ValueError(f"logits must have shape [..., seq, vocab], got {tuple(logits.shape)}")
    if not 1 <= k <= logits.shape[-1]:
        raise ValueError(f"top-k must be in [1, vocab={logits.shape[-1]}], got k={k}")
    if positions is not None:
        logits = logits[..., positions, :]
    logp = torch.log_softmax(logits.float(), dim=-1)
    top = logp.topk(k, dim=-1).values  # log p^(1) ≥ … ≥ log p^(k)
    # Eq. 4: C_i = −(1/k) Σ_j log p_i^(j);  Eq. 5: R = mean_i C_i
    return (-top.mean(-1)).mean(-1)
