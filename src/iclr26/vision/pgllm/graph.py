"""PGLLM's manifold graph, graph retrieval and label-propagation refinement (numpy; sklearn for the neighbours).

Step 1 (the graph). Frozen point-encoder features p_i of the unlabelled support set. The paper scores pairs by cosine
similarity e_ij = <p_i, p_j> / (|p_i||p_j|) and keeps the top-K per row (W_ij = e_ij for j in TopK_i, else 0); the
official code uses Euclidean nearest neighbours (`sklearn.NearestNeighbors`, K + 1 neighbours, self dropped) with
weight exp(-|p_i - p_j|). Both are offered; cosine is the default as in the paper.

Step 2 (retrieval). The K highest-weight neighbours of a query in the graph give the captions shown to the stage-2
LLM. `retrieve` reads the symmetrised graph W + W^T (a node also sees the nodes that chose it); `retrieve(...,
symmetric=False)` is the plain K nearest neighbours ("direct NN" of the paper's ablation, and what the code does).

Step 3 (refinement). Scores S_0 (samples as rows, l columns; l = 1 for OOD) are smoothed over the graph:
    A = K_s + K_s^T with K_s = W with unit diagonal (code: `fill_diagonal(knn, 1)`; W = knn + knn.T)
    Â = D^{-1/2} A D^{-1/2}
    S_t = α Â S_{t-1} + (1 - α) S_0,   t = 1..T      (paper: α = 0.5, T = 5)
D holds the degrees of the symmetric A (`degree="sym"`, default) or, as the official code does, the row sums of the
unsymmetrised K_s (`degree="code"`). With α = 0 the scores are returned unchanged; as T → ∞ (sym degrees, α < 1) the
iteration converges to (1 - α)(I - αÂ)^{-1} S_0, the closed form of label propagation (Zhou et al., 2004).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def knn_graph(feats, k: int = 3, metric: str = "cosine", weight: str | None = None) -> sparse.csr_matrix:
    """The directed top-K graph W (n x n, sparse): W_ij = weight of j among the K nearest neighbours of i (no self).

    ``metric`` "cosine" (paper) or "euclidean" (code); ``weight`` "cos" (e_ij, the paper's, default for cosine) or
    "exp" (exp(-distance), the code's, default for euclidean)."""
    from sklearn.neighbors import NearestNeighbors

    x = np.asarray(feats, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"feats must be a 2-D array (n_samples, dim), got shape {x.shape}")
    n = len(x)
    if not 1 <= k < n:
        raise ValueError(f"k must lie in [1, n_samples - 1] = [1, {n - 1}], got {k!r}")
    if metric not in ("cosine", "euclidean"):
        raise ValueError(f"metric must be 'cosine' (paper) or 'euclidean' (code), got {metric!r}")
    weight = weight or ("cos" if metric == "cosine" else "exp")
    if weight not in ("cos", "exp"):
        raise ValueError(f"weight must be 'cos' or 'exp', got {weight!r}")
    if weight == "cos" and metric == "euclidean":
        raise ValueError("weight='cos' needs metric='cosine'; use weight='exp' with euclidean distances")
    dist, idx = NearestNeighbors(n_neighbors=k + 1, metric=metric).fit(x).kneighbors(x)
    dist, idx = _drop_self(dist, idx, k)
    # Eq. (graph): cosine distance d = 1 - e_ij, so e_ij = 1 - d; the code's weight is exp(-|p_i - p_j|)
    vals = 1.0 - dist if weight == "cos" else np.exp(-dist)
    return sparse.csr_matrix((vals.ravel(), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))


def _drop_self(dist, idx, k):
    """Remove each row's own index (the code drops column 0; with duplicate points self may not come first)."""
    rows = np.arange(len(idx))[:, None]
    keep = idx != rows
    out_d = np.zeros((len(idx), k))
    out_i = np.zeros((len(idx), k), dtype=int)
    for r in range(len(idx)):
        out_d[r], out_i[r] = dist[r][keep[r]][:k], idx[r][keep[r]][:k]
    return out_d, out_i


def random_graph(w: sparse.csr_matrix, seed: int = 0) -> sparse.csr_matrix:
    """Control: every node keeps its out-degree and its weights but its neighbours are drawn uniformly (no self)."""
    rng = np.random.default_rng(seed)
    w = sparse.csr_matrix(w)
    n = w.shape[0]
    rows, cols, vals = [], [], []
    for i in range(n):
        row = w.getrow(i)
        others = np.delete(np.arange(n), i)
        rows += [i] * row.nnz
        cols += list(rng.choice(others, size=row.nnz, replace=False))
        vals += list(row.data)
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))


