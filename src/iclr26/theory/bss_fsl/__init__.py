"""Functional scaling laws (FSL) for online SGD on power-law linear regression.

Papers: Li et al., "Functional Scaling Laws in Kernel Regression: Loss Dynamics and Learning Rate Schedules"
(https://arxiv.org/abs/2509.19189) and Wang et al., "Fast Catch-Up, Late Switching: Optimal Batch Size Scheduling via
Functional Scaling Laws" (https://arxiv.org/abs/2602.14208, ICLR 2026).

The model: features x with covariance Σ = diag(λ_j), λ_j = j^{-β} (capacity exponent β > 1), target
y = ⟨θ*, x⟩ + ε with Var ε = σ², and a source condition λ_j θ*_j² ∝ j^{-1-sβ} (source exponent s > 0, larger s =
easier task). Online SGD with learning rate η_k and batch size B_k on fresh samples. Measured in *intrinsic time*
t_k = Σ_{i<k} η_i, the expected excess risk splits into a signal term that depends only on t and a noise term that is
a convolution of the schedule η/B with a forgetting kernel:

    R(t) ≈ S(t) + σ_eff² ∫_0^t 𝒦(t − τ) η(τ)/B(τ) dτ,      S(t) = Σ_j λ_j θ*_j² e^{-2λ_j t} ≍ t^{-s},
                                                          𝒦(Δ) = Σ_j λ_j² e^{-2λ_j Δ} ≍ Δ^{-(2-1/β)}.

The batch size enters only through η/B: a schedule B(·) is an "effective learning-rate schedule" that spends the data
budget. This module gives the exact expected-risk recursion (Gaussian features, no approximation), a Monte-Carlo online
SGD simulator, the FSL functional in its mode-sum form (spectrum known) and in its parametric power-law form (fitted to
loss curves, as for LLMs), and a least-squares fit of the latter. The FSL equations are our reconstruction of the
standard FSL form (the papers' exact constants were not available to us).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares
from scipy.special import gamma

__all__ = [
    "PowerLawTask",
    "PowerLawTaskConfig",
    "FSLCurve",
    "intrinsic_time",
    "fit_fsl",
]


@dataclass(frozen=True)
class PowerLawTaskConfig:
    """Power-law linear regression task (the FSL teacher–student model)."""

    d: int = field(default=1000, metadata={"help": "number of eigen-directions kept (finite truncation of the kernel)"})
    beta: float = field(default=2.0, metadata={"help": "capacity exponent: λ_j = j^-β, β > 1 (FSL §2)"})
    s: float = field(default=1.0, metadata={"help": "source exponent: λ_j θ*_j² ∝ j^{-1-sβ}, s > 0 (FSL §2)"})
    sigma2: float = field(default=0.1, metadata={"help": "label-noise variance σ²; not stated, our choice"})

    def __post_init__(self):
        if not (isinstance(self.d, int) and self.d >= 2):
            raise ValueError(f"PowerLawTaskConfig.d must be an integer ≥ 2, got {self.d!r}")
        if not self.beta > 1:
            raise ValueError(f"PowerLawTaskConfig.beta must be > 1 (capacity condition), got {self.beta}")
        if not self.s > 0:
            raise ValueError(f"PowerLawTaskConfig.s must be > 0 (source condition), got {self.s}")
        if not self.sigma2 >= 0:
            raise ValueError(f"PowerLawTaskConfig.sigma2 must be ≥ 0, got {self.sigma2}")


def intrinsic_time(lrs: np.ndarray) -> np.ndarray:
    """t_k = Σ_{i<k} η_i for k = 0..K (length K + 1)."""
    return np.concatenate([[0.0], np.cumsum(np.asarray(lrs, dtype=float))])


def _per_step(batch_sizes, lrs) -> tuple[np.ndarray, np.ndarray]:
    bs = np.asarray(batch_sizes, dtype=float)
    if bs.ndim != 1 or bs.size == 0:
        raise ValueError(f"batch_sizes must be a non-empty 1-D array, one batch size per SGD step; got {bs.shape}")
    if np.any(bs <= 0) or not np.all(np.isfinite(bs)):
        raise ValueError("batch sizes must be finite and > 0")
    eta = np.asarray(lrs, dtype=float)
    if eta.ndim > 1 or (eta.ndim == 1 and eta.size != bs.size):
        raise ValueError(
            f"lrs must be one learning rate or one per step: got shape {eta.shape} for {bs.size} steps "
            "(batch_sizes and lrs must describe the same steps)"
        )
    eta = np.broadcast_to(eta, bs.shape).copy()
    if np.any(eta < 0) or not np.all(np.isfinite(eta)):
        raise ValueError("learning rates must be finite and ≥ 0")
    return bs, eta


def _check_rate(lr: float, batch_size: float) -> None:
    if not (0 < lr < np.inf and 0 < batch_size < np.inf):
        raise ValueError(f"lr and batch_size must be finite and > 0, got lr={lr}, batch_size={batch_size}")


class PowerLawTask:
    """Spectrum, target and risk dynamics of the power-law linear regression task.

    Coordinates are the eigenbasis of Σ, so a feature vector is x = √λ ⊙ g with g ~ N(0, I). θ* is normalised so the
    initial excess risk Σ_j λ_j θ*_j² equals 1.
    """

    def __init__(self, config: PowerLawTaskConfig | None = None, **kwargs):
        self.config = config if config is not None else PowerLawTaskConfig(**kwargs)
        c = self.config
        j = np.arange(1, c.d + 1, dtype=float)
        self.lam = j ** (-c.beta)  # λ_j = j^{-β}
        energy = j ** (-1.0 - c.s * c.beta)  # λ_j θ*_j² ∝ j^{-1-sβ}
        self._z = energy.sum()
        self.energy = energy / self._z  # normalised: R(θ=0) = 1
        self.theta2 = self.energy / self.lam  # θ*_j²

    @property
    def sigma2(self) -> float:
        return self.config.sigma2

    def max_stable_lr(self, batch_size: float = 1.0) -> float:
        """Largest η for which the exact second-moment recursion is mean-square stable at batch size B.

        Stationary noise needs q(η, B) = Σ_j (η/B) λ_j / (2 − ηλ_j(1 + 1/B)) < 1 (see `stationary_risk`); bisection.
        """
        _check_rate(1.0, batch_size)
        lo, hi = 0.0, 2.0 / (self.lam[0] * (1 + 1 / batch_size))
        for _ in range(60):
            mid = (lo + hi) / 2
            if self._q(mid, batch_size) < 1:
                lo = mid
            else:
                hi = mid
        return lo

    def _q(self, lr: float, batch_size: float) -> float:
        denom = 2.0 - lr * self.lam * (1.0 + 1.0 / batch_size)
        if np.any(denom <= 0):
            return np.inf
        return float(np.sum((lr / batch_size) * self.lam / denom))

    # --- closed forms -------------------------------------------------------------------------------------------
    def signal(self, t) -> np.ndarray:
        """S(t) = Σ_j λ_j θ*_j² e^{-2λ_j t}: the gradient-flow (noise-free) risk at intrinsic time t."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        if not np.all(np.isfinite(t)) or np.any(t < 0):
            raise ValueError("intrinsic times t must be finite and ≥ 0 (t = Σ η_k)")
        return np.exp(-2.0 * np.outer(t, self.lam)) @ self.energy

    def signal_powerlaw(self, t) -> np.ndarray:
        """Asymptotic S(t) ≈ Γ(s) / (β 2^s Z) · t^{-s}, valid for 1 ≪ t ≪ d^β (substitute u = 2λ_j t in the sum)."""
        c = self.config
        t = np.asarray(t, dtype=float)
        return gamma(c.s) / (c.beta * 2.0**c.s * self._z) * t ** (-c.s)

    def kernel(self, delta) -> np.ndarray:
        """Forgetting kernel 𝒦(Δ) = Σ_j λ_j² e^{-2λ_j Δ} ≍ Γ(2 − 1/β)/β · (2Δ)^{-(2-1/β)} for large Δ."""
        delta = np.atleast_1d(np.asarray(delta, dtype=float))
        return np.exp(-2.0 * np.outer(delta, self.lam)) @ (self.lam**2)

    def stationary_risk(self, lr: float, batch_size: float) -> float:
        """Exact limit of the expected risk of constant-(η, B) SGD: R∞ = σ² q / (1 − q).

        From the fixed point of the diagonal recursion in `exact_risk`:
        m_j [1 − (1−ηλ_j)² − η²λ_j²/B] = (η²/B) λ_j (R∞ + σ²), R∞ = Σ λ_j m_j.
        """
        _check_rate(lr, batch_size)
        q = self._q(lr, batch_size)
        if q >= 1:
            raise ValueError(
                f"lr={lr} is unstable at batch size {batch_size}; use lr < {self.max_stable_lr(batch_size)}"
            )
        return self.sigma2 * q / (1.0 - q)

    # --- simulation ---------------------------------------------------------------------------------------------
    def exact_risk(self, batch_sizes, lrs) -> np.ndarray:
        """Exact expected excess risk E R(θ_k), k = 0..K, of online minibatch SGD started at θ = 0.

        With Gaussian features E[x xᵀ M x xᵀ] = 2ΣMΣ + tr(ΣM)Σ, so the diagonal m_j = E(θ_j − θ*_j)² closes:
        m_j ← (1 − ηλ_j)² m_j + (η²/B) [λ_j² m_j + λ_j (R + σ²)],   R = Σ_j λ_j m_j.
        """
        bs, eta = _per_step(batch_sizes, lrs)
        lam, lam2 = self.lam, self.lam**2
        m = self.theta2.copy()
        out = np.empty(bs.size + 1)
        out[0] = lam @ m
        for k in range(bs.size):
            r = out[k]
            m = (1.0 - eta[k] * lam) ** 2 * m + (eta[k] ** 2 / bs[k]) * (lam2 * m + lam * (r + self.sigma2))
            out[k + 1] = lam @ m
        return out

    def sgd_risk(self, batch_sizes, lrs, rng: np.random.Generator, record_every: int = 1) -> np.ndarray:
        """Monte-Carlo online SGD (fresh Gaussian samples each step); exact excess risk of the iterate every
        `record_every` steps (index k·record_every, plus the final step). Batch sizes must be integers."""
        bs, eta = _per_step(batch_sizes, lrs)
        if not isinstance(record_every, (int, np.integer)) or record_every < 1:
            raise ValueError(f"record_every must be an integer ≥ 1, got {record_every!r}")
        if np.any(bs != np.round(bs)):
            raise ValueError("Monte-Carlo SGD needs integer batch sizes")
        sq = np.sqrt(self.lam)
        theta_star = np.sqrt(self.theta2)
        e = -theta_star.copy()  # e = θ − θ*, θ_0 = 0
        rec = [float(self.lam @ e**2)]
        noise = np.sqrt(self.sigma2)
        for k in range(bs.size):
            b = int(bs[k])
            x = rng.standard_normal((b, self.config.d)) * sq
            resid = x @ e - noise * rng.standard_normal(b)  # ⟨θ − θ*, x⟩ − ε
            e -= (eta[k] / b) * (resid @ x)
            if (k + 1) % record_every == 0 or k + 1 == bs.size:
                rec.append(float(self.lam @ e**2))
        return np.asarray(rec)

    # --- FSL ----------------------------------------------------------------------------------------------------
    def fsl_risk(self, batch_sizes, lrs, noise: str = "self") -> np.ndarray:
        """FSL prediction R_k = S(t_k) + N_k, k = 0..K, with the exact spectrum (no fitted constants).

        N_k = Σ_{i<k} 𝒦(t_k − t_i) (η_i²/B_i) σ_eff²_i, computed mode by mode (n_j ← e^{-2λ_jη} n_j + λ_j η²/B σ_eff²).
        noise="self": σ_eff² = σ² + R_i (online-SGD gradient noise grows with the current risk);
        noise="const": σ_eff² = σ² (the label noise alone).
        """
        if noise not in ("self", "const"):
            raise ValueError(f"noise must be 'self' or 'const', got {noise!r}")
        bs, eta = _per_step(batch_sizes, lrs)
        t = intrinsic_time(eta)
        sig = self.signal(t)
        lam = self.lam
        n = np.zeros_like(lam)
        out = np.empty(bs.size + 1)
        out[0] = sig[0]
        for k in range(bs.size):
            level = self.sigma2 + (out[k] if noise == "self" else 0.0)
            n = np.exp(-2.0 * lam * eta[k]) * n + lam * (eta[k] ** 2 / bs[k]) * level
            out[k + 1] = sig[k + 1] + lam @ n
        return out

    def fsl_final_risk(self, data: np.ndarray, batch_sizes: np.ndarray, lr: float, noise_level: float) -> float:
        """Continuous-data FSL for a piecewise-constant schedule (segment p: `data[p]` samples at batch `sizes[p]`).

        Steps are dz/B, so segment p lasts Δt_p = η D_p / B_p in intrinsic time and injects noise at rate
        (η/B_p) σ_eff²; integrating 𝒦 over each segment in closed form,
        R(T) = S(T) + σ_eff² Σ_p (η/B_p) Σ_j (λ_j/2) [e^{-2λ_j(T − b_p)} − e^{-2λ_j(T − a_p)}].
        """
        data = np.atleast_1d(np.asarray(data, dtype=float))
        sizes = np.atleast_1d(np.asarray(batch_sizes, dtype=float))
        if data.ndim != 1 or data.shape != sizes.shape or data.size == 0:
            raise ValueError(
                f"data and batch_sizes must be 1-D of the same non-zero length (one entry per segment), "
                f"got shapes {data.shape} and {sizes.shape}"
            )
        if not (np.all(np.isfinite(data)) and np.all(data >= 0) and data.sum() > 0):
            raise ValueError(f"data (samples per segment) must be finite, ≥ 0 and not all zero, got {data.tolist()}")
        if not (np.all(np.isfinite(sizes)) and np.all(sizes > 0)):
            raise ValueError(f"batch_sizes must be finite and > 0, got {sizes.tolist()}")
        if not (np.isfinite(lr) and lr > 0) or not (np.isfinite(noise_level) and noise_level >= 0):
            raise ValueError(f"lr must be > 0 and noise_level ≥ 0, got lr={lr!r}, noise_level={noise_level!r}")
        dt = lr * data / sizes
        ends = np.cumsum(dt)
        total = ends[-1]
        starts = ends - dt
        lam = self.lam
        decay_end = np.exp(-2.0 * np.outer(total - ends, lam))
        decay_start = np.exp(-2.0 * np.outer(total - starts, lam))
        noise = ((lr / sizes)[:, None] * (decay_end - decay_start)) @ (lam / 2.0)
        return float(self.signal(total)[0] + noise_level * noise.sum())


