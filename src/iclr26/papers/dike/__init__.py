"""DiKE (Disentangling Knowledge Representations for LLM Editing): reproduction on a planted fact world and SmolLM2.

Paper: https://arxiv.org/abs/2505.18774 (ICLR 2026). Claim: locate-then-edit editors damage *fine-grained* irrelevant
knowledge (the edited subject's other facts), most for relations similar to the edited one; DiKE keeps those facts
better (relational locality, R-Loc) with efficacy close to the best baseline, also when a batch of edits shares one
subject.

Testbed (``tiny``): the zoo model ``facts-tiny`` (a 4-layer llama that memorised 375 subjects × 8 relations). Facts
the model recalls are split by subject: one fixed half trains DiKE's disentangler once (KRD, Stage 1), edits are drawn
per seed from the other half. Relation similarity levels (0 low, 1 medium, 2 high) are planted by the world (same
object type and phrasing family = 2). Every request is edited alone and restored (FINE-KED protocol); the
same-subject setting edits several relations of one subject in one batch. Then the same comparison on the real
``smollm2-135m`` with hand-built real facts it already answers correctly (``smollm2``).

Metric names are ``<method>_<metric>_<setting>``; see ``METRICS`` for each protocol.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    tiny_model: str = "facts-tiny"
    n_edits: int = 20  # single edits per seed (tiny)
    n_same_subject: int = 2  # subjects in the batch-of-edits-sharing-one-subject setting
    same_subject_batch: int = 3  # relations of that subject edited in one batch
    krd_steps: int = 300
    krd_batch: int = 32
    # random prefixes for k* and δ (ROME/MEMIT: (5, 10), (10, 10)): none on the tiny fact model, which was trained on
    # single sentences and recalls ~25% of its facts after a 5-token prefix vs 100% without (docs: Deviations)
    prefixes: tuple[tuple[int, int], ...] = ()
    stats_n_tokens: int = 20_000
    # baselines' preservation knobs on the tiny model (MEMIT λ, AlphaEdit null-space threshold): the most preserving
    # grid value that reaches this efficacy on held-out calibration edits (0: keep the scale-transferred values)
    calibration_efficacy: float = 0.9
    calibration_edits: int = 8
    smollm2: bool = True
    n_edits_smollm2: int = 3
    krd_steps_smollm2: int = 20
    krd_batch_smollm2: int = 8
    prefixes_smollm2: tuple[tuple[int, int], ...] = ()  # no random prefixes on the real model (CPU budget)
    stats_n_tokens_smollm2: int = 10_000
    smollm2_same_subject: bool = False


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        tiny_model="facts-micro-llama",
        n_edits=2,
        n_same_subject=1,
        same_subject_batch=2,
        krd_steps=5,
        krd_batch=8,
        prefixes=(),
        stats_n_tokens=2_000,
        smollm2=False,
    ),
    "quick": Cfg(seeds=(0, 1, 2, 3, 4)),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_edits=100,
        n_same_subject=10,
        krd_steps=1000,
        stats_n_tokens=100_000,
        n_edits_smollm2=20,
        krd_steps_smollm2=300,
        stats_n_tokens_smollm2=100_000,
        smollm2_same_subject=True,
    ),
}

# --model replaces SmolLM2-135M in the real-model setting (metrics *_smollm2): edits of real country facts
ACCEPTS_MODEL = True
VERSION = 3  # bump when the method or the protocol changes: it enters the run key
# 2 (issue 11): ROME makes the un-prefixed prompt exact and the v* objective follows ROME/MEMIT's code (weight decay
#   ‖δ‖/‖h‖², KL(p_δ‖p₀)); AlphaEdit's threshold on the tiny model is relative to C's spectrum (its projector is never
#   the identity) and its null space is reported; the control "dike_mu0" (fine-grained terms off); 5 seeds at quick
# 3 (issues 39, 46): gates; the unedited model on the same requests (unedited_*), the baselines' best R-Loc and
#   same-subject efficacy, their level-0 − level-2 R-Loc drop and the number of edits as metrics
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 30,  # measured: 28.1 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 450,  # recorded VERSION 3 run: 641 s with facts-tiny (~170 s) and the disentanglers (~50 s) trained in it
    "full": 7200,  # an estimate, not measured: 100 edits per seed on both models, 5 seeds, larger key statistics
}

BASELINES = ("rome", "memit", "alphaedit")
CONTROLS = ("dike_mu0",)  # DiKE with μ = 0: the fine-grained terms (the paper's mechanism) switched off
METHODS = (*BASELINES, "dike", *CONTROLS)
SETTINGS = ("tiny", "smollm2")


def _metrics_doc() -> dict[str, str]:
    doc = {}
    for s in SETTINGS:
        doc[f"recall_{s}"] = "fraction of the world's facts the unedited model completes exactly (greedy, template 0)"
        doc[f"best_baseline_efficacy_{s}"] = "max over ROME/MEMIT/AlphaEdit of efficacy, per seed"
        doc[f"lambda_{s}"] = "λ of MEMIT/DiKE: kᵀ(λC)⁻¹k = 1 for a typical key; tiny: calibration rule (docs)"
        doc[f"alphaedit_threshold_{s}"] = (
            "AlphaEdit's absolute null-space threshold (tiny: a fraction of λ_max(C) tuned by the calibration rule)"
        )
        doc[f"alphaedit_null_frac_{s}"] = "AlphaEdit: kept null-space dimension / d_ff, mean over its edited layers"
        doc[f"alphaedit_null_energy_{s}"] = (
            "AlphaEdit: share of tr C (the preserved keys' energy) inside the kept null space, mean over layers "
            "(1 = the projector is the identity: plain ridge regression)"
        )
        for m in METHODS:
            p = f"{m}_"
            doc[p + f"efficacy_{s}"] = "single edits: P(new) > P(true) on the edit prompt (CounterFact, prob_gt)"
            doc[p + f"efficacy_em_{s}"] = "single edits: greedy decoding gives the new object (greedy_em)"
            doc[p + f"paraphrase_{s}"] = "single edits: P(new) > P(true) on held-out templates (prob_gt)"
            doc[p + f"neighborhood_{s}"] = "single edits: other subjects, same relation, P(own) > P(new) (prob_gt)"
            doc[p + f"rloc_{s}"] = (
                "single edits: R-Loc, fraction of the subject's other known facts still "
                "answered exactly (greedy_em), mean over similarity levels' probes"
            )
            for lv in (0, 1, 2):
                doc[p + f"rloc_l{lv}_{s}"] = f"R-Loc restricted to relations of similarity level {lv} (2 = highest)"
            doc[p + f"sec_per_edit_{s}"] = "wall seconds per single edit (v* optimisation + solve)"
            doc[p + f"peak_mb_{s}"] = "peak extra resident memory during one edit (MB)"
            doc[p + f"same_efficacy_{s}"] = "batch sharing one subject: P(new) > P(true) on the edit prompts"
            doc[p + f"same_rloc_{s}"] = "batch sharing one subject: R-Loc on the subject's unedited known facts"
        for lv in (0, 2):
            doc[f"dike_gain_l{lv}_{s}"] = f"DiKE R-Loc minus the best baseline's at similarity level {lv}"
        doc[f"best_baseline_rloc_{s}"] = "max over ROME/MEMIT/AlphaEdit of R-Loc, per seed"
        doc[f"best_baseline_same_efficacy_{s}"] = "max over ROME/MEMIT/AlphaEdit of the same-subject batch efficacy"
        doc[f"baseline_level_drop_{s}"] = "mean over the baselines of R-Loc at level 0 minus R-Loc at level 2"
        for k in ("efficacy", "paraphrase", "neighborhood", "rloc"):
            doc[f"unedited_{k}_{s}"] = f"{k} of the unedited model, same requests and probes (R-Loc: 1 by construction)"
        doc[f"n_edits_{s}"] = "single edits evaluated per seed"
    return doc


METRICS = _metrics_doc()


def _claims() -> list[Claim]:
    # gate floors, stated before the runs and the same on every model: the unedited model completes at least this
    # share of the setting's facts; the best baseline's edits take (efficacy) at least this often; the efficacy
    # tolerance of every locality claim (the paper's "efficacy close to the best baseline")
    RECALL_FLOOR = {"tiny": 0.9, "smollm2": 0.5}
    EDITS_TAKE_FLOOR = 0.5
    PARITY = 0.05
    out = []
    for s, where in (("tiny", "facts-tiny (planted fact world)"), ("smollm2", "SmolLM2-135M on real facts")):
        when = "smollm2" if s == "smollm2" else ""
        # ceiling-prone gate checks (efficacy 1.0 on every seed) are declared deterministic: decided on the value when
        # every seed gives the same number, tested over seeds otherwise (core.claims)
        out += [
            Claim(
                f"testbed_{s}",
                f"[{where}] gate: the unedited model completes at least {RECALL_FLOOR[s]:.0%} of the setting's facts "
                f"and the best baseline's single edits take (efficacy above {EDITS_TAKE_FLOOR})",
                (
                    Check(f"recall_{s}", ">", RECALL_FLOOR[s], 1e-6, deterministic=True),
                    Check(f"best_baseline_efficacy_{s}", ">", EDITS_TAKE_FLOOR, 1e-6, deterministic=True),
                ),
                when=when,
                role="testbed",
            ),
            Claim(
                f"efficacy_parity_{s}",
                f"[{where}] gate of every locality claim: DiKE's edits take as often as the best baseline's (efficacy "
                f"within {PARITY:g}); an editor that barely edits keeps every other fact",
                (Check(f"dike_efficacy_{s}", ">", f"best_baseline_efficacy_{s}", -PARITY, deterministic=True),),
                when=when,
                role="non-degenerate",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"headroom_{s}",
                f"[{where}] gate: the best baseline loses same-subject facts (the unedited model's R-Loc, 1 by "
                "construction, above the best baseline's), so there is something for DiKE to keep",
                (Check(f"unedited_rloc_{s}", ">", f"best_baseline_rloc_{s}"),),
                when=when,
                role="headroom",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"control_mu0_{s}",
                f"[{where}] negative control: DiKE with its fine-grained terms off (μ = 0) does not pass the R-Loc "
                "check (it is not shown above the best baseline's R-Loc)",
                (fails(Check(f"dike_mu0_rloc_{s}", ">", f"best_baseline_rloc_{s}")),),
                when=when,
                role="negative control",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"mu0_parity_{s}",
                f"[{where}] gate of the ablation: DiKE's efficacy within {PARITY:g} of DiKE μ = 0's (else the R-Loc "
                "difference is the edit strength)",
                (Check(f"dike_efficacy_{s}", ">", f"dike_mu0_efficacy_{s}", -PARITY, deterministic=True),),
                when=when,
                role="non-degenerate",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"rloc_{s}",
                f"[{where}] DiKE preserves fine-grained same-subject knowledge (R-Loc) better than ROME, MEMIT and "
                "AlphaEdit, at comparable efficacy",
                tuple(Check(f"dike_rloc_{s}", ">", f"{b}_rloc_{s}") for b in BASELINES),
                paper="FINE-KED R-Loc avg: GPT2-XL DiKE 55.0 vs AlphaEdit 46.4 / MEMIT-C 49.8; "
                "GPT-J 71.3 vs 57.2 / 65.9; LLaMA-3-8B 70.6 vs 65.6 / 66.3",
                when=when,
                requires=(f"testbed_{s}", f"efficacy_parity_{s}", f"headroom_{s}", f"control_mu0_{s}"),
            ),
            Claim(
                f"mechanism_{s}",
                f"[{where}] ablation: the fine-grained terms are what keep R-Loc: DiKE beats itself with μ = 0 "
                "(same target, MEMIT's single-layer solve)",
                (Check(f"dike_rloc_{s}", ">", f"dike_mu0_rloc_{s}"),),
                paper="ablation 'w/o fine-grained constraint' lowers R-Loc (paper's ablation table)",
                when=when,
                requires=(f"testbed_{s}", f"mu0_parity_{s}"),
            ),
            Claim(
                f"efficacy_{s}",
                f"[{where}] DiKE's efficacy is within 5 points of the best baseline's",
                (Check(f"dike_efficacy_{s}", ">", f"best_baseline_efficacy_{s}", -0.05),),
                paper="Efficacy: GPT2-XL DiKE 97.4 vs AlphaEdit 98.7; GPT-J 99.1 vs 99.9; LLaMA-3 99.1 vs 98.2",
                when=when,
                requires=(f"testbed_{s}",),
            ),
        ]
    out += [
        Claim(
            "levels_tiny",
            "[facts-tiny] gate (the paper's premise): the baselines lose more facts of the most similar relations "
            "(level 2) than of the least similar (level 0), mean over the three baselines",
            (Check("baseline_level_drop_tiny", ">", 0.0),),
            role="testbed",
            requires=("testbed_tiny",),
        ),
        Claim(
            "hard_level_tiny",
            "[facts-tiny] DiKE's R-Loc advantage over the best baseline is larger for the most similar relations "
            "(level 2) than for the least similar (level 0)",
            (Check("dike_gain_l2_tiny", ">", "dike_gain_l0_tiny"),),
            paper="FINE-KED Hard level (GPT2-XL): R-Loc 35.6 (best baseline) → 41.0 (DiKE), the largest relative gain",
            requires=("testbed_tiny", "efficacy_parity_tiny", "levels_tiny"),
        ),
        Claim(
            "same_testbed_tiny",
            "[facts-tiny] gate: in batches of edits sharing one subject the best baseline's edits take (efficacy "
            f"above {EDITS_TAKE_FLOOR}) and DiKE's within {PARITY:g} of it",
            (
                Check("best_baseline_same_efficacy_tiny", ">", EDITS_TAKE_FLOOR, 1e-6, deterministic=True),
                Check("dike_same_efficacy_tiny", ">", "best_baseline_same_efficacy_tiny", -PARITY, deterministic=True),
            ),
            role="non-degenerate",
            requires=("testbed_tiny",),
        ),
        Claim(
            "same_subject_tiny",
            "[facts-tiny] when a batch of edits shares one subject, DiKE keeps high efficacy (vs ROME) and the best "
            "R-Loc",
            (
                Check("dike_same_efficacy_tiny", ">", "rome_same_efficacy_tiny", -0.05),
                *(Check("dike_same_rloc_tiny", ">", f"{b}_same_rloc_tiny") for b in BASELINES),
            ),
            paper="batch of same-subject edits (paper figure): ROME degrades quickly; DiKE keeps ~100% efficacy and "
            "the best R-Loc",
            requires=("testbed_tiny", "same_testbed_tiny"),
        ),
    ]
    return out


CLAIMS = _claims()
HEADLINE = "rloc_tiny"
TABLE_METRICS = tuple(f"{m}_{k}_{s}" for s in SETTINGS for m in METHODS for k in ("efficacy", "rloc", "neighborhood"))
