"""Some Neural Networks Inherently Preserve Subspace Clustering Structure (ICLR 2026) — reproduction notebook.

The paper's theorems were not available; we test the stated claims with our reconstruction (see
`iclr26.theory.cluster_preservation`): a ReLU layer is linear on a cluster whose points all give each unit the same
sign, and otherwise the embedded cluster subspace moves by at most the Davis–Kahan–Wedin bound
‖E‖/(gap − ‖E‖), with the spectral-gap condition γ = gap − 2‖E‖ > 0.

1. Sweep: union-of-subspaces data with clusters filling a 60° cone or the whole subspace, a random He-initialised
   ReLU layer with random biases of growing scale (a larger |b| makes more units sign-consistent): how often the
   condition holds, whether the bound holds, and whether subspace clustering of the embedding is as accurate as of the
   input when it does.
2. Training: a 2-hidden-layer ReLU MLP trained with plain cross-entropy (no clustering regulariser) on the cluster
   labels, for cone data and for whole-subspace data; condition statistics and clustering accuracy per layer at
   initialisation and after training.
3. scikit-learn digits (non-negative pixels, approximately a union of subspaces): a 3-hidden-layer MLP trained on one
   half; subspace clustering (TSC read-out) of the other half on raw pixels vs each hidden layer, init vs trained.
4. Controls: an orthogonal map (must preserve exactly) and a linear map that merges all subspaces into one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from iclr26.core.claims import Check, Claim
from iclr26.theory.cluster_preservation import (
    ClusterConfig,
    UoSConfig,
    affinity_preservation,
    clustering_accuracy,
    layer_report,
    make_union_of_subspaces,
    rank_fit,
    subspace_cluster,
)


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    ambient_dim: int = 40
    n_clusters: int = 5
    subspace_dim: int = 4
    n_per_cluster: int = 80
    noise: float = 0.02
    shared: float = 0.5
    train_cone: float = 120.0
    sweep_cones: tuple[float, ...] = (60.0, 360.0)
    sweep_bias: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 4.0)
    width: int = 256
    train_steps: int = 400
    lr: float = 1e-3
    batch: int = 64
    readout: str = "tsc"
    tsc_q: int = 10
    digits_width: int = 128
    digits_steps: int = 500
    digits_dim: int = 9
    digits_subsample: int = 1


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        ambient_dim=20,
        n_clusters=3,
        subspace_dim=3,
        n_per_cluster=30,
        sweep_bias=(0.1, 4.0),
        width=32,
        train_steps=30,
        digits_width=16,
        digits_steps=30,
        tsc_q=5,
        digits_subsample=6,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4), ambient_dim=60, n_per_cluster=150, train_steps=2000, digits_steps=3000, readout="ssc"
    ),
}

CLAIMS = [
    Claim(
        "exact-preservation",
        "Under the spectral-gap condition a ReLU layer preserves the union-of-subspaces structure: each embedded "
        "cluster subspace stays within the Davis–Kahan(–Wedin) bound and subspace clustering is as accurate as on the "
        "input.",
        checks=(
            Check("bound_violation_rate", "<", 1e-9),
            Check("acc_drop_when_condition_holds", "<", 0.01),
        ),
        paper="theorem (exact preservation under a spectral-gap condition; bounds otherwise); constants not retrieved",
    ),
    Claim(
        "learned-condition-cones",
        "Networks trained without any clustering regulariser learn weights that move toward the condition (more "
        "sign-consistent units, smaller perturbation ‖E‖) — data in cones (synthetic) and non-negative digits.",
        checks=(
            Check("cone_trained_consistent_l1", ">", "cone_init_consistent_l1"),
            Check("cone_trained_err_l1", "<", "cone_init_err_l1"),
            Check("digits_trained_kappa_l1", ">", "digits_init_kappa_l1"),
        ),
        paper="'networks learn W satisfying the condition without explicit regularisation' (numbers not retrieved)",
    ),
    Claim(
        "learned-condition-full-subspaces",
        "The same for clusters that fill whole (sign-symmetric) subspaces.",
        checks=(
            Check("full_trained_kappa_l1", ">", "full_init_kappa_l1"),
            Check("full_trained_err_l1", "<", "full_init_err_l1"),
        ),
        paper="claimed for union-of-subspaces data in general (setting of the paper's experiments not retrieved)",
    ),
    Claim(
        "embeddings-preserve-clusters",
        "Trained networks' embeddings preserve the clustering: subspace clustering of hidden layers is at least as "
        "accurate as of the inputs (within 2 points).",
        checks=(
            Check("cone_trained_acc_l2", ">", "cone_acc_input", -0.02),
            Check("digits_trained_acc_l1", ">", "digits_acc_pixels", -0.02),
            Check("digits_trained_acc_l3", ">", "digits_acc_pixels", -0.02),
        ),
        paper="'extensive numerical analysis and experiments validate' (datasets and numbers not retrieved)",
    ),
    Claim(
        "merging-control",
        "Control: a map that merges the subspaces destroys the structure (accuracy drops by > 20 points, affinity "
        "preservation < 0.5), while an orthogonal map preserves it exactly.",
        checks=(
            Check("merge_acc", "<", "cone_acc_input", 0.2),
            Check("merge_affinity_preservation", "<", 0.5),
            Check("orthogonal_affinity_preservation", ">", 0.999),
        ),
        paper="(our sanity control; not a claim of the paper)",
    ),
]

METRICS = {
    "bound_violation_rate": "fraction of (cluster, layer) cases over all layers measured where ‖sin Θ‖₂ exceeds the "
    "Wedin bound ‖E‖/(gap − ‖E‖) (should be 0: a theorem)",
    "acc_drop_when_condition_holds": "sweep: mean ACC(X) − ACC(σ(WX+b)) over instances where γ_k > 0 for every "
    "cluster (nan if none)",
    **{
        f"sweep_cond_frac_cone{int(a)}_bias{b:g}": f"sweep, cone {int(a)}°, biases N(0, {b:g}²): fraction of clusters "
        "with γ_k > 0 under a random He ReLU layer"
        for a in (60, 360)
        for b in (0.1, 0.5, 1, 2, 4)
    },
    **{
        f"sweep_acc_drop_cone{int(a)}_bias{b:g}": f"sweep, cone {int(a)}°, biases N(0, {b:g}²): ACC(X) − ACC(layer "
        "output)"
        for a in (60, 360)
        for b in (0.1, 0.5, 1, 2, 4)
    },
    **{f"{g}_acc_input": f"{g} data: subspace-clustering accuracy (Hungarian) on the inputs" for g in ("cone", "full")},
    **{
        f"{g}_{w}_{m}_l{i}": f"{g} data, MLP at {w}: layer {i} {desc}"
        for g in ("cone", "full")
        for w in ("init", "trained")
        for i in (1, 2)
        for m, desc in (
            ("kappa", "mean majority sign fraction κ over units and clusters"),
            ("consistent", "fraction of units sign-consistent on a cluster"),
            ("err", "‖E_k‖₂/‖Y_k‖₂ (sign-flip perturbation)"),
            ("margin", "γ_k/‖Y_k‖₂, mean over clusters"),
            ("cond", "fraction of clusters with γ_k > 0"),
            ("acc", "subspace-clustering accuracy of the layer output"),
        )
    },
    "digits_acc_pixels": "digits (held-out half): subspace-clustering accuracy on raw pixels",
    **{
        f"digits_{w}_{m}_l{i}": f"digits (held-out half, classes as clusters, r = digits_dim), MLP at {w}: layer {i} "
        f"{m} (as for the synthetic data)"
        for w in ("init", "trained")
        for i in (1, 2, 3)
        for m in ("kappa", "consistent", "err", "margin", "cond", "acc")
    },
    "digits_test_accuracy": "digits: classification accuracy of the trained MLP on the held-out half",
    "merge_acc": "cone data mapped by x ↦ U₁U₁ᵀx + small noise (all clusters merged into one subspace): clustering ACC",
    "merge_affinity_preservation": "(1 − mean affinity after) / (1 − mean affinity before) for the merging map",
    "orthogonal_affinity_preservation": "the same for a random orthogonal map",
    "orthogonal_rank_fit": "energy fraction of each cluster inside its top-r subspace after the orthogonal map",
}


def _acc(Y, y, k, cfg: Cfg) -> float:
    return clustering_accuracy(subspace_cluster(Y, k, ClusterConfig(method=cfg.readout, tsc_q=cfg.tsc_q)), y)


def _summ(rep: dict) -> dict[str, float]:
    return {
        "kappa": float(rep["kappa"].mean()),
        "consistent": float(rep["consistent"].mean()),
        "err": float(rep["err"].mean()),
        "margin": float(rep["margin"].mean()),
        "cond": float(np.mean(rep["margin"] > 0)),
    }


def _mlp(sizes, seed):
    import torch

    torch.manual_seed(seed)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def _train(net, X, y, steps, lr, batch, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, len(yt), (batch,), generator=g)
        loss = torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx])  # plain CE: no clustering regulariser
        opt.zero_grad()
        loss.backward()
        opt.step()


def _layers(net, X) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(input, W, b, output) of every ReLU layer."""
    import torch

    out, h = [], torch.as_tensor(X, dtype=torch.float32)
    with torch.no_grad():
        mods = list(net)
        for i, m in enumerate(mods):
            if isinstance(m, torch.nn.Linear) and i + 1 < len(mods):
                z = torch.relu(m(h))
                out.append((h.numpy(), m.weight.numpy().copy(), m.bias.numpy().copy(), z.numpy()))
                h = z
            else:
                h = m(h)
    return out


