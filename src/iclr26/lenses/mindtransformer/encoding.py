"""Voxel-wise encoding models of word-level LLM features (MindTransformer's analysis pipeline).

Paper: *The Mind's Transformer: Computational Neuroanatomy of LLM-Brain Alignment* (Chen & Sivakumar, ICLR 2026),
https://openreview.net/forum?id=PgIlCCNxdB — official code https://github.com/cheng-yeh/MindTransformer.

Each word ``w`` (onset ``on_w``, offset ``off_w``) carries a feature vector ``a_w`` (one block state of one layer).
A regressor is the word-rate event train convolved with a haemodynamic response ``h`` and sampled at the frame times
``t_i = i·TR + TR/2``:

    x_i = Σ_w a_w ∫_{on_w}^{off_w} h(t_i − τ) dτ = Σ_w a_w [H(t_i − on_w) − H(t_i − off_w)],     H(t) = ∫_0^t h

which we evaluate exactly with the gamma CDFs of a double-gamma HRF (Glover's parameters by default, as the paper's
``nilearn`` call). Runs are trimmed and z-scored; a ridge without intercept maps regressors to voxels,
``B = argmin ‖Y − XB‖² + α‖B‖²``. With one SVD ``X = U S Vᵀ`` per fit, every alpha and every voxel comes at once:
``B(α) = V diag(s / (s² + α)) Uᵀ Y``. The alpha (one for all voxels, from ``logspace(2, 7, 16)``) is chosen on a
validation run by mean Pearson r; the score is the held-out Pearson r per voxel, leave-one-run-out.

Two feature-selection modes: **per state** (Mode 1: one encoding model per block state; the state with the best r is
the voxel's "winner") and **combined** (Mode 2, MindTransformer proper: concatenate several states, fit, rank features
by mean |β| over voxels, keep as many as the pivot state has, refit with the same alpha).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, stats

# Double-gamma HRFs: (peak delay, undershoot delay, peak dispersion, undershoot dispersion, undershoot ratio), seconds.
# The ratio multiplies unit-integral gamma pdfs, as nilearn does. "glover" uses 0.35, nilearn ≤ 0.10's value and so the
# official code's (its requirements pin nilearn 0.10.4). nilearn 0.11 changed it to 0.48 (nilearn PR #4452: Glover's
# 0.35 applies to peak-normalised gammas, ≈ 0.48 for unit-integral ones); "glover-nilearn-0.11" is that variant.
HRFS = {
    "glover": (6.0, 12.0, 0.9, 0.9, 0.35),
    "glover-nilearn-0.11": (6.0, 12.0, 0.9, 0.9, 0.48),
    "spm": (6.0, 16.0, 1.0, 1.0, 1.0 / 6.0),
}


@dataclass
class EncodingConfig:
    """Hyper-parameters of the encoding pipeline (defaults: the official code's LPP configuration)."""

    tr: float = field(default=2.0, metadata={"help": "repetition time in seconds (LPP fMRI: 2 s)"})
    trim: int = field(default=10, metadata={"help": "TRs dropped at both ends of every run (official config)"})
    alpha_exp_min: float = field(default=2.0, metadata={"help": "alphas = logspace(min, max, n) (official config)"})
    alpha_exp_max: float = field(default=7.0, metadata={"help": "upper exponent of the alpha grid (official config)"})
    n_alphas: int = field(default=16, metadata={"help": "number of alphas in the grid (official config)"})
    hrf: str = field(
        default="glover",
        metadata={
            "help": "'glover' (ratio 0.35: the official code's pinned nilearn 0.10.4), 'glover-nilearn-0.11' "
            "(ratio 0.48, current nilearn) or 'spm' canonical HRF"
        },
    )

    def __post_init__(self):
        if not self.tr > 0:
            raise ValueError(f"tr must be > 0 seconds, got {self.tr}")
        if self.trim < 0:
            raise ValueError(f"trim must be >= 0 TRs, got {self.trim}")
        if not self.alpha_exp_min <= self.alpha_exp_max:
            raise ValueError(f"alpha_exp_min={self.alpha_exp_min} must be <= alpha_exp_max={self.alpha_exp_max}")
        if self.n_alphas < 1:
            raise ValueError(f"n_alphas must be >= 1, got {self.n_alphas}")
        if self.hrf not in HRFS:
            raise ValueError(f"hrf must be one of {', '.join(HRFS)}, got {self.hrf!r}")

    @property
    def alphas(self) -> np.ndarray:
        return np.logspace(self.alpha_exp_min, self.alpha_exp_max, self.n_alphas)


# ---------------------------------------------------------------------------------------------------- HRF, regressors
def _gammas(kind: str):
    if kind not in HRFS:
        raise ValueError(f"unknown HRF {kind!r}; choose one of {', '.join(HRFS)}")
    delay, under, disp, udisp, ratio = HRFS[kind]
    return stats.gamma(delay / disp, scale=disp), stats.gamma(under / udisp, scale=udisp), ratio


def hrf(t: np.ndarray, kind: str = "glover") -> np.ndarray:
    """Double-gamma HRF at times ``t`` (s), normalised to unit integral: ``(g₁(t) − r·g₂(t)) / (1 − r)``."""
    g1, g2, r = _gammas(kind)
    t = np.asarray(t, dtype=float)
    return (g1.pdf(t) - r * g2.pdf(t)) / (1.0 - r)


def hrf_integral(t: np.ndarray, kind: str = "glover") -> np.ndarray:
    """``H(t) = ∫_0^t h``: rises from 0 to 1 (the unit-integral HRF), through the gamma CDFs."""
    g1, g2, r = _gammas(kind)
    t = np.asarray(t, dtype=float)
    return (g1.cdf(t) - r * g2.cdf(t)) / (1.0 - r)


def frame_times(n_scans: int, tr: float) -> np.ndarray:
    """Acquisition times ``t_i = i·TR + TR/2`` (the official code's frame times)."""
    return np.arange(n_scans) * tr + 0.5 * tr


def hrf_design(onsets, offsets, n_scans: int, tr: float, kind: str = "glover") -> np.ndarray:
    """``M [n_scans, n_words]`` with ``M_iw = H(t_i − on_w) − H(t_i − off_w)``: regressors are ``M @ features``.

    Each word is a boxcar from its onset to its offset (nilearn's event model) integrated exactly against the HRF.
    """
    on, off = np.asarray(onsets, dtype=float), np.asarray(offsets, dtype=float)
    if on.ndim != 1 or on.shape != off.shape:
        raise ValueError(f"onsets and offsets must be 1-d with one time per word, got shapes {on.shape}, {off.shape}")
    if np.any(off < on):
        raise ValueError("every offset must be >= its onset (times in seconds from the start of the run)")
    if n_scans < 1 or tr <= 0:
        raise ValueError(f"n_scans must be >= 1 and tr > 0, got n_scans={n_scans}, tr={tr}")
    t = frame_times(n_scans, tr)[:, None]
    return hrf_integral(t - on[None], kind) - hrf_integral(t - off[None], kind)


def make_regressors(features, onsets, offsets, n_scans: int, tr: float, kind: str = "glover") -> np.ndarray:
    """HRF-convolved word-rate regressors ``[n_scans, n_features]`` from word features ``[n_words, n_features]``."""
    a = np.asarray(features, dtype=float)
    if a.ndim != 2 or len(a) != len(np.atleast_1d(onsets)):
        raise ValueError(f"features must be [n_words, n_features] with one row per onset, got shape {a.shape}")
    return hrf_design(onsets, offsets, n_scans, tr, kind) @ a


def zscore(x: np.ndarray) -> np.ndarray:
    """Columns to mean 0, std 1 over time; constant columns become 0 (the official code's NaN → 0)."""
    x = np.asarray(x, dtype=float)
    sd = x.std(axis=0)
    return np.where(sd > 0, (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)


def prepare_run(x: np.ndarray, trim: int) -> np.ndarray:
    """Trim ``trim`` TRs at both ends, then z-score (regressors and BOLD alike)."""
    if x.shape[0] <= 2 * trim + 2:
        raise ValueError(f"a run of {x.shape[0]} TRs is too short to trim {trim} TRs at both ends; lower trim")
    return zscore(x[trim : x.shape[0] - trim] if trim else x)


# ---------------------------------------------------------------------------------------------------------- ridge
def pearson_columns(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of matching columns (over axis -2, time); 0 where a column is constant."""
    a = a - a.mean(axis=-2, keepdims=True)
    b = b - b.mean(axis=-2, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-2) * (b * b).sum(axis=-2))
    return np.where(den > 0, (a * b).sum(axis=-2) / np.where(den > 0, den, 1.0), 0.0)


def thin_svd(x: np.ndarray, rtol: float = 1e-10):
    """``X = U diag(s) Vᵀ`` from the eigendecomposition of the smaller Gram matrix (``XXᵀ`` or ``XᵀX``).

    For the wide, short design matrices of fMRI encoding (time ≪ features or the reverse) this is several times
    faster than LAPACK's SVD; directions with ``s² < rtol·max s²`` (the null space) are dropped.
    """
    t, f = x.shape
    gram = x @ x.T if t <= f else x.T @ x
    ev, vec = np.linalg.eigh(gram)
    keep = ev > rtol * max(ev.max(), 0.0) if ev.size and ev.max() > 0 else np.zeros(len(ev), bool)
    ev, vec = ev[keep][::-1], vec[:, keep][:, ::-1]
    s = np.sqrt(ev)
    if t <= f:  # vec = U; V = Xᵀ U / s
        return vec, s, (x.T @ vec / s).T
    return x @ vec / s, s, vec.T  # vec = V; U = X V / s


class SVDRidge:
    """Ridge without intercept for all alphas and all targets from one thin SVD of ``X``.

    ``B(α) = V diag(s / (s² + α)) Uᵀ Y`` minimises ``‖Y − XB‖² + α‖B‖²`` (sklearn's ``Ridge(fit_intercept=False)``).
    """

    def __init__(self, x: np.ndarray, y: np.ndarray):
        if x.ndim != 2 or y.ndim != 2 or len(x) != len(y):
            raise ValueError(
                f"X must be [time, features] and Y [time, targets] with equal time, got {x.shape}, {y.shape}"
            )
        self.u, self.s, self.vt = thin_svd(x)
        self.uty = self.u.T @ y  # [rank, targets]

    def _shrink(self, alpha: float) -> np.ndarray:
        return self.s / (self.s**2 + alpha)

    def coef(self, alpha: float) -> np.ndarray:
        """``B(α)``, ``[features, targets]``."""
        return self.vt.T @ (self._shrink(alpha)[:, None] * self.uty)

    def predict(self, x_new: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
        """Predictions ``[n_alphas, time, targets]`` as ``(X_new V) diag(s/(s²+α)) UᵀY`` (no coefficient matrix)."""
        xv = x_new @ self.vt.T
        return np.stack([xv @ (self._shrink(a)[:, None] * self.uty) for a in alphas])


class RunRidge:
    """Ridge fits on any union of runs, all alphas at once, from Gram blocks computed once (what CV needs).

    Time-short designs use the dual form: with ``K = X_tr X_trᵀ = U Λ Uᵀ`` (a block of the Gram matrix of all runs),
    ``Ŷ_te(α) = X_te X_trᵀ U diag(1/(λ+α)) Uᵀ Y_tr`` — the same predictions as ``B(α) = V diag(s/(s²+α)) UᵀY``.
    Feature-short designs use the primal form with ``X_trᵀX_tr = Σ_runs X_rᵀX_r = V Λ Vᵀ``. One eigendecomposition
    per fit, either way.
    """

    def __init__(self, x_runs: Sequence[np.ndarray], y_runs: Sequence[np.ndarray]):
        _check_runs(x_runs, y_runs, min_runs=2)
        self.x_runs, self.y_runs = list(x_runs), list(y_runs)
        self.dual = sum(len(x) for x in x_runs) <= x_runs[0].shape[1]
        if self.dual:
            x = np.concatenate(self.x_runs)
            self.gram, self.y = x @ x.T, np.concatenate(self.y_runs)
            bounds = np.cumsum([0] + [len(r) for r in self.x_runs])
            self.idx = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        else:
            self.xtx = [r.T @ r for r in self.x_runs]
            self.xty = [r.T @ y for r, y in zip(self.x_runs, self.y_runs)]

    def predict(self, train: Sequence[int], test: int, alphas: Sequence[float]) -> np.ndarray:
        """Predictions ``[n_alphas, time, targets]`` for run ``test`` of ridge fits on runs ``train``."""
        if len(alphas) == 1 and alphas[0] > 0:  # one alpha: a Cholesky solve is ~25x cheaper than the eigensystem
            return self._solve(train, test, float(alphas[0]))[None]
        if self.dual:
            tr = np.concatenate([self.idx[r] for r in train])
            lam, u = np.linalg.eigh(self.gram[np.ix_(tr, tr)])
            left, right = self.gram[np.ix_(self.idx[test], tr)] @ u, u.T @ self.y[tr]
        else:
            lam, v = np.linalg.eigh(sum(self.xtx[r] for r in train))
            left, right = self.x_runs[test] @ v, v.T @ sum(self.xty[r] for r in train)
        lam = np.clip(lam, 0.0, None)
        tol = 1e-12 * max(lam.max(initial=0.0), 1.0)

        def inv(a):
            d = lam + a
            return np.where(d > tol, 1.0 / np.where(d > tol, d, 1.0), 0.0)

        return np.stack([left @ (inv(a)[:, None] * right) for a in alphas])

    def _solve(self, train, test, alpha):
        if self.dual:  # Ŷ = K_te,tr (K_tr + αI)⁻¹ Y_tr
            tr = np.concatenate([self.idx[r] for r in train])
            k = self.gram[np.ix_(tr, tr)] + alpha * np.eye(len(tr))
            return self.gram[np.ix_(self.idx[test], tr)] @ linalg.solve(k, self.y[tr], assume_a="pos")
        c = sum(self.xtx[r] for r in train) + alpha * np.eye(self.xtx[0].shape[0])  # B = (XᵀX + αI)⁻¹ XᵀY
        return self.x_runs[test] @ linalg.solve(c, sum(self.xty[r] for r in train), assume_a="pos")


def select_alpha(x_fit, y_fit, x_val, y_val, alphas) -> tuple[float, np.ndarray]:
    """The alpha with the best mean (over targets) validation Pearson r, and that mean r for every alpha."""
    alphas = _check_alphas(alphas)
    pred = SVDRidge(x_fit, y_fit).predict(x_val, alphas)
    score = pearson_columns(pred, y_val[None]).mean(axis=-1)
    return float(alphas[int(np.argmax(score))]), score


def _check_alphas(alphas) -> np.ndarray:
    alphas = np.asarray(alphas, dtype=float)
    if alphas.ndim != 1 or not len(alphas) or np.any(alphas < 0):
        raise ValueError("alphas must be a non-empty 1-d array of non-negative penalties")
    return alphas


def _check_runs(x_runs, y_runs, min_runs: int = 3):
    if len(x_runs) != len(y_runs):
        raise ValueError(f"{len(x_runs)} regressor runs but {len(y_runs)} response runs; give one of each per run")
    if len(x_runs) < min_runs:
        raise ValueError(f"leave-one-run-out with a validation run needs at least 3 runs, got {len(x_runs)}")
    for i, (x, y) in enumerate(zip(x_runs, y_runs)):
        if x.ndim != 2 or y.ndim != 2 or len(x) != len(y):
            raise ValueError(f"run {i}: regressors {x.shape} and responses {y.shape} must be [time, ·] of equal length")
        if y.shape[1] != y_runs[0].shape[1] or x.shape[1] != x_runs[0].shape[1]:
            raise ValueError(f"run {i}: feature or voxel count differs from run 0")


def _folds(n_runs):
    """Leave-one-run-out; inside a fold the first training run validates the alpha (official code)."""
    for test in range(n_runs):
        train = [r for r in range(n_runs) if r != test]
        yield test, train, train[0], train[1:]


def encode(x_runs: Sequence[np.ndarray], y_runs: Sequence[np.ndarray], alphas) -> dict:
    """Mode 1: leave-one-run-out ridge of prepared runs. Returns ``r`` ``[voxels]`` (mean over folds), per fold
    ``r_folds`` ``[folds, voxels]`` and the chosen ``alphas``."""
    _check_runs(x_runs, y_runs)
    alphas = _check_alphas(alphas)
    ridge = RunRidge(x_runs, y_runs)
    r_folds, chosen = [], []
    for test, train, val, fit in _folds(len(x_runs)):
        # one alpha for all voxels: the best mean validation r of fits on the other training runs
        score = pearson_columns(ridge.predict(fit, val, alphas), y_runs[val][None]).mean(axis=-1)
        alpha = float(alphas[int(np.argmax(score))])
        pred = ridge.predict(train, test, [alpha])[0]  # refit on all training runs
        r_folds.append(pearson_columns(pred, y_runs[test]))
        chosen.append(alpha)
    r_folds = np.stack(r_folds)
    return {"r": r_folds.mean(axis=0), "r_folds": r_folds, "alphas": np.array(chosen)}


def encode_combined(
    x_runs_by_state: Mapping[str, Sequence[np.ndarray]], y_runs, inputs: Sequence[str], pivot: str, alphas
) -> dict:
    """Mode 2 (MindTransformer): two-stage pivot regression on the concatenated ``inputs`` states.

    Stage 1 fits all concatenated features; features are ranked by ``mean_v |β_{v,f}|`` and the top ``N_p`` (the
    pivot state's width) are kept; stage 2 refits them with the same alpha. Returns stage-2 ``r`` (mean over folds),
    stage-1 ``r_stage1`` and ``selected``: how many kept features came from each state, averaged over folds.
    """
    missing = [s for s in [*inputs, pivot] if s not in x_runs_by_state]
    if missing or not inputs:
        raise ValueError(f"states {missing} not given; inputs must be a non-empty subset of {list(x_runs_by_state)}")
    n_runs = len(y_runs)
    x_runs = [np.concatenate([x_runs_by_state[s][i] for s in inputs], axis=1) for i in range(n_runs)]
    _check_runs(x_runs, y_runs)
    widths = [x_runs_by_state[s][0].shape[1] for s in inputs]
    owner = np.repeat(np.arange(len(inputs)), widths)
    n_keep = min(x_runs_by_state[pivot][0].shape[1], x_runs[0].shape[1])
    alphas = _check_alphas(alphas)
    ridge = RunRidge(x_runs, y_runs)
    r1, r2, counts = [], [], []
    for test, train, val, fit in _folds(n_runs):
        cat = lambda runs, idx: np.concatenate([runs[i] for i in idx])  # noqa: E731
        score = pearson_columns(ridge.predict(fit, val, alphas), y_runs[val][None]).mean(axis=-1)
        alpha = float(alphas[int(np.argmax(score))])  # chosen as in Mode 1
        x_tr, y_tr = cat(x_runs, train), cat(y_runs, train)
        stage1 = SVDRidge(x_tr, y_tr)
        r1.append(pearson_columns(stage1.predict(x_runs[test], [alpha])[0], y_runs[test]))
        importance = np.abs(stage1.coef(alpha)).mean(axis=1)  # mean over voxels of |β|
        keep = np.argsort(-importance, kind="stable")[:n_keep]
        stage2 = SVDRidge(x_tr[:, keep], y_tr)  # same alpha, selected features only
        r2.append(pearson_columns(stage2.predict(x_runs[test][:, keep], [alpha])[0], y_runs[test]))
        counts.append(np.bincount(owner[keep], minlength=len(inputs)))
    sel = np.mean(counts, axis=0)
    return {"r": np.mean(r2, axis=0), "r_stage1": np.mean(r1, axis=0), "selected": dict(zip(inputs, sel.tolist()))}


def winners(r_by_state: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per voxel, the name of the state whose encoding model has the highest held-out r."""
    names = list(r_by_state)
    return np.array(names)[np.argmax(np.stack([r_by_state[n] for n in names]), axis=0)]


# ---------------------------------------------------------------------------------------------------- real-data path
def encode_fmri(
    word_features: Mapping[str, Sequence[np.ndarray]],
    onsets: Sequence[np.ndarray],
    offsets: Sequence[np.ndarray],
    bold: Sequence[np.ndarray],
    cfg: EncodingConfig | None = None,
) -> dict[str, dict]:
    """Mode 1 for every state on user data: per run, word features ``[n_words, dim]``, word onsets/offsets (s) and a
    BOLD array ``[n_scans, n_voxels]`` (already masked and high-passed). Returns ``{state: encode(...) result}``."""
    cfg = cfg or EncodingConfig()
    n = len(bold)
    if len(onsets) != n or len(offsets) != n:
        raise ValueError(f"{n} BOLD runs but {len(onsets)} onset and {len(offsets)} offset arrays; give one per run")
    y_runs = [prepare_run(np.asarray(b, dtype=float), cfg.trim) for b in bold]
    out = {}
    for state, runs in word_features.items():
        if len(runs) != n:
            raise ValueError(f"state {state!r} has {len(runs)} runs of features, the BOLD has {n}")
        x_runs = [
            prepare_run(make_regressors(runs[i], onsets[i], offsets[i], len(bold[i]), cfg.tr, cfg.hrf), cfg.trim)
            for i in range(n)
        ]
        out[state] = encode(x_runs, y_runs, cfg.alphas)
    return out
