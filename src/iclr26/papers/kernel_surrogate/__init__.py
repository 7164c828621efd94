"""Reproduction: Efficient Estimation of Kernel Surrogate Models for Task Attribution (KernelSM), ICLR 2026.

Lab notebook. The paper's settings (transformers on modular arithmetic, LLM in-context learning, multi-objective RL)
need weights and compute we do not have, so the claims are tested where the ground truth is exact:

A. *Interacting tasks* (`theory.kernel_surrogate.tasks`): 12 training tasks with planted XOR-type pairs, a redundant
   pair and a conflicting pair, a target task near the decision boundary; the model is L2-logistic regression on
   random Fourier features, retrained exactly (strictly convex, Newton to machine precision) on every subset. We fit
   the linear surrogate, the kernel surrogate and the exact influence function on the same random subsets (p = 0.5),
   and compare (i) correlation of each method's LOO attribution with the true LOO effects, (ii) prediction on held-out
   subsets, (iii) the true target loss of the subset each method selects, (iv) Prop. 3.1 (β̂ vs its second-order
   prediction from finite-difference ∇F, H of the exact F). A *control* design with i.i.d. tasks (near additive)
   tests Cor. 3.2 (linear surrogate ≈ influence function when interactions are weak).
B. *Gradient-based estimation*: a tanh MLP is pretrained on all tasks (θ*); for random subsets we compare real
   fine-tuning from θ* (proximal objective, L-BFGS to convergence) with the first-order estimate from projected
   per-example gradients (`theory.kernel_surrogate.gradient`), and run the full KernelSM pipeline (surrogates fitted
   on estimated F̂, LOO attribution checked against fine-tuned LOO).
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    # Pre-declared: seeds 0–19 (VERSION 3: sized from the VERSION 2 spread of the LOO gap to influence functions,
    # +0.066 with a per-seed sd of 0.124, which ~12 seeds decide; 20 leave room for a smaller true gap)
    seeds: tuple[int, ...] = tuple(range(20))
    n_per_task: int = 60
    n_target: int = 240
    n_features: int = 200
    l2: float = 1.0
    p: float = 0.5
    n_fit: int = 200
    n_heldout: int = 80
    # the kernel surrogate's KernelSurrogateConfig (built in the experiment; defaults = the official code's)
    krr_kernel: str = "rbf"
    krr_alpha: float = 0.1
    fd_eps: float = 1e-4
    control: bool = True
    mlp_hidden: int = 64
    pretrain_iters: int = 150
    mu: float = 0.1
    mu_far: float = 0.01
    proj_dim: int = 400
    n_est_subsets: int = 24
    n_est_far: int = 6
    n_e2e_subsets: int = 160


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_per_task=10,
        n_target=30,
        n_features=30,
        n_fit=25,
        n_heldout=10,
        control=False,
        mlp_hidden=8,
        pretrain_iters=20,
        n_est_subsets=3,
        n_est_far=0,
        n_e2e_subsets=20,
        proj_dim=20,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4, 5, 6, 7), n_fit=400, n_heldout=200, n_est_subsets=60, n_est_far=30, n_e2e_subsets=400
    ),
}

VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 10,  # measured: 5.6 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 500,  # VERSION 2: 189 s wall for 8 seeds; VERSION 3: 20 seeds and the control arms
    "full": 1800,  # an estimate, not measured: 2× the fitted subsets, 2.5× the end-to-end subsets, 8 seeds
}
ACCEPTS_MODEL = False
MODEL_NOTE = (
    "the reproduction fits logistic models and a small MLP on synthetic multi-task data; no language model is involved"
)

PAPER_SETTING = "paper: math reasoning in transformers, LLM in-context learning, multi-objective RL"

CLAIMS = [
    # --- gates -------------------------------------------------------------------------------------------------
    Claim(
        "interactions-present",
        "Testbed: the tasks interact — the linear surrogate leaves more than 10 % of the held-out variance of the "
        "exact F unexplained (interacting design)",
        checks=(Check("heldout_r2_linear", "<", 0.9),),
        role="testbed",
    ),
    Claim(
        "loo-headroom",
        "Headroom: the better baseline's LOO correlation is below 0.98 (perfect attribution, r = 1, beats it by more "
        "than 0.02)",
        checks=(Check("loo_pearson_best_baseline", "<", 0.98),),
        role="headroom",
    ),
    Claim(
        "loo-shuffled-control",
        "Negative control: the kernel surrogate fitted on targets shuffled across subsets does not beat both the "
        "linear surrogate and the influence function in LOO correlation",
        checks=(fails(Check("loo_shuffled_excess", ">", 0.0)),),
        role="negative control",
    ),
    Claim(
        "finetuning-moves",
        "Non-degenerate: fine-tuning changes the target loss by more than 2 % on average, so the no-fine-tuning "
        "estimate itself misses the 2 % bar",
        checks=(Check("gradest_base_relerr", ">", 0.02),),
        role="non-degenerate",
    ),
    Claim(
        "gradest-shuffled-control",
        "Negative control: the first-order estimate with its per-example gradients shuffled across examples does not "
        "pass the claim's checks (within 2 % and better than no fine-tuning)",
        checks=(fails(Check("gradest_shuffled_excess", "<", 0.0)),),
        role="negative control",
    ),
    Claim(
        "selection-headroom",
        "Headroom: an exactly evaluated subset (among the fitted subsets and the single-task flips of each selection) "
        "has a lower true target loss than both baselines' selections",
        checks=(
            Check("select_loss_best_found", "<", "select_loss_linear"),
            Check("select_loss_best_found", "<", "select_loss_influence"),
        ),
        role="headroom",
    ),
    Claim(
        "selection-shuffled-control",
        "Negative control: selecting with the kernel surrogate fitted on shuffled targets does not beat both baselines",
        checks=(fails(Check("select_shuffled_excess", "<", 0.0)),),
        role="negative control",
    ),
    Claim(
        "second-order-nontrivial",
        "Non-degenerate: β̂ differs from ∇F by more than 10 % (the second-order terms have something to explain)",
        checks=(Check("grad_relerr", ">", 0.1),),
        role="non-degenerate",
    ),
    Claim(
        "second-order-junk-control",
        "Negative control: Prop. 3.1's formula with H replaced by a random symmetric matrix of the same norm is not "
        "closer to β̂ than ∇F alone",
        checks=(fails(Check("prop31_relerr_junk", "<", "grad_relerr")),),
        role="negative control",
    ),
    Claim(
        "control-is-additive",
        "Testbed: the control design is near additive — its held-out R² of the linear surrogate exceeds the "
        "interacting design's by more than 0.1",
        checks=(Check("ctrl_heldout_r2_linear", ">", "heldout_r2_linear", 0.1),),
        role="testbed",
        when="control",
    ),
    # --- the paper's claims --------------------------------------------------------------------------------------
    Claim(
        "loo-correlation",
        "Kernel surrogates correlate better with leave-one-out ground truth than linear surrogates and influence "
        "functions",
        checks=(
            Check("loo_pearson_kernel", ">", "loo_pearson_linear"),
            Check("loo_pearson_kernel", ">", "loo_pearson_influence"),
        ),
        paper=f"25% higher LOO correlation than the best of linear surrogate / influence function ({PAPER_SETTING})",
        requires=("interactions-present", "loo-headroom", "loo-shuffled-control"),
    ),
    Claim(
        "gradient-estimation",
        "The first-order (projected-gradient) estimate of a fine-tuned model's target loss is within 2% of fine-tuning",
        checks=(Check("gradest_relerr", "<", 0.02), Check("gradest_relerr", "<", "gradest_base_relerr")),
        paper="< 2% relative error without repeated retraining (paper's models; fine-tuning regime not stated)",
        requires=("finetuning-moves", "gradest-shuffled-control"),
    ),
    Claim(
        "selection",
        "Selecting training tasks with the kernel surrogate gives a lower true target loss than selecting with the "
        "linear surrogate or the influence function",
        checks=(
            Check("select_loss_kernel", "<", "select_loss_linear"),
            Check("select_loss_kernel", "<", "select_loss_influence"),
        ),
        paper="40% improvement in demonstration selection for ICL and in multi-objective RL",
        requires=("interactions-present", "selection-headroom", "selection-shuffled-control"),
    ),
    Claim(
        "second-order-link",
        "Prop. 3.1: linear-surrogate coefficients are the gradient ∇F plus the second-order terms "
        "(p−1)H1 + (½−p)diag H, so the second-order prediction is closer to β̂ than ∇F alone",
        checks=(Check("prop31_relerr", "<", "grad_relerr"),),
        paper="Prop. 3.1 (theorem); error bound c₃K^{3/2}/p + sqrt((K + log 1/δ)/m)",
        requires=("second-order-nontrivial", "second-order-junk-control"),
    ),
    Claim(
        "weak-interactions",
        "Cor. 3.2: linear surrogates and influence functions agree when task interactions are weak (control design) "
        "more closely than when they are strong (interacting design)",
        checks=(Check("ctrl_grad_relerr", "<", "grad_relerr"),),
        paper="Cor. 3.2 (theorem): ‖β̂ − I‖ small when ‖H_s‖₂ ≤ c₂",
        when="control",
        requires=("control-is-additive",),
    ),
]
HEADLINE = "loo-correlation"

METRICS = {
    "loo_pearson_kernel": "Pearson r over the K=12 tasks between g(1−e_k)−g(1) of the kernel surrogate (RBF KRR, "
    "γ=1/K, λ=0.1, fitted on n_fit random subsets, p=0.5) and the exact LOO effect F(1−e_k)−F(1); interacting design",
    "loo_pearson_linear": "same, linear surrogate (ridge λ=1e-3 with intercept) on the same subsets",
    "loo_pearson_influence": "same, first-order influence estimate −I_k, I = exact ∂F/∂s at s=1 (implicit function)",
    "loo_spearman_kernel": "Spearman ρ version of loo_pearson_kernel",
    "loo_spearman_linear": "Spearman ρ version of loo_pearson_linear",
    "loo_spearman_influence": "Spearman ρ version of loo_pearson_influence",
    "heldout_spearman_kernel": "Spearman ρ between predicted and exact F on n_heldout held-out subsets",
    "heldout_spearman_linear": "same for the linear surrogate",
    "heldout_spearman_influence": "same for the first-order influence model F(1) + Iᵀ(s − 1)",
    "heldout_r2_kernel": "1 − MSE/Var on held-out subsets (kernel surrogate)",
    "heldout_r2_linear": "1 − MSE/Var on held-out subsets (linear surrogate); low = strong interactions",
    "select_loss_kernel": "exact target loss after retraining on argmin_s g(s) over all 4095 subsets (kernel)",
    "select_loss_linear": "same with the linear surrogate",
    "select_loss_influence": "same with the influence model (keep k iff I_k < 0)",
    "select_loss_all": "exact target loss when training on all tasks (reference)",
    "prop31_relerr": "‖β̂ − (∇F + (p−1)H1 + (½−p)diag H)‖/‖β̂‖; ∇F exact, H by central differences of ∇F",
    "grad_relerr": "‖β̂ − ∇F‖/‖β̂‖ (interacting design)",
    "ctrl_grad_relerr": "‖β̂ − ∇F‖/‖β̂‖ in the near-additive control design",
    "ctrl_loo_pearson_kernel": "loo_pearson_kernel in the control design",
    "ctrl_loo_pearson_linear": "loo_pearson_linear in the control design",
    "ctrl_loo_pearson_influence": "loo_pearson_influence in the control design",
    "ctrl_heldout_r2_linear": "heldout_r2_linear in the control design",
    "gradest_relerr": "mean over subsets of |F̂(s) − F(s)|/F(s): first-order projected-gradient estimate vs "
    "fine-tuning of the pretrained MLP from θ* with (μ/2)‖θ−θ*‖², μ=cfg.mu",
    "gradest_base_relerr": "mean |F(θ*) − F(s)|/F(s): error of the trivial estimate 'no fine-tuning'",
    "gradest_unexplained": "mean|F̂ − F| / mean|F(θ*) − F|: fraction of the fine-tuning effect the estimate misses",
    "gradest_spearman": "Spearman ρ between F̂ and F across subsets",
    "gradest_relerr_far": "gradest_relerr with weaker proximity μ=cfg.mu_far (fine-tuning moves further)",
    "gradest_base_relerr_far": "gradest_base_relerr with μ=cfg.mu_far",
    "gradest_speedup": "seconds per fine-tuning / seconds per estimate",
    "e2e_loo_pearson_kernel": "full KernelSM pipeline on the MLP: kernel surrogate fitted on estimated F̂ of "
    "n_e2e_subsets subsets; Pearson r of its LOO with fine-tuned LOO",
    "e2e_loo_pearson_linear": "same with a linear surrogate on F̂",
    "loo_pearson_shuffled": "LOO Pearson r of the kernel surrogate fitted on targets permuted across the subsets",
    "loo_spearman_shuffled": "Spearman ρ version of loo_pearson_shuffled",
    "loo_pearson_best_baseline": "max(loo_pearson_linear, loo_pearson_influence)",
    "loo_shuffled_excess": "min over linear and influence of loo_pearson_shuffled − loo_pearson_<baseline> (> 0: the "
    "shuffled-target control would pass loo-correlation)",
    "select_loss_shuffled": "exact target loss of the subset selected by the shuffled-target kernel surrogate",
    "select_loss_best_found": "lowest exact target loss among the fitted/held-out subsets, the three selections and "
    "their single-task flips (an achievable oracle)",
    "select_shuffled_excess": "max over linear and influence of select_loss_shuffled − select_loss_<baseline> (< 0: "
    "the control would pass selection)",
    "prop31_relerr_junk": "‖β̂ − (∇F + (p−1)R1 + (½−p)diag R)‖/‖β̂‖ with R a random symmetric matrix, ‖R‖_F = ‖H‖_F",
    "gradest_relerr_shuffled": "gradest_relerr of the estimator whose projected gradients are permuted across "
    "training examples",
    "gradest_shuffled_excess": "max(gradest_relerr_shuffled − 0.02, gradest_relerr_shuffled − gradest_base_relerr) "
    "(< 0: the control would pass gradient-estimation)",
    **{
        f"ctrl_{k}": f"{k} in the control design"
        for k in ("loo_pearson_shuffled", "loo_spearman_shuffled", "loo_pearson_best_baseline", "loo_shuffled_excess")
    },
}
