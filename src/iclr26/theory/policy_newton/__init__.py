"""Policy Newton in RKHS: cubic-regularised Newton steps for kernel softmax policies (and its baselines).

Zhang, Tang, Wang & Ding, "Policy Newton Algorithm in Reproducing Kernel Hilbert Space", ICLR 2026,
https://arxiv.org/abs/2506.01597 (authors' code: https://github.com/Elessar123/Policy-Newton-in-RKHS).

The policy's score function h lives in an RKHS, where the Hessian of the return J is an operator that cannot be
formed or inverted. Policy Newton instead maximises the cubic-regularised model of J around h_k,
    Δ_k = argmax_Δ ⟨∇J(h_k), Δ⟩_H + ½⟨Δ, ∇²J(h_k) Δ⟩_H − (M/6)‖Δ‖³_H,      h_{k+1} = h_k + Δ_k,
and by the representer theorem the maximiser lies in the span of kernel functions at sampled state–action points,
Δ = Σ_j β_j k(c_j, ·), which turns the step into an n-dimensional cubic problem (`rkhs_cubic.cubic_subproblem`) with
b_j = ⟨∇J, k(c_j, ·)⟩, Q_jl = ⟨k(c_j, ·), ∇²J k(c_l, ·)⟩ (`rkhs_policy.trajectory_derivatives`) and
‖Δ‖²_H = βᵀKβ. Near a local optimum with non-singular Hessian the iteration converges quadratically.

Correction to the authors' released agent: it *minimises* Gᵀα + ½αᵀHα + (M/6)‖α‖³ with G, H the gradient and
Hessian of the return to be maximised, i.e. takes a cubic Newton step *downhill*, and it appends the coefficients
to sampled points other than the centres G and H were computed on. Here the model is maximised (equivalently
−bᵀβ − ½βᵀQβ + (M/6)‖β‖³ is minimised) and the coefficients go to exactly the centres that define b and Q.

Baselines with the same estimators: RKHS policy gradient (functional stochastic gradient ascent, new centres at
sampled states), parametric cubic-regularised policy Newton (CRPN) and REINFORCE on a linear softmax policy; for
exact (known-model) problems, `exact_cubic_newton` and `exact_gradient_ascent`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from iclr26.theory.policy_newton.cubic import cubic_subproblem
from iclr26.theory.policy_newton.episodes import Trajectory
from iclr26.theory.policy_newton.policies import (
    LinearSoftmaxPolicy,
    RKHSSoftmaxPolicy,
    rbf_kernel,
    trajectory_derivatives,
)

__all__ = [
    "PolicyNewtonConfig",
    "RKHSGradientConfig",
    "rkhs_policy_newton_step",
    "rkhs_policy_gradient_step",
    "parametric_newton_step",
    "parametric_gradient_step",
    "exact_cubic_newton",
    "exact_gradient_ascent",
]


@dataclass(frozen=True)
class PolicyNewtonConfig:
    M: float = field(default=10.0, metadata={"help": "cubic regularisation M (authors' Gym runner: alpha = 10)"})
    n_centre_states: int = field(
        default=25,
        metadata={
            "help": "sampled states per update; centres are φ(s, a) for every action, n = states × A "
            "(authors: 50 time steps of one trajectory, taken actions only)"
        },
    )
    norm: str = field(
        default="rkhs",
        metadata={
            "help": "‖Δ‖ in the cubic term: rkhs (βᵀKβ, the paper's theory) or euclidean (‖β‖, the authors' code)"
        },
    )
    prune_tol: float = field(default=1e-3, metadata={"help": "drop new coefficients with |β| below this (code)"})
    max_centres: int = field(
        default=3000, metadata={"help": "keep the largest |α| beyond this; not in the code, bounds the cost of acting"}
    )

    def __post_init__(self):
        if not self.M > 0:
            raise ValueError(f"PolicyNewtonConfig.M must be > 0, got {self.M}")
        if self.n_centre_states < 1:
            raise ValueError(f"PolicyNewtonConfig.n_centre_states must be >= 1, got {self.n_centre_states}")
        if self.norm not in ("rkhs", "euclidean"):
            raise ValueError(f"PolicyNewtonConfig.norm must be 'rkhs' or 'euclidean', got {self.norm!r}")
        if not (0 <= self.prune_tol < np.inf) or self.max_centres < 1:
            raise ValueError(
                f"PolicyNewtonConfig.prune_tol must be finite and >= 0 and max_centres >= 1, got {self.prune_tol}, "
                f"{self.max_centres}"
            )


@dataclass(frozen=True)
class RKHSGradientConfig:
    lr: float = field(
        default=150.0,
        metadata={
            "help": "step size η on the mean over sampled steps (code: 0.01 × temperature 100 per sampled step,"
            " summed over 150 steps = 150 on the mean)"
        },
    )
    lr_decay: float = field(default=0.99, metadata={"help": "η_i = η · decay^i at update i (code)"})
    n_sample_states: int = field(
        default=150, metadata={"help": "steps sampled per update, each adds A centres (code: 50 trajectories × 3)"}
    )
    prune_tol: float = field(default=1e-3, metadata={"help": "drop coefficients with |α| below this (code)"})
    max_centres: int = field(default=3000, metadata={"help": "keep the largest |α| beyond this; our choice"})

    def __post_init__(self):
        if not self.lr > 0 or self.n_sample_states < 1:
            raise ValueError(
                f"RKHSGradientConfig.lr must be > 0 and n_sample_states >= 1, got {self.lr}, {self.n_sample_states}"
            )
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"RKHSGradientConfig.lr_decay must be in (0, 1], got {self.lr_decay}")
        if not (0 <= self.prune_tol < np.inf) or self.max_centres < 1:
            raise ValueError(
                f"RKHSGradientConfig.prune_tol must be finite and >= 0 and max_centres >= 1, got {self.prune_tol}, "
                f"{self.max_centres}"
            )


def _check_batch(trajs: Sequence[Trajectory], weights: Sequence[np.ndarray]) -> None:
    if not trajs:
        raise ValueError("empty batch: collect at least one trajectory")
    if len(weights) != len(trajs) or any(len(w) != len(t.actions) for w, t in zip(weights, trajs)):
        raise ValueError("weights must give one array per trajectory with one entry per step")


def _sample_states(trajs, n, rng) -> np.ndarray:
    obs = np.concatenate([t.obs for t in trajs])
    idx = rng.choice(len(obs), size=min(n, len(obs)), replace=False)
    return obs[idx]


def _mean_derivatives(trajs, weights, feats_fn, tau, hessian=True):
    g, H = 0.0, 0.0
    for t, w in zip(trajs, weights):
        gt, Ht = trajectory_derivatives(feats_fn(t.obs), t.probs, t.actions, w, tau, hessian)
        g, H = g + gt, (H + Ht) if hessian else None
    return g / len(trajs), (H / len(trajs) if hessian else None)


def rkhs_policy_newton_step(policy: RKHSSoftmaxPolicy, trajs, weights, cfg: PolicyNewtonConfig, rng) -> dict:
    """One Policy-Newton-in-RKHS update from a batch of on-policy trajectories and per-step weights A_t."""
    _check_batch(trajs, weights)
    states = _sample_states(trajs, cfg.n_centre_states, rng)
    # Centres c_j = φ(s, a) for the sampled states and every action (representer theorem: Δ ∈ span k(c_j, ·)).
    centres = policy.features(states).reshape(-1, policy.n_actions * policy.obs_dim)
    b, Q = _mean_derivatives(trajs, weights, lambda o: policy.kernel_features(o, centres), policy.temperature)
    K = rbf_kernel(centres, centres, policy.kernel_gamma)
    # Maximise bᵀβ + ½βᵀQβ − (M/6)‖β‖³ (ascent on J: the sign the released code gets wrong).
    sol = cubic_subproblem(b, Q, cfg.M, K if cfg.norm == "rkhs" else None)
    keep = np.abs(sol.beta) >= cfg.prune_tol
    policy.add_centres(centres[keep], sol.beta[keep])
    policy.prune(0.0, cfg.max_centres)
    return {
        "grad_norm": float(np.linalg.norm(b)),
        "step_norm": sol.norm,
        "model_gain": sol.value,
        "hard_case": sol.hard_case,
        "n_centres": len(policy.coef),
    }


def rkhs_policy_gradient_step(
    policy: RKHSSoftmaxPolicy, trajs, weights, cfg: RKHSGradientConfig, rng, iteration: int = 0
) -> dict:
    """Functional stochastic gradient ascent: h ← h + η_i ∇̂J with ∇̂J = mean over `n_sample_states` uniformly sampled
    visited steps of A_t τ(k(φ(s_t,a_t),·) − E_π k(φ(s_t,·),·)), η_i = η · decay^i (as in the authors' code)."""
    _check_batch(trajs, weights)
    if iteration < 0:
        raise ValueError(f"iteration must be >= 0, got {iteration}")
    steps = [(i, t) for i, tr in enumerate(trajs) for t in range(len(tr.actions))]
    pick = rng.choice(len(steps), size=min(cfg.n_sample_states, len(steps)), replace=False)
    lr = cfg.lr * cfg.lr_decay**iteration / len(pick)
    A = policy.n_actions
    centres, coef = [], []
    for j in pick:
        i, t = steps[j]
        tr = trajs[i]
        onehot = np.eye(A)[tr.actions[t]]
        centres.append(policy.features(tr.obs[t])[0])
        coef.append(lr * weights[i][t] * policy.temperature * (onehot - tr.probs[t]))
    centres, coef = np.concatenate(centres), np.concatenate(coef)
    keep = np.abs(coef) >= cfg.prune_tol
    policy.add_centres(centres[keep], coef[keep])
    policy.prune(0.0, cfg.max_centres)
    return {"n_centres": len(policy.coef)}


def parametric_newton_step(policy: LinearSoftmaxPolicy, trajs, weights, M: float) -> dict:
    """Cubic-regularised policy Newton (CRPN) in the parameters of a linear softmax policy (Euclidean norm)."""
    _check_batch(trajs, weights)
    g, H = _mean_derivatives(trajs, weights, policy.features, policy.temperature)
    sol = cubic_subproblem(g, H, M)
    policy.theta = policy.theta + sol.beta
    return {"grad_norm": float(np.linalg.norm(g)), "step_norm": sol.norm}


def parametric_gradient_step(policy: LinearSoftmaxPolicy, trajs, weights, lr: float) -> dict:
    """REINFORCE: θ ← θ + η ĝ."""
    _check_batch(trajs, weights)
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    g, _ = _mean_derivatives(trajs, weights, policy.features, policy.temperature, hessian=False)
    policy.theta = policy.theta + lr * g
    return {"grad_norm": float(np.linalg.norm(g))}


def _torch_derivatives(f, x, hessian=True):
    import torch

    xt = torch.as_tensor(x, dtype=torch.float64)
    # torch.autograd.functional rather than torch.func: the latter imports torch._dynamo (seconds of start-up).
    t = xt.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(t), t)
    H = torch.autograd.functional.hessian(f, xt).numpy() if hessian else None
    return g.numpy(), H


