"""Synthetic multi-task classification with planted task interactions, and exact subset retraining.

A testbed for task attribution where the ground truth F(s) (target loss of the model trained on task subset s) is
computed exactly: the model is L2-regularised logistic regression on fixed random Fourier features, a strictly convex
problem solved to tight tolerance, so every retraining is deterministic and LOO effects are not noise.

Geometry: 2-D inputs, true boundary x₂ = 0.5·sin(2x₁), six regions along x₁. The target task holds points close to
the boundary in every region. Training tasks are clusters of labelled points; the *interacting* design plants
  - XOR-type pairs: one task holds only the positive points of a region, its partner only the negative ones; alone,
    each pushes the boundary through the wrong side of the region; only together do they pin it down;
  - a redundant pair (two correct samples of the same region: each alone helps, together sub-additive);
  - a conflicting pair (a correct task and one labelled by a shifted boundary in the same region);
  - single-region, global and noisy tasks that act nearly additively.
The *control* design draws every task i.i.d. over all regions (correct labels, varying label noise), where task
effects are close to additive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MultiTaskProblem", "make_tasks", "WeightedLogistic"]

_CENTRES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])


def _boundary(x1: np.ndarray) -> np.ndarray:
    return 0.5 * np.sin(2.0 * x1)


@dataclass
class MultiTaskProblem:
    X_tasks: list[np.ndarray]  # K arrays (n_k, 2)
    y_tasks: list[np.ndarray]  # K arrays (n_k,) in {0, 1}
    X_target: np.ndarray
    y_target: np.ndarray
    roles: list[str]

    @property
    def n_tasks(self) -> int:
        return len(self.X_tasks)


def _region(rng, c, n, spread=0.9, side=None):
    x1 = rng.uniform(c - 0.5, c + 0.5, n)
    off = rng.normal(0.0, spread, n)
    if side is not None:
        off = side * np.abs(off) + side * 0.05
    return np.stack([x1, _boundary(x1) + off], 1)


def _label(X, shift=0.0):
    return (X[:, 1] > _boundary(X[:, 0]) + shift).astype(float)


def make_tasks(seed: int, n_per_task: int = 60, n_target: int = 240, interacting: bool = True) -> MultiTaskProblem:
    """K = 12 training tasks and a target task; see the module docstring for the design."""
    if n_per_task < 4 or n_target < 6:
        raise ValueError(f"n_per_task must be >= 4 and n_target >= 6, got {n_per_task}, {n_target}")
    rng = np.random.default_rng(seed)
    c = rng.permutation(_CENTRES)  # which region plays which role changes with the seed
    Xs, ys, roles = [], [], []

    def add(X, y, role):
        Xs.append(X)
        ys.append(y)
        roles.append(role)

    if interacting:
        for r, name in ((0, "xor-a"), (1, "xor-b")):
            Xp = _region(rng, c[r], n_per_task, side=+1)
            Xn = _region(rng, c[r], n_per_task, side=-1)
            add(Xp, np.ones(n_per_task), f"{name}+")
            add(Xn, np.zeros(n_per_task), f"{name}-")
        for role in ("redundant-1", "redundant-2"):
            X = _region(rng, c[2], n_per_task)
            add(X, _label(X), role)
        X = _region(rng, c[3], n_per_task)
        add(X, _label(X), "conflict-correct")
        X = _region(rng, c[3], n_per_task)
        add(X, _label(X, shift=0.8), "conflict-shifted")
        for r in (4, 5):
            X = _region(rng, c[r], n_per_task)
            add(X, _label(X), "single")
        X = np.concatenate([_region(rng, cc, n_per_task // 6 + 1) for cc in c])[:n_per_task]
        add(X, _label(X), "global")
        X = np.concatenate([_region(rng, cc, n_per_task // 6 + 1) for cc in c])[:n_per_task]
        y = _label(X)
        flip = rng.random(n_per_task) < 0.4
        add(X, np.where(flip, 1 - y, y), "global-noisy")
    else:
        noise = np.linspace(0.0, 0.45, 12)
        for k in range(12):
            X = np.concatenate([_region(rng, cc, n_per_task // 6 + 1) for cc in c])[:n_per_task]
            y = _label(X)
            flip = rng.random(n_per_task) < noise[k]
            add(X, np.where(flip, 1 - y, y), f"iid-noise{noise[k]:.2f}")
    Xt = np.concatenate([_region(rng, cc, n_target // 6, spread=0.25) for cc in _CENTRES])
    return MultiTaskProblem(Xs, ys, Xt, _label(Xt), roles)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class WeightedLogistic:
    """θ̂(s) = argmin_θ Σ_k s_k Σ_{i∈k} ℓ(θᵀz(x_i), y_i) + (λ/2)‖θ‖² on random Fourier features z (exact solve).

    F(s) = mean target log-loss of θ̂(s). The objective is strictly convex, so θ̂(s) is unique and deterministic.
    """

    def __init__(
        self, problem: MultiTaskProblem, n_features: int = 200, lengthscale: float = 0.7, l2: float = 1.0, seed: int = 0
    ):
        if n_features < 1 or not (0 < lengthscale < np.inf and 0 < l2 < np.inf):
            raise ValueError(
                f"n_features must be >= 1, lengthscale and l2 finite and > 0, got {n_features}, {lengthscale}, {l2}"
            )
        rng = np.random.default_rng(seed + 7919)
        self.W = rng.normal(0.0, 1.0 / lengthscale, (2, n_features))
        self.b = rng.uniform(0, 2 * np.pi, n_features)
        self.l2 = l2
        self.problem = problem
        self.Z_tasks = [self.features(X) for X in problem.X_tasks]
        self.Z_target = self.features(problem.X_target)
        self.K = problem.n_tasks
        self._Z = np.concatenate(self.Z_tasks)
        self._y = np.concatenate(problem.y_tasks)
        self._task = np.concatenate([np.full(len(y), k) for k, y in enumerate(problem.y_tasks)])
        self._warm = np.zeros(self._Z.shape[1])

    def features(self, X: np.ndarray) -> np.ndarray:
        Z = np.sqrt(2.0 / self.W.shape[1]) * np.cos(X @ self.W + self.b)
        return np.concatenate([Z, np.ones((len(X), 1))], 1)  # last column: bias

    def fit(self, s) -> np.ndarray:
        s = np.asarray(s, float)
        if s.shape != (self.K,):
            raise ValueError(f"task weights must have shape ({self.K},), got {s.shape}")
        if not np.all(np.isfinite(s)) or np.any(s < 0):
            raise ValueError(f"task weights must be finite and ≥ 0 (0 drops a task), got {s.tolist()}")
        w = s[self._task]
        keep = w > 0
        Z, y, w = self._Z[keep], self._y[keep], w[keep]
        lam = self.l2

        def fg(theta):
            z = Z @ theta
            # ℓ(z, y) = log(1 + e^z) − y z, computed stably
            loss = np.sum(w * (np.logaddexp(0.0, z) - y * z)) + 0.5 * lam * theta @ theta
            grad = Z.T @ (w * (_sigmoid(z) - y)) + lam * theta
            return loss, grad

        def hess(theta):
            q = _sigmoid(Z @ theta)
            return (Z * (w * q * (1 - q))[:, None]).T @ Z + lam * np.eye(Z.shape[1])

        # Strictly convex: damped Newton (exact Hessian, backtracking) reaches machine precision in a few steps.
        theta = self._warm.copy()
        loss, grad = fg(theta)
        for _ in range(100):
            step = np.linalg.solve(hess(theta), grad)
            decrement = grad @ step  # Newton decrement λ², twice the predicted decrease
            if decrement < 1e-20:
                break
            t = 1.0
            while decrement > 1e-8:  # backtracking only outside the region of quadratic convergence
                new_loss, _ = fg(theta - t * step)
                if new_loss <= loss - 1e-4 * t * decrement or t < 1e-6:
                    break
                t *= 0.5
            theta = theta - t * step
            loss, grad = fg(theta)
        return theta

    def target_loss(self, theta: np.ndarray) -> float:
        z = self.Z_target @ theta
        return float(np.mean(np.logaddexp(0.0, z) - self.problem.y_target * z))

    def F(self, s) -> float:
        """Exact target loss after retraining on task weights s."""
        return self.target_loss(self.fit(s))

    def torch_closures(self):
        """(task_losses, target_loss, regulariser) as torch functions of θ, for `influence_scores`."""
        import torch

        Z = [torch.as_tensor(z) for z in self.Z_tasks]
        Y = [torch.as_tensor(y) for y in self.problem.y_tasks]
        Zt, Yt = torch.as_tensor(self.Z_target), torch.as_tensor(self.problem.y_target)
        lam = self.l2

        def ll(z, y):
            return torch.nn.functional.softplus(z) - y * z

        def task_losses(theta):
            return torch.stack([ll(z @ theta, y).sum() for z, y in zip(Z, Y)])

        def target_loss(theta):
            return ll(Zt @ theta, Yt).mean()

        def regulariser(theta):
            return 0.5 * lam * theta @ theta

        return task_losses, target_loss, regulariser

    def influence(self, s=None, damping: float = 0.0) -> np.ndarray:
        """I_k = ∂F/∂s_k at weights s (default all ones), exactly (logistic Hessian is available in closed form)."""
        import torch

        from iclr26.theory.kernel_surrogate import influence_scores

        s = np.ones(self.K) if s is None else np.asarray(s, float)
        theta = torch.as_tensor(self.fit(s))
        task_losses, target_loss, reg = self.torch_closures()
        return influence_scores(theta, task_losses, target_loss, reg, damping, weights=s)
