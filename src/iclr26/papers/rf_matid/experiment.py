"""The RF-MatID reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import time

import numpy as np

from iclr26.core.seeding import seed_everything
from iclr26.core.threads import run_threads
from iclr26.science.rf_matid.benchmark import S2_VAL, make_split, validation_split, view
from iclr26.science.rf_matid.train import StagedGB, TrainConfig, accuracy, fit_gb, fit_net
from iclr26.science.rf_matid.world import DISTANCES_MM, RFMaterialWorld, RFWorldConfig

from . import Cfg


def _key(split: str) -> str:
    return split.lower().replace("-", "_")


def _predict(model, x) -> np.ndarray:
    if isinstance(model, StagedGB):
        return model.predict(x)
    import torch

    model.eval()
    with torch.no_grad():
        return np.concatenate(
            [model(torch.from_numpy(x[i : i + 512])).argmax(1).numpy() for i in range(0, len(x), 512)]
        )


def _fit(name, x, y, f, tr, va, lr, cfg: Cfg, seed: int, n_classes: int = 16, y_train=None):
    """Fit one model on indices tr (early stopping / rounds on va). y_train overrides the labels (shuffled control)."""
    yt = y if y_train is None else y_train
    if name == "gb":
        return fit_gb(x[tr], yt[tr], x[va], yt[va], lr, seed, max_iter=cfg.gb_max_iter)[0]
    tc = TrainConfig(lr=lr, batch=cfg.batch, max_epochs=cfg.max_epochs, patience=cfg.patience)
    return fit_net(name, x[tr], yt[tr], x[va], yt[va], n_classes, f, tc, seed)[0]


def tuning_indices(dist, cfg: Cfg, seed: int):
    """The tuning split of one world: train on S2-mod1's training distances minus every 4th (early stopping on a random
    ``val_frac`` of them), score on the held-out 4th ones. No test distance of any split's mod1 is ever seen."""
    train_d = [d for d in DISTANCES_MM if d not in S2_VAL["mod1"]]
    held = train_d[1::4]
    pool = np.flatnonzero(np.isin(dist, train_d) & ~np.isin(dist, held))
    tr, va = validation_split(pool, cfg.val_frac, seed)
    return tr, va, np.flatnonzero(np.isin(dist, held))