def _noisy(g, H, noise_std: float, rng, noise_map):
    """Sampled-estimate stand-in: g + Aξ, H + AΞAᵀ with ξ ~ N(0, σ²I) and Ξ symmetric with N(0, σ²) entries.

    A (`noise_map`) maps the space the noise lives in to the optimised coordinates: the identity for values h at the
    state–action pairs, the Gram matrix K for RKHS coefficients β (h = Kβ, so ∇_β = K∇_h and ∇²_β = K∇²_h K). With
    the same σ every method then sees the same noise on the same functional derivatives.
    """
    if noise_std == 0:
        return g, H
    if rng is None:
        raise ValueError("noisy derivatives need a numpy Generator `rng` (for reproducible noise)")
    n = len(g)
    A = np.eye(n) if noise_map is None else np.asarray(noise_map, float)
    g = g + A @ (noise_std * rng.standard_normal(n))
    if H is not None:
        E = noise_std * rng.standard_normal((n, n))
        H = H + A @ ((E + E.T) / np.sqrt(2.0)) @ A.T
    return g, H


def _check_exact(x0, iters, noise_std, metric, noise_map, rate_name: str, rate: float) -> np.ndarray:
    """Arguments of `exact_cubic_newton` / `exact_gradient_ascent`; returns x0 as a float vector."""
    if not isinstance(iters, (int, np.integer)) or isinstance(iters, bool) or iters < 0:
        raise ValueError(f"iters must be an integer >= 0, got {iters!r}")
    if not 0 < rate < np.inf:
        raise ValueError(f"{rate_name} must be finite and > 0, got {rate}")
    if not 0 <= noise_std < np.inf:
        raise ValueError(f"noise_std must be finite and >= 0, got {noise_std}")
    x0 = np.asarray(x0, float)
    if x0.ndim != 1 or not np.all(np.isfinite(x0)):
        raise ValueError(
            f"x0 must be a finite 1-D vector, got shape {x0.shape}" + ("" if x0.ndim != 1 else " with NaN/inf")
        )
    n = x0.size
    for name, mat in (("metric", metric), ("noise_map", noise_map)):
        if mat is not None and (np.shape(mat) != (n, n) or not np.all(np.isfinite(mat))):
            raise ValueError(
                f"{name} must be a finite ({n}, {n}) matrix for x0 of length {n}, got shape {np.shape(mat)}"
            )
    return x0


