"""Reproduction: Meta-Router — Bridging Gold-standard and Preference-based Evaluations in LLM Routing (ICLR 2026).

Paper: https://arxiv.org/abs/2509.25535 (Zhang, Xie, Yang, Wu); released code: https://github.com/yichistat/Meta-router.

The idea: a router sends each query to a strong, costly primary LLM or a cheap alternative by a learned quality gain
η(x). Its training labels come from two mechanisms: a few gold-standard (GS) labels and many biased preference (PB,
LLM-judge) labels. Treating the mechanism as a treatment makes the PB bias a CATE, δ(x) = E[Y_GS − Y_PB | x], which the
R- and DR-learners estimate; PB labels are corrected by δ̂ and the router is trained on GS + corrected PB labels.

Protocol. The paper's HealthBench data are not here, so the claims are tested where the truth is exact:
A. the dossier's synthetic testbed (`agents.causal_router.world.synthetic_routing`, d = 20, heterogeneous judge
   bias): a pool of n_pool training queries of which n_G ∈ {50, 100, 200} get GS labels and the rest PB labels
   (paired across n_G), 500 test queries per seed; also a world whose GS labels go preferentially to queries with a
   large x₁ (confounded assignment);
B. semi-real: scikit-learn's 1,797 real handwritten digits (top 20 principal components) as queries; the gain depends
   on the real class, the judge's bias on the real ink and class (`digits_routing`), n_G = 100.
Budget parity: every arm but All-golden sees the same n_G gold labels, for training and for any tuning (no
validation set). Arms: Golden-only, Preference-only, Pooled (one forest on GS / PB / GS ∪ PB labels; each tunes its
leaf size by 3-fold cross-validation on the n_G gold labels), the R- and DR-learner meta-routers (library defaults:
cross-fitted nuisances, δ̂ leaf 50, the released code's η̂ forest), two corrections they must also beat (a T-learner
and a constant shift, same defaults), All-golden (every training query GS-labelled: the ceiling), Random, and the
released code's constants (reported). Metric: the efficiency gain over random routing normalised by the oracle's,
averaged over usage ratios ρ ∈ [0.2, 0.8], scored with the true expected gains of the test queries. Controls: a world
with no judge bias (δ ≡ 0) and shuffled mechanism labels, where the meta-routers must not beat Pooled.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails

VERSION = 4
ACCEPTS_MODEL = False
MODEL_NOTE = "the routing worlds are synthetic gains and judge labels (and scikit-learn digits); no language model runs"


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = tuple(range(10))  # 10: a 2-seed pilot ran in a minute; digits needs many
    n_golds: tuple[int, ...] = (50, 100, 200)  # dossier; the paper's main figure uses 100
    n_pool: int = 2200  # training queries per seed (GS + PB); paper ≈ 4,500 (HealthBench minus 500 test)
    n_test: int = 500  # paper: 500
    d: int = 20  # synthetic feature width (paper: 50 principal components; 5 informative here)
    n_trees: int = 50  # nuisance and η̂ forests (paper: 100)
    n_trees_cate: int = 100  # δ̂ forest (paper: 200)
    crossfit: int = 5  # K-fold cross-fitting of the nuisances (released code: in-sample)
    propensity_clip: float = 0.02  # ê clipped to [c, 1 − c] (code: 0.1 / 0.05 with in-sample ê)
    final_leaf: int = 1  # η̂ forest leaf of the meta-routers and All-golden (released code: 1)
    leaf_grid: tuple[int, ...] = (1, 5, 20)  # baselines' η̂ leaf, chosen by CV on the gold labels; grows past edges
    cv_folds: int = 3  # folds of the baselines' cross-validation over the n_G gold labels
    confounding: float = 1.0  # the confounded world: P(GS) ∝ exp(c·x₁); 0 switches the setting off
    digits: bool = True  # the semi-real variant
    controls: bool = True  # the no-bias world and shuffled mechanism labels
    released_code_arms: bool = True  # also the meta-routers with the released code's in-sample nuisances

    def __post_init__(self):
        if self.cv_folds < 2:
            raise ValueError(f"Cfg.cv_folds must be ≥ 2, got {self.cv_folds}")
        if self.final_leaf < 1 or min(self.leaf_grid) < 1:
            raise ValueError("Cfg: leaf sizes must be ≥ 1")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_pool=500,
        n_test=150,
        n_trees=10,
        n_trees_cate=10,
        crossfit=2,
        leaf_grid=(1, 20),
        cv_folds=2,
        released_code_arms=False,
    ),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(20)), n_pool=4500, d=50, n_trees=100, n_trees_cate=200),
}

PAPER = "HealthBench, 50 PCs of query embeddings, n_G = 100 GS + ~4,400 PB labels, 500 test queries, 200 splits"
BASELINES = ("golden", "pref", "pooled")


M = 0.02  # the smallest gain that counts: 2 % of the oracle's efficiency gain over random routing


def _beats(setting: str, against=BASELINES) -> tuple[Check, ...]:
    return tuple(Check(f"auc_{m}_{setting}", ">", f"auc_{b}_{setting}", M) for m in ("r", "dr") for b in against)


def _parity(tag: str) -> Claim:
    return Claim(
        f"parity-{tag}",
        f"Budget: every compared arm used the same gold-standard labels ({tag}; training and tuning)",
        (Check(f"gold_parity_{tag}", "<", 0.2, margin=0.1, deterministic=True),),
        role="budget",
    )


def _headroom(tag: str, against=BASELINES) -> Claim:
    return Claim(
        f"headroom-{tag}",
        f"Testbed: All-golden (every training query GS-labelled) beats each compared arm by more than the margin "
        f"({tag})",
        tuple(Check(f"auc_allgold_{tag}", ">", f"auc_{b}_{tag}", M) for b in against),
        role="headroom",
    )


CORRECTIONS = ("t", "shift")
CLAIMS = [
    Claim(
        "beats-baselines",
        "Both meta-routers (R- and DR-learner) give a larger efficiency gain across usage ratios 0.2-0.8 than "
        "Golden-only, Preference-only and Pooled (n_G = 100, synthetic testbed), by 2 % of the oracle's gain",
        checks=_beats("n100"),
        paper=f"Fig. 1(a): R- and DR-learner curves above all three baselines at every ratio ({PAPER})",
        requires=("parity-n100", "headroom-n100", "control-shuffled-mechanism", "control-no-bias"),
    ),
    Claim(
        "beats-baselines-every-nG",
        "The meta-routers beat the three baselines also at n_G = 50 and n_G = 200",
        checks=_beats("n50") + _beats("n200"),
        paper="other subfigures vary n_G (values not retrieved)",
        requires=("parity-n50", "parity-n200", "headroom-n50", "headroom-n200"),
    ),
    Claim(
        "gap-largest-at-small-nG",
        "The meta-routers' advantage over the best baseline is larger at n_G = 50 than at n_G = 200",
        checks=(Check("adv_r_n50", ">", "adv_r_n200"), Check("adv_dr_n50", ">", "adv_dr_n200")),
        paper="the benefit of PB data is largest when GS labels are scarce (paper's discussion; values not retrieved)",
        requires=("parity-n50", "parity-n200", "headroom-n50", "headroom-n200"),
    ),
    Claim(
        "semi-real",
        "On real query features (scikit-learn digits, semi-real labels) both meta-routers beat the three baselines",
        checks=_beats("digits"),
        paper=f"Fig. 1(a) ({PAPER})",
        requires=("parity-digits", "headroom-digits"),
    ),
    Claim(
        "beats-simple-corrections",
        "The CATE learners are what matters: both meta-routers beat a T-learner correction and a constant-shift "
        "correction of the PB labels (n_G = 100, heterogeneous bias)",
        checks=_beats("n100", CORRECTIONS),
        paper="(our test of the paper's design: R-/DR-learners rather than any correction; not in the paper)",
        requires=("parity-n100", "headroom-corrections-n100"),
    ),
    Claim(
        "confounded",
        "With confounded assignment (GS labels go to some query types) both meta-routers beat Golden-only, Pooled, "
        "the T-learner and the constant shift",
        checks=_beats("confounded", ("golden", "pooled", *CORRECTIONS)),
        paper="(identification under unconfoundedness given x is the paper's argument; its experiment splits at "
        "random)",
        requires=("parity-confounded", "headroom-confounded"),
    ),
    # ---- gates
    *[_parity(t) for t in ("n50", "n100", "n200", "digits", "confounded")],
    *[_headroom(t) for t in ("n50", "n100", "n200", "digits")],
    Claim(
        "headroom-corrections-n100",
        "Testbed: All-golden beats the T-learner and the constant shift by more than the margin (n_G = 100)",
        tuple(Check("auc_allgold_n100", ">", f"auc_{b}_n100", M) for b in CORRECTIONS),
        role="headroom",
    ),
    _headroom("confounded", ("golden", "pooled", *CORRECTIONS)),
    Claim(
        "control-no-bias",
        "Negative control: in a world whose judge is unbiased (δ ≡ 0) neither meta-router beats Pooled by the margin",
        checks=tuple(fails(Check(f"auc_{m}_nobias", ">", "auc_pooled_nobias", M)) for m in ("r", "dr")),
        role="negative control",
    ),
    Claim(
        "control-shuffled-mechanism",
        "Negative control: with shuffled mechanism labels (which query carries a GS label) neither meta-router beats "
        "Pooled (on the unshuffled data) by the margin",
        checks=tuple(fails(Check(f"auc_{m}_shuffled", ">", "auc_pooled_n100", M)) for m in ("r", "dr")),
        role="negative control",
    ),
]
TABLE_METRICS = tuple(f"auc_{a}_{t}" for t in ("n100", "digits", "confounded") for a in ("allgold", "random"))
TABLE_METRICS += ("auc_rcode_n100", "auc_drcode_n100", "auc_golden_nobias", "auc_pref_nobias")

_AUC = (
    "efficiency gain over random routing normalised by the oracle's (1 = oracle ranking by true η, 0 = random), "
    "mean over ρ ∈ [0.2, 0.8]; routed queries scored by their true expected gain η; only η̂ > 0 routed"
)
_ARMS = {
    "golden": "Golden-only (forest on the n_G GS labels; leaf by CV on them)",
    "pref": "Preference-only (forest on the PB labels; leaf by its error on the n_G GS labels)",
    "pooled": "Pooled (forest on GS ∪ raw PB labels; leaf by CV on the GS labels)",
    "r": "R-learner meta-router (cross-fitted, library defaults)",
    "dr": "DR-learner meta-router (cross-fitted, library defaults)",
    "t": "T-learner correction (μ̂₁ on GS − μ̂₀ on PB), same final router (control)",
    "shift": "constant-shift correction (mean GS − μ̂₀ residual), same final router (control)",
    "allgold": "All-golden (every training query with its GS label; the ceiling)",
    "random": "Random routing (one permutation; ≈ 0 by construction)",
    "rcode": "R-learner meta-router with the released code's in-sample nuisances, clips and δ̂ leaf 2",
    "drcode": "DR-learner meta-router with the released code's in-sample nuisances, clips and δ̂ leaf 2",
}
_SETTINGS = {
    "n50": "synthetic, n_G = 50",
    "n100": "synthetic, n_G = 100",
    "n200": "synthetic, n_G = 200",
    "digits": "semi-real digits, n_G = 100",
    "nobias": "synthetic, n_G = 100, unbiased judge (control)",
    "shuffled": "synthetic, n_G = 100, mechanism labels shuffled before the fits (control)",
    "confounded": "synthetic, n_G = 100, GS labels assigned with P ∝ exp(x₁)",
}
METRICS: dict[str, str] = {}
for _s, _sd in _SETTINGS.items():
    for _a, _ad in _ARMS.items():
        METRICS[f"auc_{_a}_{_s}"] = f"{_ad}; {_sd}: {_AUC}"
        METRICS[f"rmse_{_a}_{_s}"] = f"{_ad}; {_sd}: RMSE of η̂ against the true η on the test queries"
        METRICS[f"gold_{_a}_{_s}"] = f"{_ad}; {_sd}: gold-standard labels used (training and tuning)"
        METRICS[f"bias_rmse_{_a}_{_s}"] = f"{_ad}; {_sd}: RMSE of δ̂ against the true judge bias at the PB queries"
    for _a in ("golden", "pref", "pooled"):
        METRICS[f"leaf_{_a}_{_s}"] = f"{_ARMS[_a]}; {_sd}: η̂ leaf picked by cross-validation on the gold labels"
    for _m in ("r", "dr"):
        METRICS[f"adv_{_m}_{_s}"] = f"auc_{_m}_{_s} − max(auc_golden, auc_pref, auc_pooled) ({_sd})"
        METRICS[f"vs_pooled_{_m}_{_s}"] = f"auc_{_m}_{_s} − auc_pooled_{_s} ({_sd})"
    METRICS[f"gold_parity_{_s}"] = f"max / min − 1 of the gold labels used by the compared arms ({_sd}); 0 = equal"
METRICS["auc_oracle"] = "oracle (ranking by the true η): 1 by construction (sanity)"

EXPECTED_SECONDS = {"smoke": 20, "quick": 420, "full": 7200}  # quick: wall with ICLR26_JOBS=2 on 2 cores
