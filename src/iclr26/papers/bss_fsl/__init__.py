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

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
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

VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 5,  # measured: 4.0 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 150,  # VERSION 2: 111 s wall, 5 seeds; VERSION 3 adds one LM run per seed (the reversed schedule)
    "full": 2400,  # an estimate, not measured: 4× the data budget and LM tokens, d = 2000, 5 seeds
}
ACCEPTS_MODEL = False
MODEL_NOTE = (
    "the reproduction is linear regression under the FSL model and a tiny word-level LM trained from scratch with "
    "each batch-size schedule; there is no pretrained model to replace"
)

SCHEDULES = ("small", "large", "early", "late")
FSL_FROM_STEP = 100  # FSL is a continuous-time law: skip the first steps, where (1 − ηλ)² and e^{-2ηλ} differ

_DET = dict(deterministic=True)  # exact risks and FSL quantities do not depend on the seed: decided on their value

CLAIMS = [
    # --- gates -------------------------------------------------------------------------------------------------
    Claim(
        "data-budget",
        "Budget parity: every compared schedule (constant small and large, early and late switch, the FSL optimum; "
        "and the LM's five schedules) consumes the same number of samples (spread below 10 %)",
        checks=tuple(Check(f"{r}_budget_spread", "<", 0.11, 0.01, **_DET) for r in ("easy", "hard", "lm")),
        role="budget",
    ),
    Claim(
        "switch-matters",
        "Non-degenerate: on the hard task the switch point changes the exact final risk by more than 2 % across the "
        "scanned switch fractions",
        checks=(Check("hard_switch_scan_spread", ">", 0.025, 0.005, **_DET),),
        role="non-degenerate",
    ),
    Claim(
        "easy-task-control",
        "Negative control (the phase transition): on the easy task (s ≥ 1 − 1/β) the best switch is not late "
        "(below 70 % of the data)",
        checks=(fails(Check("easy_best_switch_fraction", ">", 0.65, 0.05, **_DET)),),
        role="negative control",
    ),
    Claim(
        "optimum-beats-two-stage",
        "Positive control: the FSL-optimal schedule, scored by the exact risk, is better than every scanned two-stage "
        "schedule on both tasks (by more than 2 %), so the optimiser found an optimum worth describing",
        checks=tuple(Check(f"{r}_opt_rel_best_two_stage", "<", 0.0, 0.02, **_DET) for r in ("easy", "hard")),
        role="positive control",
    ),
    Claim(
        "gap-at-switch",
        "Non-degenerate: at the late switch the hard task's loss is more than 10 % above the constant-large run's, "
        "so there is a gap to catch up",
        checks=(Check("hard_catchup_gap0_rel", ">", 0.11, 0.01, **_DET),),
        role="non-degenerate",
    ),
    Claim(
        "fsl-form-can-predict",
        "Positive control: the mode-sum FSL with the task's true spectrum predicts the switched runs within 10 % "
        "(the FSL form itself can do what the fitted FSL is asked to do)",
        checks=tuple(Check(f"{r}_fsl_max_rel_err", "<", 0.11, 0.01, **_DET) for r in ("easy", "hard")),
        role="positive control",
    ),
    Claim(
        "naive-predictor-control",
        "Negative control: a predictor without dynamics (the geometric mean of the two constant-batch final risks) "
        "does not predict the switched runs within 10 %",
        checks=tuple(fails(Check(f"{r}_naive_max_rel_err", "<", 0.11, 0.01, **_DET)) for r in ("easy", "hard")),
        role="negative control",
    ),
    Claim(
        "lm-batch-matters",
        "Non-degenerate: on the tiny LM the four schedules' final excess losses span more than 0.005 nats/token "
        "(about three times the per-seed spread of one schedule)",
        checks=(Check("lm_kl_spread", ">", 0.005),),
        role="non-degenerate",
    ),
    Claim(
        "lm-reversed-control",
        "Negative control: the late switch reversed (large batches first, small ones last) does not beat "
        "constant-small, constant-large and the early switch",
        checks=(fails(Check("lm_reversed_excess", "<", 0.0)),),
        role="negative control",
    ),
    # --- the paper's claims --------------------------------------------------------------------------------------
    Claim(
        "hard-late-switch",
        "For a hard task (s < 1 − 1/β) the best switch from a small to a large batch is late (≥ 70 % of the data), and "
        "the late switch beats constant-small, constant-large and early-switch batches at equal data (exact expected "
        "risk, by at least 2 % of the other schedule's risk).",
        checks=(
            Check("hard_best_switch_fraction", ">", 0.65, 0.05, **_DET),
            Check("hard_exact_late_rel_small", "<", 0.0, 0.02, **_DET),
            Check("hard_exact_late_rel_large", "<", 0.0, 0.02, **_DET),
            Check("hard_exact_late_rel_early", "<", 0.0, 0.02, **_DET),
        ),
        paper="theory (power-law linear regression) and LLM pre-training up to 1.1B params / 1T tokens: late switch "
        "beats constant and early switch in all settings (exact losses not retrieved)",
        requires=("data-budget", "switch-matters", "easy-task-control"),
    ),
    Claim(
        "optimal-shape",
        "The FSL-optimal batch schedule keeps increasing B throughout training for easy tasks (s ≥ 1 − 1/β), but keeps "
        "B small for most of training and switches late for hard tasks.",
        checks=(
            Check("easy_opt_increasing_frac", ">", 0.45, 0.05, **_DET),
            Check("easy_opt_frac_at_bmin", "<", 0.25, 0.05, **_DET),
            Check("hard_opt_frac_at_bmin", ">", 0.65, 0.05, **_DET),
        ),
        paper="theorem on optimal BSS under a data budget (phase transition at s = 1 − 1/β); constants not retrieved",
        requires=("data-budget", "optimum-beats-two-stage"),
    ),
    Claim(
        "fast-catch-up",
        "After switching from small to large batches the loss quickly aligns with the constant-large trajectory (at "
        "equal steps), so the large batch can be deferred: the late switch ends within 2 % of the constant-large run "
        "at the same step count while using less than half its data (hard task).",
        checks=(
            Check("hard_catchup_gap_ratio", "<", 0.11, 0.01, **_DET),
            Check("hard_late_vs_large_same_steps_rel", "<", 0.025, 0.005, **_DET),
            Check("late_data_saving", ">", 0.45, 0.05, **_DET),
        ),
        paper="'sudden drop' then 'final merge' with the large-batch curve in LLM pre-training; catch-up speed set by "
        "task difficulty",
        requires=("gap-at-switch",),
    ),
    Claim(
        "fsl-predicts-switch",
        "A parametric FSL fitted on the two constant-batch loss curves predicts the final loss of switched schedules "
        "within 10 % (the paper's use of the FSL: fit on some runs, predict others).",
        checks=(
            Check("easy_fitfsl_max_rel_err", "<", 0.11, 0.01, **_DET),
            Check("hard_fitfsl_max_rel_err", "<", 0.11, 0.01, **_DET),
        ),
        paper="FSL fits and predicts LLM loss curves (Li et al. 2025a); accuracy for BSS not retrieved",
        requires=("fsl-form-can-predict", "naive-predictor-control"),
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
        requires=("data-budget", "lm-batch-matters", "lm-reversed-control"),
    ),
]
HEADLINE = "hard-late-switch"

