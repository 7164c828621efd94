"""Scaling laws and symmetry — Ngo & Ravanbakhsh, "Scaling Laws and Symmetry, Evidence from Neural Force Fields"
(ICLR 2026, https://arxiv.org/abs/2510.09768).

Lab notebook. The paper: the loss of learned interatomic potentials follows power laws in data, parameters and
compute whose *exponents* depend on the architecture; equivariant models have larger exponents than unconstrained
ones, and higher tensor order ℓ larger still, so the gaps widen with scale.

Our setting: 6-atom, 2-species clusters whose energies and forces come from an analytic Morse + Stillinger–Weber
potential (unlimited exact data, uniformly random orientations), and, as a real-potential check, Cu₃Au₃ clusters
labelled by ASE's EMT. Three architectures at matched parameter counts: an unconstrained message-passing network on
raw Cartesian edge vectors (`u`) and e3nn tensor-field networks with ℓ_max = 1 (`l1`) and ℓ_max = 2 (`l2`). All
train on energies + forces with the same steps and batch size (LR chosen once per family, see the docs).

A run's loss is its best validation loss over log-spaced checkpoints (early stopping: at small D the fixed step budget
overfits). Per seed we fit, per architecture: β from L(D) (data sweep at the middle model size), α from L(N) (size
sweep at the largest D), γ from the lower envelope of L against training FLOPs over every run and checkpoint; β with a
95 % interval from the fit covariance. The claims compare exponents across architectures, paired by seed.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np
import torch

from iclr26.core.claims import Check, Claim
from iclr26.core.threads import torch_threads
from iclr26.science.forcefield_scaling import fit_compute_frontier, fit_power_law
from iclr26.science.forcefield_training import TargetScaler, TrainConfig, equivariance_error, train_forcefield
from iclr26.science.forcefields import (
    EquivariantConfig,
    EquivariantForceField,
    UnconstrainedConfig,
    UnconstrainedForceField,
    match_parameters,
)
from iclr26.science.potentials import ManyBodyPotential, emt_cluster_dataset, sample_clusters


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...]
    n_atoms: int
    temperature: float
    data_sizes: tuple[int, ...]
    n_val: int
    size_tiers: tuple[int, ...]  # ℓ=2 channel counts that set the parameter budgets; the middle one runs the D sweep
    steps: int
    batch_size: int
    lr_equivariant: float
    lr_unconstrained: float
    n_evals: int
    emt_data_sizes: tuple[int, ...]
    emt_steps: int
    emt_burn_in: int


_COMMON = dict(n_atoms=6, temperature=0.15, batch_size=16, lr_equivariant=3e-2, lr_unconstrained=1e-2)
CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        **{**_COMMON, "n_atoms": 4},
        data_sizes=(8, 12, 16),
        n_val=16,
        size_tiers=(2, 3),
        steps=4,
        n_evals=2,
        emt_data_sizes=(8, 12, 16),
        emt_steps=3,
        emt_burn_in=10,
    ),
    "quick": Cfg(
        seeds=(0, 1, 2),
        **_COMMON,
        data_sizes=(16, 32, 64, 128),
        n_val=96,
        size_tiers=(4, 8, 12),
        steps=200,
        n_evals=5,
        emt_data_sizes=(16, 32, 64, 128),
        emt_steps=120,
        emt_burn_in=60,
    ),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        **_COMMON,
        data_sizes=(32, 64, 128, 256, 512, 1024),
        n_val=512,
        size_tiers=(4, 8, 16, 24),
        steps=1000,
        n_evals=8,
        emt_data_sizes=(32, 64, 128, 256, 512),
        emt_steps=600,
        emt_burn_in=200,
    ),
}

ARCHS = ("u", "l1", "l2")  # unconstrained, e3nn ℓ_max = 1, e3nn ℓ_max = 2
_LMAX = {"l1": 1, "l2": 2}
_PAPER = (
    "DFT-labelled molecular/materials data, models up to GPU scale; equivariant exponents larger than unconstrained "
    "ones and growing with tensor order ℓ (Figure 1: unconstrained → low-order → high-order, increasing slope); "
    "exponent values not retrieved"
)

CLAIMS = [
    Claim(
        "equivariant-data-exponent",
        "Equivariant models have a larger data-scaling exponent β than an unconstrained model of the same size.",
        checks=(Check("beta_l1", ">", "beta_u"), Check("beta_l2", ">", "beta_u")),
        paper=_PAPER,
    ),
    Claim(
        "higher-order-data-exponent",
        "A higher tensor order (ℓ_max = 2 vs 1) gives a larger data-scaling exponent β.",
        checks=(Check("beta_l2", ">", "beta_l1"),),
        paper=_PAPER,
    ),
    Claim(
        "compute-exponent-ordering",
        "The compute-frontier exponent γ is ordered unconstrained < ℓ_max = 1 < ℓ_max = 2 (gaps widen with compute).",
        checks=(Check("gamma_l1", ">", "gamma_u"), Check("gamma_l2", ">", "gamma_l1")),
        paper=_PAPER,
    ),
    Claim(
        "equivariant-parameter-exponent",
        "Equivariant models have a larger parameter-scaling exponent α than the unconstrained model.",
        checks=(Check("alpha_l1", ">", "alpha_u"), Check("alpha_l2", ">", "alpha_u")),
        paper=_PAPER,
    ),
    Claim(
        "real-potential-data-exponent",
        "On a physical many-body potential (EMT, Cu₃Au₃ clusters) the ℓ_max = 2 model has the larger β.",
        checks=(Check("beta_emt_l2", ">", "beta_emt_u"),),
        paper=_PAPER,
    ),
]

METRICS = {
    **{
        f"beta_{a}": f"data exponent β of {a}: −slope of log best val loss vs log D (middle size), least squares"
        for a in ARCHS
    },
    **{f"beta_{a}_ci_low": f"lower end of the 95 % t-interval of beta_{a} from the fit covariance" for a in ARCHS},
    **{f"beta_{a}_ci_high": f"upper end of the 95 % t-interval of beta_{a}" for a in ARCHS},
    **{f"alpha_{a}": f"parameter exponent α of {a}: −slope of log val loss vs log N at the largest D" for a in ARCHS},
    **{
        f"gamma_{a}": f"compute exponent γ of {a}: −slope on the lower envelope of val loss vs training FLOPs"
        for a in ARCHS
    },
    **{f"params_{a}": f"parameters of the middle-size {a} model" for a in ARCHS},
    **{
        f"loss_{a}_dmax": f"best val loss (λ_E·MSE(E/n) + λ_F·MSE(F), scaled units) of {a} at the largest D"
        for a in ARCHS
    },
    **{f"equiv_err_{a}": f"max relative change of E under random rotations, trained middle-size {a}" for a in ARCHS},
    **{f"beta_emt_{a}": f"data exponent β of {a} on EMT Cu3Au3 clusters (middle size)" for a in ("u", "l2")},
}


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
        lr = cfg.lr_unconstrained if arch == "u" else cfg.lr_equivariant
        tc = TrainConfig(steps=steps, batch_size=cfg.batch_size, lr=lr, n_evals=cfg.n_evals, seed=seed * 1000 + k)
        res = train_forcefield(model, data.subset(slice(0, d)), val, tc)
        rec = {
            "arch": arch,
            "D": d,
            "tier": tier,
            "params": res["params"],
            "loss": res["best_loss"],
            "curve": res["curve"],
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
    with torch_threads(1):  # these models are tiny: intra-op threads only add overhead
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
    n_runs = len(ARCHS) * (len(cfg.data_sizes) + n_tiers - 1) + 2 * len(cfg.emt_data_sizes)
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
    ctx.log(", ".join(f"{a}: β={metrics[f'beta_{a}']:.3f} γ={metrics[f'gamma_{a}']:.3f}" for a in ARCHS))
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
    for arch in ("u", "l2"):
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