def _net_stats(net, X, y, k, dims, cfg, tag, bounds) -> dict[str, float]:
    res = {}
    d = dims
    for i, (h, W, b, z) in enumerate(_layers(net, X), start=1):
        rep = layer_report(h, W, b, y, d)
        bounds.extend(zip(rep["sin"], rep["bound"]))
        for key, v in _summ(rep).items():
            res[f"{tag}_{key}_l{i}"] = v
        res[f"{tag}_acc_l{i}"] = _acc(z, y, k, cfg)
        d = d + 1  # an affine layer adds the bias direction to the next layer's cluster span
    return res


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    from ..core.threads import torch_threads

    with torch_threads(1):
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    m: dict[str, float] = {}
    bounds: list[tuple[float, float]] = []
    k, r, dim = cfg.n_clusters, cfg.subspace_dim, cfg.ambient_dim

    def data(cone):
        return make_union_of_subspaces(
            UoSConfig(
                ambient_dim=dim,
                n_clusters=k,
                subspace_dim=r,
                n_per_cluster=cfg.n_per_cluster,
                noise=cfg.noise,
                shared=cfg.shared,
                cone_angle=cone,
            ),
            rng,
        )

    # 1. geometry sweep with random He layers
    drops_ok = []
    sweep = {}
    for cone, scale in tqdm([(c, s) for c in cfg.sweep_cones for s in cfg.sweep_bias], desc="sweep", leave=False):
        X, y, _ = data(cone)
        acc_x = _acc(X, y, k, cfg)
        W = rng.standard_normal((cfg.width, dim)) * np.sqrt(2.0 / dim)
        b = scale * rng.standard_normal(cfg.width)
        rep = layer_report(X, W, b, y, r)
        bounds.extend(zip(rep["sin"], rep["bound"]))
        drop = acc_x - _acc(np.maximum(X @ W.T + b, 0), y, k, cfg)
        cond = float(np.mean(rep["margin"] > 0))
        key = f"cone{int(cone)}_bias{scale:g}"
        m[f"sweep_cond_frac_{key}"] = cond
        m[f"sweep_acc_drop_{key}"] = drop
        if cond == 1.0:
            drops_ok.append(drop)
        sweep[key] = {"sin": rep["sin"].tolist(), "bound": rep["bound"].tolist(), "margin": rep["margin"].tolist()}
    m["acc_drop_when_condition_holds"] = float(np.mean(drops_ok)) if drops_ok else float("nan")

    # 2. trained MLPs on cone data and on whole subspaces
    curves = {}
    for geom, cone in (("cone", cfg.train_cone), ("full", None)):
        X, y, bases = data(cone)
        m[f"{geom}_acc_input"] = _acc(X, y, k, cfg)
        net = _mlp([dim, cfg.width, cfg.width, k], seed)
        m.update(_net_stats(net, X, y, k, r, cfg, f"{geom}_init", bounds))
        _train(net, X, y, cfg.train_steps, cfg.lr, cfg.batch, seed)
        m.update(_net_stats(net, X, y, k, r, cfg, f"{geom}_trained", bounds))
        ctx.log(
            f"{geom}: ACC input {m[f'{geom}_acc_input']:.3f}, layer-1 κ {m[f'{geom}_init_kappa_l1']:.3f} → "
            f"{m[f'{geom}_trained_kappa_l1']:.3f}, ‖E‖/‖Y‖ {m[f'{geom}_init_err_l1']:.3f} → "
            f"{m[f'{geom}_trained_err_l1']:.3f}"
        )
        if geom == "cone":  # 4. controls on the same data
            merge = X @ bases[0] @ bases[0].T + cfg.noise * rng.standard_normal(X.shape)
            m["merge_acc"] = _acc(merge, y, k, cfg)
            m["merge_affinity_preservation"] = affinity_preservation(X, merge, y, r)
            Q = np.linalg.qr(rng.standard_normal((dim, dim)))[0]
            m["orthogonal_affinity_preservation"] = affinity_preservation(X, X @ Q, y, r)
            m["orthogonal_rank_fit"] = rank_fit(X @ Q, y, r)

    # 3. digits
    m.update(_digits(cfg, seed, bounds, curves))
    ctx.log(
        f"digits: ACC pixels {m['digits_acc_pixels']:.3f}; trained layers "
        + ", ".join(f"{m[f'digits_trained_acc_l{i}']:.3f}" for i in (1, 2, 3))
    )
    sins = np.array(bounds)
    m["bound_violation_rate"] = float(np.mean(sins[:, 0] > sins[:, 1] + 1e-9))
    ctx.save_artifact(f"geometry-seed{seed}", {"sweep": sweep, "digits": curves.get("digits", {}), "metrics": m})
    return m