def retrieve(w, i: int, k: int, symmetric: bool = True) -> list[int]:
    """The ``k`` highest-weight neighbours of node ``i`` (ties: lower index first), in that order."""
    w = sparse.csr_matrix(w)
    row = (w.getrow(i) + w.T.tocsr().getrow(i)) if symmetric else w.getrow(i)
    row = row.tocoo()
    mask = row.col != i
    cols, vals = row.col[mask], row.data[mask]
    order = np.lexsort((cols, -vals))
    return [int(c) for c in cols[order][:k]]


def propagation_matrix(w, degree: str = "sym") -> np.ndarray:
    """Â = D^{-1/2} (K_s + K_s^T) D^{-1/2} with K_s = W plus a unit diagonal (the official code's adjacency)."""
    if degree not in ("sym", "code"):
        raise ValueError(f"degree must be 'sym' (symmetric degrees) or 'code' (official code), got {degree!r}")
    ks = sparse.csr_matrix(w, dtype=np.float64).toarray()
    if ks.shape[0] != ks.shape[1]:
        raise ValueError(f"the graph must be square, got shape {ks.shape}")
    np.fill_diagonal(ks, 1.0)
    a = ks + ks.T
    d = a.sum(1) if degree == "sym" else ks.sum(1)
    s = 1.0 / np.sqrt(d)
    return s[:, None] * a * s[None, :]


def label_propagation(scores, w, alpha: float = 0.5, steps: int = 5, degree: str = "sym") -> np.ndarray:
    """Refined scores S_T (n, l) from the LLM's S_0 (n, l) or (n,): S_t = α Â S_{t-1} + (1 - α) S_0 (paper Eq. LP)."""
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must lie in [0, 1), got {alpha!r}")
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps!r}")
    s0 = np.asarray(scores, dtype=np.float64)
    if s0.shape[0] != w.shape[0]:
        raise ValueError(f"scores have {s0.shape[0]} rows but the graph has {w.shape[0]} nodes")
    a_hat = propagation_matrix(w, degree)
    s = s0.copy()
    for _ in range(steps):
        s = alpha * (a_hat @ s) + (1 - alpha) * s0
    return s


def propagation_closed_form(scores, w, alpha: float = 0.5) -> np.ndarray:
    """The fixed point (1 - α)(I - αÂ)^{-1} S_0 of the iteration (symmetric degrees)."""
    a_hat = propagation_matrix(w, "sym")
    return (1 - alpha) * np.linalg.solve(np.eye(len(a_hat)) - alpha * a_hat, np.asarray(scores, dtype=np.float64))


def argmax_random_ties(scores, seed: int = 0) -> np.ndarray:
    """Row-wise argmax with ties broken uniformly at random (as the code's `random.choice(max_indices)`)."""
    s = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng(seed)
    noise = rng.random(s.shape)
    top = s >= s.max(1, keepdims=True) - 1e-12
    return np.argmax(np.where(top, noise, -1.0), axis=1)


def ood_metrics(scores, is_id) -> tuple[float, float]:
    """(AUROC, FPR95) with ID as the positive class; FPR95 = FPR at the first threshold with TPR >= 0.95 (code)."""
    from sklearn.metrics import roc_auc_score, roc_curve

    is_id = np.asarray(is_id, dtype=int)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if is_id.min() == is_id.max():
        raise ValueError("ood_metrics needs both ID (1) and OOD (0) samples")
    fpr, tpr, _ = roc_curve(is_id, s)
    return float(roc_auc_score(is_id, s)), float(fpr[np.argmax(tpr >= 0.95)])
