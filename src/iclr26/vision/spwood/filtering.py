"""Multi-level pseudo-label filtering (MPF) with Gaussian mixtures, its baselines, and the sparse partial partition.

MPF (SPWOOD Sec. 3.3): the teacher's confidences on an image are grouped by FPN level; on each level a two-component
1-D GMM is fitted to the confidences (EM, sklearn `GaussianMixture`), the component with the larger mean is the
positive one, and the threshold tau^l sits at the peak of the positive component (official code `gmm_policy(...,
'high')`: the smallest score among positive-component samples at or above the sample with the highest positive
density). Locations with confidence > tau^l become pseudo-labels. The official code first keeps each level's top
fraction of locations (12 % of P3, 24 % of P4, all of P5+) and fits a second GMM on the survivors; we do the same with
our two levels. Baselines: one GMM over all levels pooled (PWOOD's class-agnostic adaptive threshold, "global") and a
fixed threshold (MCL / dense-teacher style semi-supervised baselines).

The sparse partial partition (SPWOOD Sec. 3.4, "overall sparse"): a fraction of the images is labelled (partial);
inside them, for every category, the same fraction of that category's instances *over the whole labelled set* keeps
its label (sparse), so rare categories keep their share; the rest are absent from the annotations.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

TOPK_FRAC = (0.12, 0.24)  # official code: top 12 % of P3, 24 % of P4 locations enter the GMM


def gmm_1d(x: np.ndarray, max_iter: int = 100, tol: float = 1e-3, reg_covar: float = 1e-6):
    """EM for a two-component 1-D Gaussian mixture, step for step as sklearn's `GaussianMixture(2, weights_init=
    [.5, .5], means_init=[[min], [max]], precisions_init=[[[1]], [[1]]])` (E-step, M-step with nk += 10 eps and
    reg_covar, stop when the mean log-likelihood changes by < tol), vectorised in numpy: ~50x faster than sklearn on
    the few thousand scores of a batch, which matters when it runs at every step. `tests/test_spwood.py` checks it
    against sklearn. Returns (weights (2,), means (2,), variances (2,))."""
    x = np.asarray(x, np.float64).ravel()
    w, mu, var = np.array([0.5, 0.5]), np.array([x.min(), x.max()]), np.ones(2)
    prev = -np.inf
    eps = 10 * np.finfo(np.float64).eps
    for _ in range(max_iter):
        logp = np.log(w) - 0.5 * (np.log(2 * np.pi * var) + (x[:, None] - mu) ** 2 / var)  # E-step
        lse = np.logaddexp(logp[:, 0], logp[:, 1])
        resp = np.exp(logp - lse[:, None])
        nk = resp.sum(0) + eps  # M-step
        w = nk / nk.sum()
        mu = resp.T @ x / nk
        var = (resp * (x[:, None] - mu) ** 2).sum(0) / nk + reg_covar
        lb = lse.mean()
        if abs(lb - prev) < tol:
            break
        prev = lb
    return w, mu, var


def gmm_threshold(scores, fallback: float = 0.02, policy: str = "high", backend: str = "numpy") -> float:
    """Threshold from a two-component 1-D GMM (official `gmm_policy`): means initialised at min and max, weights 1/2,
    precisions 1. policy 'high' = the positive component's peak; 'middle' = the positive component's lowest score.
    backend 'sklearn' fits `sklearn.mixture.GaussianMixture` (the official code's choice), 'numpy' the same EM in
    `gmm_1d`."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    if len(s) < 4 or s.max() - s.min() < 1e-8:
        return fallback
    if backend == "sklearn":
        from sklearn.mixture import GaussianMixture

        gmm = GaussianMixture(2, weights_init=[0.5, 0.5], means_init=[[s.min()], [s.max()]],
                              precisions_init=[[[1.0]]] * 2)  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gmm.fit(s)
        w, mu, var = gmm.weights_, gmm.means_[:, 0], gmm.covariances_.ravel()
    elif backend == "numpy":
        w, mu, var = gmm_1d(s[:, 0])
    else:
        raise ValueError(f"backend must be 'numpy' or 'sklearn', got {backend!r}")
    logp = np.log(w) - 0.5 * (np.log(2 * np.pi * var) + (s - mu) ** 2 / var)
    pos_comp = int(np.argmax(mu))
    assign = logp.argmax(1)
    if not (assign == pos_comp).any():
        return fallback
    if policy == "middle":
        return float(s[assign == pos_comp].min())
    dens = np.logaddexp(logp[:, 0], logp[:, 1])  # score_samples
    dens[assign != pos_comp] = -np.inf
    peak = s[int(np.argmax(dens)), 0]
    return float(s[(assign == pos_comp) & (s[:, 0] >= peak)].min())


def select_pseudo(conf: torch.Tensor, levels: torch.Tensor, mode: str, fixed_thr: float = 0.5):
    """Selection mask and thresholds for teacher confidences `conf` (B, N) on locations of FPN `levels` (N,).

    mode 'level' (SPWOOD MPF: a GMM per level, on the batch's top fraction), 'global' (PWOOD-like: one GMM on all
    levels pooled), 'fixed' (conf > fixed_thr), 'none' (nothing selected). Returns (mask (B, N) bool, {level: tau})."""
    if mode == "none":
        return torch.zeros_like(conf, dtype=torch.bool), {}
    if mode == "fixed":
        return conf > fixed_thr, {-1: fixed_thr}
    if mode not in ("level", "global"):
        raise ValueError(f"select_pseudo mode must be 'level', 'global', 'fixed' or 'none', got {mode!r}")
    groups = [levels == lv for lv in levels.unique().tolist()] if mode == "level" else [torch.ones_like(levels).bool()]
    mask = torch.zeros_like(conf, dtype=torch.bool)
    taus = {}
    for gi, g in enumerate(groups):
        vals = conf[:, g]
        frac = TOPK_FRAC[min(gi, len(TOPK_FRAC) - 1)] if mode == "level" else float(np.mean(TOPK_FRAC))
        k = max(1, int(round(frac * vals.numel())))
        top = vals.flatten().topk(k).values
        tau1 = gmm_threshold(vals.flatten().numpy())  # first GMM on all locations of the group
        cand = top[top > tau1]
        tau = gmm_threshold(cand.numpy()) if len(cand) >= 4 else tau1  # second GMM on the surviving top-k
        tau = max(tau, tau1, float(top.min()) if len(top) else 0.0)
        sub = torch.zeros_like(conf, dtype=torch.bool)
        sub[:, g] = vals > tau
        mask |= sub
        taus[gi if mode == "level" else -1] = tau
    return mask, taus


def sparse_partial_split(labels: list, image_ratio: float, instance_ratio: float, seed: int, mode: str = "overall"):
    """Which images are labelled and which instances inside them keep a label.

    labels: per image an int array of categories. mode 'overall' (SPWOOD): per category, round(instance_ratio x n_c)
    instances of the labelled images are kept, n_c counted over all labelled images; 'per_image': each image keeps
    round(instance_ratio x its count) (at least one). Returns (labelled image indices, list of kept-instance masks)."""
    if not (0 < image_ratio <= 1 and 0 < instance_ratio <= 1):
        raise ValueError(f"image_ratio and instance_ratio must lie in (0, 1], got {image_ratio!r}, {instance_ratio!r}")
    rng = np.random.default_rng(seed)
    n = len(labels)
    lab_imgs = np.sort(rng.permutation(n)[: max(1, int(round(image_ratio * n)))])
    keep = [np.zeros(len(labels[i]), bool) for i in range(n)]
    if mode == "per_image":
        for i in lab_imgs:
            k = max(1, int(round(instance_ratio * len(labels[i])))) if len(labels[i]) else 0
            keep[i][rng.permutation(len(labels[i]))[:k]] = True
        return lab_imgs, keep
    if mode != "overall":
        raise ValueError(f"mode must be 'overall' or 'per_image', got {mode!r}")
    inst = [(i, j, int(c)) for i in lab_imgs for j, c in enumerate(labels[i])]
    for c in sorted({x[2] for x in inst}):
        mine = [x for x in inst if x[2] == c]
        k = max(1, int(round(instance_ratio * len(mine))))
        for idx in rng.permutation(len(mine))[:k]:
            i, j, _ = mine[idx]
            keep[i][j] = True
    return lab_imgs, keep


def weaken_labels(n: int, types=("rbox",), proportions=None, seed: int = 0) -> np.ndarray:
    """Label type per instance (0 RBox, 1 HBox, 2 point), in the given proportions (e.g. mixed 1:1:1)."""
    code = {"rbox": 0, "hbox": 1, "point": 2}
    bad = [t for t in types if t not in code]
    if bad:
        raise ValueError(f"unknown label types {bad!r}; expected a subset of {tuple(code)}")
    p = np.asarray(proportions if proportions is not None else [1] * len(types), float)
    rng = np.random.default_rng(seed)
    counts = np.floor(p / p.sum() * n).astype(int)
    counts[: n - counts.sum()] += 1
    out = np.concatenate([np.full(c, code[t]) for t, c in zip(types, counts)]).astype(np.int64)
    return out[rng.permutation(n)]


def point_segments(image: np.ndarray, points: np.ndarray, diff_thr: float = 0.3) -> list:
    """Watershed-like object extents for point labels (the lower bound of SPWOOD's spatial layout): every pixel goes
    to the Voronoi cell of its nearest labelled point; inside a cell, the object is the connected region around the
    point of pixels that differ from the smoothed background by more than diff_thr. Returns per point (mean (2,),
    covariance (2, 2)) of the segment's pixel centres (a small disc if the segment is empty)."""
    from scipy import ndimage

    img = np.asarray(image, np.float64)
    size = img.shape[-1]
    bg = np.stack([ndimage.median_filter(ch, size=15, mode="reflect") for ch in img])
    fg = np.abs(img - bg).sum(0) > diff_thr
    fg = ndimage.binary_closing(fg, iterations=1) | fg
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    pts = np.asarray(points, np.float64).reshape(-1, 2)
    d = (xx[None] - pts[:, 0, None, None]) ** 2 + (yy[None] - pts[:, 1, None, None]) ** 2
    cell = d.argmin(0)
    out = []
    for k, (px, py) in enumerate(pts):
        lab, _ = ndimage.label(fg & (cell == k))
        r, c = min(int(py), size - 1), min(int(px), size - 1)
        region = lab == lab[r, c] if lab[r, c] > 0 else np.zeros_like(fg)
        if region.sum() < 4:
            out.append((np.array([px, py]), np.eye(2) * 2.0))
            continue
        xy = np.stack([xx[region], yy[region]], 1)
        out.append((xy.mean(0), np.cov(xy.T) + np.eye(2) * 1 / 12))
    return out
