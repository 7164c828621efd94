"""The equivariance-scaling reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import functools
import json

import numpy as np
import torch

from iclr26.core.threads import torch_threads
from iclr26.science.forcefields import (
    EquivariantConfig,
    EquivariantForceField,
    UnconstrainedConfig,
    UnconstrainedForceField,
    match_parameters,
)
from iclr26.science.forcefields.scaling import fit_compute_frontier, fit_power_law
from iclr26.science.forcefields.training import TargetScaler, TrainConfig, equivariance_error, train_forcefield
from iclr26.science.forcefields.world import ManyBodyPotential, emt_cluster_dataset, sample_clusters

from . import _LMAX, ARCHS, Cfg


@functools.cache
def _width(arch: str, budget_mul: int) -> int:
    """Channels of `arch` matching the parameter count of the ℓ_max=2 model with `budget_mul` channels."""
    if arch == "l2":
        return budget_mul
    target = EquivariantForceField(EquivariantConfig(mul=budget_mul, lmax=2)).num_parameters()
    if arch == "u":
        return match_parameters(lambda w: UnconstrainedForceField(UnconstrainedConfig(width=w)), target).cfg.width
    return match_parameters(lambda w: EquivariantForceField(EquivariantConfig(mul=w, lmax=_LMAX[arch])), target).cfg.mul


def _build(arch: str, budget_mul: int, n_atoms: int, r_max: float):
    w = _width(arch, budget_mul)
    if arch == "u":
        return UnconstrainedForceField(UnconstrainedConfig(width=w, r_max=r_max, avg_neighbors=n_atoms - 1))
    return EquivariantForceField(EquivariantConfig(mul=w, lmax=_LMAX[arch], r_max=r_max, avg_neighbors=n_atoms - 1))


def _sweep(cfg: Cfg, data, val, archs, data_sizes, tiers, steps, r_max, seed, bar) -> list[dict]:
    """Train every (arch, D) at the middle tier and every (arch, tier) at the largest D; return run records."""
    mid = tiers[len(tiers) // 2]
    plan = [(a, d, mid) for a in archs for d in data_sizes]
    plan += [(a, max(data_sizes), t) for a in archs for t in tiers if t != mid]
    runs = []
    for k, (arch, d, tier) in enumerate(plan):
        torch.manual_seed(seed * 1000 + k)
        model = _build(arch, tier, data.pos.shape[1], r_max)
        lr = {"u": cfg.lr_u, "l1": cfg.lr_l1, "l2": cfg.lr_l2}[arch]
        tc = TrainConfig(
            steps=steps,
            batch_size=cfg.batch_size,
            lr=lr,
            n_evals=cfg.n_evals,
            seed=seed * 1000 + k,
            patience=cfg.patience,
            eval_every=cfg.eval_every,
            min_rel_improvement=cfg.min_rel_improvement,
        )
        res = train_forcefield(model, data.subset(slice(0, d)), val, tc)
        rec = {
            "arch": arch,
            "D": d,
            "tier": tier,
            "params": res["params"],
            "loss": res["best_loss"],
            "curve": res["curve"],
            "steps_used": res.get("steps_used", float(steps)),
            "converged": res.get("converged", float("nan")),
        }
        if tier == mid and d == max(data_sizes):
            rec["equiv"] = equivariance_error(model, val.subset(slice(0, 32)), seed=seed)
        runs.append(rec)
        bar.update(1)
    return runs


def _exponents(runs: list[dict], arch: str, data_sizes, tiers) -> dict[str, float]:
    """β (with its 95 % interval) from L(D) at the middle tier, α from L(N) at the largest D, γ from the frontier."""
    mid = tiers[len(tiers) // 2]
    d_runs = sorted((r for r in runs if r["arch"] == arch and r["tier"] == mid), key=lambda r: r["D"])
    out = {}
    fit = fit_power_law([r["D"] for r in d_runs], [r["loss"] for r in d_runs])
    out.update(beta=fit.exponent, beta_ci_low=fit.ci_low, beta_ci_high=fit.ci_high)
    n_runs = [r for r in runs if r["arch"] == arch and r["D"] == max(data_sizes)]
    if len({r["params"] for r in n_runs}) >= 2:
        out["alpha"] = fit_power_law([r["params"] for r in n_runs], [r["loss"] for r in n_runs]).exponent
    pts = [(c["flops"], c["loss"]) for r in runs if r["arch"] == arch for c in r["curve"]]
    try:
        out["gamma"] = fit_compute_frontier(*zip(*pts)).exponent
    except ValueError:  # fewer than two frontier points
        out["gamma"] = float("nan")
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads():  # ICLR26_THREADS, default 1: these models are tiny, extra threads mostly add overhead
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    from tqdm.auto import tqdm

    potential = ManyBodyPotential()
    d_max = max(cfg.data_sizes)
    data = sample_clusters(
        potential,
        d_max + cfg.n_val,
        n_atoms=cfg.n_atoms,
        temperature=cfg.temperature,
        seed=seed,
        n_replicas=512,
        burn_in=150,
        stride=15,
        step=1e-2,
    )
    train, val = data.subset(slice(0, d_max)), data.subset(slice(d_max, d_max + cfg.n_val))
    scaler = TargetScaler(train, potential.cfg.n_species)  # one unit system for every run of this seed
    train, val = scaler.transform(train), scaler.transform(val)
    n_tiers = len(cfg.size_tiers)
    n_runs = len(ARCHS) * (len(cfg.data_sizes) + n_tiers - 1) + 2 * len(cfg.emt_data_sizes) * cfg.emt
    bar = tqdm(total=n_runs, desc=f"force-field runs (seed {seed})", leave=False)
    r_max = potential.cfg.pair_cutoff  # the models see exactly the potential's interaction range
    runs = _sweep(cfg, train, val, ARCHS, cfg.data_sizes, cfg.size_tiers, cfg.steps, r_max, seed, bar)
    metrics: dict[str, float] = {}
    mid = cfg.size_tiers[n_tiers // 2]
    for arch in ARCHS:
        for k, v in _exponents(runs, arch, cfg.data_sizes, cfg.size_tiers).items():
            head, _, tail = k.partition("_")  # beta_ci_low → beta_<arch>_ci_low
            metrics[f"{head}_{arch}" + (f"_{tail}" if tail else "")] = v
        main = [r for r in runs if r["arch"] == arch and r["tier"] == mid]
        metrics[f"params_{arch}"] = main[0]["params"]
        metrics[f"loss_{arch}_dmax"] = next(r["loss"] for r in main if r["D"] == d_max)
        metrics[f"equiv_err_{arch}"] = next(r["equiv"]["energy_rel_error"] for r in main if "equiv" in r)
    # parameter parity per size tier (the architectures are matched to the ℓ = 2 model) and the size sweep's span
    spreads = []
    for tier in cfg.size_tiers:
        counts = [r["params"] for r in runs if r["tier"] == tier and r["D"] == d_max]
        spreads.append((max(counts) - min(counts)) / max(counts))
    metrics["params_spread"] = float(max(spreads))
    metrics["params_spread_mid"] = float(spreads[list(cfg.size_tiers).index(mid)])
    for arch in ARCHS:
        counts = [r["params"] for r in runs if r["arch"] == arch and r["D"] == d_max]
        metrics[f"params_range_{arch}"] = float(max(counts) / min(counts))
    for arch in ARCHS:  # the budget actually used: convergence, not a shared step count, ends each run
        mine = [r for r in runs if r["arch"] == arch]
        metrics[f"steps_used_{arch}"] = float(np.mean([r["steps_used"] for r in mine]))
        metrics[f"converged_frac_{arch}"] = float(np.mean([r["converged"] for r in mine]))
    ctx.log(", ".join(f"{a}: β={metrics[f'beta_{a}']:.3f} γ={metrics[f'gamma_{a}']:.3f}" for a in ARCHS))
    ctx.log(
        "budget: "
        + ", ".join(
            f"{a} {metrics[f'steps_used_{a}']:.0f} steps/run, {metrics[f'converged_frac_{a}']:.0%} converged"
            for a in ARCHS
        )
    )
    if not cfg.emt:
        bar.close()
        ctx.save_artifact(f"runs-seed{seed}", {"synthetic": runs, "emt": []})
        return metrics
    # real-potential check: EMT Cu3Au3, data sweep of u and l2 at the middle size (Å units, cutoff 5 Å)
    emt_max = max(cfg.emt_data_sizes)
    n_emt = emt_max + cfg.n_val
    emt = emt_cluster_dataset(n_emt, "Cu3Au3", seed=seed, n_replicas=min(48, n_emt), burn_in=cfg.emt_burn_in, stride=4)
    emt_scaler = TargetScaler(emt.subset(slice(0, emt_max)), 2)
    emt_train = emt_scaler.transform(emt.subset(slice(0, emt_max)))
    emt_val = emt_scaler.transform(emt.subset(slice(emt_max, None)))
    emt_runs = _sweep(cfg, emt_train, emt_val, ("u", "l2"), cfg.emt_data_sizes, (mid,), cfg.emt_steps, 5.0, seed, bar)
    bar.close()
    for arch in ("u", "l2"):
        metrics[f"beta_emt_{arch}"] = _exponents(emt_runs, arch, cfg.emt_data_sizes, (mid,))["beta"]
    ctx.log(f"EMT: β_u={metrics['beta_emt_u']:.3f}, β_l2={metrics['beta_emt_l2']:.3f}")
    ctx.save_artifact(f"runs-seed{seed}", {"synthetic": runs, "emt": emt_runs})
    return metrics


def plots(run_dir, per_seed, cfg):
    """Loss vs data (log-log, per architecture), the compute frontier, and loss vs parameters; first seed's runs."""
    import matplotlib.pyplot as plt

    files = sorted((run_dir / "artifacts").glob("runs-seed*.json"))
    if not files:
        return []
    runs = json.loads(files[0].read_text())
    mid = cfg.size_tiers[len(cfg.size_tiers) // 2]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    colors = {"u": "tab:gray", "l1": "tab:blue", "l2": "tab:red"}
    for arch in ARCHS:
        rs = sorted((r for r in runs["synthetic"] if r["arch"] == arch and r["tier"] == mid), key=lambda r: r["D"])
        betas = [m[f"beta_{arch}"] for m in per_seed.values()]
        axes[0].loglog(
            [r["D"] for r in rs],
            [r["loss"] for r in rs],
            "o-",
            color=colors[arch],
            label=f"{arch}: β = {np.mean(betas):.2f} ± {np.std(betas):.2f}",
        )
        pts = sorted((c["flops"], c["loss"]) for r in runs["synthetic"] if r["arch"] == arch for c in r["curve"])
        axes[1].loglog(*zip(*pts), ".", color=colors[arch], alpha=0.3)
        env, best = [], np.inf
        for c, l in pts:
            if l < best:
                env.append((c, l))
                best = l
        gammas = [m[f"gamma_{arch}"] for m in per_seed.values()]
        axes[1].loglog(*zip(*env), "-", color=colors[arch], label=f"{arch}: γ = {np.nanmean(gammas):.2f}")
        ns = sorted(
            (r["params"], r["loss"]) for r in runs["synthetic"] if r["arch"] == arch and r["D"] == max(cfg.data_sizes)
        )
        axes[2].loglog(*zip(*ns), "o-", color=colors[arch], label=arch)
    for arch in ("u", "l2") if runs["emt"] else ():
        rs = sorted((r for r in runs["emt"] if r["arch"] == arch), key=lambda r: r["D"])
        axes[3].loglog([r["D"] for r in rs], [r["loss"] for r in rs], "o-", color=colors[arch], label=arch)
    titles = ("loss vs data (analytic potential)", "compute frontier", "loss vs parameters (largest D)", "EMT Cu3Au3")
    for ax, title, xl in zip(axes, titles, ("training structures D", "training FLOPs", "parameters N", "D")):
        ax.set_title(title)
        ax.set_xlabel(xl)
        ax.set_ylabel("validation loss")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return [("scaling_laws", fig)]
