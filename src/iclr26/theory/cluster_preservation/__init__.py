"""Subspace-cluster preservation by ReLU layers: measures, a Davis–Kahan–Wedin perturbation bound, subspace clustering.

Paper: "Some Neural Networks Inherently Preserve Subspace Clustering Structure" (ICLR 2026,
https://openreview.net/forum?id=Pjcz6ik78E). The theorems were not available to us; what follows is our reconstruction
of the stated idea (union-of-subspaces data, ReLU, spectral-gap condition, Davis–Kahan), not the paper's statements.

Data X = [X_1, …, X_K] with cluster k on an r_k-dimensional subspace. A ReLU layer Y = σ(W X + b) acts on cluster k as
Y_k = Diag(P̄_k)(W X_k + b) + E_k, where P̄_k is the majority on/off pattern of the units over the cluster and E_k
collects the sign flips (|E| equals |w_iᵀx + b_i| exactly where unit i disagrees with its majority). If every unit is
sign-consistent on the cluster (κ_k = 1, E_k = 0) the layer is linear on it and the cluster stays in a subspace of
dimension ≤ r_k (+1 with a bias): preservation is exact. Otherwise Wedin's sin Θ theorem bounds how far the top-r_k
singular subspace of Y_k moves from that of the ideal part Y*_k:

    ‖sin Θ‖₂ ≤ ‖E_k‖₂ / (σ_r(Y*_k) − σ_{r+1}(Y*_k) − ‖E_k‖₂)    when the gap exceeds ‖E_k‖₂;

the spectral-gap condition γ_k = σ_r(Y*_k) − σ_{r+1}(Y*_k) − 2‖E_k‖₂ > 0 makes the bound < 1 (≤ 2‖E_k‖/gap).
Arrays are points × features throughout (scikit-learn convention); the "subspace of a cluster" is a column space of
its transposed block, i.e. spanned by right singular vectors here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import subspace_angles
from scipy.optimize import linear_sum_assignment

__all__ = [
    "UoSConfig",
    "make_union_of_subspaces",
    "ClusterConfig",
    "self_expression",
    "subspace_cluster",
    "clustering_accuracy",
    "subspace_preserving_error",
    "principal_subspace",
    "subspace_affinity",
    "mean_affinity",
    "affinity_preservation",
    "rank_fit",
    "layer_report",
    "wedin_bound",
]


@dataclass(frozen=True)
class UoSConfig:
    """Synthetic union-of-subspaces data."""

    ambient_dim: int = field(default=60, metadata={"help": "D; not stated (paper), dossier's choice 50–100"})
    n_clusters: int = field(default=5, metadata={"help": "K subspaces; not stated, our choice"})
    subspace_dim: int = field(default=4, metadata={"help": "r = dim of each subspace; not stated, our choice"})
    n_per_cluster: int = field(default=100, metadata={"help": "points per subspace; not stated, our choice"})
    noise: float = field(default=0.01, metadata={"help": "std of isotropic ambient noise; not stated, our choice"})
    shared: float = field(
        default=0.0, metadata={"help": "ρ in U_k = orth(√(1−ρ) G_k + √ρ G): raises inter-subspace affinity; our choice"}
    )
    cone_angle: float | None = field(
        default=None,
        metadata={
            "help": "if set, points fill a cone of this full angle (degrees) around a random direction of each "
            "subspace instead of the whole subspace; our choice"
        },
    )

    def __post_init__(self):
        if not (isinstance(self.ambient_dim, int) and self.ambient_dim >= 2):
            raise ValueError(f"UoSConfig.ambient_dim must be an integer ≥ 2, got {self.ambient_dim!r}")
        if not (isinstance(self.n_clusters, int) and self.n_clusters >= 1):
            raise ValueError(f"UoSConfig.n_clusters must be an integer ≥ 1, got {self.n_clusters!r}")
        if not (isinstance(self.subspace_dim, int) and 1 <= self.subspace_dim < self.ambient_dim):
            raise ValueError(
                f"UoSConfig.subspace_dim must be an integer in [1, ambient_dim), got {self.subspace_dim!r}"
            )
        if not (isinstance(self.n_per_cluster, int) and self.n_per_cluster >= 2):
            raise ValueError(f"UoSConfig.n_per_cluster must be an integer ≥ 2, got {self.n_per_cluster!r}")
        if not self.noise >= 0:
            raise ValueError(f"UoSConfig.noise must be ≥ 0, got {self.noise}")
        if not 0 <= self.shared < 1:
            raise ValueError(f"UoSConfig.shared must be in [0, 1), got {self.shared}")
        if self.cone_angle is not None and not 0 < self.cone_angle <= 360:
            raise ValueError(f"UoSConfig.cone_angle must be in (0, 360] degrees or None, got {self.cone_angle}")


def make_union_of_subspaces(config: UoSConfig, rng: np.random.Generator):
    """Points x = U_k c + ε, ‖c‖ = 1. Returns X (n × D), labels (n,), bases [U_k (D × r)]."""
    c = config
    shared = rng.standard_normal((c.ambient_dim, c.subspace_dim))
    xs, labels, bases = [], [], []
    for k in range(c.n_clusters):
        g = np.sqrt(1 - c.shared) * rng.standard_normal((c.ambient_dim, c.subspace_dim)) + np.sqrt(c.shared) * shared
        u = np.linalg.qr(g)[0]
        coef = _sphere_points(c.subspace_dim, c.n_per_cluster, c.cone_angle, rng)
        xs.append(coef @ u.T + c.noise * rng.standard_normal((c.n_per_cluster, c.ambient_dim)))
        labels.append(np.full(c.n_per_cluster, k))
        bases.append(u)
    return np.concatenate(xs), np.concatenate(labels), bases


def _sphere_points(r: int, n: int, cone_angle: float | None, rng: np.random.Generator) -> np.ndarray:
    if cone_angle is None or cone_angle >= 360:
        c = rng.standard_normal((n, r))
        return c / np.linalg.norm(c, axis=1, keepdims=True)
    # uniform angle θ ∈ [0, φ/2] from a random axis m, uniform direction around it
    m = rng.standard_normal(r)
    m /= np.linalg.norm(m)
    v = rng.standard_normal((n, r))
    v -= np.outer(v @ m, m)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    theta = rng.uniform(0, np.deg2rad(cone_angle) / 2, size=n)
    return np.cos(theta)[:, None] * m + np.sin(theta)[:, None] * v


# --------------------------------------------------------------------------------------------------------------------
# subspace clustering
@dataclass(frozen=True)
class ClusterConfig:
    """Subspace-clustering read-out applied identically to inputs and embeddings."""

    method: str = field(default="ssc", metadata={"help": "'ssc' (Lasso self-expression), 'lsr' or 'tsc'"})
    ssc_alpha: float = field(
        default=20.0, metadata={"help": "SSC λ = α/μ with μ = min_j max_{i≠j} |x_iᵀx_j| (Elhamifar & Vidal 2013: α=20)"}
    )
    lsr_lambda: float = field(default=0.1, metadata={"help": "ridge weight of LSR self-expression; our choice"})
    tsc_q: int = field(
        default=10, metadata={"help": "neighbours per point in TSC (Heckel & Bölcskei 2015); our choice"}
    )
    ssc_iters: int = field(default=300, metadata={"help": "ADMM iterations of SSC (stops early at tolerance 1e-5)"})
    random_state: int = field(default=0, metadata={"help": "seed of the spectral-clustering k-means"})

    def __post_init__(self):
        if self.method not in ("ssc", "lsr", "tsc"):
            raise ValueError(f"ClusterConfig.method must be 'ssc', 'lsr' or 'tsc', got {self.method!r}")
        if not self.ssc_alpha > 1:
            raise ValueError(f"ClusterConfig.ssc_alpha must be > 1 (λ > 1/μ, else c = 0), got {self.ssc_alpha}")
        if not self.lsr_lambda > 0:
            raise ValueError(f"ClusterConfig.lsr_lambda must be > 0, got {self.lsr_lambda}")
        if not (isinstance(self.ssc_iters, int) and self.ssc_iters >= 1):
            raise ValueError(f"ClusterConfig.ssc_iters must be an integer ≥ 1, got {self.ssc_iters!r}")
        if not (isinstance(self.tsc_q, int) and self.tsc_q >= 1):
            raise ValueError(f"ClusterConfig.tsc_q must be an integer ≥ 1, got {self.tsc_q!r}")


def _check_points(Y, labels=None) -> np.ndarray:
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2:
        raise ValueError(f"expected a 2-D array of points × features, got shape {Y.shape}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("points contain NaN or inf")
    if labels is not None and len(labels) != Y.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries but there are {Y.shape[0]} points (rows)")
    return Y


def self_expression(Y, config: ClusterConfig = ClusterConfig()) -> np.ndarray:
    """Coefficients C (n × n, zero diagonal) with y_j ≈ Σ_i C_ij y_i, on unit-normalised points."""
    Y = _check_points(Y)
    if Y.shape[0] < 2:
        raise ValueError(f"self-expression needs at least 2 points (each is expressed by the others), got {Y.shape[0]}")
    Yn = Y / np.maximum(np.linalg.norm(Y, axis=1, keepdims=True), 1e-12)
    n = Yn.shape[0]
    G = Yn @ Yn.T
    if config.method == "lsr":  # min ‖Y − CY‖² + λ‖C‖², diag(C) = 0 (Lu et al. 2012, closed form)
        inv = np.linalg.inv(G + config.lsr_lambda * np.eye(n))
        C = -inv / np.diag(inv)[None, :]
        np.fill_diagonal(C, 0.0)
        return C
    if config.method == "tsc":  # keep the q largest |cos| per point, weight exp(−2 arccos|cos|)
        A = np.abs(G)
        np.fill_diagonal(A, -1)
        q = min(config.tsc_q, n - 1)
        C = np.zeros((n, n))
        idx = np.argpartition(-A, q - 1, axis=0)[:q]
        cols = np.arange(n)[None, :].repeat(q, 0)
        C[idx, cols] = np.exp(-2 * np.arccos(np.clip(A[idx, cols], 0, 1)))
        return C
    return _ssc_admm(Yn, G, config.ssc_alpha, config.ssc_iters)


def _ssc_admm(Yn: np.ndarray, G: np.ndarray, alpha: float, iters: int, tol: float = 1e-5) -> np.ndarray:
    """SSC (Elhamifar & Vidal 2013): min Σ_j ‖c_j‖₁ + (λ/2)‖Y − YC‖_F², diag(C) = 0, λ = α/μ, by ADMM.

    A-step (λG + ρI)⁻¹(λG + ρC − Δ) uses Woodbury, (λG + ρI)⁻¹ = (I − Yᵀ(ρ/λ I + YYᵀ)⁻¹Y)/ρ, so an iteration
    costs O(n² · dim) instead of O(n³).
    """
    Y = Yn.T  # features × points
    off = np.abs(G) - np.diag(np.diag(np.abs(G)))
    mu = off.max(axis=0).min()
    lam, rho = alpha / max(mu, 1e-12), alpha
    K = np.linalg.inv(rho / lam * np.eye(Y.shape[0]) + Y @ Y.T)

    def solve(M):
        return (M - Y.T @ (K @ (Y @ M))) / rho

    P = solve(lam * G)
    n = G.shape[0]
    C = np.zeros((n, n))
    dual = np.zeros((n, n))
    for _ in range(iters):
        A = P + solve(rho * C - dual)
        J = A + dual / rho
        C = np.sign(J) * np.maximum(np.abs(J) - 1.0 / rho, 0.0)  # soft threshold: prox of ‖·‖₁/ρ
        np.fill_diagonal(C, 0.0)
        dual += rho * (A - C)
        if np.max(np.abs(A - C)) < tol:
            break
    return C


def subspace_cluster(Y, n_clusters: int, config: ClusterConfig = ClusterConfig()) -> np.ndarray:
    """Labels from spectral clustering of the affinity |C| + |C|ᵀ of a self-expressive code."""
    from sklearn.cluster import SpectralClustering

    if not (isinstance(n_clusters, (int, np.integer)) and n_clusters >= 1):
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    Y = _check_points(Y)
    if Y.shape[0] < n_clusters:
        raise ValueError(f"{Y.shape[0]} points cannot form {n_clusters} clusters")
    C = self_expression(Y, config)
    W = np.abs(C) + np.abs(C).T
    W += 1e-12 * (W.sum() / W.size)  # keep the graph connected for the eigensolver
    sc = SpectralClustering(
        n_clusters, affinity="precomputed", random_state=config.random_state, assign_labels="kmeans"
    )
    return sc.fit_predict(W)


def clustering_accuracy(pred, true) -> float:
    """Fraction correct under the best one-to-one matching of predicted to true clusters (Hungarian)."""
    pred, true = np.asarray(pred), np.asarray(true)
    if pred.ndim != 1 or pred.shape != true.shape or pred.size == 0:
        raise ValueError(
            f"pred and true must be non-empty 1-D label arrays of the same shape, got {pred.shape}, {true.shape}"
        )
    p_ids, p = np.unique(pred, return_inverse=True)
    t_ids, t = np.unique(true, return_inverse=True)
    counts = np.zeros((p_ids.size, t_ids.size))
    np.add.at(counts, (p, t), 1)
    rows, cols = linear_sum_assignment(-counts)
    return float(counts[rows, cols].sum() / pred.size)


def subspace_preserving_error(C, labels) -> float:
    """SPE = mean_j Σ_{i ∉ cluster(j)} |C_ij| / Σ_i |C_ij| (0 = every point expressed by its own cluster only)."""
    C = np.abs(np.asarray(C, dtype=float))
    labels = np.asarray(labels)
    if C.shape != (labels.size, labels.size) or labels.size == 0 or not np.all(np.isfinite(C)):
        raise ValueError(f"C must be a finite n × n matrix with n = len(labels) = {labels.size} ≥ 1, got {C.shape}")
    wrong = (labels[:, None] != labels[None, :]) * C
    tot = C.sum(axis=0)
    ok = tot > 0
    return float(np.mean(wrong.sum(axis=0)[ok] / tot[ok])) if ok.any() else 1.0


# --------------------------------------------------------------------------------------------------------------------
# geometric preservation measures
def principal_subspace(Yk, r: int) -> np.ndarray:
    """Orthonormal basis (features × r) of the top-r right singular subspace of a cluster block (points × features)."""
    Yk = np.asarray(Yk, dtype=float)
    if Yk.ndim != 2 or not np.all(np.isfinite(Yk)):
        raise ValueError(f"a cluster block must be a finite 2-D array (points × features), got shape {Yk.shape}")
    if not 1 <= r <= min(Yk.shape):
        raise ValueError(f"r must be in [1, {min(Yk.shape)}] for a block of shape {Yk.shape}, got {r}")
    return np.linalg.svd(Yk, full_matrices=False)[2][:r].T


def subspace_affinity(A, B) -> float:
    """Normalised affinity √(Σ cos² θ_i / min(r_A, r_B)) ∈ [0, 1] from the principal angles (1 = nested subspaces)."""
    cos = np.cos(subspace_angles(A, B))
    return float(np.sqrt(np.sum(cos**2) / min(A.shape[1], B.shape[1])))


def _dims(labels, dims) -> dict:
    ks = np.unique(labels)
    dims = {k: dims for k in ks} if np.isscalar(dims) else dict(dims)
    missing = [k for k in ks if k not in dims]
    if missing:
        raise ValueError(f"dims has no entry for clusters {missing}")
    if any(not float(d).is_integer() or d < 1 for d in dims.values()):
        raise ValueError(f"dims (subspace dimension per cluster) must be integers ≥ 1, got {list(dims.values())}")
    return {k: int(d) for k, d in dims.items()}


def mean_affinity(Y, labels, dims) -> float:
    """Mean pairwise normalised affinity between the clusters' top-r_k subspaces."""
    Y = _check_points(Y, labels)
    labels = np.asarray(labels)
    dims = _dims(labels, dims)
    ks = np.unique(labels)
    if ks.size < 2:
        raise ValueError("need at least two clusters to measure inter-subspace affinity")
    bases = {k: principal_subspace(Y[labels == k], dims[k]) for k in ks}
    return float(np.mean([subspace_affinity(bases[a], bases[b]) for i, a in enumerate(ks) for b in ks[i + 1 :]]))