@dataclass
class FSLCurve:
    """Parametric FSL for a measured loss curve (unknown spectrum), the form fitted to LLM loss curves:

    L_k = L∞ + c_S (t_k + t0)^{-s} + c_N Σ_{i<k} (1 + (t_k − t_i)/τ)^{-(2-1/β)} (η_i²/B_i) (1 + c_R (t_i + t0)^{-s}).

    The last factor lets the gradient-noise level fall with the loss (online SGD: noise ∝ σ² + R); c_R = 0 gives the
    constant-noise FSL. τ sets the lag below which noise is not yet forgotten (τ ≈ 1/(2λ_max) for the mode-sum kernel).
    """

    l_inf: float
    c_s: float
    s: float
    t0: float
    c_n: float
    beta: float
    c_r: float = 0.0
    tau: float = 1.0

    def predict(self, batch_sizes, lrs, at: np.ndarray | None = None) -> np.ndarray:
        """Predicted loss at steps `at` (default: every step 0..K); vectorised in chunks of O(len(at) · K) memory."""
        bs, eta = _per_step(batch_sizes, lrs)
        t = intrinsic_time(eta)
        steps = np.arange(bs.size + 1) if at is None else np.asarray(at, dtype=int)
        if steps.size and (steps.min() < 0 or steps.max() > bs.size):
            raise ValueError(f"steps in `at` must lie in [0, {bs.size}]")
        q = 2.0 - 1.0 / self.beta
        w = eta**2 / bs * (1.0 + self.c_r * (t[:-1] + self.t0) ** (-self.s))
        noise = np.empty(steps.size)
        chunk = max(1, 2_000_000 // max(bs.size, 1))
        for a in range(0, steps.size, chunk):
            k = steps[a : a + chunk]
            lag = np.maximum(t[k][:, None] - t[None, :-1], 0.0)
            kern = np.where(np.arange(bs.size)[None, :] < k[:, None], (1.0 + lag / self.tau) ** (-q), 0.0)
            noise[a : a + chunk] = kern @ w
        return self.l_inf + self.c_s * (t[steps] + self.t0) ** (-self.s) + self.c_n * noise


def fit_fsl(
    curves, beta: float | None = None, s: float | None = None, max_nfev: int = 150, starts=(-4.0, 0.0, 4.0)
) -> FSLCurve:
    """Least-squares fit of `FSLCurve` in log-loss space to several runs.

    curves: iterable of (batch_sizes, lrs, steps, losses) — per-step schedule and the losses measured at `steps`.
    beta / s: fix the exponents when known (e.g. from the task); otherwise they are fitted too.
    max_nfev / starts: budget of each trust-region fit and the initial log c_N of each restart.
    """
    curves = list(curves)
    if not curves:
        raise ValueError("fit_fsl needs at least one (batch_sizes, lrs, steps, losses) curve")
    for i, c in enumerate(curves):
        if len(c) != 4:
            raise ValueError(f"curve {i}: expected (batch_sizes, lrs, steps, losses), got {len(c)} items")
        steps, losses = np.asarray(c[2]), np.asarray(c[3], dtype=float)
        if steps.ndim != 1 or steps.shape != losses.shape or steps.size == 0:
            raise ValueError(
                f"curve {i}: steps and losses must be 1-D of the same non-zero length, got {steps.shape} and "
                f"{losses.shape}"
            )
        if not np.all(np.isfinite(losses)):
            raise ValueError(f"curve {i}: losses contain NaN or inf; drop those measurements before fitting")
    lo_loss = min(float(np.min(c[3])) for c in curves)
    if lo_loss <= 0:
        raise ValueError("losses must be > 0 for a log-space fit")

    def unpack(p):
        l_inf = lo_loss * (1 - np.exp(-np.exp(p[0])))  # 0 < L∞ < min loss
        fitted_s = np.exp(p[5]) if s is None else s
        fitted_b = 1.0 + np.exp(p[6]) if beta is None else beta
        return FSLCurve(l_inf, np.exp(p[1]), fitted_s, np.exp(p[2]), np.exp(p[3]), fitted_b, np.exp(p[7]), np.exp(p[8]))

    def resid(p):
        f = unpack(p)
        return np.concatenate([np.log(f.predict(b, e, at=k)) - np.log(y) for b, e, k, y in curves])

    p0 = np.array([0.0, 0.0, 0.0, 0.0, 0.0, np.log(0.5), np.log(1.0), 0.0, 0.0])
    best = None
    for c_n0 in starts:
        p0[3] = c_n0
        r = least_squares(resid, p0, method="trf", max_nfev=max_nfev)
        if best is None or r.cost < best.cost:
            best = r
    return unpack(best.x)