METRICS = {
    **{
        f"{r}_exact_{n}": f"{r} task: exact expected excess risk after the data budget, schedule {n} (second-moment "
        "recursion)"
        for r in ("easy", "hard")
        for n in SCHEDULES
    },
    **{
        f"{r}_exact_late_rel_{n}": f"{r} task: exact final risk of the late switch relative to schedule {n}, "
        f"late/{n} − 1 (negative: the late switch is better)"
        for r in ("easy", "hard")
        for n in ("small", "large", "early")
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
    **{
        f"{r}_budget_spread": f"{r} task: (max − min)/max of the samples consumed by the four schedules and the "
        "FSL optimum"
        for r in ("easy", "hard")
    },  # fmt: skip
    "lm_budget_spread": "tiny LM: (max − min)/max of the tokens consumed by its five schedules",
    **{
        f"{r}_switch_scan_spread": f"{r} task: (max − min)/min of the exact final risk over the switch grid"
        for r in ("easy", "hard")
    },  # fmt: skip
    **{
        f"{r}_opt_rel_best_two_stage": f"{r} task: exact final risk of the FSL optimum / best two-stage − 1"
        for r in ("easy", "hard")
    },  # fmt: skip
    **{f"{r}_catchup_gap0_rel": f"{r} task: (L_late − L_large)/L_large at the switch step" for r in ("easy", "hard")},
    **{
        f"{r}_naive_max_rel_err": f"{r} task: max |pred/exact − 1| of the switched runs' final risk for the "
        "dynamics-free predictor √(L_small · L_large)"
        for r in ("easy", "hard")
    },  # fmt: skip
    **{f"lm_tokens_{n}": f"tiny LM: tokens consumed by schedule {n}" for n in (*SCHEDULES, "reversed")},
    "lm_kl_reversed": "tiny LM: final excess loss of the reversed late switch (B_large for ρ < 0.8, then B_small)",
    "lm_kl_spread": "tiny LM: max − min of lm_kl over the four schedules",
    "lm_reversed_excess": "max over small, large, early of lm_kl_reversed − lm_kl_<schedule> (< 0: the reversed "
    "control would pass lm-late-switch)",
    "late_data_saving": "1 − D / (K · B_large): data the late switch saves vs constant-large at the same step K",
    **{
        f"lm_kl_{n}": f"tiny LM: population excess loss KL(p_true ‖ model) in nats/token after the token budget, "
        f"schedule {n}"
        for n in SCHEDULES
    },
}
