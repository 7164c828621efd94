"""Gradient-based estimation of subset performance without retraining (KernelSM §4, first-order approximation).

Zhang, Duan & Zhang, "Efficient Estimation of Kernel Surrogate Models for Task Attribution", ICLR 2026,
https://arxiv.org/abs/2602.03783; the procedure follows the same group's gradient-based task-affinity estimation
(Li, Zhang et al., KDD 2024), as the paper's exact recipe was not available to us.

Fitting a kernel surrogate needs F(s) on many subsets s, each normally a fine-tuning run. Around a model θ* trained
on all tasks, fine-tuning on any subset moves the weights little, so the network is replaced by its first-order
expansion f_θ(x) ≈ f_θ*(x) + ∇_θ f_θ*(x)ᵀ(θ − θ*). The per-example output gradients are computed once and compressed
by a random Gaussian projection P ∈ R^{D×d} (entries N(0, 1/d), so E[PPᵀ] = I and ĝ_iᵀĝ_j ≈ g_iᵀg_j). Fine-tuning
the linearised model on subset s, min_δ mean_{i∈s} ℓ(f_θ*(x_i) + g_iᵀδ, y_i) + (μ/2)‖δ‖², has its solution in the
span of the gradients, δ = Σ_i α_i g_i, and only inner products g_iᵀg_j enter; replacing them by projected ones gives
the d-dimensional convex problem
    ŵ_s = argmin_w mean_{i∈s} ℓ(f_θ*(x_i) + ĝ_iᵀ w, y_i) + (μ/2) ‖w‖²,   ĝ_i = Pᵀ ∇_θ f_θ*(x_i),
and F̂(s) = mean over target examples of ℓ(f_θ*(x) + ĝ(x)ᵀ ŵ_s, y). `finetune` gives the matching ground truth: the
same objective with the real network, mean_{i∈s} ℓ(f_θ(x_i), y_i) + (μ/2)‖θ − θ*‖², solved by L-BFGS from θ*.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import minimize

__all__ = ["GradientEstimatorConfig", "GradientEstimator", "finetune", "binary_logloss"]


@dataclass(frozen=True)
class GradientEstimatorConfig:
    proj_dim: int | None = field(
        default=200, metadata={"help": "projection dimension d; not stated, reasoned 200–400; None: no projection"}
    )
    l2: float = field(
        default=1e-2, metadata={"help": "μ, proximal strength (μ/2)‖θ − θ*‖² of fine-tuning; not stated, our choice"}
    )
    max_iter: int = field(default=500, metadata={"help": "L-BFGS iterations of each d-dimensional solve"})
    seed: int = field(default=0, metadata={"help": "seed of the random projection"})

    def __post_init__(self):
        if self.proj_dim is not None and self.proj_dim < 1:
            raise ValueError(f"GradientEstimatorConfig.proj_dim must be >= 1, got {self.proj_dim}")
        if not self.l2 > 0:
            raise ValueError(f"GradientEstimatorConfig.l2 must be > 0 (it makes each solve well posed), got {self.l2}")
        if self.max_iter < 1:
            raise ValueError(f"GradientEstimatorConfig.max_iter must be >= 1, got {self.max_iter}")


def binary_logloss(z, y):
    """ℓ(z, y) = log(1 + e^z) − y z for a logit z and label y ∈ {0, 1} (numpy or torch)."""
    if isinstance(z, torch.Tensor):
        return torch.nn.functional.softplus(z) - y * z
    return np.logaddexp(0.0, z) - y * z


def _check_task(X, y, what: str) -> None:
    """Inputs finite, labels 0/1, one label per input, at least one example."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if len(X) == 0 or len(X) != len(y):
        raise ValueError(f"{what}: need a non-empty input array and one label per input, got {len(X)} and {len(y)}")
    if not np.isfinite(X).all():
        raise ValueError(f"{what}: inputs contain NaN or inf; clean them before estimating")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"{what}: labels must be 0 or 1 (binary classification), got values {np.unique(y)[:5]}")


