"""The bss-fsl reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import functools
import json

import numpy as np

from iclr26.core.threads import torch_threads
from iclr26.theory.bss_fsl import PowerLawTask, PowerLawTaskConfig, fit_fsl
from iclr26.theory.bss_fsl.schedule import BatchSizeSchedule, optimal_schedule, train_with_batch_schedule

from . import FSL_FROM_STEP, SCHEDULES, Cfg


# --------------------------------------------------------------------------------------------------------------------
# linear regression
def _two_stage(cfg: Cfg, rho: float) -> np.ndarray:
    return BatchSizeSchedule.two_stage(cfg.b_small, cfg.b_large, rho).steps(cfg.data_budget)


def _schedules(cfg: Cfg) -> dict[str, np.ndarray]:
    return {
        "small": _two_stage(cfg, 1.0),
        "large": _two_stage(cfg, 0.0),
        "early": _two_stage(cfg, cfg.early),
        "late": _two_stage(cfg, cfg.late),
    }


def _logidx(n: int, k: int = 120) -> np.ndarray:
    return np.unique(np.concatenate([[0], np.geomspace(1, n, k).astype(int)]))


def _task(cfg: Cfg, s: float) -> PowerLawTask:
    return PowerLawTask(PowerLawTaskConfig(d=cfg.d, beta=cfg.beta, s=s, sigma2=cfg.sigma2))


def _opt_shape(sizes, b_min: float) -> tuple[float, float]:
    sizes = np.asarray(sizes)
    at_min = float(np.mean(sizes <= 1.1 * b_min))
    increasing = float(np.mean(sizes[1:] > 1.1 * sizes[:-1])) if sizes.size > 1 else 0.0
    return at_min, increasing


@functools.lru_cache(maxsize=4)
def _exact_part(cfg: Cfg) -> tuple[dict, dict]:
    """Everything deterministic: exact risks, switch scan, FSL optimum and accuracy, catch-up."""
    metrics, curves = {}, {}
    rhos = sorted({*cfg.switch_grid, 0.0, 1.0, cfg.early, cfg.late, 0.5})
    for regime, s in (("easy", cfg.s_easy), ("hard", cfg.s_hard)):
        task = _task(cfg, s)
        lr = cfg.lr_scale / task.lam.sum()
        cur = curves[regime] = {"lr": lr}
        steps = {rho: _two_stage(cfg, rho) for rho in rhos}
        risk = {rho: task.exact_risk(steps[rho], lr) for rho in rhos}  # ρ = 1: constant small, ρ = 0: constant large
        for name, rho in (("small", 1.0), ("large", 0.0), ("early", cfg.early), ("late", cfg.late)):
            metrics[f"{regime}_exact_{name}"] = risk[rho][-1]
            idx = _logidx(steps[rho].size)
            cur[name] = {
                "step": idx.tolist(),
                "data": np.concatenate([[0], np.cumsum(steps[rho])])[idx].tolist(),
                "risk": risk[rho][idx].tolist(),
            }
        for name in ("small", "large", "early"):
            metrics[f"{regime}_exact_late_rel_{name}"] = (
                metrics[f"{regime}_exact_late"] / metrics[f"{regime}_exact_{name}"] - 1
            )
        # switch-point scan
        scan = {rho: risk[rho][-1] for rho in cfg.switch_grid}
        best = min(scan, key=scan.get)
        metrics[f"{regime}_switch_scan_spread"] = (max(scan.values()) - min(scan.values())) / min(scan.values())
        metrics[f"{regime}_best_switch_fraction"] = best
        metrics[f"{regime}_best_two_stage_exact"] = scan[best]
        cur["scan"] = {str(k): v for k, v in scan.items()}
        # FSL (mode-sum, no fitted constant) vs exact on switched curves, past the first FSL_FROM_STEP steps
        errs = []
        for rho in (cfg.early, 0.5, cfg.late):
            idx = _logidx(steps[rho].size, 60)
            idx = idx[idx >= FSL_FROM_STEP]
            errs.append(np.max(np.abs(task.fsl_risk(steps[rho], lr)[idx] / risk[rho][idx] - 1)))
        metrics[f"{regime}_fsl_max_rel_err"] = float(max(errs))
        # FSL-optimal piecewise schedule
        opt = optimal_schedule(task, cfg.data_budget, lr, cfg.opt_b_min, cfg.opt_b_max, cfg.opt_segments)
        at_min, inc = _opt_shape(opt.schedule.sizes, cfg.opt_b_min)
        metrics[f"{regime}_opt_frac_at_bmin"] = at_min
        metrics[f"{regime}_opt_increasing_frac"] = inc
        opt_steps = opt.schedule.steps(cfg.data_budget)
        metrics[f"{regime}_opt_exact"] = task.exact_risk(opt_steps, lr)[-1]
        metrics[f"{regime}_opt_rel_best_two_stage"] = metrics[f"{regime}_opt_exact"] / scan[best] - 1
        # budget: the samples every compared schedule consumes (the claims are at a fixed data budget)
        used = [float(steps[rho].sum()) for rho in (1.0, 0.0, cfg.early, cfg.late)] + [float(opt_steps.sum())]
        metrics[f"{regime}_budget_spread"] = (max(used) - min(used)) / max(used)
        cur["opt_sizes"] = list(opt.schedule.sizes)
        # parametric FSL fitted on the two constant-batch curves, predicting the switched runs' final risk
        fit_curves = []
        for rho in (1.0, 0.0):
            idx = _logidx(steps[rho].size, 16)[1:]
            fit_curves.append((steps[rho], lr, idx, risk[rho][idx]))
        fitted = fit_fsl(fit_curves, beta=cfg.beta, max_nfev=60, starts=(0.0,))
        errs = [
            abs(fitted.predict(steps[rho], lr, at=[steps[rho].size])[0] / risk[rho][-1] - 1)
            for rho in (cfg.early, 0.5, cfg.late)
        ]
        metrics[f"{regime}_fitfsl_max_rel_err"] = float(max(errs))
        # negative control: a predictor with no dynamics, the geometric mean of the two constant-batch final risks
        naive = float(np.sqrt(risk[1.0][-1] * risk[0.0][-1]))
        metrics[f"{regime}_naive_max_rel_err"] = max(
            abs(naive / risk[rho][-1] - 1) for rho in (cfg.early, 0.5, cfg.late)
        )
        # catch-up: late switch vs constant-large and constant-small after the same number of steps
        late, r_late = steps[cfg.late], risk[cfg.late]
        k_switch = int(np.sum(np.cumsum(late) <= cfg.late * cfg.data_budget))
        n = late.size
        r_large = task.exact_risk(np.full(n, cfg.b_large), lr)  # constant-large run extended past its data budget
        r_small = risk[1.0]
        if r_small.size < n + 1:
            r_small = task.exact_risk(np.full(n, cfg.b_small), lr)
        gap = r_late[k_switch:] - r_large[k_switch:]
        metrics[f"{regime}_catchup_gap_ratio"] = gap[-1] / gap[0]
        metrics[f"{regime}_catchup_gap0_rel"] = gap[0] / r_large[k_switch]
        metrics[f"{regime}_catchup_half_steps"] = float(np.argmax(gap <= 0.5 * gap[0]))
        metrics[f"{regime}_late_vs_large_same_steps_rel"] = r_late[-1] / r_large[-1] - 1
        metrics["late_data_saving"] = 1 - cfg.data_budget / (n * cfg.b_large)
        lo = max(0, k_switch - (n - k_switch) * 3)
        w = np.arange(lo, n + 1)
        cur["catchup"] = {
            "k_switch": k_switch,
            "step": w.tolist(),
            "late": r_late[w].tolist(),
            "large": r_large[w].tolist(),
            "small": r_small[w].tolist(),
        }
    # phase diagram: FSL-optimal schedules across the source exponent
    curves["phase"] = {}
    for s in cfg.phase_s:
        task = _task(cfg, s)
        lr = cfg.lr_scale / task.lam.sum()
        opt = optimal_schedule(task, cfg.data_budget, lr, cfg.opt_b_min, cfg.opt_b_max, cfg.opt_segments)
        curves["phase"][str(s)] = list(opt.schedule.sizes)
    return {k: float(v) for k, v in metrics.items()}, curves


def _monte_carlo(cfg: Cfg, seed: int) -> dict[str, float]:
    out = {}
    for regime, s in (("easy", cfg.s_easy), ("hard", cfg.s_hard)):
        task = _task(cfg, s)
        lr = cfg.lr_scale / task.lam.sum()
        for name, steps in _schedules(cfg).items():
            finals = []
            for rep in range(cfg.mc_replicates):
                # common random numbers: the same sample stream for every schedule (only its batching differs)
                stream = np.random.default_rng([seed, rep, 0 if regime == "easy" else 1])
                finals.append(task.sgd_risk(steps, lr, stream, record_every=steps.size)[-1])
            out[f"{regime}_mc_{name}"] = float(np.mean(finals))
    return out


# --------------------------------------------------------------------------------------------------------------------
# tiny LM on a power-law language
def power_law_language(vocab: int, zipf: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Contexts (pairs of tokens) with Zipf frequencies; next token = ½ global Zipf + ½ context-specific Zipf.

    Returns p(context) over vocab² contexts and p(next | context) as a (vocab², vocab) table.
    """
    rng = np.random.default_rng(seed)
    n_ctx = vocab * vocab
    p_ctx = np.arange(1, n_ctx + 1.0) ** (-zipf)
    p_ctx = (p_ctx / p_ctx.sum())[rng.permutation(n_ctx)]
    z = np.arange(1, vocab + 1.0) ** (-zipf)
    z /= z.sum()
    cond = np.stack([z[rng.permutation(vocab)] for _ in range(n_ctx)])
    return p_ctx, 0.5 * z[rng.permutation(vocab)] + 0.5 * cond


