"""Synthetic resting-state fMRI with network structure, several parcellations, sites and text-describable disorders.

The world of the BrainGFM reproduction (dossier `shared/papers/braingfm.md`, "Small-scale reproduction"). Everything
is deterministic from a seed and carries exact ground truth: which network each voxel belongs to, which parcel of each
atlas each voxel falls in, which disorder (a set of named edits of the network couplings) and which severity each
subject has.

Physics of the generator (a linear mixing model of network signals; our assumption, the usual toy model of
resting-state FC):

- **Voxels.** The 264 ROI centres of Power et al. (2011), shipped with nilearn (`fetch_coords_power_2011`, offline),
  stand in for cortical voxels. They are grouped into K = 7 canonical networks (visual, somatomotor, dorsal attention,
  salience, limbic, frontoparietal, default mode) by k-means on (|x|, y, z), so each network spans both hemispheres;
  networks are named in order of their centroid's y (posterior to anterior). The naming is ours.
- **Signals.** Each network k has a latent AR(1) signal s_k(t) with phi = 0.6, plus a global signal g(t).
  Voxel j in network k(j):  v_j = w_j s_k(j) + sum_k' c[k(j), k'] s_k' + gamma_site g + eps_j,
  eps_j ~ N(0, sigma_site^2); w_j ~ U(0.6, 1.0) with a per-subject jitter; c is a fixed sparse 7 x 7 coupling matrix
  with per-subject jitter. Sites differ in noise level sigma and global-signal mixing gamma.
- **Disorders.** A disorder is a set of *phrases*, each an edit of the couplings that a sentence describes:
  "reduced/increased <net> within-network connectivity" scales w of that network's voxels by (1 -/+ 0.55 s), and
  "increased/reduced <a>-<b> coupling" adds +/-0.3 s to c[a, b] and c[b, a]; the severity s ~ U(0.25, 1) is drawn
  per subject, so patients overlap with controls. The description is the phrases joined by "and".
- **Atlases.** Partitions of the voxels into N_a parcels: "functional" atlases by k-means on the voxel correlation
  profiles of a template subject, "anatomical" ones by k-means on the coordinates. A parcel's signal is the mean of
  its voxels; a scan is parcellated by every atlas (as the paper parcellates each scan 8 times).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

NETWORKS = ("visual", "dorsal attention", "somatomotor", "default mode", "salience", "frontoparietal", "limbic")
SITES = ((0.6, 0.2), (0.8, 0.4), (1.0, 0.6))  # (noise sigma, global-signal mixing gamma) per site; ours
ATLASES = (("func16", "functional", 16), ("anat20", "anatomical", 20), ("func24", "functional", 24),
           ("anat32", "anatomical", 32), ("func40", "functional", 40), ("anat48", "anatomical", 48))  # fmt: skip
EFFECT = {"within": 0.55, "between": 0.3}  # size of one phrase's edit at severity 1 (ours)


@dataclass(frozen=True)
class Phrase:
    """One text-describable edit: ``kind`` 'within' (network ``a``) or 'between' (networks ``a``, ``b``)."""

    direction: int  # +1 increased, -1 reduced
    kind: str
    a: str
    b: str = ""

    def __post_init__(self):
        if self.direction not in (-1, 1) or self.kind not in ("within", "between"):
            raise ValueError(f"Phrase: direction must be +-1 and kind 'within'/'between', got {self!r}")
        for net in (self.a, self.b) if self.kind == "between" else (self.a,):
            if net not in NETWORKS:
                raise ValueError(f"Phrase: unknown network {net!r}; expected one of {NETWORKS}")

    @property
    def text(self) -> str:
        word = "increased" if self.direction > 0 else "reduced"
        if self.kind == "within":
            return f"{word} {self.a} within-network connectivity"
        return f"{word} {self.a}-{self.b} coupling"


@dataclass(frozen=True)
class Disorder:
    name: str
    phrases: tuple[Phrase, ...]

    @property
    def text(self) -> str:
        return " and ".join(p.text for p in self.phrases)


def P(direction: str, kind: str, a: str, b: str = "") -> Phrase:
    return Phrase(1 if direction == "+" else -1, kind, a, b)


# The disorders of the reproduction. Seen ones train (meta-learning, multi-task); V is the meta-validation disorder;
# U1, U2 are unseen compositions of seen phrases on disjoint networks (so each is a clean control for the other's
# description); U3 names a network no seen description mentions (limbic).
DISORDERS = {
    "S1": Disorder("S1", (P("-", "within", "default mode"),)),
    "S2": Disorder("S2", (P("+", "between", "salience", "frontoparietal"),)),
    "S3": Disorder("S3", (P("-", "within", "visual"),)),
    "S4": Disorder("S4", (P("+", "between", "somatomotor", "dorsal attention"),)),
    "S5": Disorder("S5", (P("+", "within", "default mode"), P("-", "within", "frontoparietal"))),
    "S6": Disorder("S6", (P("-", "between", "salience", "frontoparietal"),
                          P("+", "between", "visual", "default mode"))),
    "V": Disorder("V", (P("-", "within", "default mode"), P("+", "between", "somatomotor", "dorsal attention"))),
    "U1": Disorder("U1", (P("-", "within", "default mode"), P("+", "between", "salience", "frontoparietal"))),
    "U2": Disorder("U2", (P("-", "within", "visual"), P("+", "between", "somatomotor", "dorsal attention"))),
    "U3": Disorder("U3", (P("-", "within", "limbic"),)),
}  # fmt: skip


@lru_cache(maxsize=1)
def power_coords() -> np.ndarray:
    """The 264 Power-2011 ROI centres (MNI mm), from nilearn's bundled table (no download)."""
    from nilearn.datasets import fetch_coords_power_2011

    rois = fetch_coords_power_2011().rois
    return rois[["x", "y", "z"]].to_numpy(dtype=float)


