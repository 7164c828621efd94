"""The kernel-surrogate reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import time

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from tqdm.auto import tqdm

from iclr26.core.threads import torch_threads
from iclr26.theory.kernel_surrogate import (
    KernelSurrogate,
    KernelSurrogateConfig,
    LinearSurrogate,
    loo_scores,
    sample_subsets,
    second_order_linear_coefficients,
    select_subset,
)
from iclr26.theory.kernel_surrogate.gradient import (
    GradientEstimator,
    GradientEstimatorConfig,
    binary_logloss,
    finetune,
)
from iclr26.theory.kernel_surrogate.tasks import WeightedLogistic, make_tasks

from . import Cfg


def _loo_eval(name, predict, K, loo, out, prefix=""):
    pred = loo_scores(predict, K)
    out[f"{prefix}loo_pearson_{name}"] = float(pearsonr(pred, loo)[0])
    out[f"{prefix}loo_spearman_{name}"] = float(spearmanr(pred, loo)[0])
    return pred


def _krr(cfg: Cfg) -> KernelSurrogateConfig:
    """The kernel surrogate's hyper-parameters from the card's plain fields (other fields: the method's defaults)."""
    return KernelSurrogateConfig(kernel=cfg.krr_kernel, alpha=cfg.krr_alpha)


def _attribution(cfg: Cfg, seed: int, interacting: bool, ctx, prefix: str) -> tuple[dict, dict]:
    out: dict[str, float] = {}
    prob = make_tasks(seed, cfg.n_per_task, cfg.n_target, interacting=interacting)
    model = WeightedLogistic(prob, cfg.n_features, l2=cfg.l2, seed=seed)
    K = prob.n_tasks
    ones = np.ones(K)
    F1 = model.F(ones)
    S = sample_subsets(K, cfg.n_fit + cfg.n_heldout, cfg.p, seed)
    y = np.array([model.F(s) for s in tqdm(S, desc=f"{prefix or 'interacting '}subsets", leave=False)])
    loo = np.array([model.F(ones - np.eye(K)[k]) for k in range(K)]) - F1
    I = model.influence()  # ∂F/∂s_k at s = 1
    Sf, yf, Sh, yh = S[: cfg.n_fit], y[: cfg.n_fit], S[cfg.n_fit :], y[cfg.n_fit :]
    kernel = KernelSurrogate(_krr(cfg)).fit(Sf, yf)
    linear = LinearSurrogate().fit(Sf, yf)
    # negative control: the same kernel surrogate fitted on targets shuffled across the subsets (junk labels)
    rng = np.random.default_rng([seed, 31])
    shuffled = KernelSurrogate(_krr(cfg)).fit(Sf, rng.permutation(yf))

    def influence_model(Z):
        return F1 + (np.atleast_2d(Z) - 1.0) @ I

    preds = {}
    for name, predict in (("kernel", kernel.predict), ("linear", linear.predict), ("influence", influence_model)):
        preds[name] = _loo_eval(name, predict, K, loo, out, prefix)
        ph = predict(Sh)
        out[f"{prefix}heldout_spearman_{name}"] = float(spearmanr(ph, yh)[0])
        out[f"{prefix}heldout_r2_{name}"] = float(1 - np.mean((ph - yh) ** 2) / np.var(yh))
    r_sh = _loo_eval("shuffled", shuffled.predict, K, loo, out, prefix)
    r_lin, r_inf = out[f"{prefix}loo_pearson_linear"], out[f"{prefix}loo_pearson_influence"]
    out[f"{prefix}loo_pearson_best_baseline"] = max(r_lin, r_inf)
    out[f"{prefix}loo_shuffled_excess"] = min(out[f"{prefix}loo_pearson_shuffled"] - r_lin,
                                              out[f"{prefix}loo_pearson_shuffled"] - r_inf)  # fmt: skip
    preds["shuffled"] = r_sh
    beta = linear.coef_
    out[f"{prefix}grad_relerr"] = float(np.linalg.norm(beta - I) / np.linalg.norm(beta))
    art = {"roles": prob.roles, "loo_true": loo, "loo_pred": preds, "influence": I, "beta": beta}
    if interacting:
        picks = {}
        for name, predict in (("kernel", kernel.predict), ("linear", linear.predict), ("influence", influence_model),
                              ("shuffled", shuffled.predict)):  # fmt: skip
            picks[name] = select_subset(predict, K)
            out[f"select_loss_{name}"] = model.F(picks[name])
        out["select_loss_all"] = F1
        # headroom: the best exact loss found among the evaluated subsets and the single-task flips of each selection
        flips = [np.abs(picks[n] - e) for n in ("kernel", "linear", "influence") for e in np.eye(K)]
        found = [model.F(f) for f in flips if f.any()]
        out["select_loss_best_found"] = float(min(min(found), y.min(), *(out[f"select_loss_{n}"] for n in picks)))
        out["select_shuffled_excess"] = max(out["select_loss_shuffled"] - out["select_loss_linear"],
                                            out["select_loss_shuffled"] - out["select_loss_influence"])  # fmt: skip
        # Hessian of the exact F(s) at s = 1 by central differences of the exact gradient (weighted ERM).
        H = np.stack(
            [
                (model.influence(ones + cfg.fd_eps * e) - model.influence(ones - cfg.fd_eps * e)) / (2 * cfg.fd_eps)
                for e in np.eye(K)
            ],
            1,
        )
        H = 0.5 * (H + H.T)
        pred_beta = second_order_linear_coefficients(I, H, cfg.p)
        out["prop31_relerr"] = float(np.linalg.norm(beta - pred_beta) / np.linalg.norm(beta))
        # negative control: the same formula with H replaced by a random symmetric matrix of the same Frobenius norm
        R = rng.standard_normal((K, K))
        R = (R + R.T) * (np.linalg.norm(H) / np.linalg.norm(R + R.T))
        junk_beta = second_order_linear_coefficients(I, R, cfg.p)
        out["prop31_relerr_junk"] = float(np.linalg.norm(beta - junk_beta) / np.linalg.norm(beta))
        art["beta_second_order"] = pred_beta
    ctx.log(
        f"{prefix or 'interacting: '}LOO r kernel {out[prefix + 'loo_pearson_kernel']:.3f} linear "
        f"{out[prefix + 'loo_pearson_linear']:.3f} influence {out[prefix + 'loo_pearson_influence']:.3f}; "
        f"held-out R² linear {out[prefix + 'heldout_r2_linear']:.3f}"
    )
    return out, art


def _mlp(hidden: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(2, hidden),
        torch.nn.Tanh(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.Tanh(),
        torch.nn.Linear(hidden, 1),
    )


def _gradient_estimation(cfg: Cfg, seed: int, ctx) -> tuple[dict, dict]:
    out: dict[str, float] = {}
    prob = make_tasks(seed, cfg.n_per_task, cfg.n_target, interacting=True)
    K = prob.n_tasks
    torch.manual_seed(seed)
    X_all, y_all = np.concatenate(prob.X_tasks), np.concatenate(prob.y_tasks)
    # θ*: the "pretrained" model, trained on all tasks (tiny anchor to the init = weight decay).
    pre = finetune(_mlp(cfg.mlp_hidden), X_all, y_all, l2=1e-4, max_iter=cfg.pretrain_iters)
    Xt = torch.as_tensor(prob.X_target, dtype=torch.float32)
    yt = torch.as_tensor(prob.y_target, dtype=torch.float32)

    def target_loss(m):
        with torch.no_grad():
            return float(binary_logloss(m(Xt).reshape(-1), yt).mean())

    def fine_tuned(s, mu):
        keep = np.flatnonzero(s)
        Xs = np.concatenate([prob.X_tasks[k] for k in keep])
        ys = np.concatenate([prob.y_tasks[k] for k in keep])
        return target_loss(finetune(pre, Xs, ys, l2=mu))

    art = {}
    for tag, mu, n in (("", cfg.mu, cfg.n_est_subsets), ("_far", cfg.mu_far, cfg.n_est_far)):
        if n == 0:
            continue
        est = GradientEstimator(
            pre,
            prob.X_tasks,
            prob.y_tasks,
            prob.X_target,
            prob.y_target,
            GradientEstimatorConfig(proj_dim=cfg.proj_dim, l2=mu, seed=seed),
        )
        S = sample_subsets(K, n, cfg.p, seed + 1)
        t0 = time.perf_counter()
        F = np.array([fine_tuned(s, mu) for s in tqdm(S, desc=f"fine-tune μ={mu:g}", leave=False)])
        t_ft = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        Fh = np.array([est.estimate(s) for s in S])
        t_est = (time.perf_counter() - t0) / n
        F0 = est.base_loss()
        out[f"gradest_relerr{tag}"] = float(np.mean(np.abs(Fh - F) / F))
        out[f"gradest_base_relerr{tag}"] = float(np.mean(np.abs(F0 - F) / F))
        if not tag:  # negative control: the estimator with its per-example gradients shuffled across examples
            Fj = np.array([est.shuffled(seed).estimate(s) for s in S])
            junk = out["gradest_relerr_shuffled"] = float(np.mean(np.abs(Fj - F) / F))
            out["gradest_shuffled_excess"] = max(junk - 0.02, junk - out["gradest_base_relerr"])
        if not tag:
            out["gradest_unexplained"] = float(np.mean(np.abs(Fh - F)) / np.mean(np.abs(F0 - F)))
            out["gradest_spearman"] = float(spearmanr(Fh, F)[0]) if n > 2 else float("nan")
            out["gradest_speedup"] = t_ft / t_est
            art = {"finetuned": F, "estimated": Fh, "pretrained": F0}
            # Full pipeline: surrogates fitted on estimated F̂; LOO checked against fine-tuned LOO.
            S2 = sample_subsets(K, cfg.n_e2e_subsets, cfg.p, seed + 2)
            F2 = np.array([est.estimate(s) for s in tqdm(S2, desc="estimates", leave=False)])
            ones = np.ones(K)
            F1 = fine_tuned(ones, mu)
            loo = np.array([fine_tuned(ones - np.eye(K)[k], mu) for k in range(K)]) - F1
            for name, sur in (("kernel", KernelSurrogate(_krr(cfg))), ("linear", LinearSurrogate())):
                pred = loo_scores(sur.fit(S2, F2).predict, K)
                out[f"e2e_loo_pearson_{name}"] = float(pearsonr(pred, loo)[0])
    ctx.log(
        f"gradient estimation: rel. err {out['gradest_relerr']:.4f} (no-update {out['gradest_base_relerr']:.4f}); "
        f"far: {out.get('gradest_relerr_far', np.nan):.4f} ({out.get('gradest_base_relerr_far', np.nan):.4f})"
    )
    return out, art


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    # small dense problems: one BLAS thread is fastest on a shared 2-core machine
    with torch_threads():
        t0 = time.perf_counter()
        metrics, art = _attribution(cfg, seed, True, ctx, "")
        if cfg.control:
            ctrl, art_ctrl = _attribution(cfg, seed, False, ctx, "ctrl_")
            metrics.update(ctrl)
            art["control"] = art_ctrl
        t1 = time.perf_counter()
        gm, art_g = _gradient_estimation(cfg, seed, ctx)
        metrics.update(gm)
        art["gradient_estimation"] = art_g
        ctx.log(f"time: attribution {t1 - t0:.0f} s, gradient estimation {time.perf_counter() - t1:.0f} s")
    ctx.save_artifact(f"seed-{seed}", _plain(art))
    return metrics


def _plain(obj):
    """numpy arrays → lists, recursively (artifacts are JSON)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    figs = []
    fig, ax = plt.subplots(figsize=(6, 3.5))
    methods = ("kernel", "linear", "influence")
    for i, prefix in enumerate(("", "ctrl_")):
        vals = [
            [m[f"{prefix}loo_pearson_{k}"] for m in per_seed.values() if f"{prefix}loo_pearson_{k}" in m]
            for k in methods
        ]
        if not all(vals):
            continue
        ax.bar(
            np.arange(3) + 0.4 * i,
            [np.mean(v) for v in vals],
            0.38,
            yerr=[np.std(v) for v in vals],
            label="interacting" if not prefix else "control (near additive)",
        )
    ax.set_xticks(np.arange(3) + 0.2, methods)
    ax.set_ylabel("Pearson r with exact LOO")
    ax.legend()
    ax.set_title("Task attribution vs leave-one-out")
    figs.append(("loo_correlation", fig))
    arts = sorted((run_dir / "artifacts").glob("seed-*.json"))
    if arts:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
        for path in arts:
            a = json.loads(path.read_text())
            g = a.get("gradient_estimation") or {}
            if g:
                axes[0].scatter(g["finetuned"], g["estimated"], s=12, label=path.stem)
            axes[1].scatter(a["loo_true"], a["loo_pred"]["kernel"], s=12, marker="o", c="C0")
            axes[1].scatter(a["loo_true"], a["loo_pred"]["linear"], s=12, marker="x", c="C1")
        lim = axes[0].get_xlim()
        axes[0].plot(lim, lim, "k--", lw=0.8)
        axes[0].set(
            xlabel="fine-tuned target loss F(s)", ylabel="first-order estimate F̂(s)", title="Gradient-based estimation"
        )
        axes[0].legend(fontsize=7)
        axes[1].axline((0, 0), slope=1, color="k", lw=0.8, ls="--")
        axes[1].set(xlabel="exact LOO effect", ylabel="surrogate LOO (o kernel, x linear)", title="LOO attribution")
        fig.tight_layout()
        figs.append(("estimates_and_loo", fig))
    return figs