def _tune(name, x, y, f, dist, cfg: Cfg, seed: int, ctx, label: str = "") -> float:
    """One rule for every model (`iclr26.core.tuning.tune_on_grid`): the learning rate with the best accuracy on
    held-out *training* distances of S2-mod1 (`tuning_indices`); a geometric grid extended past any edge pick. A net's
    OneCycle max_lr must stay below 1 (a candidate at or above it scores -inf)."""
    from iclr26.core.tuning import tune_on_grid

    tr, va, tv = tuning_indices(dist, cfg, seed)

    def evaluate(lr):
        if name != "gb" and lr >= 1.0:
            return -np.inf, None
        return float((_predict(_fit(name, x, y, f, tr, va, lr, cfg, seed), x[tv]) == y[tv]).mean()), None

    res = tune_on_grid(evaluate, cfg.gb_lr_grid if name == "gb" else cfg.net_lr_grid, max_extensions=4)
    ctx.log(f"seed {seed} {label or name}: lr grid {[f'{v:g}:{res.scores[v]:.3f}' for v in res.grid]} -> {res.best:g}"
            + (" (still an edge)" if res.at_edge else ""))  # fmt: skip
    return res.best


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    from sklearn.metrics import f1_score

    t0, m = time.time(), {}
    seed_everything(seed)
    wcfg = RFWorldConfig(n_bins=cfg.n_bins, repeats=cfg.repeats, kappa=cfg.kappa, angle_keep=cfg.angle_keep)
    world = RFMaterialWorld(wcfg, seed)
    ds = world.dataset()
    x, f = view(ds.H, ds.f_ghz, "P1")
    y, n_cls = ds.label, len(ds.class_names)

    xt = view(ds.H, ds.f_ghz, "P1", kind="time")[0] if "cnn" in cfg.models else None  # the time-domain view
    t1 = time.time()
    if cfg.tune:
        lrs = {name: _tune(name, x, y, f, ds.distance_mm, cfg, seed, ctx) for name in cfg.models}
        if xt is not None:  # the time-domain CNN gets its own learning rate by the same rule
            lrs["cnn_time"] = _tune("cnn", xt, y, f, ds.distance_mm, cfg, seed, ctx, label="cnn (time view)")
    else:  # the values the same rule chose on the tuning lab (`tune.py`, seed 100; Cfg.lr_*)
        lrs = {name: getattr(cfg, f"lr_{name}") for name in cfg.models}
        if xt is not None:
            lrs["cnn_time"] = cfg.lr_cnn_time
    m["tune_seconds"] = time.time() - t1
    m.update({f"lr_{k}": v for k, v in lrs.items()})

    extra_models = tuple(n for n in cfg.models if n in ("cnn", "gb") + cfg.extra_s3_models)
    plan = [(sp, cfg.models) for sp in cfg.splits] + [(sp, extra_models) for sp in cfg.extra_splits]
    for split, names in plan:
        tr, te = make_split(ds.distance_mm, ds.angle_deg, split, seed=seed)
        tr, va = validation_split(tr, cfg.val_frac, seed)
        for name in names:
            model = _fit(name, x, y, f, tr, va, lrs[name], cfg, seed, n_cls)
            pred = _predict(model, x[te])
            m[f"{_key(split)}_acc_{name}"] = float((pred == y[te]).mean())
            m[f"{_key(split)}_f1_{name}"] = float(f1_score(y[te], pred, average="macro"))
        m[f"{_key(split)}_acc_mean"] = float(np.mean([m[f"{_key(split)}_acc_{n}"] for n in names]))
        ctx.log(f"seed {seed} {split}: " + " ".join(f"{n} {m[f'{_key(split)}_acc_{n}']:.3f}" for n in names))
    accs = {s: m[f"{_key(s)}_acc_mean"] for s in cfg.splits}  # the claims use the splits run with every model
    m["s1_acc_max"] = max(m[f"s1_acc_{n}"] for n in cfg.models)
    m["s2_acc_mean"] = float(np.mean([v for s, v in accs.items() if s.startswith("S2")] or [np.nan]))
    m["s3_acc_mean"] = float(np.mean([v for s, v in accs.items() if s.startswith("S3")] or [np.nan]))
    m["s1_minus_s3"] = m["s1_acc_mean"] - m["s3_acc_mean"]

    # frequency protocols on S1 with the band model (P1 = the main grid's S1 result)
    tr, te = make_split(ds.distance_mm, ds.angle_deg, "S1", seed=seed)
    tr, va = validation_split(tr, cfg.val_frac, seed)
    bm = cfg.band_model
    m["band_p1_acc"] = m[f"s1_acc_{bm}"]
    for p in cfg.band_protocols:
        xp, fp = view(ds.H, ds.f_ghz, p)
        m[f"band_{p.lower()}_acc"] = accuracy_any(_fit(bm, xp, y, fp, tr, va, lrs[bm], cfg, seed, n_cls), xp[te], y[te])
    for p in ("P2", "P3"):
        if p in cfg.band_protocols:
            m[f"band_p1_minus_{p.lower()}"] = m["band_p1_acc"] - m[f"band_{p.lower()}_acc"]
    legal = [m["band_p1_acc"] - m[f"band_{p.lower()}_acc"] for p in ("P4", "P5") if p in cfg.band_protocols]
    m["band_p1_minus_p45_max"] = max(legal) if legal else float("nan")

    # the time-domain view (the comparison representation): the same CNN, at its own learning rate by the same rule
    if "cnn" in cfg.models:
        m["s1_time_acc"] = accuracy_any(_fit("cnn", xt, y, f, tr, va, lrs["cnn_time"], cfg, seed, n_cls), xt[te], y[te])
        m["s1_freq_minus_time"] = m["s1_acc_cnn"] - m["s1_time_acc"]
        # shuffled-label control: training and validation labels permuted
        ys = y.copy()
        ys[tr], ys[va] = (
            np.random.default_rng([seed, 5]).permutation(y[tr]),
            np.random.default_rng([seed, 6]).permutation(y[va]),
        )
        m["shuffled_acc"] = accuracy_any(
            _fit("cnn", x, y, f, tr, va, lrs["cnn"], cfg, seed, n_cls, y_train=ys), x[te], y[te]
        )
        m["shuffled_gain"] = m["shuffled_acc"] - 1 / n_cls
    ctx.log(
        f"seed {seed}: S1 {m['s1_acc_mean']:.3f} S2 {m['s2_acc_mean']:.3f} S3 {m['s3_acc_mean']:.3f}; bands "
        + " ".join(f"{p} {m.get(f'band_{p.lower()}_acc', float('nan')):.3f}" for p in ("P1", "P2", "P3", "P4", "P5"))
        + f"; time view {m.get('s1_time_acc', float('nan')):.3f}; shuffled {m.get('shuffled_acc', float('nan')):.3f};"
        f" {time.time() - t0:.0f}s"
    )
    return m