def _digits(cfg: Cfg, seed: int, bounds, curves) -> dict[str, float]:
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X, y = X[:: cfg.digits_subsample] / 16.0, y[:: cfg.digits_subsample]  # non-negative pixels in [0, 1]
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    res = {"digits_acc_pixels": _acc(X_te, y_te, 10, cfg)}
    w = cfg.digits_width
    net = _mlp([64, w, w, w, 10], seed)
    res.update(_net_stats(net, X_te, y_te, 10, cfg.digits_dim, cfg, "digits_init", bounds))
    _train(net, X_tr, y_tr, cfg.digits_steps, cfg.lr, cfg.batch, seed)
    with torch.no_grad():
        pred = net(torch.as_tensor(X_te, dtype=torch.float32)).argmax(1).numpy()
    res["digits_test_accuracy"] = float(np.mean(pred == y_te))
    res.update(_net_stats(net, X_te, y_te, 10, cfg.digits_dim, cfg, "digits_trained", bounds))
    curves["digits"] = dict(res)
    return res


def plots(run_dir, per_seed, cfg):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = sorted((run_dir / "artifacts").glob("geometry-seed*.json"))
    if not files:
        return []
    figs = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for f in files:
        art = json.loads(f.read_text())
        for key, d in art["sweep"].items():
            axes[0].scatter(d["bound"], d["sin"], s=12, label=key if f == files[0] else None)
    axes[0].plot([0, 1], [0, 1], "k--", lw=1)
    axes[0].set(
        xlabel="Wedin bound ‖E‖/(gap − ‖E‖) (capped at 1)",
        ylabel="measured ‖sin Θ‖₂",
        title="embedded cluster subspace: measured vs bound",
    )
    axes[0].legend()
    seeds = sorted(per_seed)
    layers = ["pixels", "h1", "h2", "h3"]
    for w, style in (("init", ":"), ("trained", "-")):
        vals = np.array(
            [
                [per_seed[s]["digits_acc_pixels"]] + [per_seed[s][f"digits_{w}_acc_l{i}"] for i in (1, 2, 3)]
                for s in seeds
            ]
        )
        axes[1].errorbar(range(4), vals.mean(0), yerr=vals.std(0), ls=style, marker="o", label=f"MLP {w}")
    axes[1].set_xticks(range(4), layers)
    axes[1].set(ylabel="subspace-clustering accuracy", title="digits (held-out half): clustering per layer")
    axes[1].legend()
    figs.append(("bound_and_digits_layers", fig))
    return figs