def exact_cubic_newton(
    f: Callable,
    x0,
    M: float,
    iters: int,
    metric=None,
    noise_std: float = 0.0,
    rng=None,
    noise_map=None,
    use_hessian: bool = True,
) -> np.ndarray:
    """Cubic-regularised Newton ascent on a smooth torch function f (exact gradient and Hessian by autograd);
    `metric` N defines ‖Δ‖² = ΔᵀNΔ (for RKHS coefficients: the Gram matrix). Returns the iterates (iters+1, n).
    ``noise_std > 0`` perturbs both derivatives at every step (see `_noisy`), a stand-in for sampled estimates.
    ``use_hessian=False`` replaces the Hessian by 0 (the cubic-regularised *gradient* step, a control that keeps
    the step rule and removes the second-order information)."""
    xs = [_check_exact(x0, iters, noise_std, metric, noise_map, "M", M)]
    for _ in range(iters):
        g, H = _noisy(*_torch_derivatives(f, xs[-1], hessian=use_hessian), noise_std, rng, noise_map)
        H = H if use_hessian else np.zeros((len(g), len(g)))
        xs.append(xs[-1] + cubic_subproblem(g, H, M, metric).beta)
    return np.stack(xs)


def exact_gradient_ascent(
    f: Callable, x0, lr: float, iters: int, metric=None, noise_std: float = 0.0, rng=None, noise_map=None
) -> np.ndarray:
    """x ← x + η N⁻¹∇f(x): gradient ascent in the geometry of `metric` (Gram K: the functional gradient in RKHS).
    ``noise_std > 0`` perturbs the gradient at every step (see `_noisy`)."""
    xs = [_check_exact(x0, iters, noise_std, metric, noise_map, "lr", lr)]
    for _ in range(iters):
        g, _ = _noisy(*_torch_derivatives(f, xs[-1], hessian=False), noise_std, rng, noise_map)
        xs.append(xs[-1] + lr * (g if metric is None else np.linalg.solve(metric, g)))
    return np.stack(xs)
