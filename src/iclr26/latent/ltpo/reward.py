"""The intrinsic confidence reward of LTPO (paper Eq. 4-5).

At every latent-thought position i the frozen model predicts a next-token distribution p_i. Its top-k token
confidence is C_i = −(1/k) Σ_{j≤k} log p_i^(j): large when one token dominates (the other k−1 top probabilities are
tiny), small when the mass is spread. The reward is the mean over the reward positions, R = (1/|P|) Σ_{i∈P} C_i. It
needs one forward pass and no decoding, no label and no verifier.

The logarithm is the official code's ``log(p + 1e-10)`` of the softmax probabilities (``eps``), not ``log_softmax``:
the two agree to 1e-9 wherever p ≫ 1e-10, but a top-k probability that underflows below 1e-10 contributes at most
−log(1e-10) = 23.0 with the official form and up to several hundred with ``log_softmax`` (a test pins both cases).
``eps=0`` gives the exact ``log_softmax`` form.
"""

from __future__ import annotations

import torch


def confidence_reward(logits: torch.Tensor, positions=None, k: int = 10, eps: float = 1e-10) -> torch.Tensor:
    """R = mean_{i∈P} −(1/k) Σ_{j≤k} log(p_i^(j) + eps) for logits [..., seq, vocab] (a tensor of shape [...]).

    ``positions`` selects the reward positions P along the sequence axis (all positions when None). The result keeps
    the autograd graph, so the same function serves the REINFORCE (no grad) and autograd estimators.
    """
    if logits.dim() < 2:
        raise ValueError(f"logits must have shape [..., seq, vocab], got {tuple(logits.shape)}")
    if not 1 <= k <= logits.shape[-1]:
        raise ValueError(f"top-k must be in [1, vocab={logits.shape[-1]}], got k={k}")
    if not (eps >= 0 and eps < 1):
        raise ValueError(f"eps must lie in [0, 1), got {eps!r}")
    if positions is not None:
        logits = logits[..., positions, :]
    if eps == 0:
        top = torch.log_softmax(logits.float(), dim=-1).topk(k, dim=-1).values  # log p^(1) ≥ … ≥ log p^(k)
    else:  # the official form: log of the top-k probabilities plus 1e-10
        top = (torch.softmax(logits.float(), dim=-1).topk(k, dim=-1).values + eps).log()
    # Eq. 4: C_i = −(1/k) Σ_j log p_i^(j);  Eq. 5: R = mean_i C_i
    return (-top.mean(-1)).mean(-1)