def _lm_run(cfg: Cfg, seed: int, steps: np.ndarray, p_ctx, p_next, eval_at: set[int]) -> list[tuple[int, int, float]]:
    import torch
    import torch.nn.functional as F

    v = cfg.lm_vocab
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Embedding(v, cfg.lm_emb),
        torch.nn.Flatten(1),
        torch.nn.Linear(2 * cfg.lm_emb, cfg.lm_hidden),
        torch.nn.GELU(),
        torch.nn.Linear(cfg.lm_hidden, v),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lm_lr, weight_decay=0.0)
    # the token stream: same for every schedule of this seed (only the batching differs)
    n = int(steps.sum())
    ctx = np.random.default_rng([seed, 7]).choice(v * v, size=n, p=p_ctx)
    # inverse-CDF sampling of the next token, all contexts at once: row c of the CDF is shifted by c
    cdf = (np.cumsum(p_next, 1) + np.arange(v * v)[:, None]).ravel()
    u = np.random.default_rng([seed, 8]).random(n)
    nxt = np.minimum(np.searchsorted(cdf, ctx + u, side="right") - ctx * v, v - 1)
    x = torch.as_tensor(np.stack([ctx // v, ctx % v], 1))
    y = torch.as_tensor(nxt)
    all_ctx = torch.as_tensor(np.stack([np.arange(v * v) // v, np.arange(v * v) % v], 1))
    log_p = torch.as_tensor(np.log(p_next), dtype=torch.float32)
    w = torch.as_tensor(p_ctx, dtype=torch.float32)

    def excess_loss() -> float:  # population KL(p ‖ q) = E_ctx Σ_y p log p/q: exact, no validation-sample noise
        with torch.no_grad():
            log_q = torch.log_softmax(model(all_ctx), 1)
            return float((w * (log_p.exp() * (log_p - log_q)).sum(1)).sum())

    curve = [(0, 0, excess_loss())]

    def on_step(k, seen):
        if k in eval_at or k == steps.size:
            curve.append((k, seen, excess_loss()))

    train_with_batch_schedule(
        model, opt, lambda a, b: F.cross_entropy(model(x[a : a + b]), y[a : a + b]), steps, on_step=on_step
    )
    return curve


def _lm_part(cfg: Cfg, seed: int, ctx) -> tuple[dict, dict]:
    with torch_threads():  # ICLR26_THREADS, default 1: tiny matmuls gain nothing from a second thread
        p_ctx, p_next = power_law_language(cfg.lm_vocab, cfg.lm_zipf, cfg.lm_world_seed)
        out, curves = {}, {}
        sched = {
            "small": BatchSizeSchedule.constant(cfg.lm_b_small),
            "large": BatchSizeSchedule.constant(cfg.lm_b_large),
            "early": BatchSizeSchedule.two_stage(cfg.lm_b_small, cfg.lm_b_large, cfg.early),
            "late": BatchSizeSchedule.two_stage(cfg.lm_b_small, cfg.lm_b_large, cfg.late),
            # negative control: the late switch reversed (large batches first, small ones for the last 1 − ρ)
            "reversed": BatchSizeSchedule((cfg.lm_b_large, cfg.lm_b_small), (cfg.late,)),
        }
        for name, sch in sched.items():
            steps = sch.steps(cfg.lm_tokens)
            eval_at = set(np.unique(np.geomspace(1, steps.size, cfg.lm_eval_points).astype(int)).tolist())
            curve = _lm_run(cfg, seed, steps, p_ctx, p_next, eval_at)
            out[f"lm_kl_{name}"] = curve[-1][2]
            out[f"lm_tokens_{name}"] = float(curve[-1][1])  # tokens actually consumed (the budget)
            curves[name] = curve
            ctx.log(f"LM {name}: {steps.size} steps, excess loss at the token budget {out[f'lm_kl_{name}']:.4f}")
        used = [out[f"lm_tokens_{n}"] for n in sched]
        out["lm_budget_spread"] = (max(used) - min(used)) / max(used)
        kl = [out[f"lm_kl_{n}"] for n in SCHEDULES]
        out["lm_kl_spread"] = max(kl) - min(kl)
        out["lm_reversed_excess"] = max(out["lm_kl_reversed"] - out[f"lm_kl_{n}"] for n in ("small", "large", "early"))
        return out, curves


# --------------------------------------------------------------------------------------------------------------------
def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    metrics, curves = _exact_part(cfg)
    metrics = dict(metrics)
    ctx.log(
        f"hard task: best switch ρ = {metrics['hard_best_switch_fraction']}, easy: "
        f"{metrics['easy_best_switch_fraction']}; FSL-optimal schedule at B_min for "
        f"{metrics['hard_opt_frac_at_bmin']:.2f} (hard) / {metrics['easy_opt_frac_at_bmin']:.2f} (easy) of data"
    )
    metrics.update(_monte_carlo(cfg, seed))
    lm, lm_curves = _lm_part(cfg, seed, ctx)
    metrics.update(lm)
    ctx.save_artifact(f"curves-seed{seed}", {"linear": curves, "lm": lm_curves})
    return metrics


def plots(run_dir, per_seed, cfg):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = sorted((run_dir / "artifacts").glob("curves-seed*.json"))
    if not files:
        return []
    art = json.loads(files[0].read_text())
    lin, lm = art["linear"], art["lm"]
    figs = []
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, regime in zip(axes[:2], ("easy", "hard")):
        for name in SCHEDULES:
            c = lin[regime][name]
            ax.loglog(np.maximum(c["data"], 1), c["risk"], label=name)
        ax.set(title=f"{regime} task: exact risk vs data", xlabel="samples", ylabel="excess risk")
        ax.legend()
    for name in SCHEDULES:
        c = lm[name]
        ax = axes[2]
        ax.loglog([max(p[1], 1) for p in c], [p[2] for p in c], label=name, marker=".")
    axes[2].set(
        title=f"tiny LM: excess loss vs tokens (seed {files[0].stem[11:]})", xlabel="tokens", ylabel="KL (nats/tok)"
    )
    axes[2].legend()
    figs.append(("loss_vs_data", fig))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for s, sizes in lin["phase"].items():
        p = len(sizes)
        axes[0].step(np.arange(p + 1) / p, [sizes[0], *sizes], where="pre", label=f"s = {s}")
    axes[0].set(
        yscale="log",
        title=f"FSL-optimal batch schedule (β = {cfg.beta}; threshold s = {1 - 1 / cfg.beta:g})",
        xlabel="fraction of data consumed",
        ylabel="batch size",
    )
    axes[0].legend()
    c = lin["hard"]["catchup"]
    for name in ("small", "large", "late"):
        axes[1].plot(c["step"], c[name], label=name)
    axes[1].axvline(c["k_switch"], color="gray", ls=":")
    axes[1].set(yscale="log", title="hard task: fast catch-up after the switch", xlabel="step", ylabel="excess risk")
    axes[1].legend()
    figs.append(("optimal_schedules_and_catchup", fig))
    return figs
