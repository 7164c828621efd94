"""BED-LLM: Intelligent Information Gathering with LLMs and Bayesian Experimental Design (Choudhury, Williamson,
Goliński, Miao, Bickford Smith, Kirchhof, Zhang, Rainforth; ICLR 2026).

Paper: https://arxiv.org/abs/2508.21184. Method: `iclr26.agents.bed_llm`.

The idea: an LLM that gathers information over several turns should ask, each turn, the question with the largest
expected information gain (EIG) about the unknown target, under a joint model p_f(θ; h_t) · p(y | θ, x) made of a
belief over hypotheses (sampled from the LLM, then filtered for consistency with the history) and the LLM's answer
probabilities. The EIG is Rao-Blackwellised over the finite answer set (no sampled answers).

Protocol here (all arms share one simulated LLM: an answer model with the world's exact answer probabilities, an
in-context hypothesis sampler that forgets 30 % of the history and prefers popular entities, a coherent sampler as the
control, and a hypothesis-conditioned question proposer; see `simulated.py`):

1. 20 Questions on a 1,000-entity world with correlated attributes, 12 subjective attributes, 5 % ambiguous pairs and
   3 % answer noise (`agents.bed_llm.world_twenty_questions`), and the same world with 0, 6 and 24 subjective
   attributes (the n_vague curve); success within 20 questions for BED-LLM, entropy-only and random selection (same
   belief and candidates), EIG with the in-context belief (no filter), naive direct questioning; entropy-only versus
   naive with the same coherent sampler; gates: an exact-posterior oracle (headroom), a hypothesis-blind likelihood
   and random selection (negative controls), the filter with a coherent sampler (negative control).
2. Preference elicitation (`agents.bed_llm.world_preferences`): 10 questions, then hit-rate@5 of the predicted top
   items; exact-posterior headroom, blind-likelihood control.
3. Real LLM: SmolLM2-135M's p(yes | animal, question) with the library's default prompt (`HFAnswerModel`) for 40
   animals × 22 questions we wrote the answers to; its agreement with our answers (AUC, a testbed gate), then games in
   which SmolLM2's probabilities, calibrated by centring each question's logit over the animals (`centre_logits`),
   are the questioner's likelihood and our written answers (3 % noise) are the answerer; gates: our written answers
   as the likelihood (headroom) and SmolLM2's rows given to the wrong animals (negative control).

Every arm's knobs (filter threshold τ, guess threshold, naive's confidence) are tuned by one rule: the best
validation success over a stated grid, on validation targets disjoint from the test targets, per seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.claims import Check, Claim, fails

VERSION = 2
ACCEPTS_MODEL = True  # --model replaces SmolLM2 as the real model's answer likelihood
EXPECTED_SECONDS = {"smoke": 20, "quick": 420, "full": 1800}  # quick: wall with ICLR26_JOBS=2 on 2 cores

ARMS = ("bed", "entropy", "random", "noflt", "naive", "blind", "bed_coherent", "noflt_coherent", "entropy_coherent",
        "random_coherent", "naive_coherent", "bed_uncond", "oracle")  # fmt: skip
PREF_ARMS = ("bed", "entropy", "random", "noflt", "naive", "blind", "oracle")


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7)  # 8: the 2-seed pilot's spreads left 4-6 claims undecided
    # 20 Questions world (dossier: 10 classes, 60 attributes, 5 % ambiguous; 1,000 entities so that 20 turns bind)
    n_classes: int = 10
    n_subclasses: int = 5
    per_subclass: int = 20
    n_attributes: int = 60
    n_vague: int = 12  # subjective attributes (p(yes) = 0.5 ± 0.15 for every entity); our choice
    vague_sweep: tuple[int, ...] = (0, 6, 24)  # further worlds for the n_vague curve (BED-LLM, entropy, random)
    ambiguous: float = 0.05
    noise: float = 0.03  # answerer error; Entity-Deduction Arena reports ~3 % judge errors (dossier suggested 5 %)
    max_turns: int = 20  # the 20 Questions budget (paper)
    n_games: int = 200  # test games per arm per seed
    n_val_games: int = 40  # validation games per grid point
    # the simulated LLM and BED-LLM's settings (paper values not retrieved; dossier's ranges)
    n_hypotheses: int = 30
    n_candidates: int = 15
    refill_rounds: int = 5
    n_guesses: int = 2  # "is it θ?" candidates for the top hypotheses
    forget: float = 0.3  # the in-context sampler ignores 30 % of the history (dossier)
    popularity: float = 1.0  # Zipf exponent of the sampler's prior (mode collapse); our choice
    arms: tuple[str, ...] = ARMS
    # tuning grids (one rule for all arms: best validation success); τ grid spans every distinct filter behaviour
    tau_grid: tuple[float, ...] = (0.02, 0.2, 0.5)
    guess_grid: tuple[float, ...] = (0.1, 0.2, 0.33, 0.5, 1.0)
    naive_grid: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)
    # preference elicitation (dossier: 12 features; 10 questions instead of 5, so the arms separate)
    pref_items: int = 40
    pref_features: int = 12
    pref_beta: float = 1.5
    pref_pool: int = 2000
    pref_turns: int = 10
    pref_users: int = 200
    pref_val_users: int = 40
    pref_k: int = 5
    pref_tau_grid: tuple[float, ...] = (0.05, 0.2, 0.35, 0.5)  # 0.5: the natural upper end for yes/no
    # real model
    real_model: str = "smollm2-135m"
    real_turns: int = 20
    real_rounds: int = 2  # every animal is the target this many times per seed

    def __post_init__(self):
        unknown = set(self.arms) - set(ARMS)
        if unknown:
            raise ValueError(f"unknown arms {sorted(unknown)}; choose from {ARMS}")
        if set(ARMS) - set(self.arms):
            raise ValueError(
                f"arms must include every arm the claims compare: missing {sorted(set(ARMS) - set(self.arms))}"
            )
        if self.n_vague in self.vague_sweep:
            raise ValueError(
                f"vague_sweep {self.vague_sweep} must not repeat the main world's n_vague = {self.n_vague}"
            )
        if self.max_turns < 10:
            raise ValueError(f"max_turns must be ≥ 10 (success10 is reported), got {self.max_turns}")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_subclasses=3,
        per_subclass=6,
        n_games=12,
        n_val_games=6,
        tau_grid=(0.2,),
        guess_grid=(0.5,),
        naive_grid=(0.6,),
        pref_items=20,
        pref_pool=300,
        pref_turns=5,
        pref_users=8,
        pref_val_users=4,
        pref_tau_grid=(0.2,),
        real_rounds=1,
        real_turns=10,
        max_turns=12,
        vague_sweep=(0,),
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(
        seeds=tuple(range(10)), n_games=400, n_val_games=100, pref_users=300, pref_val_users=100, real_rounds=5
    ),
}

_BED_ENT = Check("success_bed", ">", "success_entropy", margin=0.10)
_ENT_NAIVE = Check("success_entropy_coherent", ">", "success_naive_coherent", margin=0.10)
_FILTER = Check("success_bed", ">", "success_noflt", margin=0.10)

CLAIMS = [
    Claim(
        "bed-beats-entropy",
        "BED-LLM (EIG) wins more 20 Questions games than entropy-only selection, by a clear margin (10 points)",
        (_BED_ENT,),
        paper="20Q success up to 95 %; substantial gains over entropy-based selection (several LLMs, Animals/"
        "Celebrities/Things)",
        requires=("oracle-headroom", "control-blind-vs-entropy"),
        note="at n_vague = 12 subjective attributes; the curve over n_vague is reported (gap_bed_entropy_v*)",
    ),
    Claim(
        "entropy-beats-naive",
        "Entropy-only selection wins more games than naive direct questioning, by a clear margin (10 points), both "
        "with the same (coherent) sampler",
        (_ENT_NAIVE,),
        paper="ordering BED-LLM > Entropy > Naive QA; BED-LLM +37.4 points over direct prompting on average",
        requires=("oracle-headroom-naive", "control-random-vs-naive"),
        note="the coherent sampler for both: with the forgetful one naive, which has no filter, loses to the filter "
        "(success_entropy vs success_naive are reported)",
    ),
    Claim(
        "filter",
        "Removing the sample-then-filter update (EIG with the in-context belief) lowers the success rate by 10 points",
        (_FILTER,),
        paper="in-context updates alone produce hypotheses that contradict the history; filtering helps",
        requires=("oracle-headroom", "control-filter-coherent"),
    ),
    Claim(
        "eig-beats-random",
        "EIG selection beats random choice among the same candidates (selection matters, not only the proposer)",
        (Check("success_bed", ">", "success_random"),),
        paper="(implied by the design; not a reported number)",
        requires=("oracle-headroom", "control-blind-vs-random"),
    ),
    Claim(
        "preference",
        "Preference elicitation: BED-LLM predicts the user's top items better than entropy-only and naive questioning",
        (Check("hit_bed", ">", "hit_entropy"), Check("hit_bed", ">", "hit_naive")),
        paper="movie-preference elicitation: BED-LLM best across question budgets (exact numbers not retrieved)",
        requires=("pref-headroom", "control-pref-blind"),
    ),
    Claim(
        "preference-filter",
        "Preference elicitation: removing the filter lowers the hit-rate",
        (Check("hit_bed", ">", "hit_noflt"),),
        paper="(ablation, as in 20 Questions)",
        requires=("pref-headroom",),
    ),
    Claim(
        "real-games",
        "With SmolLM2 as the likelihood, BED-LLM wins more games than entropy-only and naive questioning",
        (Check("real_success_bed", ">", "real_success_entropy"), Check("real_success_bed", ">", "real_success_naive")),
        paper="paper: GPT-4o / Llama-3.3-70B / Qwen2.5-72B questioners",
        requires=("real-informative", "real-headroom", "control-real-shuffled"),
    ),
    # ---- gates
    Claim(
        "oracle-headroom",
        "Testbed: the exact-posterior questioner beats entropy-only, random selection and the no-filter arm by more "
        "than the 10-point margin, so the 20-question budget leaves room for a better selection rule and belief",
        (
            Check("success_oracle", ">", "success_entropy", margin=0.10),
            Check("success_oracle", ">", "success_random", margin=0.10),
            Check("success_oracle", ">", "success_noflt", margin=0.10),
        ),
        role="headroom",
    ),
    Claim(
        "oracle-headroom-naive",
        "Testbed: the exact-posterior questioner beats naive questioning with the coherent sampler by the margin",
        (Check("success_oracle", ">", "success_naive_coherent", margin=0.10),),
        role="headroom",
    ),
    Claim(
        "control-blind-vs-entropy",
        "Negative control: BED-LLM with a hypothesis-blind likelihood (EIG 0 for every question, nothing filtered) "
        "does not beat entropy-only by the claim's margin",
        (fails(Check("success_blind", ">", "success_entropy", margin=0.10)),),
        role="negative control",
    ),
    Claim(
        "control-blind-vs-random",
        "Negative control: the hypothesis-blind likelihood does not beat random selection",
        (fails(Check("success_blind", ">", "success_random")),),
        role="negative control",
    ),
    Claim(
        "control-random-vs-naive",
        "Negative control: random selection with the same belief, sampler and candidates as entropy-only does not beat "
        "naive questioning by the margin (else the belief and proposer, not the entropy score, would win the claim)",
        (fails(Check("success_random_coherent", ">", "success_naive_coherent", margin=0.10)),),
        role="negative control",
    ),
    Claim(
        "control-filter-coherent",
        "Negative control: with a coherent sampler (nothing to filter out) the filter's gain is below the margin",
        (fails(Check("success_bed_coherent", ">", "success_noflt_coherent", margin=0.10)),),
        role="negative control",
    ),
    Claim(
        "pref-headroom",
        "Testbed: the exact posterior over the 2,000 profiles beats entropy-only, naive and no-filter hit-rates",
        (
            Check("hit_oracle", ">", "hit_entropy"),
            Check("hit_oracle", ">", "hit_naive"),
            Check("hit_oracle", ">", "hit_noflt"),
        ),  # fmt: skip
        role="headroom",
    ),
    Claim(
        "control-pref-blind",
        "Negative control: preference elicitation with a hypothesis-blind likelihood does not beat entropy-only",
        (fails(Check("hit_blind", ">", "hit_entropy")),),
        role="negative control",
    ),
    Claim(
        "real-informative",
        "SmolLM2's p(yes | animal, question) agrees with our written answers above chance (AUC > 0.5 by 0.05)",
        (Check("real_auc", ">", 0.5, margin=0.05, deterministic=True),),
        paper="(precondition for the real-model games)",
        role="testbed",
    ),
    Claim(
        "real-headroom",
        "Testbed: with our written answers as the likelihood, BED-LLM beats the real-model entropy and naive arms",
        (
            Check("real_success_bed_truth", ">", "real_success_entropy"),
            Check("real_success_bed_truth", ">", "real_success_naive"),
        ),  # fmt: skip
        role="headroom",
    ),
    Claim(
        "control-real-shuffled",
        "Negative control: SmolLM2's answer rows given to the wrong animals (same answer marginals, no knowledge of "
        "the animal) do not pass the claim's check: they do not beat entropy-only and naive questioning",
        (
            fails(Check("real_success_bed_shuffled", ">", "real_success_entropy")),
            fails(Check("real_success_bed_shuffled", ">", "real_success_naive")),
        ),
        role="negative control",
    ),
    Claim(
        "vague-mechanism",
        "Sanity: without subjective attributes (n_vague = 0) the EIG and the entropy score nearly coincide, so "
        "BED-LLM's gap over entropy-only is below the 10-point margin",
        (fails(Check("success_bed_v0", ">", "success_entropy_v0", margin=0.10)),),
        role="sanity",
    ),
]
TABLE_METRICS = tuple(f"{k}_v{v}" for v in (0, 6, 24) for k in ("success_bed", "success_entropy", "success_random"))
TABLE_METRICS += ("success_entropy", "success_naive", "success_random", "filter_gain", "filter_gain_coherent")

METRICS = {
    **{
        f"success_{a}": f"20 Questions: games won (a correct 'is it θ?' guess) within max_turns, arm {a}" for a in ARMS
    },  # fmt: skip
    **{
        f"success_{a}_v{v}": f"20 Questions success of arm {a} in the same seed's world with n_vague = {v} "
        "(knobs from the main world)"
        for a in ("bed", "entropy", "random")
        for v in (0, 6, 24)
    },  # fmt: skip
    **{f"gap_bed_entropy_v{v}": f"success_bed − success_entropy at n_vague = {v}" for v in (0, 6, 12, 24)},
    "filter_gain": "success_bed − success_noflt (forgetful in-context sampler)",
    "filter_gain_coherent": "the same with a coherent sampler (forget = 0): the filter has nothing to correct",
    **{
        f"hit_{a}": f"preference elicitation: hit-rate@k of the belief-mean profile after pref_turns questions, arm {a}"
        for a in PREF_ARMS
    },  # fmt: skip
    "real_auc": "ROC AUC of SmolLM2's raw p(yes) (2-shot prompt) vs our written answers, all (animal, question) pairs",
    "real_auc_calibrated": "the same after centring each question's logit over the 40 animals (the games' likelihood)",
    "real_success_bed_truth": "BED-LLM in the same games with our written answers as the likelihood (upper reference)",
    "real_success_bed_shuffled": "BED-LLM with SmolLM2's calibrated rows permuted across the animals (control)",
    **{
        f"real_success_{a}": f"SmolLM2-likelihood games: fraction won within real_turns, arm {a}"
        for a in ("bed", "entropy", "random", "noflt", "naive")
    },  # fmt: skip
}
