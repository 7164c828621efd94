"""Kernel surrogate models for task attribution (KernelSM).

Zhang, Duan & Zhang, "Efficient Estimation of Kernel Surrogate Models for Task Attribution", ICLR 2026,
https://arxiv.org/abs/2602.03783 (official code: https://github.com/VirtuosoResearch/Kernel-surrogate-models).

A model trained on a subset of K training tasks, s ∈ {0,1}^K, reaches performance F(s) on a target task. Task
attribution asks how much each task matters, classically by the leave-one-out (LOO) effect F(1 − e_k) − F(1). A
*surrogate* g(s) is fitted to pairs (s_j, F(s_j)) for random subsets (each task kept with probability p) and then
queried instead of retraining. The linear surrogate (datamodels) g(s) = βᵀs + b only captures additive effects; the
paper shows (Prop. 3.1) that its coefficients equal the influence function ∇F(1) plus second-order terms,
β ≈ ∇F + (p − 1) H1 + (½ − p) diag H, so both miss interactions between tasks (synergy, antagonism, XOR). KernelSM
fits kernel ridge regression with an RBF kernel on the subset indicators, which represents such interactions; a
surrogate's LOO attribution is g(1 − e_k) − g(1), and its best subset is argmin_s g(s).

This module holds the surrogates, LOO attribution and subset selection from any surrogate, the exact influence
function of a weighted-ERM model, and the second-order prediction of the linear coefficients (Prop. 3.1).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge

__all__ = [
    "KernelSurrogateConfig",
    "KernelSurrogate",
    "LinearSurrogateConfig",
    "LinearSurrogate",
    "sample_subsets",
    "loo_scores",
    "select_subset",
    "second_order_linear_coefficients",
    "influence_scores",
]

_KERNELS = ("rbf", "poly", "linear")


@dataclass(frozen=True)
class KernelSurrogateConfig:
    kernel: str = field(default="rbf", metadata={"help": "kernel on subset indicators: rbf | poly | linear (code)"})
    gamma: float | None = field(
        default=None, metadata={"help": "RBF/poly scale; None means 1/K, the scikit-learn default the code uses"}
    )
    alpha: float = field(default=0.1, metadata={"help": "ridge λ (official code, generic scoring routine)"})
    degree: int = field(default=3, metadata={"help": "degree of the polynomial kernel (code)"})
    coef0: float = field(default=1.0, metadata={"help": "offset of the polynomial kernel (code)"})
    jitter: float = field(default=1e-8, metadata={"help": "added to the Gram diagonal for stability (code)"})
    center: bool = field(
        default=True,
        metadata={
            "help": "subtract the mean of the targets before fitting and add it back; not stated, the code fits "
            "no intercept; our choice so that ridge shrinks towards the mean rather than towards 0"
        },
    )

    def __post_init__(self):
        if self.kernel not in _KERNELS:
            raise ValueError(f"KernelSurrogateConfig.kernel must be one of {_KERNELS}, got {self.kernel!r}")
        if self.gamma is not None and not self.gamma > 0:
            raise ValueError(f"KernelSurrogateConfig.gamma must be > 0 or None (=1/K), got {self.gamma}")
        if not self.alpha >= 0:
            raise ValueError(f"KernelSurrogateConfig.alpha must be >= 0, got {self.alpha}")
        if self.degree < 1:
            raise ValueError(f"KernelSurrogateConfig.degree must be >= 1, got {self.degree}")
        if not self.jitter >= 0:
            raise ValueError(f"KernelSurrogateConfig.jitter must be >= 0, got {self.jitter}")


def _check_fit_args(S, y) -> tuple[np.ndarray, np.ndarray]:
    S = np.asarray(S, dtype=float)
    y = np.asarray(y, dtype=float)
    if S.ndim != 2:
        raise ValueError(f"subsets must be a 2-D array (n_subsets, K) of 0/1 indicators, got shape {S.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != S.shape[0]:
        raise ValueError(
            f"targets must have one row per subset: got {y.shape[0] if y.ndim else 'scalar'} rows for "
            f"{S.shape[0]} subsets"
        )
    if S.shape[0] < 2:
        raise ValueError(f"need at least 2 subsets to fit a surrogate, got {S.shape[0]}")
    if not np.all(np.isfinite(S)) or not np.all(np.isfinite(y)):
        raise ValueError("subsets and targets must be finite (found NaN or inf)")
    return S, y


class _Surrogate:
    n_tasks: int | None = None

    def _check_predict(self, S) -> np.ndarray:
        if self.n_tasks is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted yet: call .fit(subsets, scores) first")
        S = np.atleast_2d(np.asarray(S, dtype=float))
        if S.ndim != 2 or S.shape[1] != self.n_tasks:
            raise ValueError(f"subsets must be a 2-D array (n, K={self.n_tasks}) of indicators, got shape {S.shape}")
        if not np.all(np.isfinite(S)):
            raise ValueError("subsets contain NaN or inf; give 0/1 task indicators")
        return S


class KernelSurrogate(_Surrogate):
    """Kernel ridge regression g(s) = Σ_j a_j k(s, s_j) (+ mean of y when centred) on subset indicators."""

    def __init__(self, config: KernelSurrogateConfig | None = None):
        self.config = config or KernelSurrogateConfig()

    def fit(self, S, y) -> KernelSurrogate:
        S, y = _check_fit_args(S, y)
        c = self.config
        self.n_tasks = S.shape[1]
        # γ = 1/K by default: Hamming distances ‖s − s'‖² grow with K (code: scikit-learn convention).
        gamma = c.gamma if c.gamma is not None else 1.0 / self.n_tasks
        self.offset_ = y.mean(axis=0) if c.center else np.zeros(y.shape[1:])
        # (G + (λ + jitter) I) a = y − offset: the official Cholesky solve, via scikit-learn.
        self.model_ = KernelRidge(
            alpha=c.alpha + c.jitter, kernel=c.kernel, gamma=gamma, degree=c.degree, coef0=c.coef0
        ).fit(S, y - self.offset_)
        return self

    def predict(self, S) -> np.ndarray:
        S = self._check_predict(S)
        return self.model_.predict(S) + self.offset_


@dataclass(frozen=True)
class LinearSurrogateConfig:
    alpha: float = field(
        default=1e-3,
        metadata={"help": "ridge λ; the code's default is plain least squares (λ = 0); tiny λ for stability"},
    )
    fit_intercept: bool = field(default=True, metadata={"help": "fit b in g(s) = βᵀs + b (datamodels convention)"})

    def __post_init__(self):
        if not self.alpha >= 0:
            raise ValueError(f"LinearSurrogateConfig.alpha must be >= 0, got {self.alpha}")


class LinearSurrogate(_Surrogate):
    """Linear surrogate (datamodels): g(s) = βᵀs + b fitted by ridge least squares."""

    def __init__(self, config: LinearSurrogateConfig | None = None):
        self.config = config or LinearSurrogateConfig()

    def fit(self, S, y) -> LinearSurrogate:
        S, y = _check_fit_args(S, y)
        self.n_tasks = S.shape[1]
        self.model_ = Ridge(alpha=self.config.alpha, fit_intercept=self.config.fit_intercept).fit(S, y)
        return self

    @property
    def coef_(self) -> np.ndarray:
        """β̂: one coefficient per task (the quantity Prop. 3.1 is about)."""
        return self.model_.coef_

    def predict(self, S) -> np.ndarray:
        return self.model_.predict(self._check_predict(S))


def sample_subsets(n_tasks: int, n_subsets: int, p: float = 0.5, seed: int = 0) -> np.ndarray:
    """`n_subsets` distinct random indicator vectors, each task kept with probability p; the empty set is excluded."""
    for name, v in (("n_tasks", n_tasks), ("n_subsets", n_subsets), ("seed", seed)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ValueError(f"{name} must be an integer, got {v!r}")
    if n_tasks < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks}")
    if not 0 < p < 1:
        raise ValueError(f"p (inclusion probability) must be in (0, 1), got {p}")
    if n_subsets < 1 or n_subsets > 2**n_tasks - 1:
        raise ValueError(f"n_subsets must be in [1, 2^K − 1 = {2**n_tasks - 1}], got {n_subsets}")
    rng = np.random.default_rng(seed)
    seen: set[bytes] = set()
    out = []
    while len(out) < n_subsets:
        s = (rng.random(n_tasks) < p).astype(np.int8)
        key = s.tobytes()
        if s.any() and key not in seen:
            seen.add(key)
            out.append(s)
    return np.stack(out).astype(float)


def loo_scores(predict: Callable[[np.ndarray], np.ndarray], n_tasks: int) -> np.ndarray:
    """Surrogate LOO attribution â_k = g(1 − e_k) − g(1): change of the predicted score when task k is removed."""
    _check_n_tasks(n_tasks)
    ones = np.ones((1, n_tasks))
    drop = np.ones((n_tasks, n_tasks)) - np.eye(n_tasks)
    return _scores(predict, drop) - float(_scores(predict, ones)[0])


def _check_n_tasks(n_tasks) -> None:
    if not isinstance(n_tasks, (int, np.integer)) or isinstance(n_tasks, bool) or n_tasks < 1:
        raise ValueError(f"n_tasks must be an integer >= 1, got {n_tasks!r}")


def _scores(predict, S: np.ndarray) -> np.ndarray:
    """predict(S) as one finite score per row of S (a surrogate's prediction, or any callable)."""
    out = np.asarray(predict(S), dtype=float)
    if out.size != len(S) or out.ndim > 2:
        raise ValueError(f"predict must return one score per subset: {len(S)} subsets, got shape {out.shape}")
    out = out.reshape(len(S))
    if not np.all(np.isfinite(out)):
        raise ValueError("predict returned NaN or inf scores")
    return out


def select_subset(
    predict: Callable[[np.ndarray], np.ndarray], n_tasks: int, size: int | None = None, minimize: bool = True
) -> np.ndarray:
    """The subset with the best predicted score: exhaustive for K ≤ 16, greedy forward selection above.

    size: exact number of tasks to keep (None: any non-empty subset). minimize: lower score is better (a loss).
    """
    _check_n_tasks(n_tasks)
    if size is not None and not 1 <= size <= n_tasks:
        raise ValueError(f"size must be in [1, K={n_tasks}] or None, got {size}")
    sign = 1.0 if minimize else -1.0
    if n_tasks <= 16:
        cands = np.array(list(itertools.product((0.0, 1.0), repeat=n_tasks)))[1:]
        if size is not None:
            cands = cands[cands.sum(1) == size]
        scores = sign * _scores(predict, cands)
        return cands[int(np.argmin(scores))]
    chosen = np.zeros(n_tasks)
    best = np.inf
    for _ in range(size or n_tasks):
        trial = np.repeat(chosen[None], n_tasks, 0)
        free = np.flatnonzero(chosen == 0)
        trial[free, free] = 1.0
        scores = sign * _scores(predict, trial[free])
        if size is None and scores.min() >= best:
            break
        best = scores.min()
        chosen = trial[free[int(np.argmin(scores))]]
    return chosen


def second_order_linear_coefficients(grad: np.ndarray, hess: np.ndarray, p: float) -> np.ndarray:
    """Prop. 3.1: the population linear-surrogate coefficients of a quadratic F around s* = 1,
    β = ∇F(s*) + (p − 1) H 1 + (½ − p) diag(H), for subsets drawn coordinate-wise Bernoulli(p)."""
    grad, hess = np.asarray(grad, float), np.asarray(hess, float)
    if hess.shape != (grad.size, grad.size):
        raise ValueError(f"hess must be ({grad.size}, {grad.size}) to match grad, got {hess.shape}")
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if grad.ndim != 1 or not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
        raise ValueError(f"grad must be a finite vector and hess a finite matrix, got grad shape {grad.shape}")
    return grad + (p - 1.0) * hess.sum(1) + (0.5 - p) * np.diag(hess)


def influence_scores(
    theta, task_losses, target_loss, regulariser=None, damping: float = 0.0, weights=None
) -> np.ndarray:
    """Influence of each task's weight on the target: I_k = ∂F/∂s_k for θ̂(s) = argmin Σ_k s_k L_k + R.

    By the implicit function theorem, I_k = −∇F(θ̂)ᵀ (Σ_j s_j ∇²L_j + ∇²R + damping·I)⁻¹ ∇L_k(θ̂); at s = 1 the
    first-order LOO estimate is F(1 − e_k) − F(1) ≈ −I_k.
    theta: flat torch tensor at the optimum θ̂(s); task_losses(θ) -> tensor (K,) of summed task losses;
    target_loss(θ) -> scalar; regulariser(θ) -> scalar or None; weights: s (default all ones).
    """
    import torch

    if not isinstance(theta, torch.Tensor) or theta.ndim != 1:
        raise ValueError("theta must be a flat (1-D) torch tensor of parameters at the trained optimum")
    if not 0 <= damping < np.inf:
        raise ValueError(f"damping must be finite and >= 0, got {damping}")
    theta = theta.detach()
    if not bool(torch.isfinite(theta).all()):
        raise ValueError("theta contains NaN or inf")
    K = int(task_losses(theta).numel())
    w = None if weights is None else torch.as_tensor(np.asarray(weights, float), dtype=theta.dtype)
    if w is not None and (w.shape != (K,) or not bool(torch.isfinite(w).all())):
        raise ValueError(f"weights must be a finite vector with one entry per task (K={K}), got shape {tuple(w.shape)}")

    def objective(t):
        total = task_losses(t).sum() if w is None else (w * task_losses(t)).sum()
        return total + regulariser(t) if regulariser is not None else total

    # torch.autograd.functional rather than torch.func: the latter imports torch._dynamo (seconds of start-up).
    H = torch.autograd.functional.hessian(objective, theta)
    H = H + damping * torch.eye(theta.numel(), dtype=H.dtype)
    J = torch.autograd.functional.jacobian(task_losses, theta)  # (K, D): ∇L_k
    t = theta.clone().requires_grad_(True)
    (gF,) = torch.autograd.grad(target_loss(t), t)
    # Eq. (IF): I = −J H⁻¹ ∇F (one solve with the target gradient).
    v = torch.linalg.solve(H, gF)
    return (-(J @ v)).detach().cpu().numpy()
