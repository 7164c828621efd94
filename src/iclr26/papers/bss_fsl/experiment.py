"""Fast Catch-Up, Late Switching: Optimal Batch Size Scheduling via Functional Scaling Laws (Wang et al., ICLR 2026).

Lab notebook. Three experiments, all at a fixed data budget:

1. Power-law linear regression (β = 2, so the easy/hard threshold is s = 1 − 1/β = 0.5) with an easy task (s = 1) and
   a hard task (s = 0.25). The expected risk of every schedule is computed *exactly* (second-moment recursion, Gaussian
   features) and checked by Monte-Carlo online SGD (the seeded part: same sample stream for every schedule). We compare
   constant-small, constant-large, early (ρ = 0.2) and late (ρ = 0.8) switches, scan the switch point, compute the
   FSL-optimal piecewise-constant schedule, and measure the catch-up after a switch.
2. The FSL (mode-sum form with the task's spectrum, no fitted constant) against the exact curves of switched runs;
   and a parametric FSL fitted on the two constant-batch curves, used to predict the switched runs.
3. A tiny next-token model (MLP on a 2-token context) on a synthetic language whose contexts and next tokens follow
   power laws, trained with AdamW at a constant learning rate; the population excess loss (KL to the true next-token
   law) of the four schedules at equal tokens.

The deterministic part (1–2 without Monte-Carlo) is the same for every seed; it is computed once per process.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np

from iclr26.core.claims import Check, Claim
from iclr26.core.threads import torch_threads
from iclr26.theory.fsl import PowerLawTask, PowerLawTaskConfig, fit_fsl
from iclr26.theory.fsl_schedule import BatchSizeSchedule, optimal_schedule, train_with_batch_schedule


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    # --- linear regression (FSL model) ---
    d: int = 1000
    beta: float = 2.0
    s_easy: float = 1.0
    s_hard: float = 0.25
    sigma2: float = 0.1
    data_budget: int = 2**16
    lr_scale: float = 0.5  # η = lr_scale / tr(Σ) (dossier: ≈ 0.5/Σλ_j)
    b_small: int = 4
    b_large: int = 64
    early: float = 0.2
    late: float = 0.8
    switch_grid: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0)
    opt_b_min: float = 1.0
    opt_b_max: float = 256.0
    opt_segments: int = 16
    phase_s: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5)
    mc_replicates: int = 2
    # --- tiny LM ---
    lm_vocab: int = 64
    lm_world_seed: int = 1234
    lm_tokens: int = 2**17
    lm_b_small: int = 32
    lm_b_large: int = 512
    lm_lr: float = 2e-3
    lm_emb: int = 32
    lm_hidden: int = 256
    lm_zipf: float = 1.1
    lm_eval_points: int = 24


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        d=100,
        data_budget=2**11,
        switch_grid=(0.0, 0.8, 1.0),
        opt_segments=4,
        phase_s=(0.25,),
        mc_replicates=1,
        lm_vocab=8,
        lm_tokens=2**11,
        lm_b_small=16,
        lm_b_large=128,
        lm_hidden=16,
        lm_emb=4,
        lm_eval_points=3,
    ),
    "quick": Cfg(),
    "full": Cfg(seeds=(0, 1, 2, 3, 4), d=2000, data_budget=2**18, mc_replicates=4, lm_tokens=2**19),
}

SCHEDULES = ("small", "large", "early", "late")
FSL_FROM_STEP = 100  # FSL is a continuous-time law: skip the first steps, where (1 − ηλ)² and e^{-2ηλ} differ

CLAIMS = [
    Claim(
        "hard-late-switch",
        "For a hard task (s < 1 − 1/β) the best switch from a small to a large batch is late (≥ 70 % of the data), and "
        "the late switch beats constant-small, constant-large and early-switch batches at equal data.",
        checks=(
            Check("hard_best_switch_fraction", ">", 0.69),
            Check("hard_mc_late", "<", "hard_mc_small"),
            Check("hard_mc_late", "<", "hard_mc_large"),
            Check("hard_mc_late", "<", "hard_mc_early"),
        ),
        paper="theory (power-law linear regression) and LLM pre-training up to 1.1B params / 1T tokens: late switch "
        "beats constant and early switch in all settings (exact losses not retrieved)",
    ),
    Claim(
        "optimal-shape",
        "The FSL-optimal batch schedule keeps increasing B throughout training for easy tasks (s ≥ 1 − 1/β), but keeps "
        "B small for most of training and switches late for hard tasks.",
        checks=(
            Check("easy_opt_increasing_frac", ">", 0.5),
            Check("easy_opt_frac_at_bmin", "<", 0.2),
            Check("hard_opt_frac_at_bmin", ">", 0.7),
        ),
        paper="theorem on optimal BSS under a data budget (phase transition at s = 1 − 1/β); constants not retrieved",
    ),
    Claim(
        "fast-catch-up",
        "After switching from small to large batches the loss quickly aligns with the constant-large trajectory (at "
        "equal steps), so the large batch can be deferred: the late switch ends within 2 % of the constant-large run "
        "at the same step count while using less than half its data (hard task).",
        checks=(
            Check("hard_catchup_gap_ratio", "<", 0.1),
            Check("hard_late_vs_large_same_steps_rel", "<", 0.02),
            Check("late_data_saving", ">", 0.5),
        ),
        paper="'sudden drop' then 'final merge' with the large-batch curve in LLM pre-training; catch-up speed set by "
        "task difficulty",
    ),
    Claim(
        "fsl-predicts-switch",
        "The FSL functional (signal term in intrinsic time + noise convolved with a forgetting kernel) predicts the "
        "loss curves of switched schedules (within 10 % on the whole curve, no constant fitted).",
        checks=(Check("easy_fsl_max_rel_err", "<", 0.1), Check("hard_fsl_max_rel_err", "<", 0.1)),
        paper="FSL fits and predicts LLM loss curves (Li et al. 2025a); accuracy for BSS not retrieved",
    ),
    Claim(
        "lm-late-switch",
        "On a language model trained at a fixed token budget, the late switch reaches a lower final loss than "
        "constant-small, constant-large and early-switch batches.",
        checks=(
            Check("lm_kl_late", "<", "lm_kl_small"),
            Check("lm_kl_late", "<", "lm_kl_large"),
            Check("lm_kl_late", "<", "lm_kl_early"),
        ),
        paper="Dense and MoE LLMs up to 1.1B params and 1T tokens: late switch beats all baselines (numbers not "
        "retrieved)",
    ),
]

METRICS = {
    **{
        f"{r}_exact_{n}": f"{r} task: exact expected excess risk after the data budget, schedule {n} (second-moment "
        "recursion)"
        for r in ("easy", "hard")
        for n in SCHEDULES
    },
    **{
        f"{r}_mc_{n}": f"{r} task: Monte-Carlo online SGD excess risk of the final iterate, schedule {n}, mean over "
        "replicates (same sample stream for all schedules)"
        for r in ("easy", "hard")
        for n in SCHEDULES
    },
    **{
        f"{r}_best_switch_fraction": f"{r} task: switch fraction ρ on the grid with the lowest exact final risk"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_best_two_stage_exact": f"{r} task: exact final risk of the best two-stage schedule on the grid"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_opt_exact": f"{r} task: exact final risk of the FSL-optimal piecewise schedule (rounded to integer "
        "batches)"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_opt_frac_at_bmin": f"{r} task: fraction of the data the FSL-optimal schedule spends at B ≤ 1.1·B_min"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_opt_increasing_frac": f"{r} task: fraction of segment boundaries where the FSL-optimal B grows by > 10 %"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_fsl_max_rel_err": f"{r} task: max |FSL/exact − 1| over log-spaced steps ≥ 100 of the early, mid (ρ=0.5) "
        "and late switch curves (mode-sum FSL with the task's spectrum, self-consistent noise level)"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_fitfsl_max_rel_err": f"{r} task: max |pred/exact − 1| of the final risk of the early/mid/late switch, "
        "parametric FSL fitted on the two constant-batch curves"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_catchup_gap_ratio": f"{r} task: (L_late − L_large)/(L_small − L_large) at the last step of the late "
        "switch vs at the switch, curves aligned by step"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_catchup_half_steps": f"{r} task: steps after the switch until the gap to constant-large halves"
        for r in ("easy", "hard")
    },
    **{
        f"{r}_late_vs_large_same_steps_rel": f"{r} task: L_late(K)/L_large(K) − 1 at the late switch's last step K"
        for r in ("easy", "hard")
    },
    "late_data_saving": "1 − D / (K · B_large): data the late switch saves vs constant-large at the same step K",
    **{
        f"lm_kl_{n}": f"tiny LM: population excess loss KL(p_true ‖ model) in nats/token after the token budget, "
        f"schedule {n}"
        for n in SCHEDULES
    },
}


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
        # switch-point scan
        scan = {rho: risk[rho][-1] for rho in cfg.switch_grid}
        best = min(scan, key=scan.get)
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
        metrics[f"{regime}_opt_exact"] = task.exact_risk(opt.schedule.steps(cfg.data_budget), lr)[-1]
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
    with torch_threads(1):  # tiny matmuls: one thread is faster and leaves the other core free
        p_ctx, p_next = power_law_language(cfg.lm_vocab, cfg.lm_zipf, cfg.lm_world_seed)
        out, curves = {}, {}
        sched = {
            "small": BatchSizeSchedule.constant(cfg.lm_b_small),
            "large": BatchSizeSchedule.constant(cfg.lm_b_large),
            "early": BatchSizeSchedule.two_stage(cfg.lm_b_small, cfg.lm_b_large, cfg.early),
            "late": BatchSizeSchedule.two_stage(cfg.lm_b_small, cfg.lm_b_large, cfg.late),
        }
        for name, sch in sched.items():
            steps = sch.steps(cfg.lm_tokens)
            eval_at = set(np.unique(np.geomspace(1, steps.size, cfg.lm_eval_points).astype(int)).tolist())
            curve = _lm_run(cfg, seed, steps, p_ctx, p_next, eval_at)
            out[f"lm_kl_{name}"] = curve[-1][2]
            curves[name] = curve
            ctx.log(f"LM {name}: {steps.size} steps, excess loss at the token budget {out[f'lm_kl_{name}']:.4f}")
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
