"""The cluster-preservation reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import json

import numpy as np

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

from . import Cfg


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


def _random_step(init, trained, seed: int):
    """A copy of `init` moved by a random direction with the same Frobenius length as training moved each weight and
    bias (the negative control of the learned-condition claims: movement without learning)."""
    import copy

    import torch

    g = torch.Generator().manual_seed(seed)
    net = copy.deepcopy(init)
    with torch.no_grad():
        for p0, p1, p in zip(init.parameters(), trained.parameters(), net.parameters()):
            r = torch.randn(p.shape, generator=g)
            p.copy_(p0 + r * ((p1 - p0).norm() / r.norm().clamp_min(1e-12)))
    return net


def _unrelated_label(X, k: int, rng) -> np.ndarray:
    """k balanced classes cut from the projection of X on a random direction: learnable, not the clusters."""
    proj = X @ rng.standard_normal(X.shape[1])
    return np.searchsorted(np.quantile(proj, np.linspace(0, 1, k + 1)[1:-1]), proj)


def _fit_acc(net, X, y) -> float:
    import torch

    with torch.no_grad():
        return float(np.mean(net(torch.as_tensor(X, dtype=torch.float32)).argmax(1).numpy() == y))


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
    from ...core.threads import torch_threads

    with torch_threads():
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

    # 1. geometry sweep with random He layers (sweep_repeats fresh data sets and layers per setting)
    drops_ok, acc_ok = [], []
    sweep = {}
    plan = [(c, b, i) for c in cfg.sweep_cones for b in cfg.sweep_bias for i in range(cfg.sweep_repeats)]
    for cone, scale, i_rep in tqdm(plan, desc="sweep", leave=False):
        X, y, _ = data(cone)
        acc_x = _acc(X, y, k, cfg)
        W = rng.standard_normal((cfg.width, dim)) * np.sqrt(2.0 / dim)
        b = scale * rng.standard_normal(cfg.width)
        rep = layer_report(X, W, b, y, r)
        bounds.extend(zip(rep["sin"], rep["bound"]))
        drop = acc_x - _acc(np.maximum(X @ W.T + b, 0), y, k, cfg)
        cond = float(np.mean(rep["margin"] > 0))
        key = f"cone{int(cone)}_bias{scale:g}"
        m[f"sweep_cond_frac_{key}"] = m.get(f"sweep_cond_frac_{key}", 0.0) + cond / cfg.sweep_repeats
        m[f"sweep_acc_drop_{key}"] = m.get(f"sweep_acc_drop_{key}", 0.0) + drop / cfg.sweep_repeats
        if cond == 1.0:
            drops_ok.append(drop)
            acc_ok.append(acc_x)
        sweep[f"{key}_r{i_rep}"] = {"sin": rep["sin"].tolist(), "bound": rep["bound"].tolist(),
                                  "margin": rep["margin"].tolist()}  # fmt: skip
    m["acc_drop_when_condition_holds"] = float(np.mean(drops_ok)) if drops_ok else float("nan")
    m["acc_input_when_condition_holds"] = float(np.mean(acc_ok)) if acc_ok else float("nan")
    m["sweep_condition_instances"] = float(len(drops_ok))

    # 2. trained MLPs on cone data and on whole subspaces
    curves = {}
    for geom, cone in (("cone", cfg.train_cone), ("full", None)):
        X, y, bases = data(cone)
        m[f"{geom}_acc_input"] = _acc(X, y, k, cfg)
        net = _mlp([dim, cfg.width, cfg.width, k], seed)
        m.update(_net_stats(net, X, y, k, r, cfg, f"{geom}_init", bounds))
        init = _mlp([dim, cfg.width, cfg.width, k], seed)  # the same initialisation, kept untrained
        _train(net, X, y, cfg.train_steps, cfg.lr, cfg.batch, seed)
        m[f"{geom}_trained_train_acc"] = _fit_acc(net, X, y)
        m.update(_net_stats(net, X, y, k, r, cfg, f"{geom}_trained", bounds))
        m.update(_net_stats(_random_step(init, net, seed), X, y, k, r, cfg, f"{geom}_randstep", bounds))
        ctx.log(
            f"{geom}: ACC input {m[f'{geom}_acc_input']:.3f}, layer-1 κ {m[f'{geom}_init_kappa_l1']:.3f} → "
            f"{m[f'{geom}_trained_kappa_l1']:.3f}, ‖E‖/‖Y‖ {m[f'{geom}_init_err_l1']:.3f} → "
            f"{m[f'{geom}_trained_err_l1']:.3f}"
        )
        # control: the same recipe on a label unrelated to the clusters (does the structure survive untaught?)
        y_un = _unrelated_label(X, k, np.random.default_rng([seed, 77, int(cone or 0)]))
        net_un = _mlp([dim, cfg.width, cfg.width, k], seed)
        _train(net_un, X, y_un, cfg.train_steps, cfg.lr, cfg.batch, seed)
        m[f"{geom}_unrelated_train_acc"] = _fit_acc(net_un, X, y_un)
        for i, (_, _, _, z) in enumerate(_layers(net_un, X), start=1):
            m[f"{geom}_unrelated_acc_l{i}"] = _acc(z, y, k, cfg)
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
    init = _mlp([64, w, w, w, 10], seed)
    _train(net, X_tr, y_tr, cfg.digits_steps, cfg.lr, cfg.batch, seed)
    with torch.no_grad():
        pred = net(torch.as_tensor(X_te, dtype=torch.float32)).argmax(1).numpy()
    res["digits_test_accuracy"] = float(np.mean(pred == y_te))
    res.update(_net_stats(net, X_te, y_te, 10, cfg.digits_dim, cfg, "digits_trained", bounds))
    res.update(
        _net_stats(_random_step(init, net, seed), X_te, y_te, 10, cfg.digits_dim, cfg, "digits_randstep", bounds)
    )
    # control: the same recipe on an unrelated label (deciles of total ink), clustering of the true classes
    ink = lambda Z: Z.sum(1)  # noqa: E731
    cuts = np.quantile(ink(X_tr), np.linspace(0, 1, 11)[1:-1])
    net_un = _mlp([64, w, w, w, 10], seed)
    y_ink = np.searchsorted(cuts, ink(X_tr))
    _train(net_un, X_tr, y_ink, cfg.digits_steps, cfg.lr, cfg.batch, seed)
    res["digits_unrelated_train_acc"] = _fit_acc(net_un, X_tr, y_ink)
    for i, (_, _, _, z) in enumerate(_layers(net_un, X_te), start=1):
        res[f"digits_unrelated_acc_l{i}"] = _acc(z, y_te, 10, cfg)
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