def affinity_preservation(X, Y, labels, dims) -> float:
    """(1 − mean affinity in Y) / (1 − mean affinity in X): 1 for any orthogonal map (angles are invariant), → 0 when
    the map merges the subspaces, > 1 when it separates them further."""
    return (1 - mean_affinity(Y, labels, dims)) / max(1 - mean_affinity(X, labels, dims), 1e-12)


def rank_fit(Y, labels, dims) -> float:
    """Mean over clusters of the fraction of ‖Y_k‖_F² inside its top-r_k subspace (1 = exactly a union of subspaces)."""
    Y = _check_points(Y, labels)
    labels = np.asarray(labels)
    dims = _dims(labels, dims)
    fits = []
    for k in np.unique(labels):
        s = np.linalg.svd(Y[labels == k], compute_uv=False)
        fits.append(np.sum(s[: dims[k]] ** 2) / max(np.sum(s**2), 1e-300))
    return float(np.mean(fits))


def wedin_bound(Y_ideal, Y, r: int) -> tuple[float, float, float]:
    """(measured ‖sin Θ‖₂, Wedin bound, gap margin γ) for the top-r right singular subspaces of Y_ideal and Y.

    Bound = ‖E‖₂ / (σ_r(Y*) − σ_{r+1}(Y*) − ‖E‖₂), E = Y − Y*, when that denominator is > 0, else 1 (trivial);
    γ = σ_r(Y*) − σ_{r+1}(Y*) − 2‖E‖₂ (γ > 0 ⇒ bound < 1).
    """
    Y_ideal, Y = np.asarray(Y_ideal, dtype=float), np.asarray(Y, dtype=float)
    if Y_ideal.shape != Y.shape or Y.ndim != 2:
        raise ValueError(f"Y_ideal and Y must be 2-D of the same shape, got {Y_ideal.shape} and {Y.shape}")
    if not (np.all(np.isfinite(Y_ideal)) and np.all(np.isfinite(Y))):
        raise ValueError("Y_ideal and Y must be finite (found NaN or inf)")
    if not 1 <= r <= min(Y.shape):
        raise ValueError(f"r must be in [1, {min(Y.shape)}] for blocks of shape {Y.shape}, got {r}")
    s = np.linalg.svd(Y_ideal, compute_uv=False)
    s_next = s[r] if r < s.size else 0.0
    gap = s[r - 1] - s_next
    # the SVD itself perturbs by up to ~ε·max(shape)·σ₁: below that scale the top-r subspace is not determined (e.g.
    # r beyond the numerical rank), so the perturbation counted is at least this floor
    e = max(np.linalg.norm(Y - Y_ideal, 2), 8 * np.finfo(float).eps * max(Y.shape) * (s[0] if s.size else 0.0))
    V, Vh = principal_subspace(Y_ideal, r), principal_subspace(Y, r)
    sin = float(np.linalg.norm(Vh - V @ (V.T @ Vh), 2))  # ‖(I − VVᵀ)V̂‖₂ = ‖sin Θ‖₂
    bound = float(min(1.0, e / (gap - e))) if gap > e else 1.0
    return sin, bound, float(gap - 2 * e)


