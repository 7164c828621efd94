"""Reproduction: Policy Newton Algorithm in Reproducing Kernel Hilbert Space, ICLR 2026.

Lab notebook. Two experiments, as in the paper:

1. *Toy investment-planning MDP with exact returns* (`theory.policy_newton.world`): L resource levels × 3 market states,
   3 actions, γ = 0.9; score functions in the RKHS of an RBF kernel on state–action features; gradient and Hessian
   exact (autograd through policy evaluation). Objective J(h) − (λ/2)‖h‖²_H with a small λ so that a finite optimum
   h* exists (the unregularised softmax optimum is at infinity and no method can converge to it at a rate). Methods:
   Policy Newton in RKHS (cubic model, RKHS norm), RKHS policy gradient (functional gradient ascent), tabular softmax
   PG and tabular cubic-regularised Newton (parametric second order). Step sizes / M are each method's best of a small
   grid on a tuning initialisation; every seed then starts from its own random h₀. Measured: optimality gap after a
   fixed number of iterations, iterations to reach a gap of 1e-10, and the empirical order of convergence of
   ‖h_k − h*‖_H (2 = quadratic).
2. *CartPole-v1* (gymnasium): RBF-kernel softmax policy on action-block features (authors' Gym setup), batches of
   on-policy episodes, per-trajectory standardised returns-to-go. Policy Newton in RKHS vs RKHS policy gradient,
   parametric CRPN and REINFORCE (linear softmax on the same features). Step sizes / M chosen by a 3-point grid on a
   development seed (100) not used for evaluation; see docs/papers/policy-newton-rkhs.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    toy_levels: tuple[int, ...] = (2, 10)
    toy_reg: float = 1e-3
    toy_kernel_gamma: float = 1.0
    toy_iters: int = 40
    toy_init_scale: float = 0.3
    toy_M_grid: tuple[float, ...] = (0.01, 0.1, 1.0)
    toy_lr_grid: tuple[float, ...] = (3.0, 10.0, 30.0)
    toy_tol: float = 1e-10
    toy_noise: float = 3e-3  # std of the Gaussian noise on ∂J/∂h and ∂²J/∂h² in the noisy toy runs (our choice)
    env_id: str = "CartPole-v1"
    n_envs: int = 16
    horizon: int = 500
    n_updates: int = 40
    gamma: float = 0.99
    kernel_gamma: float = 5.0
    # PolicyNewtonConfig and RKHSGradientConfig (iclr26.theory.policy_newton) are built from these in the experiment;
    # their other fields keep the method's defaults
    pn_M: float = 10.0  # cubic regularisation M of Policy Newton in RKHS (authors' Gym runner: alpha = 10)
    rkhs_pg_lr: float = 150.0  # RKHS policy gradient step size
    rkhs_pg_sample_states: int = 48  # steps sampled per RKHS-PG update
    crpn_M: float = 100.0
    reinforce_lr: float = 0.3


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        toy_levels=(2,),
        toy_iters=6,
        toy_M_grid=(0.1,),
        toy_lr_grid=(10.0,),
        n_envs=3,
        horizon=30,
        n_updates=2,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        toy_iters=60,
        n_envs=50,
        n_updates=150,
        rkhs_pg_sample_states=150,
    ),
}

VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 5,  # measured: 3.5 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 240,  # VERSION 2: 107 s wall for 5 seeds; VERSION 3 adds a toy control arm and a CartPole control arm
    "full": 7200,  # an estimate, not measured: 150 updates with 50 environments, 5 seeds
}
ACCEPTS_MODEL = False
MODEL_NOTE = "the reproduction is kernel policies on a toy MDP and CartPole; no language model is involved"

# pn_nohess: the same cubic-regularised step with the Hessian replaced by 0 (negative control, tuned on the same grid)
_TOY_METHODS = ("pn", "rkhs_pg", "tab_pg", "tab_crpn", "pn_nohess")
_GYM_METHODS = ("pn", "rkhs_pg", "crpn", "reinforce")
_GYM_ARMS = (*_GYM_METHODS, "pn_junk")  # pn_junk: PN with the per-step weights replaced by standard-normal noise
_L = (2, 10)
_DET = dict(deterministic=True)

CLAIMS = [
    # --- gates -------------------------------------------------------------------------------------------------
    Claim(
        "toy-budget",
        "Budget parity on the toy MDP: every method runs the same number of iterations and is tuned on a grid of the "
        "same size (spread below 10 %)",
        checks=tuple(Check(f"toy_{k}_spread_L{L}", "<", 0.11, 0.01, **_DET) for k in ("budget", "tuning") for L in _L),
        role="budget",
    ),
    Claim(
        "toy-pn-converges",
        "Policy Newton in RKHS reaches the optimum (gap below 1e-10) within the iteration budget, so iteration "
        "counts compare converged runs",
        # the gap is floored at 1e-16, so it can be identical on every seed: declared deterministic (tested over seeds
        # where it varies), threshold −10 after the margin
        checks=tuple(Check(f"toy_log10gap_pn_L{L}", "<", -9.9, 0.1, **_DET) for L in _L),
        role="non-degenerate",
    ),
    Claim(
        "toy-hessian-control",
        "Negative control: the same cubic-regularised step with the Hessian replaced by 0 (tuned on the same M grid) "
        "does not reach a gap of 1e-10 in fewer iterations than the tabular cubic Newton",
        # integer iteration counts (the cap + 1 when 1e-10 is never reached): "not fewer" = a margin of half a step
        checks=tuple(
            fails(Check(f"toy_iters_pn_nohess_L{L}", "<", f"toy_iters_tab_crpn_L{L}", 0.5, **_DET)) for L in _L
        ),
        role="negative control",
    ),
    Claim(
        "toy-noise-bites",
        "The derivative noise is a real perturbation: with it, Policy Newton ends at least one order of magnitude "
        "further from the optimum than with exact derivatives",
        checks=tuple(Check(f"toy_noisy_log10gap_pn_L{L}", ">", f"toy_log10gap_pn_L{L}", 1.0) for L in _L),
        role="non-degenerate",
    ),
    Claim(
        "toy-noisy-control",
        "Negative control: with the same noise, the Hessian-free cubic step does not end below both RKHS policy "
        "gradient and the tabular cubic Newton (its excess log10 gap over the better of the two is > 0)",
        checks=tuple(fails(Check(f"toy_noisy_nohess_excess_L{L}", "<", 0.0)) for L in _L),
        role="negative control",
    ),
    Claim(
        "rate-control",
        "Negative control of the rate estimator: first-order RKHS policy gradient, measured the same way, does not "
        "show an order above 1.5",
        checks=tuple(fails(Check(f"toy_order_rkhs_pg_L{L}", ">", 1.5)) for L in _L),
        role="negative control",
    ),
    Claim(
        "gym-budget",
        "Budget parity on CartPole: every arm collects the same number of episodes (spread below 10 %)",
        checks=(Check("gym_budget_spread", "<", 0.11, 0.01, **_DET),),
        role="budget",
    ),
    Claim(
        "gym-learns",
        "Policy Newton in RKHS learns at all on CartPole: its last-10-update reward exceeds its first update's by "
        "more than 20",
        checks=(Check("gym_final_pn", ">", "gym_first_pn", 20.0),),
        role="non-degenerate",
    ),
    Claim(
        "gym-headroom",
        "Headroom: the baselines stay more than 10 below CartPole's ceiling of 500 (last 10 updates and whole run), "
        "so a better method can show",
        checks=tuple(Check(f"gym_{k}_{m}", "<", 490.0) for k in ("final", "auc") for m in ("rkhs_pg", "crpn")),
        role="headroom",
    ),
    Claim(
        "gym-junk-control",
        "Negative control: Policy Newton with its per-step weights replaced by noise does not beat both RKHS policy "
        "gradient and CRPN (last 10 updates and whole run)",
        checks=tuple(fails(Check(f"gym_{k}_junk_excess", ">", 0.0)) for k in ("final", "auc")),
        role="negative control",
    ),
    # --- the paper's claims --------------------------------------------------------------------------------------
    Claim(
        "toy-convergence",
        "On the toy asset-allocation MDP (exact gradients), Policy Newton in RKHS converges faster than RKHS policy "
        "gradient and tabular policy gradient (lower optimality gap after the same number of iterations)",
        checks=tuple(
            Check(f"toy_log10gap_pn_L{L}", "<", f"toy_log10gap_{m}_L{L}") for L in _L for m in ("rkhs_pg", "tab_pg")
        )
        + tuple(Check(f"toy_iters_pn_L{L}", "<", f"toy_iters_tab_crpn_L{L}") for L in _L),
        paper="toy MDP (L=2, 200 iterations): PN-RKHS reaches the optimal policy in far fewer iterations (curves only)",
        note="against first-order methods with exact derivatives this holds for any Newton method; the content is "
        "the comparison with the tabular cubic Newton (iterations to a gap of 1e-10)",
        requires=("toy-budget", "toy-pn-converges", "toy-hessian-control"),
    ),
    Claim(
        "toy-noisy",
        "With noisy derivative estimates (as from sampled trajectories), Policy Newton in RKHS still ends closer to "
        "the optimum than RKHS policy gradient and the tabular cubic Newton after the same number of iterations",
        checks=tuple(
            Check(f"toy_noisy_log10gap_pn_L{L}", "<", f"toy_noisy_log10gap_{m}_L{L}")
            for L in _L
            for m in ("rkhs_pg", "tab_crpn")
        ),
        paper="the paper's algorithm uses sampled estimates (Gym experiments); toy curves only",
        requires=("toy-budget", "toy-noise-bites", "toy-noisy-control"),
    ),
    Claim(
        "quadratic-rate",
        "Local quadratic convergence: near the optimum the empirical order of convergence of ‖h_k − h*‖_H is about 2",
        checks=tuple(Check(f"toy_order_pn_L{L}", ">", 1.5) for L in _L),
        paper="theorem: convergence to a local optimum at a local quadratic rate",
        requires=("toy-pn-converges", "rate-control"),
    ),
    Claim(
        "gym-return",
        "On CartPole, Policy Newton in RKHS reaches a higher episodic reward than RKHS policy gradient and parametric "
        "cubic-regularised policy Newton",
        checks=(Check("gym_final_pn", ">", "gym_final_rkhs_pg"), Check("gym_final_pn", ">", "gym_final_crpn")),
        paper="CartPole / Lunar Lander: higher episodic reward than RKHS-PG and CRPN (curves only)",
        requires=("gym-budget", "gym-learns", "gym-headroom", "gym-junk-control"),
    ),
    Claim(
        "gym-speed",
        "On CartPole, Policy Newton in RKHS converges faster (higher mean reward over the whole training run)",
        checks=(Check("gym_auc_pn", ">", "gym_auc_rkhs_pg"), Check("gym_auc_pn", ">", "gym_auc_crpn")),
        paper="faster convergence than first-order RKHS and parametric second-order methods (curves only)",
        requires=("gym-budget", "gym-learns", "gym-headroom", "gym-junk-control"),
    ),
]
HEADLINE = "toy-convergence"

METRICS = {
    **{
        f"toy_log10gap_{m}_L{L}": f"log10(J_λ* − J_λ(h_T)) after toy_iters iterations, {m}, L={L} resource levels; "
        "exact returns; best of its grid on a tuning init; floored at 1e-16"
        for m in _TOY_METHODS
        for L in (2, 10)
    },
    **{
        f"toy_iters_{m}_L{L}": f"first iteration with gap < toy_tol (toy_iters + 1 if never), {m}, L={L}"
        for m in _TOY_METHODS
        for L in (2, 10)
    },
    **{
        f"toy_order_{m}_L{L}": f"empirical convergence order log(e_k+1/e_k)/log(e_k/e_k−1) of e_k = ‖h_k − h*‖_H at "
        f"the last k with e_k+1 > 1e-10 (window e_k−1 < 0.5 for Newton, last iterates for PG), {m}, L={L}"
        for m in ("pn", "rkhs_pg")
        for L in (2, 10)
    },
    **{
        f"toy_noisy_log10gap_{m}_L{L}": f"log10 gap after toy_iters iterations with noisy derivatives (Gaussian, std "
        f"toy_noise on ∂J/∂h and ∂²J/∂h², mapped into each method's coordinates), {m}, L={L}; same hyper-parameters"
        for m in _TOY_METHODS
        for L in (2, 10)
    },
    **{
        f"toy_order_tab_crpn_L{L}": f"empirical convergence order of ‖h_k − h*‖_H for the tabular cubic Newton, L={L}"
        for L in (2, 10)
    },
    **{f"toy_value_gap_pn_L{L}": f"unregularised V*(ρ₀) − V^π(ρ₀) of the final PN policy, L={L}" for L in (2, 10)},
    **{
        f"gym_final_{m}": f"mean undiscounted episode reward over the last 10 of n_updates updates, {m}, CartPole-v1"
        for m in _GYM_ARMS
    },
    **{
        f"gym_auc_{m}": f"mean episode reward over all n_updates updates (area under the learning curve), {m}"
        for m in _GYM_METHODS
    },
    "gym_seconds_pn": "wall seconds of the PN-RKHS run (rollouts + updates)",
    **{f"gym_first_{m}": f"mean episode reward at the first update (before any learning), {m}" for m in _GYM_ARMS},
    **{f"gym_episodes_{m}": f"episodes collected over the run (the budget), {m}" for m in _GYM_ARMS},
    "gym_budget_spread": "(max − min)/max of the episodes collected by the CartPole arms",
    **{
        f"gym_{k}_junk_excess": f"min over RKHS-PG and CRPN of gym_{k}_pn_junk − gym_{k}_<baseline> (> 0: junk-weight "
        "PN would pass the claim)"
        for k in ("final", "auc")
    },
    **{f"toy_steps_{m}_L{L}": f"iterations run by {m}, L={L} (the budget)" for m in _TOY_METHODS for L in _L},
    **{f"toy_budget_spread_L{L}": f"(max − min)/max of the iterations run by the toy methods, L={L}" for L in _L},
    **{f"toy_tuning_spread_L{L}": f"(max − min)/max of the grid sizes the toy methods are tuned on, L={L}" for L in _L},
    **{
        f"toy_noisy_nohess_excess_L{L}": "max over RKHS-PG and tabular cubic Newton of toy_noisy_log10gap_pn_nohess − "
        f"toy_noisy_log10gap_<baseline>, L={L} (< 0: the Hessian-free control would pass toy-noisy)"
        for L in _L
    },
}
