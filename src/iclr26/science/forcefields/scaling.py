"""Power-law scaling fits with confidence intervals: loss against data, parameters and compute.

Following the scaling-law practice that Ngo & Ravanbakhsh (https://arxiv.org/abs/2510.09768) apply to neural force
fields (Kaplan et al. 2020; Hoffmann et al. 2022):

* single-variable law  L(x) = A · x^{−α}  (optionally + L_∞): fitted by least squares on log L, with the exponent's
  confidence interval from the fit covariance (t quantile), or by bootstrap over the runs;
* compute frontier: the lower envelope of loss against training FLOPs over all runs and checkpoints of one
  architecture, then L(C) = F · C^{−γ} on the envelope points;
* joint law  L(N, D) = L_∞ + A N^{−α} + B D^{−β}  (Chinchilla "approach 3": Huber loss on log L, L-BFGS from a grid of
  starts), with the compute-optimal allocation N_opt ∝ C^{β/(α+β)}, D_opt ∝ C^{α/(α+β)} for C ∝ N·D.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats


@dataclass(frozen=True)
class PowerLawFit:
    """L(x) = floor + prefactor · x^(−exponent), with a two-sided confidence interval on the exponent."""

    exponent: float
    prefactor: float
    floor: float
    exponent_se: float
    ci_low: float
    ci_high: float
    n_points: int

    def predict(self, x) -> np.ndarray:
        return self.floor + self.prefactor * np.asarray(x, dtype=float) ** (-self.exponent)


def _validate(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if np.any(~np.isfinite(x)) or np.any(~np.isfinite(y)) or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("power-law fits need finite, strictly positive x and y (they are fitted in log space)")
    if np.unique(x).size < 2:
        raise ValueError("a power-law fit needs at least two distinct x values")
    return x, y


def fit_power_law(x, y, floor: bool = False, confidence: float = 0.95) -> PowerLawFit:
    """Fit L = A x^{−α} (floor=False: linear regression of log L on log x) or L = L_∞ + A x^{−α} (floor=True).

    The interval is exponent ± t_{(1+confidence)/2, dof} · SE, with SE from the regression / fit covariance; with no
    residual degrees of freedom the SE and interval are NaN.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x, y = _validate(x, y)
    lx, ly = np.log(x), np.log(y)
    if not floor:
        res = stats.linregress(lx, ly)
        dof = x.size - 2
        se = res.stderr if dof > 0 else float("nan")
        alpha, pref, l_inf = -res.slope, math.exp(res.intercept), 0.0
    else:
        if x.size < 4:
            raise ValueError("a power law with a floor has 3 parameters; give at least 4 points")

        # parameterise A = e^a, L_∞ = e^e so both stay positive; fit log L (relative errors)
        def model(lx_, a, alpha_, e):
            return np.logaddexp(e, a - alpha_ * lx_)

        slope0 = -stats.linregress(lx, ly).slope
        p0 = (ly.max() + slope0 * lx.min(), max(slope0, 1e-3), ly.min() - 2.0)
        try:
            popt, pcov = optimize.curve_fit(model, lx, ly, p0=p0, maxfev=20000)
        except RuntimeError as exc:
            raise ValueError(f"the floor fit did not converge ({exc}); try floor=False or more points") from exc
        dof = x.size - 3
        alpha, pref, l_inf = float(popt[1]), math.exp(popt[0]), math.exp(popt[2])
        se = float(np.sqrt(pcov[1, 1])) if dof > 0 and np.isfinite(pcov[1, 1]) else float("nan")
    half = stats.t.ppf((1 + confidence) / 2, dof) * se if dof > 0 else float("nan")
    return PowerLawFit(
        float(alpha), float(pref), float(l_inf), float(se), float(alpha - half), float(alpha + half), x.size
    )