def accuracy_any(model, x, y) -> float:
    if isinstance(model, StagedGB):
        return float((_predict(model, x) == y).mean())
    return accuracy(model, x, y)


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    from iclr26.science.rf_matid.benchmark import PROTOCOLS
    from iclr26.science.rf_matid.world import to_time_domain

    world = RFMaterialWorld(RFWorldConfig(n_bins=max(cfg.n_bins, 1024), kappa=cfg.kappa), 0)
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    for k in (0, 4, 7, 10, 15):
        h = world.measure(k, 1000, 0, rng)
        ax[0, 0].plot(world.f, 20 * np.log10(np.abs(h)), lw=0.8, label=world.materials[k].name)
        ax[0, 1].plot(world.f, 20 * np.log10(np.abs(world.gamma(k, 0.0))), lw=0.8)
    for name, p in PROTOCOLS.items():
        if p.bands and name in ("P4", "P5"):
            for lo, hi in p.bands:
                ax[0, 1].axvspan(lo, hi, ymin=0.0 if name == "P4" else 0.05, ymax=0.04 if name == "P4" else 0.09,
                                 color="C0" if name == "P4" else "C3", alpha=0.6)  # fmt: skip
    ax[0, 0].set(title="|H(f)| at d = 1000 mm, θ = 0° (one lab, seed 0)", xlabel="GHz", ylabel="dB")
    ax[0, 0].legend(fontsize=6)
    ax[0, 1].set(title="plate |Γ(f)| (scikit-rf cascade × roughness); bars: P4 (blue), P5 (red)", xlabel="GHz")
    for d in (200, 700, 1500):
        h = world.measure(15, d, 0, rng)
        ax[1, 0].plot(world.f, 20 * np.log10(np.abs(h)), lw=0.7, label=f"concrete, {d} mm")
        t = to_time_domain(h[None], 5)[0]
        rng_m = np.arange(len(t)) * 299_792_458.0 / (2 * 5 * len(h) * (world.f[1] - world.f[0]) * 1e9)
        ax[1, 1].plot(rng_m, 20 * np.log10(t + 1e-9), lw=0.7, label=f"{d} mm")
    ax[1, 0].set(title="distance changes the spectrum (concrete, θ = 0°)", xlabel="GHz", ylabel="dB")
    ax[1, 0].legend(fontsize=7)
    ax[1, 1].set(title="time-domain view |IFFT(Hann·H)| vs one-way range", xlabel="m", ylabel="dB", xlim=(0, 3))
    ax[1, 1].legend(fontsize=7)
    fig.tight_layout()

    seeds = list(per_seed.values())
    fig2, axb = plt.subplots(figsize=(10, 3.5))
    w = 0.8 / len(cfg.models)
    for i, name in enumerate(cfg.models):
        vals = [[s.get(f"{_key(sp)}_acc_{name}", np.nan) for s in seeds] for sp in cfg.splits]
        axb.bar(np.arange(len(cfg.splits)) + i * w, [np.nanmean(v) for v in vals], w,
                yerr=[np.nanstd(v) for v in vals], label=name)  # fmt: skip
    axb.axhline(1 / 16, color="gray", ls=":", label="chance")
    axb.set_xticks(np.arange(len(cfg.splits)) + 0.4 - w / 2, cfg.splits)
    axb.set(ylabel="test accuracy", ylim=(0, 1.02), title="accuracy per split (P1), mean ± std over seeds")
    axb.legend(fontsize=7, ncol=5)
    fig2.tight_layout()
    return [("spectra", fig), ("accuracy_per_split", fig2)]
