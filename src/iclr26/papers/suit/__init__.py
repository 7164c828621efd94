"""SUIT (Subspace Knowledge Edit): reproduction on a planted fact world and on SmolLM2.

Paper: https://arxiv.org/abs/2509.24502 (ICLR 2026). Claim: computing the key and the residual of a locate-then-edit
update only inside the edit-critical subspace (purified key ``k'``, 2-D swap residual ``δ'``) preserves unrelated
knowledge much better than MEMIT and AlphaEdit (CounterFact Specificity more than doubles on LLaMA-3-8B) at equal or
better efficacy, in sequential batch editing.

Protocol here: the SUIT paper's sequential editing, scaled down — ``n_edits`` counterfactual edits applied in
sequential batches of ``batch_size`` on one model, then every request evaluated on the final model (efficacy,
paraphrase generalisation, neighbourhood specificity, and FINE-KED-style same-subject locality by similarity level),
then the weights restored. Settings: ``tiny`` (zoo ``facts-tiny``, a planted 3,000-fact world, the model's recall
reported first) and ``smollm2`` (SmolLM2-135M on hand-built real facts it answers correctly). The shared key subspace
is fitted from all subjects of the setting's world (the paper's PARAREL entities analogue). Metric names are
``<method>_<metric>_<setting>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails

# the settings of iclr26.editing.benchmark.SETTINGS, spelt out so that the card stays light (tests/test_paper_cards.py)
SETTINGS = ("tiny", "smollm2")


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    tiny_model: str = "facts-tiny"
    n_edits: int = 16  # edits per seed (tiny), applied sequentially in batches
    batch_size: int = 4
    # random prefixes for k* and δ (ROME/MEMIT: (5, 10), (10, 10)): none on the tiny fact model, which was trained on
    # single sentences and recalls ~25% of its facts after a 5-token prefix vs 100% without (docs: Deviations)
    prefixes: tuple[tuple[int, int], ...] = ()
    stats_n_tokens: int = 20_000
    calibration_efficacy: float = 0.9  # tiny: baselines' knobs tuned by editing.benchmark.baseline_knobs' rule (0: off)
    calibration_edits: int = 8
    tau_energy: float = 0.4  # paper: LLaMA-3-8B value (our models are llamas)
    smollm2: bool = True
    n_edits_smollm2: int = 2
    batch_size_smollm2: int = 1
    prefixes_smollm2: tuple[tuple[int, int], ...] = ()
    stats_n_tokens_smollm2: int = 10_000


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        tiny_model="facts-micro-llama",
        n_edits=4,
        batch_size=2,
        prefixes=(),
        stats_n_tokens=2_000,
        smollm2=False,
    ),
    # SmolLM2: 6 sequential edits per seed, the size at which the efficacy comparison is decided at the recorded spread
    # (SUIT 0.80 ± 0.27 vs 1.00 over seeds with 2 edits each: ~7 per seed needed; 6 is what the time budget allows);
    # 6 seeds (5 with 6 edits: "~6 seeds would decide"): two at a time on the two cores, six take the time of five
    "quick": Cfg(seeds=(0, 1, 2, 3, 4, 5), n_edits_smollm2=6),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_edits=200,
        batch_size=20,
        stats_n_tokens=100_000,
        n_edits_smollm2=20,
        batch_size_smollm2=5,
        stats_n_tokens_smollm2=100_000,
    ),
}

# --model replaces SmolLM2-135M in the real-model setting (metrics *_smollm2): edits of real country facts
ACCEPTS_MODEL = True
VERSION = 3  # bump when the method or the protocol changes: it enters the run key
# 2 (issue 11): v* objective as ROME/MEMIT's code; AlphaEdit's (and SUIT's) threshold on the tiny model relative to
#   C's spectrum (never the identity), null space reported; the key diagnostic (update's leak onto the shared key
#   subspace) and the shared subspace's size at τ 0.4/0.6; the control "suit_no_kp" (key projection off); 5 seeds
# 3 (issues 39, 46): gates; the unedited model on the same requests (unedited_*), the baselines' best Specificity and
#   smallest key leak and the number of edits as metrics; 6 SmolLM2 edits per seed and 6 seeds at quick (was 2 and 5)
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 40,  # measured: 35.7 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 390,  # docs/papers/suit.md: 381 s for 5 seeds (352 s CPU), cached models
    "full": 3600,  # an estimate, not measured: larger edit batches and key statistics, 5 seeds
}

BASELINES = ("memit", "alphaedit")
CONTROLS = ("suit_no_kp",)  # SUIT without Step A (no key projection): the control of the Specificity claim
METHODS = (*BASELINES, "suit", *CONTROLS)


def _metrics_doc() -> dict[str, str]:
    doc = {}
    for s in SETTINGS:
        doc[f"recall_{s}"] = "fraction of the world's facts the unedited model completes exactly (greedy, template 0)"
        doc[f"lambda_{s}"] = "λ of MEMIT/SUIT: kᵀ(λC)⁻¹k = 1 for a typical key; tiny: calibration rule (docs)"
        doc[f"alphaedit_threshold_{s}"] = (
            "AlphaEdit's absolute null-space threshold (tiny: a fraction of λ_max(C) tuned by the calibration rule)"
        )
        doc[f"alphaedit_null_frac_{s}"] = "AlphaEdit: kept null-space dimension / d_ff, mean over its edited layers"
        doc[f"alphaedit_null_energy_{s}"] = (
            "AlphaEdit: share of tr C (the preserved keys' energy) inside the kept null space, mean over layers"
        )
        doc[f"shared_dim_{s}"] = "SUIT Step A: directions in the shared key subspace U_s at τ_energy, mean over layers"
        doc[f"shared_dim_tau06_{s}"] = "the same at τ_energy = 0.6 (the paper's GPT-J / Qwen2.5 value)"
        doc[f"best_baseline_efficacy_{s}"] = "max over MEMIT/AlphaEdit of efficacy, per seed"
        doc[f"best_baseline_neighborhood_{s}"] = "max over MEMIT/AlphaEdit of Specificity, per seed"
        doc[f"min_baseline_key_leak_{s}"] = "min over MEMIT/AlphaEdit of the key leak, per seed"
        doc[f"n_edits_{s}"] = "edits applied in sequence per seed"
        for k in ("efficacy", "paraphrase", "neighborhood", "rloc"):
            doc[f"unedited_{k}_{s}"] = f"{k} of the unedited model, same requests and probes (R-Loc: 1 by construction)"
        for m in METHODS:
            p = f"{m}_"
            doc[p + f"efficacy_{s}"] = "after all sequential batches: P(new) > P(true) on edit prompts (prob_gt)"
            doc[p + f"efficacy_em_{s}"] = "after all batches: greedy decoding gives the new object (greedy_em)"
            doc[p + f"paraphrase_{s}"] = "after all batches: P(new) > P(true) on held-out templates (prob_gt)"
            doc[p + f"neighborhood_{s}"] = (
                "after all batches: Specificity, other subjects with the same relation, "
                "P(own object) > P(new) (CounterFact, prob_gt)"
            )
            doc[p + f"rloc_{s}"] = "after all batches: same-subject known facts still answered exactly (greedy_em)"
            for lv in (0, 1, 2):
                doc[p + f"rloc_l{lv}_{s}"] = f"R-Loc restricted to relations of similarity level {lv}"
            doc[p + f"score_{s}"] = "S: harmonic mean of efficacy, paraphrase and neighbourhood (CounterFact)"
            doc[p + f"sec_per_edit_{s}"] = "wall seconds per edit (batches included)"
            doc[p + f"peak_mb_{s}"] = "peak extra resident memory during one batch (MB)"
            doc[p + f"key_leak_{s}"] = (
                "SUIT's key diagnostic: ‖ΔW U_s‖_F / ‖ΔW‖_F of the summed update over the edited layers, U_s the "
                "shared key subspace SUIT fits (paper: 0.003–0.02 for SUIT vs 0.28–0.81 for the baselines)"
            )
    return doc


METRICS = _metrics_doc()


def _claims() -> list[Claim]:
    # gate floors, stated before the runs and the same on every model: the unedited model completes at least this
    # share of the setting's facts; the best baseline's edits take at least this often after the whole sequence; the
    # efficacy tolerance of the Specificity claim (the paper's "equal or better efficacy", our 5 points); the share of
    # a baseline's update on the shared key directions below which there is no leak for SUIT to remove
    RECALL_FLOOR = {"tiny": 0.9, "smollm2": 0.5}
    EDITS_TAKE_FLOOR = 0.5
    PARITY = 0.05
    LEAK_FLOOR = 0.05
    out = []
    for s, where in (("tiny", "facts-tiny (planted fact world)"), ("smollm2", "SmolLM2-135M on real facts")):
        when = "smollm2" if s == "smollm2" else ""
        # ceiling-prone gate checks (efficacy 1.0 on every seed) are declared deterministic: decided on the value when
        # every seed gives the same number, tested over seeds otherwise (core.claims)
        out += [
            Claim(
                f"testbed_{s}",
                f"[{where}] gate: the unedited model completes at least {RECALL_FLOOR[s]:.0%} of the setting's facts "
                f"and the best baseline's edits take (efficacy above {EDITS_TAKE_FLOOR} after the whole sequence)",
                (
                    Check(f"recall_{s}", ">", RECALL_FLOOR[s], 1e-6, deterministic=True),
                    Check(f"best_baseline_efficacy_{s}", ">", EDITS_TAKE_FLOOR, 1e-6, deterministic=True),
                ),
                when=when,
                role="testbed",
            ),
            Claim(
                f"efficacy_parity_{s}",
                f"[{where}] gate of the Specificity claim: SUIT's edits take as often as the best baseline's "
                f"(efficacy within {PARITY:g}); an editor that barely edits disturbs nothing",
                (Check(f"suit_efficacy_{s}", ">", f"best_baseline_efficacy_{s}", -PARITY, deterministic=True),),
                when=when,
                role="non-degenerate",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"headroom_specificity_{s}",
                f"[{where}] gate: the baselines lose Specificity (the unedited model's, on the same probes, above the "
                "best baseline's), so there is room to beat them",
                (Check(f"unedited_neighborhood_{s}", ">", f"best_baseline_neighborhood_{s}"),),
                when=when,
                role="headroom",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"control_no_kp_specificity_{s}",
                f"[{where}] negative control: SUIT without its key projection (Step A off) does not pass the "
                "Specificity check (it is not shown above the best baseline's)",
                (fails(Check(f"suit_no_kp_neighborhood_{s}", ">", f"best_baseline_neighborhood_{s}")),),
                when=when,
                role="negative control",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"specificity_{s}",
                f"[{where}] SUIT preserves unrelated knowledge (neighbourhood Specificity) better than MEMIT and "
                "AlphaEdit in sequential batch editing, at comparable efficacy",
                tuple(Check(f"suit_neighborhood_{s}", ">", f"{b}_neighborhood_{s}") for b in BASELINES),
                paper="CounterFact, 1,000 edits in batches of 100: Spe. LLaMA-3-8B SUIT 74.2 vs AlphaEdit 31.0; "
                "GPT-J 67.7 vs 49.0; Qwen2.5-7B 72.3 vs 43.4",
                when=when,
                requires=(
                    f"testbed_{s}",
                    f"efficacy_parity_{s}",
                    f"headroom_specificity_{s}",
                    f"control_no_kp_specificity_{s}",
                ),
            ),
            Claim(
                f"suit_edits_{s}",
                f"[{where}] gate of the key diagnostic: SUIT's edits take (efficacy above {EDITS_TAKE_FLOOR}); an "
                "update that does not edit can avoid any direction",
                (Check(f"suit_efficacy_{s}", ">", EDITS_TAKE_FLOOR, 1e-6, deterministic=True),),
                when=when,
                role="non-degenerate",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"headroom_leak_{s}",
                f"[{where}] gate: each baseline puts more than {LEAK_FLOOR:.0%} of its update on the shared key "
                "directions, so there is a leak for SUIT to remove (paper: 28–81 %)",
                tuple(Check(f"{b}_key_leak_{s}", ">", LEAK_FLOOR) for b in BASELINES),
                when=when,
                role="headroom",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"control_no_kp_leak_{s}",
                f"[{where}] negative control: SUIT without its key projection does not pass the leak check (its "
                "leak is not shown below the smallest baseline leak)",
                (fails(Check(f"suit_no_kp_key_leak_{s}", "<", f"min_baseline_key_leak_{s}")),),
                when=when,
                role="negative control",
                requires=(f"testbed_{s}",),
            ),
            Claim(
                f"key_leak_{s}",
                f"[{where}] mechanism: SUIT's update leaks less onto the shared key directions than MEMIT's and "
                "AlphaEdit's, and less than SUIT without the key projection",
                (
                    *(Check(f"suit_key_leak_{s}", "<", f"{b}_key_leak_{s}") for b in BASELINES),
                    Check(f"suit_key_leak_{s}", "<", f"suit_no_kp_key_leak_{s}"),
                ),
                paper="leak onto shared directions: SUIT 0.003–0.02 vs baselines 0.28–0.81",
                when=when,
                requires=(f"testbed_{s}", f"suit_edits_{s}", f"headroom_leak_{s}", f"control_no_kp_leak_{s}"),
            ),
            Claim(
                f"efficacy_{s}",
                f"[{where}] SUIT's efficacy is comparable: within 5 points of the best baseline's",
                (Check(f"suit_efficacy_{s}", ">", f"best_baseline_efficacy_{s}", -0.05),),
                paper="Eff. LLaMA-3-8B SUIT 99.7 vs AlphaEdit 97.3; GPT-J 99.2 vs 98.3; Qwen2.5-7B 99.2 vs 97.1",
                when=when,
                requires=(f"testbed_{s}",),
            ),
        ]
    out.append(
        Claim(
            "score_tiny",
            "[facts-tiny] SUIT has the best overall score S (harmonic mean of efficacy, generalisation, specificity)",
            tuple(Check("suit_score_tiny", ">", f"{b}_score_tiny") for b in BASELINES),
            paper="S: LLaMA-3-8B SUIT 86.8 vs AlphaEdit 55.8; GPT-J 84.7 vs 73.0; Qwen2.5-7B 86.1 vs 67.8",
            requires=("testbed_tiny",),
        )
    )
    return out


CLAIMS = _claims()
HEADLINE = "specificity_tiny"
TABLE_METRICS = tuple(
    f"{m}_{k}_{s}" for s in SETTINGS for m in METHODS for k in ("efficacy", "neighborhood", "rloc", "key_leak")
) + tuple(f"shared_dim_{s}" for s in SETTINGS)