def bootstrap_exponent(
    x, y, n_boot: int = 1000, floor: bool = False, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the exponent, resampling (x, y) runs with replacement."""
    if n_boot < 10:
        raise ValueError(f"n_boot must be ≥ 10, got {n_boot}")
    x, y = _validate(x, y)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        idx = rng.integers(0, x.size, x.size)
        if np.unique(x[idx]).size < (4 if floor else 2):
            continue
        try:
            draws.append(fit_power_law(x[idx], y[idx], floor=floor).exponent)
        except ValueError:
            continue
    if len(draws) < 10:
        return float("nan"), float("nan")
    q = (1 - confidence) / 2
    return float(np.quantile(draws, q)), float(np.quantile(draws, 1 - q))


def lower_envelope(compute, loss) -> tuple[np.ndarray, np.ndarray]:
    """Points on the compute frontier: sorted by compute, kept when they beat every cheaper point's loss."""
    c, l = np.asarray(compute, dtype=float), np.asarray(loss, dtype=float)
    if c.shape != l.shape or c.size == 0:
        raise ValueError("compute and loss must be non-empty arrays of the same length")
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(l))):
        raise ValueError("compute and loss must be finite (found NaN or inf); drop failed checkpoints first")
    order = np.argsort(c, kind="stable")
    keep, best = [], math.inf
    for i in order:
        if l[i] < best:
            keep.append(i)
            best = l[i]
    return c[keep], l[keep]


def fit_compute_frontier(compute, loss, floor: bool = False) -> PowerLawFit:
    """L(C) = F · C^{−γ} (+ L_∞) fitted on the lower envelope of (compute, loss) over all runs and checkpoints."""
    c, l = lower_envelope(compute, loss)
    return fit_power_law(c, l, floor=floor)


@dataclass(frozen=True)
class JointLawFit:
    """L(N, D) = floor + A N^{−alpha} + B D^{−beta}, and the compute-optimal allocation exponents for C ∝ N·D."""

    alpha: float
    beta: float
    A: float
    B: float
    floor: float

    @property
    def a(self) -> float:  # N_opt ∝ C^a
        return self.beta / (self.alpha + self.beta)

    @property
    def b(self) -> float:  # D_opt ∝ C^b
        return self.alpha / (self.alpha + self.beta)

    def predict(self, n, d) -> np.ndarray:
        n, d = np.asarray(n, dtype=float), np.asarray(d, dtype=float)
        return self.floor + self.A * n ** (-self.alpha) + self.B * d ** (-self.beta)


def fit_joint_law(n, d, loss, huber_delta: float = 1e-3) -> JointLawFit:
    """Chinchilla approach 3: minimise Σ Huber_δ(LSE(a − α log N, b − β log D, e) − log L) by L-BFGS from a grid."""
    n, d, loss = (np.asarray(v, dtype=float).ravel() for v in (n, d, loss))
    if not (n.size == d.size == loss.size) or n.size < 5:
        raise ValueError("the joint law has 5 parameters; give at least 5 runs with N, D and loss each")
    if not all(np.all(np.isfinite(v)) and np.all(v > 0) for v in (n, d, loss)):
        raise ValueError("N, D and loss must be finite and strictly positive")
    if not 0 < huber_delta < math.inf:
        raise ValueError(f"huber_delta must be finite and > 0, got {huber_delta}")
    if np.unique(n).size < 2 or np.unique(d).size < 2:
        raise ValueError("the joint law needs at least two distinct N and two distinct D")
    ln, ld, ll = np.log(n), np.log(d), np.log(loss)

    def objective(p):
        a, b, e, alpha, beta = p
        pred = np.logaddexp.reduce(np.stack([a - alpha * ln, b - beta * ld, np.full_like(ln, e)]), axis=0)
        r = pred - ll
        return np.where(np.abs(r) <= huber_delta, 0.5 * r**2, huber_delta * (np.abs(r) - 0.5 * huber_delta)).sum()

    best = None
    grid = itertools.product((0.0, 5.0), (0.0, 5.0), (ll.min() - 1.0,), (0.3, 1.0), (0.3, 1.0))
    for start in grid:
        res = optimize.minimize(objective, np.array(start), method="L-BFGS-B")
        if best is None or res.fun < best.fun:
            best = res
    a, b, e, alpha, beta = best.x
    return JointLawFit(float(alpha), float(beta), math.exp(a), math.exp(b), math.exp(e))
