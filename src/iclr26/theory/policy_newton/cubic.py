"""The cubic-regularised Newton sub-problem, solved exactly (Nesterov & Polyak, 2006), in Euclidean or RKHS norm.

Used by Policy Newton in RKHS (Zhang et al., ICLR 2026, https://arxiv.org/abs/2506.01597): at the current policy h
the step maximises the cubic model of the return,
    m(Δ) = ⟨g, Δ⟩ + ½⟨Δ, H Δ⟩ − (M/6) ‖Δ‖³,
and by the representer theorem Δ = Σ_i β_i k(c_i, ·) over the n sampled state–action centres, so with b_i = ⟨g,
k(c_i, ·)⟩, Q the Hessian in these coordinates and ‖Δ‖² = βᵀNβ (N = Gram matrix K for the RKHS norm, I for the
Euclidean norm of the coefficients) the problem is finite:  max_β bᵀβ + ½βᵀQβ − (M/6)(βᵀNβ)^{3/2}.

With N = I the global maximiser is characterised by (Nesterov & Polyak, Thm. 10)
    (−Q + (M/2) r I) β = b,   r = ‖β‖,   −Q + (M/2) r I ⪰ 0,
so one eigendecomposition −Q = V Λ Vᵀ reduces it to the scalar equation ‖(Λ + (M/2) r)⁻¹ Vᵀb‖ = r, monotone on
r > max(0, −2λ_min/M) (root by Brent's method), with the "hard case" (b ⟂ bottom eigenvector) handled by adding a
bottom-eigenvector component. A PSD N is reduced to N = I by γ = N^{1/2}β on the range of N (directions in its null
space are the zero function; b and Q must vanish there, else the model is unbounded and we raise an error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

__all__ = ["CubicSolution", "cubic_subproblem", "cubic_model"]


@dataclass
class CubicSolution:
    beta: np.ndarray  # the maximiser
    norm: float  # ‖β‖_N
    value: float  # m(β), ≥ 0 = m(0)
    hard_case: bool


def cubic_model(beta, b, Q, M, N=None) -> float:
    """m(β) = bᵀβ + ½βᵀQβ − (M/6)‖β‖_N³."""
    beta, b, Q = np.asarray(beta, float), np.asarray(b, float), np.asarray(Q, float)
    n = beta.size
    if beta.shape != (n,) or b.shape != (n,) or Q.shape != (n, n) or (N is not None and np.shape(N) != (n, n)):
        raise ValueError(
            f"cubic_model needs beta and b of length n and Q (and N) of shape (n, n); got beta {beta.shape}, "
            f"b {b.shape}, Q {Q.shape}" + ("" if N is None else f", N {np.shape(N)}")
        )
    nrm2 = beta @ beta if N is None else beta @ N @ beta
    return float(b @ beta + 0.5 * beta @ Q @ beta - M / 6.0 * max(nrm2, 0.0) ** 1.5)


def _euclidean(b: np.ndarray, A: np.ndarray, M: float) -> tuple[np.ndarray, bool]:
    """argmin_β −bᵀβ + ½βᵀAβ + (M/6)‖β‖³ (A = −Q symmetric)."""
    lam, V = np.linalg.eigh(A)
    c = V.T @ b
    scale = max(1.0, np.abs(lam).max())
    r_min = max(0.0, -2.0 * lam[0] / M)

    def phi(r):  # ‖β(r)‖ − r, strictly decreasing on (r_min, ∞)
        return np.linalg.norm(c / (lam + 0.5 * M * r)) - r

    lo = r_min
    if lam[0] + 0.5 * M * r_min <= 1e-14 * scale:  # (Λ + (M/2) r) singular at r_min
        lo = r_min + 1e-10 * max(r_min, 1.0)
    if phi(lo) <= 0:
        # Hard case (b ⟂ bottom eigenspace): r = r_min, β = (Λ + (M/2) r_min)⁺ Vᵀb plus a bottom-eigenvector part
        # that brings the norm up to r_min. With r_min = 0 this is the stationary point β = 0 (b = 0, Q ⪯ 0).
        bottom = lam + 0.5 * M * r_min <= 1e-10 * scale
        coef = np.zeros_like(c)
        coef[~bottom] = c[~bottom] / (lam[~bottom] + 0.5 * M * r_min)
        coef[np.flatnonzero(bottom)[:1]] = np.sqrt(max(r_min**2 - coef @ coef, 0.0))
        return V @ coef, bool(r_min > 0)
    hi = max(2.0 * lo, 1.0)
    while phi(hi) > 0:
        hi *= 2.0
    r = brentq(phi, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return V @ (c / (lam + 0.5 * M * r)), False


def cubic_subproblem(b, Q, M: float, N=None, rank_tol: float = 1e-10, null_tol: float = 1e-6) -> CubicSolution:
    """Global maximiser of bᵀβ + ½βᵀQβ − (M/6)‖β‖_N³ (N = None: Euclidean; else a PSD matrix, e.g. the Gram K).

    Eigen-directions of N below ``rank_tol``·(largest eigenvalue) are its null space; b and Q must not act on them
    beyond ``null_tol`` (relative), else the problem has no maximiser and a ValueError says so.
    """
    b = np.asarray(b, float)
    Q = np.asarray(Q, float)
    if b.ndim != 1 or Q.shape != (b.size, b.size):
        raise ValueError(f"b must be a vector and Q a matching square matrix, got shapes {b.shape} and {Q.shape}")
    if not 0 < M < np.inf:
        raise ValueError(f"cubic regularisation M must be finite and > 0, got {M}")
    if not (0 <= rank_tol < 1 and 0 <= null_tol < np.inf):
        raise ValueError(f"rank_tol must be in [0, 1) and null_tol finite and ≥ 0, got {rank_tol}, {null_tol}")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(Q))):
        raise ValueError("b and Q must be finite (found NaN or inf); check the gradient/Hessian estimates")
    Q = 0.5 * (Q + Q.T)
    if N is None:
        beta, hard = _euclidean(b, -Q, M)
        return CubicSolution(beta, float(np.linalg.norm(beta)), cubic_model(beta, b, Q, M), hard)
    N = np.asarray(N, float)
    if N.shape != Q.shape:
        raise ValueError(f"norm matrix N must be {Q.shape}, got {N.shape}")
    if not np.all(np.isfinite(N)):
        raise ValueError("norm matrix N must be finite (found NaN or inf); check the Gram matrix of the centres")
    nu, U = np.linalg.eigh(0.5 * (N + N.T))
    if nu[-1] <= 0:
        raise ValueError("norm matrix N must be positive semi-definite with a non-zero eigenvalue")
    if nu[0] < -1e-8 * nu[-1]:
        raise ValueError(f"norm matrix N must be positive semi-definite; smallest eigenvalue {nu[0]:.3g}")
    keep = nu > rank_tol * nu[-1]
    # Directions in N's null space have zero norm: if b (or Q) acts on them, the cubic model is unbounded there and
    # no maximiser exists. Such components are an inconsistency of the inputs, not something to drop silently.
    if not keep.all():
        Z = U[:, ~keep]
        leak_b = np.linalg.norm(Z.T @ b) / max(np.linalg.norm(b), 1e-300)
        leak_q = np.linalg.norm(Q @ Z) / max(np.linalg.norm(Q), 1e-300)
        if max(leak_b, leak_q) > null_tol:
            raise ValueError(
                f"b or Q has components outside the range of the norm matrix N (relative size {leak_b:.2g} for b, "
                f"{leak_q:.2g} for Q, tolerance null_tol={null_tol:g}): the cubic model is unbounded along N's "
                f"{int((~keep).sum())} zero-norm directions. Compute b and Q from the same centres as N "
                "(b = ⟨g, k(c_i, ·)⟩ lies in the range of the Gram matrix), drop duplicate centres, or add a ridge to N"
            )
    T = U[:, keep] / np.sqrt(nu[keep])  # β = T γ, ‖β‖_N = ‖γ‖
    gamma, hard = _euclidean(T.T @ b, -(T.T @ Q @ T), M)
    beta = T @ gamma
    return CubicSolution(beta, float(np.linalg.norm(gamma)), cubic_model(beta, b, Q, M, N), hard)