def _kmeans(points: np.ndarray, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(points)
    order = np.argsort([points[labels == c, :].mean(0)[1] if points.shape[1] == 3 else c for c in range(k)])
    return np.argsort(order)[labels]  # relabel clusters so label order is deterministic


@dataclass
class BrainWorld:
    """Voxels, networks, couplings and atlases of one world (``seed``); ``subjects`` draws scans from it."""

    seed: int = 0
    n_timepoints: int = field(default=100, metadata={"help": "time points per scan (dossier: 200)"})
    atlases: tuple = ATLASES

    def __post_init__(self):
        if self.n_timepoints < 20:
            raise ValueError(f"BrainWorld.n_timepoints must be >= 20, got {self.n_timepoints!r}")
        self.coords = power_coords()
        self.n_voxels = len(self.coords)
        sym = np.column_stack([np.abs(self.coords[:, 0]), self.coords[:, 1], self.coords[:, 2]])
        self.network = _kmeans(sym, len(NETWORKS), seed=1234)  # fixed across seeds: the "canonical" networks
        rng = np.random.default_rng(10_000 + self.seed)
        k = len(NETWORKS)
        c = np.zeros((k, k))
        for a, b, v in (("default mode", "frontoparietal", 0.15), ("salience", "frontoparietal", 0.15),
                        ("visual", "dorsal attention", 0.15), ("somatomotor", "salience", 0.1)):  # fmt: skip
            i, j = NETWORKS.index(a), NETWORKS.index(b)
            c[i, j] = c[j, i] = v
        self.coupling = c
        self.weight = rng.uniform(0.6, 1.0, self.n_voxels)
        template = self.timeseries(self._one(rng, None, 0.0, 1), rng)
        profile = np.corrcoef(template.T)
        self.parcels = {}
        for name, kind, n in self.atlases:
            pts = profile if kind == "functional" else self.coords
            self.parcels[name] = _kmeans(pts, n, seed=self.seed * 100 + n)

    def averaging(self, atlas: str) -> np.ndarray:
        """(voxels, N_a) matrix whose product with a (T, voxels) series gives the parcel means."""
        lab = self.parcels[atlas]
        m = np.zeros((self.n_voxels, int(lab.max()) + 1))
        m[np.arange(self.n_voxels), lab] = 1.0
        return m / m.sum(0)

    # ---------------------------------------------------------------- subjects
    def _one(self, rng, disorder: Disorder | None, severity: float, site: int) -> dict:
        k = len(NETWORKS)
        w = self.weight * (1 + 0.1 * rng.standard_normal(self.n_voxels))
        c = self.coupling + 0.04 * np.triu(rng.standard_normal((k, k)), 1)
        c = np.triu(c, 1) + np.triu(c, 1).T
        for p in disorder.phrases if disorder else ():
            i = NETWORKS.index(p.a)
            if p.kind == "within":
                w = np.where(self.network == i, w * (1 + p.direction * EFFECT["within"] * severity), w)
            else:
                j = NETWORKS.index(p.b)
                c[i, j] += p.direction * EFFECT["between"] * severity
                c[j, i] += p.direction * EFFECT["between"] * severity
        return {"w": w, "c": c, "site": site}

    def timeseries(self, params: dict, rng) -> np.ndarray:
        """(T, voxels) BOLD-like series of one subject (the linear mixing model of the module docstring)."""
        k, t = len(NETWORKS), self.n_timepoints
        s = np.zeros((t + 20, k + 1))
        e = rng.standard_normal((t + 20, k + 1))
        for i in range(1, t + 20):  # AR(1), phi = 0.6, unit stationary variance; 20 burn-in steps
            s[i] = 0.6 * s[i - 1] + 0.8 * e[i]
        s = s[20:]
        sigma, gamma = SITES[params["site"]]
        mix = params["c"][self.network]  # (voxels, K): between-network couplings of each voxel's network
        mix[np.arange(self.n_voxels), self.network] += params["w"]
        v = s[:, :k] @ mix.T + gamma * s[:, k:]
        return v + sigma * rng.standard_normal(v.shape)

    def subjects(self, n: int, disorder: str | Disorder | None, rng, patient_share: float = 0.5) -> dict:
        """``n`` scans: controls and patients of ``disorder`` (``patient_share`` of them; a mixed-disorder corpus
        when ``disorder`` is a list of names). Returns parcel series per atlas and the ground truth."""
        names = disorder if isinstance(disorder, (list, tuple)) else [disorder]
        ys, sev, dis, sites, series = [], [], [], [], {a: [] for a, _, _ in self.atlases}
        for i in range(n):
            y = int(i < round(n * patient_share)) if names[0] is not None else 0
            d = names[i % len(names)] if y else None
            d = DISORDERS[d] if isinstance(d, str) else d
            s = float(rng.uniform(0.25, 1.0)) if y else 0.0
            site = int(rng.integers(len(SITES)))
            ts = self.timeseries(self._one(rng, d, s, site), rng)
            for a, _, _ in self.atlases:
                series[a].append(ts @ self.averaging(a))
            ys.append(y), sev.append(s), dis.append(d.name if d else "control"), sites.append(site)
        perm = rng.permutation(n)
        return {
            "y": np.array(ys)[perm],
            "severity": np.array(sev)[perm],
            "disorder": [dis[i] for i in perm],
            "site": np.array(sites)[perm],
            "series": {a: [series[a][i] for i in perm] for a in series},
        }
