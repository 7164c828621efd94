"""Softmax policies whose score function lives in an RKHS, and likelihood-ratio estimates of ∇J and ∇²J.

Policy Newton in RKHS (Zhang et al., ICLR 2026, https://arxiv.org/abs/2506.01597). A discrete-action policy is
π_h(a|s) ∝ exp(τ h(φ(s, a))) with h = Σ_i α_i k(c_i, ·) in the RKHS of an RBF kernel k on state–action features
φ(s, a) = onehot(a) ⊗ ψ(s). A step Δ = Σ_j β_j k(c_j, ·) over new centres c_j changes every logit linearly,
τ Δ(φ(s, a)) = τ k(φ(s, a), c)ᵀβ, so J(h + Δ) as a function of β is the return of a softmax policy that is linear
in the *kernel features* k(φ(s, a), c). Its gradient and Hessian at β = 0 are the RKHS gradient and Hessian
evaluated on the span of the centres (the representer theorem): b_j = ⟨∇J, k(c_j, ·)⟩_H, Q_jl = ⟨k(c_j, ·),
∇²J k(c_l, ·)⟩_H. The same estimator serves a parametric linear-softmax policy (features φ itself).

Likelihood-ratio estimator for one trajectory with score vectors u_t = ∇ log π(a_t|s_t) = τ(f(s_t,a_t) − E_π f(s_t,·)),
∇² log π(a_t|s_t) = −τ² Cov_π f(s_t,·), and weights A_t (unbiased for A_t = Σ_{t'≥t} γ^{t'} r_{t'} − b(s_t)):
    g = Σ_t A_t u_t,
    H = Σ_{i,j} A_{max(i,j)} u_i u_jᵀ + Σ_t A_t ∇² log π(a_t|s_t)
(from ∇²J = E Σ_t γ^t r_t [U_t U_tᵀ + Σ_{t'≤t} ∇² log π_{t'}], U_t = Σ_{t'≤t} u_{t'}; this symmetric form drops
zero-mean cross terms of the Shen et al. (2019) estimator used by parametric policy Newton).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from scipy.special import softmax

__all__ = ["action_block_features", "rbf_kernel", "RKHSSoftmaxPolicy", "LinearSoftmaxPolicy", "trajectory_derivatives"]


def action_block_features(obs: np.ndarray, n_actions: int) -> np.ndarray:
    """φ(s, a) = onehot(a) ⊗ ψ(s) for every action: (N, d) observations → (N, A, A·d)."""
    obs = np.atleast_2d(np.asarray(obs, float))
    n, d = obs.shape
    out = np.zeros((n, n_actions, n_actions * d))
    for a in range(n_actions):
        out[:, a, a * d : (a + 1) * d] = obs
    return out


def rbf_kernel(X: np.ndarray, Y: np.ndarray, gamma: float) -> np.ndarray:
    """k(x, y) = exp(−γ‖x − y‖²)."""
    if not 0 < gamma < np.inf:
        raise ValueError(f"kernel gamma must be finite and > 0, got {gamma}")
    return np.exp(-gamma * cdist(X, Y, "sqeuclidean"))


def _check_obs(obs, obs_dim: int) -> np.ndarray:
    obs = np.atleast_2d(np.asarray(obs, float))
    if obs.ndim != 2 or obs.shape[1] != obs_dim:
        raise ValueError(f"observations must be 2-D with {obs_dim} columns, got shape {obs.shape}")
    if not np.all(np.isfinite(obs)):
        raise ValueError("observations contain NaN or inf; check the environment's output")
    return obs


class RKHSSoftmaxPolicy:
    """π(a|s) ∝ exp(τ h(φ(s, a))), h = Σ_i α_i k(c_i, ·); centres and coefficients grow with every update."""

    def __init__(self, n_actions: int, obs_dim: int, kernel_gamma: float = 5.0, temperature: float = 1.0):
        if n_actions < 2 or obs_dim < 1:
            raise ValueError(f"need n_actions >= 2 and obs_dim >= 1, got {n_actions}, {obs_dim}")
        if not kernel_gamma > 0 or not temperature > 0:
            raise ValueError(f"kernel_gamma and temperature must be > 0, got {kernel_gamma}, {temperature}")
        self.n_actions, self.obs_dim = n_actions, obs_dim
        self.kernel_gamma, self.temperature = kernel_gamma, temperature
        self.centres = np.zeros((0, n_actions * obs_dim))
        self.coef = np.zeros(0)
        self._block_psi = self._block_act = None

    def features(self, obs) -> np.ndarray:
        return action_block_features(_check_obs(obs, self.obs_dim), self.n_actions)

    def kernel_features(self, obs, centres) -> np.ndarray:
        """k(φ(s, a), c_j) for every observation, action and centre: (N, A, n)."""
        F = self.features(obs)
        n, A, p = F.shape
        return rbf_kernel(F.reshape(n * A, p), np.atleast_2d(centres), self.kernel_gamma).reshape(n, A, -1)

    def h(self, obs) -> np.ndarray:
        """h(φ(s, a)) for every observation and action: (N, A)."""
        obs = _check_obs(obs, self.obs_dim)
        F = self.features(obs)
        if len(self.coef) == 0:
            return np.zeros((len(obs), self.n_actions))
        if self._block_psi is None:
            n, A, p = F.shape
            return rbf_kernel(F.reshape(n * A, p), self.centres, self.kernel_gamma).reshape(n, A, -1) @ self.coef
        # Every centre is onehot(a_i) ⊗ ψ_i: k = exp(−γ‖ψ − ψ_i‖²) when a = a_i, else exp(−γ‖ψ‖²) exp(−γ‖ψ_i‖²).
        onehot = np.eye(self.n_actions)[self._block_act]  # (m, A)
        same = (rbf_kernel(obs, self._block_psi, self.kernel_gamma) * self.coef) @ onehot
        per_action = onehot.T @ (self.coef * np.exp(-self.kernel_gamma * (self._block_psi**2).sum(1)))
        cross = np.exp(-self.kernel_gamma * (obs**2).sum(1))[:, None] * (per_action.sum() - per_action)[None, :]
        return same + cross

    def _split_blocks(self) -> None:
        """Detect the action-block structure of all centres (exact fast path of `h`)."""
        C = self.centres.reshape(len(self.centres), self.n_actions, self.obs_dim)
        nonzero = np.abs(C).sum(2) > 0
        if (nonzero.sum(1) <= 1).all():
            self._block_act = nonzero.argmax(1)
            self._block_psi = C[np.arange(len(C)), self._block_act]
        else:
            self._block_psi = self._block_act = None

    def probs(self, obs) -> np.ndarray:
        return softmax(self.temperature * self.h(obs), axis=1)

    def add_centres(self, centres, coef) -> None:
        centres = np.atleast_2d(np.asarray(centres, float))
        coef = np.asarray(coef, float).ravel()
        if len(centres) != len(coef):
            raise ValueError(f"one coefficient per centre needed, got {len(coef)} for {len(centres)} centres")
        if centres.ndim != 2 or centres.shape[1] != self.centres.shape[1]:
            raise ValueError(
                f"centres must be (n, A·obs_dim) = (n, {self.centres.shape[1]}) state–action features, "
                f"got {centres.shape}"
            )
        if not (np.all(np.isfinite(centres)) and np.all(np.isfinite(coef))):
            raise ValueError("centres and coefficients must be finite (found NaN or inf); check the update")
        self.centres = np.concatenate([self.centres, centres])
        self.coef = np.concatenate([self.coef, coef])
        self._split_blocks()

    def prune(self, tol: float = 1e-3, max_centres: int | None = None) -> None:
        """Drop coefficients with |α| < tol, then keep the `max_centres` largest |α|."""
        if not 0 <= tol < np.inf or (max_centres is not None and max_centres < 1):
            raise ValueError(f"prune needs a finite tol >= 0 and max_centres >= 1 (or None), got {tol}, {max_centres}")
        keep = np.abs(self.coef) >= tol
        self.centres, self.coef = self.centres[keep], self.coef[keep]
        if max_centres is not None and len(self.coef) > max_centres:
            idx = np.sort(np.argsort(-np.abs(self.coef))[:max_centres])
            self.centres, self.coef = self.centres[idx], self.coef[idx]
        self._split_blocks()


class LinearSoftmaxPolicy:
    """Parametric baseline: π(a|s) ∝ exp(τ θᵀφ(s, a)) with the same action-block features."""

    def __init__(self, n_actions: int, obs_dim: int, temperature: float = 1.0, init_scale: float = 0.0, seed=0):
        if n_actions < 2 or obs_dim < 1 or not temperature > 0:
            raise ValueError("need n_actions >= 2, obs_dim >= 1 and temperature > 0")
        self.n_actions, self.obs_dim, self.temperature = n_actions, obs_dim, temperature
        self.theta = init_scale * np.random.default_rng(seed).normal(size=n_actions * obs_dim)

    def features(self, obs) -> np.ndarray:
        return action_block_features(_check_obs(obs, self.obs_dim), self.n_actions)

    def probs(self, obs) -> np.ndarray:
        return softmax(self.temperature * self.features(obs) @ self.theta, axis=1)


def trajectory_derivatives(feats, probs, actions, weights, temperature: float = 1.0, hessian: bool = True):
    """(g, H) of one trajectory (module docstring): feats (T, A, n) — derivative of the logit/τ w.r.t. the n
    coordinates; probs (T, A) — π(·|s_t); actions (T,); weights (T,) — A_t. H is None when hessian=False."""
    feats, probs = np.asarray(feats, float), np.asarray(probs, float)
    actions, w = np.asarray(actions, int), np.asarray(weights, float)
    T = len(actions)
    if feats.ndim != 3 or feats.shape[:2] != probs.shape or len(w) != T or feats.shape[0] != T:
        raise ValueError(
            f"shapes must be feats (T, A, n), probs (T, A), actions (T,), weights (T,); got "
            f"{feats.shape}, {probs.shape}, {actions.shape}, {w.shape}"
        )
    if T and (actions.min() < 0 or actions.max() >= feats.shape[1]):
        raise ValueError(f"actions must lie in [0, {feats.shape[1]}) (one column of probs per action), got {actions}")
    if not (np.all(np.isfinite(feats)) and np.all(np.isfinite(w))):
        raise ValueError("feats and weights must be finite (found NaN or inf); check the rewards and returns")
    if np.any(probs < 0) or not np.allclose(probs.sum(1), 1.0, atol=1e-6):
        raise ValueError("probs must be the policy's action distributions: non-negative rows that sum to 1")
    if not 0 < temperature < np.inf:
        raise ValueError(f"temperature must be finite and > 0, got {temperature}")
    tau = temperature
    mean_f = np.einsum("ta,tan->tn", probs, feats)  # E_π f(s_t, ·)
    u = tau * (feats[np.arange(T), actions] - mean_f)  # score vectors u_t
    g = w @ u
    if not hessian:
        return g, None
    U = np.cumsum(u, 0)
    U_prev = U - u
    # Σ_{i,j} A_{max(i,j)} u_i u_jᵀ = Σ_t A_t (u_t U_tᵀ + U_{t−1} u_tᵀ)
    cross = (u * w[:, None]).T @ U + (U_prev * w[:, None]).T @ u
    # Σ_t A_t ∇² log π_t = −τ² Σ_t A_t (Σ_a π_a f_a f_aᵀ − f̄ f̄ᵀ)
    pw = probs * w[:, None]
    second = np.einsum("ta,tan,tam->nm", pw, feats, feats) - (mean_f * w[:, None]).T @ mean_f
    return g, cross - tau**2 * second
