"""The toy investment-planning MDP of Policy Newton in RKHS, with exact (policy-evaluation) returns in torch.

Zhang et al., ICLR 2026, https://arxiv.org/abs/2506.01597 (toy experiment of the authors' code). States are
(resource level ℓ ∈ {0..L−1}, market m ∈ {bear, neutral, bull}); actions conservative / balanced / aggressive.
Reward base(a, m)·(ℓ+1)/L; the resource level moves by Δℓ ∈ {−1, 0, +1, +2, +3} with action-dependent
probabilities (clipped to [0, L−1]); the market follows its own Markov chain; start at ℓ = L//2, m uniform; γ = 0.9.

J(π) = ρ₀ᵀ V^π with V^π = (I − γ P_π)⁻¹ r_π is a smooth function of the logits, so its exact gradient and Hessian
come from autograd. For Newton methods to have a finite optimum (softmax optima are deterministic, at infinite
logits), the objective can carry the RKHS penalty −(λ/2)‖h‖²_H (λ = 0 gives the plain return).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["TabularMDP", "investment_mdp", "toy_features", "ExactObjective"]

_BASE = np.array([[1.0, 1.0, 0.5], [0.5, 2.0, 1.5], [-1.0, 1.0, 3.0]])  # base reward [action, market]
_DL = np.array([[0.1, 0.8, 0.1, 0.0, 0.0], [0.2, 0.2, 0.4, 0.2, 0.0], [0.4, 0.1, 0.1, 0.2, 0.2]])  # Δℓ = −1..+3
_MARKET = np.array([[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.1, 0.3, 0.6]])


@dataclass
class TabularMDP:
    P: np.ndarray  # (S, A, S)
    R: np.ndarray  # (S, A)
    rho0: np.ndarray  # (S,)
    gamma: float

    @property
    def n_states(self) -> int:
        return self.R.shape[0]

    @property
    def n_actions(self) -> int:
        return self.R.shape[1]

    def optimal(self, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
        """(V*, greedy optimal policy as (S, A) one-hot) by value iteration."""
        V = np.zeros(self.n_states)
        while True:
            Q = self.R + self.gamma * self.P @ V
            V_new = Q.max(1)
            if np.abs(V_new - V).max() < tol:
                break
            V = V_new
        pi = np.eye(self.n_actions)[Q.argmax(1)]
        return V_new, pi


def investment_mdp(n_levels: int = 2, gamma: float = 0.9) -> TabularMDP:
    if not isinstance(n_levels, (int, np.integer)) or n_levels < 1 or not 0 < gamma < 1:
        raise ValueError(f"n_levels must be >= 1 and gamma in (0, 1), got {n_levels}, {gamma}")
    S, A = 3 * n_levels, 3
    P, R = np.zeros((S, A, S)), np.zeros((S, A))
    for level in range(n_levels):
        for m in range(3):
            s = 3 * level + m
            for a in range(A):
                R[s, a] = _BASE[a, m] * (level + 1) / n_levels
                for i, pl in enumerate(_DL[a]):
                    nl = min(max(level + i - 1, 0), n_levels - 1)
                    P[s, a, 3 * nl : 3 * nl + 3] += pl * _MARKET[m]
    rho0 = np.zeros(S)
    rho0[3 * (n_levels // 2) : 3 * (n_levels // 2) + 3] = 1 / 3
    return TabularMDP(P, R, rho0, gamma)


def toy_features(n_levels: int) -> np.ndarray:
    """φ(s, a) = onehot(a) ⊗ [ℓ, onehot(m)] for every state–action pair, row s·A + a: (3L·3, 12)."""
    rows = []
    for level in range(n_levels):
        for m in range(3):
            psi = np.concatenate([[float(level)], np.eye(3)[m]])
            for a in range(3):
                rows.append(np.kron(np.eye(3)[a], psi))
    return np.array(rows)


class ExactObjective:
    """J_λ(h) = ρ₀ᵀV^{π_h} − (λ/2)‖h‖²_H for a score function given by its values h at the S·A pairs.

    K is the Gram matrix of the pairs; ‖h‖²_H = hᵀK⁻¹h (the minimum-norm interpolant). With coefficients β,
    h = Kβ and ‖h‖²_H = βᵀKβ.
    """

    def __init__(self, mdp: TabularMDP, gram: np.ndarray, temperature: float = 1.0, reg: float = 0.0):
        SA = mdp.n_states * mdp.n_actions
        if gram.shape != (SA, SA):
            raise ValueError(f"gram must be ({SA}, {SA}) for this MDP, got {gram.shape}")
        if not (0 <= reg < np.inf and 0 < temperature < np.inf):
            raise ValueError(f"reg must be finite and >= 0 and temperature finite and > 0, got {reg}, {temperature}")
        if not np.all(np.isfinite(gram)) or np.linalg.matrix_rank(gram) < SA:
            raise ValueError(
                "gram must be a finite, invertible Gram matrix of the state–action features (‖h‖²_H = hᵀK⁻¹h); "
                "use a strictly positive-definite kernel or distinct features"
            )
        self.mdp, self.tau, self.reg = mdp, temperature, reg
        d = torch.float64
        self.P, self.R = torch.as_tensor(mdp.P, dtype=d), torch.as_tensor(mdp.R, dtype=d)
        self.rho0 = torch.as_tensor(mdp.rho0, dtype=d)
        self.K = torch.as_tensor(gram, dtype=d)
        self.K_inv = torch.linalg.inv(self.K)

    def _check(self, x: torch.Tensor, what: str) -> None:
        SA = self.mdp.n_states * self.mdp.n_actions
        if x.shape != (SA,):
            raise ValueError(f"{what} must be a vector of length S·A = {SA}, got shape {tuple(x.shape)}")
        if not bool(torch.isfinite(x.detach()).all()):
            raise ValueError(f"{what} contains NaN or inf (a diverged step?)")

    def policy(self, h: torch.Tensor) -> torch.Tensor:
        self._check(h, "h")
        return torch.softmax(self.tau * h.reshape(self.mdp.n_states, self.mdp.n_actions), dim=1)

    def value(self, h: torch.Tensor) -> torch.Tensor:
        """ρ₀ᵀ V^{π_h}: exact return, V = (I − γ P_π)⁻¹ r_π."""
        pi = self.policy(h)
        P_pi = torch.einsum("sa,sat->st", pi, self.P)
        r_pi = (pi * self.R).sum(1)
        V = torch.linalg.solve(torch.eye(len(r_pi), dtype=h.dtype) - self.mdp.gamma * P_pi, r_pi)
        return self.rho0 @ V

    def of_values(self, h: torch.Tensor) -> torch.Tensor:
        """J_λ as a function of the values h (tabular parametrisation)."""
        return self.value(h) - 0.5 * self.reg * h @ self.K_inv @ h

    def of_coefficients(self, beta: torch.Tensor) -> torch.Tensor:
        """J_λ as a function of the RKHS coefficients β, h = Kβ."""
        self._check(beta, "beta")
        h = self.K @ beta
        return self.value(h) - 0.5 * self.reg * beta @ h

    def value_gap_and_distance(self, h: torch.Tensor) -> tuple[float, float]:
        """(V*(ρ₀) − V^π(ρ₀), mean total-variation distance to the optimal deterministic policy), unregularised."""
        V_star, pi_star = self.mdp.optimal()
        with torch.no_grad():
            gap = float(self.rho0.numpy() @ V_star - self.value(h))
            pi = self.policy(h).numpy()
        return gap, float(0.5 * np.abs(pi - pi_star).sum(1).mean())