def layer_report(X, W, b, labels, dims) -> dict[str, np.ndarray]:
    """Per-cluster condition statistics of the ReLU layer y = σ(W x + b) on clusters of X (points × features).

    kappa: mean over units of the majority on/off fraction on the cluster (1 = every unit sign-consistent);
    consistent: fraction of units that are exactly sign-consistent; err: ‖E_k‖₂ / ‖Y_k‖₂; margin: γ_k / ‖Y_k‖₂;
    sin / bound: measured ‖sin Θ‖ and the Wedin bound; dims: r used per cluster (r_k, +1 if b ≠ 0).
    """
    X = _check_points(X, labels)
    W = np.asarray(W, dtype=float)
    b = np.zeros(W.shape[0]) if b is None else np.asarray(b, dtype=float)
    if W.ndim != 2 or W.shape[1] != X.shape[1] or b.shape != (W.shape[0],):
        raise ValueError(f"W must be m × {X.shape[1]} and b of length m; got W {W.shape}, b {b.shape}")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
        raise ValueError("W and b must be finite (found NaN or inf)")
    labels = np.asarray(labels)
    dims = _dims(labels, dims)
    extra = int(np.any(b != 0))
    out = {key: [] for key in ("kappa", "consistent", "err", "margin", "sin", "bound", "dims")}
    for k in np.unique(labels):
        Z = X[labels == k] @ W.T + b  # pre-activations, points × units
        on = (Z > 0).mean(axis=0)
        majority = on >= 0.5  # P̄_k
        Y = np.maximum(Z, 0)
        Y_ideal = Z * majority  # Diag(P̄_k)(W x + b)
        r = min(dims[k] + extra, min(Y.shape))
        sin, bound, gamma = wedin_bound(Y_ideal, Y, r)
        scale = max(np.linalg.norm(Y, 2), 1e-300)
        out["kappa"].append(np.mean(np.maximum(on, 1 - on)))
        out["consistent"].append(np.mean((on == 0) | (on == 1)))
        out["err"].append(np.linalg.norm(Y - Y_ideal, 2) / scale)
        out["margin"].append(gamma / scale)
        out["sin"].append(sin)
        out["bound"].append(bound)
        out["dims"].append(r)
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}
