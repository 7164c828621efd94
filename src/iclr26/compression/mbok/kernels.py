"""Boolean kernels: the SVID rank-one factorisation, successive residual extraction, and bit packing.

MBOK (Tran & Nguyen, ICLR 2026, https://arxiv.org/abs/2505.22811) writes a weight matrix ``W`` (out × in) as a sum of
K Boolean kernels, each a ±1 matrix with its own rank-one magnitude:

    W ≈ Σ_k S_k ⊙ (a_k b_kᵀ),    S_k ∈ {±1}^{m×n},  a_k ∈ R^m_+,  b_k ∈ R^n_+.

One kernel comes from the sign-value-independent decomposition (SVID) of a matrix ``M``: ``S = sign(M)`` and
``a bᵀ`` = the best rank-one approximation of ``|M|`` (its top singular pair, non-negative by Perron–Frobenius). K
kernels come from applying SVID to successive residuals ``R_k = R_{k-1} − S_k ⊙ (a_k b_kᵀ)``, data-free.
"""

from __future__ import annotations

import numpy as np
import torch


def rank1_nonneg(m: torch.Tensor, iters: int = 100, tol: float = 1e-7) -> tuple[torch.Tensor, torch.Tensor]:
    """Leading singular pair of a non-negative matrix as ``(a, b)`` with ``a bᵀ = σ₁ u₁ v₁ᵀ``, ``a, b ≥ 0``.

    Power iteration on ``MᵀM`` from the all-ones vector: for a non-negative matrix every iterate stays non-negative
    (Perron–Frobenius), so no sign fixing is needed, and it converges in a few steps when σ₁ ≫ σ₂ (the magnitude
    matrix of a weight is dominated by its mean). Tested against ``torch.linalg.svd``.
    """
    if m.dim() != 2:
        raise ValueError(f"rank1_nonneg expects a matrix, got shape {tuple(m.shape)}")
    if (m < 0).any():
        raise ValueError("rank1_nonneg expects a non-negative matrix (the magnitudes |R|)")
    m = m.double()
    v = torch.ones(m.shape[1], dtype=m.dtype) / m.shape[1] ** 0.5
    for _ in range(iters):
        w = m.T @ (m @ v)
        norm = w.norm()
        if norm == 0:
            return torch.zeros(m.shape[0]), torch.zeros(m.shape[1])
        w = w / norm
        done = (w - v).norm() < tol
        v = w
        if done:
            break
    u = m @ v  # = σ₁ u₁
    sigma = u.norm()
    if sigma == 0:
        return torch.zeros(m.shape[0]), torch.zeros(m.shape[1])
    u = u / sigma
    # split σ₁ evenly between the two factors: a = √σ₁ u₁, b = √σ₁ v₁ (Prop. 4.3: optimal rank-one magnitude)
    return (sigma.sqrt() * u).float(), (sigma.sqrt() * v).float()


def sign_pm1(m: torch.Tensor) -> torch.Tensor:
    """``sign`` with ``sign(0) = +1``, as int8 ±1 (a Boolean kernel has no zero)."""
    return torch.where(m >= 0, 1, -1).to(torch.int8)


def svid(m: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One Boolean kernel of ``m``: ``(S, a, b)`` with ``m ≈ S ⊙ (a bᵀ)`` (Eq. SVID)."""
    a, b = rank1_nonneg(m.abs())
    return sign_pm1(m), a, b


def successive_svid(w: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """K kernels by successive residual fitting: signs ``[K, m, n]`` int8, scalings ``a [K, m]``, ``b [K, n]``.

    ``R_0 = W``; ``S_k, a_k, b_k = SVID(R_{k-1})``; ``R_k = R_{k-1} − S_k ⊙ (a_k b_kᵀ)`` (the paper's successive
    extraction: each kernel models what the previous ones left).
    """
    if k < 1:
        raise ValueError(f"number of kernels k must be ≥ 1, got {k!r}")
    r = w.detach().float().clone()
    signs, avs, bvs = [], [], []
    for _ in range(k):
        s, a, b = svid(r)
        r = r - s.float() * torch.outer(a, b)
        signs.append(s), avs.append(a), bvs.append(b)
    return torch.stack(signs), torch.stack(avs), torch.stack(bvs)


def reconstruct(signs: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``Σ_k S_k ⊙ (a_k b_kᵀ)`` as a dense float matrix (signs ``[K, m, n]``, a ``[K, m]``, b ``[K, n]``)."""
    return torch.einsum("kmn,km,kn->mn", signs.float(), a.float(), b.float())


# ---------------------------------------------------------------- bit packing: 8 Boolean weights per byte


def pack_signs(signs: torch.Tensor) -> torch.Tensor:
    """±1 int8 tensor → uint8 tensor of packed bits (bit = 1 for +1), flattened; shape is kept by the caller."""
    bits = (signs.reshape(-1) > 0).numpy()
    return torch.from_numpy(np.packbits(bits))


def unpack_signs(packed: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Inverse of :func:`pack_signs`: packed uint8 bits → ±1 int8 tensor of ``shape``."""
    n = int(np.prod(shape))
    bits = np.unpackbits(packed.numpy(), count=n)
    return torch.from_numpy(bits.astype(np.int8) * 2 - 1).reshape(shape)