class GradientEstimator:
    """Estimates the target loss of a binary classifier fine-tuned on any subset of tasks, without fine-tuning.

    model: torch module mapping (n, in) inputs to (n,) or (n, 1) logits, at the pretrained weights θ*.
    X_tasks / y_tasks: per-task inputs and 0/1 labels; X_target / y_target: the target task.
    """

    def __init__(self, model, X_tasks, y_tasks, X_target, y_target, config: GradientEstimatorConfig | None = None):
        if len(X_tasks) != len(y_tasks) or not X_tasks:
            raise ValueError(f"need one label array per task and at least one task, got {len(X_tasks)}/{len(y_tasks)}")
        for k, (X, y) in enumerate(zip(X_tasks, y_tasks)):
            _check_task(X, y, f"task {k}")
        _check_task(X_target, y_target, "the target task")
        self.config = c = config or GradientEstimatorConfig()
        self.n_tasks = len(X_tasks)
        params = list(model.parameters())
        self.n_params = sum(p.numel() for p in params)

        def features(X):
            """f_θ*(x) and the per-example output gradients ∇_θ f_θ*(x) (one backward pass per example)."""
            X = torch.as_tensor(np.asarray(X), dtype=torch.float32)
            f, rows = [], []
            with torch.enable_grad():  # also where the caller switched autograd off
                for x in X:
                    out = model(x[None]).reshape(())
                    grads = torch.autograd.grad(out, params)
                    f.append(float(out.detach()))
                    rows.append(torch.cat([g.reshape(-1) for g in grads]))
            f, J = np.array(f, dtype=float), torch.stack(rows).double()
            if not (np.isfinite(f).all() and torch.isfinite(J).all()):
                raise ValueError("the model's outputs or gradients at θ* are NaN/inf on these inputs; check the model")
            return f, J

        gen = torch.Generator().manual_seed(c.seed)
        # Random projection P ∈ R^{D×d}, entries N(0, 1/d): ĝ = Pᵀ g keeps inner products in expectation.
        if c.proj_dim is None:
            P = torch.eye(self.n_params, dtype=torch.float64)
        else:
            P = torch.randn(self.n_params, c.proj_dim, generator=gen, dtype=torch.float64) / np.sqrt(c.proj_dim)
        self._f, self._G, self._y, self._task = [], [], [], []
        for k, (X, y) in enumerate(zip(X_tasks, y_tasks)):
            f, J = features(X)
            self._f.append(f)
            self._G.append((J @ P).numpy())
            self._y.append(np.asarray(y, float))
            self._task.append(np.full(len(f), k))
        self._f, self._G = np.concatenate(self._f), np.concatenate(self._G)
        self._y, self._task = np.concatenate(self._y), np.concatenate(self._task)
        ft, Jt = features(X_target)
        self._ft, self._Gt, self._yt = ft, (Jt @ P).numpy(), np.asarray(y_target, float)

    def shuffled(self, seed: int = 0) -> GradientEstimator:
        """A copy whose projected per-example gradients are permuted across the training examples: the same norms
        and the same f_θ*(x), but no link between an example and its gradient (a negative control)."""
        import copy

        junk = copy.copy(self)
        junk._G = self._G[np.random.default_rng(seed).permutation(len(self._G))]
        return junk

    def solve(self, s) -> np.ndarray:
        """ŵ_s: the d-dimensional fine-tuning of the linearised model on tasks with s_k = 1."""
        s = np.asarray(s)
        if s.shape != (self.n_tasks,):
            raise ValueError(f"subset must be a 0/1 vector of length K={self.n_tasks}, got shape {s.shape}")
        keep = s[self._task] > 0
        if not keep.any():
            raise ValueError("the subset is empty: keep at least one task")
        f, G, y, mu = self._f[keep], self._G[keep], self._y[keep], self.config.l2
        n = len(f)

        def fg(w):
            z = f + G @ w
            loss = binary_logloss(z, y).mean() + 0.5 * mu * w @ w
            grad = G.T @ (0.5 * (1 + np.tanh(0.5 * z)) - y) / n + mu * w
            return loss, grad

        res = minimize(
            fg,
            np.zeros(G.shape[1]),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.config.max_iter, "gtol": 1e-10, "ftol": 1e-14},
        )
        return res.x

    def estimate(self, s) -> float:
        """F̂(s): target loss of the linearised model fine-tuned on subset s."""
        w = self.solve(s)
        return float(binary_logloss(self._ft + self._Gt @ w, self._yt).mean())

    def base_loss(self) -> float:
        """F at θ* itself (no fine-tuning): the trivial estimate the first-order one must beat."""
        return float(binary_logloss(self._ft, self._yt).mean())


def finetune(model, X, y, l2: float, max_iter: int = 500) -> torch.nn.Module:
    """Ground truth for `GradientEstimator`: a copy of `model` fine-tuned from its weights θ* on (X, y) with
    mean ℓ + (l2/2)‖θ − θ*‖², full-batch L-BFGS (scipy; float64 gradients from autograd)."""
    import copy

    from torch.nn.utils import parameters_to_vector, vector_to_parameters

    if not 0 < l2 < np.inf:
        raise ValueError(f"l2 must be finite and > 0, got {l2}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if len(np.asarray(X)) != len(np.asarray(y)) or len(np.asarray(X)) == 0:
        raise ValueError(
            f"need a non-empty X and one label per input, got {len(np.asarray(X))} and {len(np.asarray(y))}"
        )
    if not (np.isfinite(np.asarray(X, float)).all() and np.isfinite(np.asarray(y, float)).all()):
        raise ValueError("X and y must be finite (found NaN or inf)")
    tuned = copy.deepcopy(model).double()
    params = list(tuned.parameters())
    anchor = parameters_to_vector(params).detach().clone()
    X = torch.as_tensor(np.asarray(X), dtype=torch.float64)
    y = torch.as_tensor(np.asarray(y), dtype=torch.float64)

    def fg(theta):
        vector_to_parameters(torch.as_tensor(theta), params)
        loss = binary_logloss(tuned(X).reshape(-1), y).mean()
        loss = loss + 0.5 * l2 * ((parameters_to_vector(params) - anchor) ** 2).sum()
        grads = torch.autograd.grad(loss, params)
        return float(loss.detach()), torch.cat([g.reshape(-1) for g in grads]).numpy()

    res = minimize(
        fg,
        anchor.numpy().copy(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-9, "ftol": 1e-15},
    )
    with torch.no_grad():
        vector_to_parameters(torch.as_tensor(res.x), params)
    return tuned.float()
