"""Expected information gain of a question under a particle belief (BED-LLM, Choudhury et al., ICLR 2026).

Paper: https://arxiv.org/abs/2508.21184. The joint model is the *prior × likelihood* pairing

    p(θ, y | x, h_t) = p_f(θ; h_t) · p(y | θ, x),

with the belief p_f a weighted particle set {θ_n, w_n} and the likelihood p(y | θ, x) read from an answer model (the
LLM's next-token probabilities of the admissible answers, renormalised over them). The EIG of a question x is the
mutual information between the target θ and the answer y,

    EIG(x) = H[p(y | x, h_t)] − E_{p_f(θ)} H[p(y | θ, x)],      p(y | x, h_t) = Σ_n w_n p(y | θ_n, x).

Because the answer set is finite, both entropies are computed exactly from the answer probabilities: this is the
Rao-Blackwellised estimator (the answers y are summed out instead of sampled). `eig_mc` is the plain Monte-Carlo
estimator that samples (θ, y) pairs, kept for comparison and for the tests. `predictive_entropy` is the first term
alone: the *entropy-only* (uncertainty-sampling) baseline, blind to answers that are uncertain even when θ is known.

Shapes: `probs` is [N hypotheses, K questions, Y answers] (rows sum to one over Y); `weights` is [N]. All in nats.
"""

from __future__ import annotations

import numpy as np

_TINY = 1e-12


def _check(probs: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 3:
        raise ValueError(f"probs must be [hypotheses, questions, answers], got shape {p.shape}")
    if p.shape[0] == 0:
        raise ValueError("the belief holds no hypotheses; sample some before scoring questions")
    if not np.all(np.isfinite(p)):
        bad = np.argwhere(~np.isfinite(p))[0].tolist()
        raise ValueError(f"probs holds NaN or inf (first at [hypothesis, question, answer] = {bad}); "
                         "check the answer model's output")  # fmt: skip
    if np.any(p < -1e-9) or not np.allclose(p.sum(-1), 1.0, atol=1e-6):
        raise ValueError("probs must be non-negative and sum to 1 over the answer axis (renormalise over answers)")
    w = np.full(p.shape[0], 1.0 / p.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (p.shape[0],):
        raise ValueError(f"weights must have shape [{p.shape[0]}] (one per hypothesis), got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"weights hold NaN or inf: {w!r}; give finite, non-negative belief weights")
    if np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {w!r}")
    return p, w / w.sum()


def _entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    return -(p * np.log(np.clip(p, _TINY, None))).sum(axis)


def predictive(probs: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """p(y | x, h_t) = Σ_n w_n p(y | θ_n, x), shape [K, Y]."""
    p, w = _check(probs, weights)
    return np.einsum("n,nky->ky", w, p)


def predictive_entropy(probs: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """H[p(y | x, h_t)] per question, shape [K]: the entropy-only (uncertainty-sampling) score."""
    return _entropy(predictive(probs, weights))


def eig_rb(probs: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Rao-Blackwellised EIG per question, shape [K], in nats, within [0, log Y]."""
    p, w = _check(probs, weights)
    marginal = _entropy(np.einsum("n,nky->ky", w, p))  # H[p(y | x, h_t)]
    conditional = np.einsum("n,nk->k", w, _entropy(p))  # E_θ H[p(y | θ, x)]
    return np.clip(marginal - conditional, 0.0, None)  # ≥ 0 (mutual information); clip rounding only


def eig_mc(
    probs: np.ndarray, weights: np.ndarray | None = None, n_samples: int = 1000, rng=None
) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo EIG: mean over sampled (θ_m ~ w, y_m ~ p(y | θ_m, x)) of log p(y_m | θ_m, x) − log p(y_m | x).

    Returns (estimate [K], standard error [K]). Unbiased for `eig_rb` (the marginal is exact over the particles).
    """
    p, w = _check(probs, weights)
    rng = np.random.default_rng(rng)
    n, k, y = p.shape
    marg = np.einsum("n,nky->ky", w, p)
    theta = rng.choice(n, size=(n_samples, k), p=w)  # [M, K]
    cols = np.arange(k)[None, :].repeat(n_samples, 0)
    py = p[theta, cols]  # [M, K, Y]
    u = rng.random((n_samples, k, 1))
    ys = (py.cumsum(-1) < u).sum(-1).clip(max=y - 1)  # inverse-CDF sample of the answer
    terms = np.log(np.clip(np.take_along_axis(py, ys[..., None], -1)[..., 0], _TINY, None)) - np.log(
        np.clip(marg[cols, ys], _TINY, None)
    )
    return terms.mean(0), terms.std(0, ddof=1) / np.sqrt(n_samples)
