"""The fact-editing testbed the editing papers share (DiKE, SUIT): a setting's model, facts and corpus, the baselines'
preservation knobs tuned by one rule, single-edit evaluation and the metric names the cards use.

Two settings: ``tiny`` (a zoo fact model with a planted world) and the real-model setting (named ``smollm2`` in the
metrics; SmolLM2-135M on real country facts unless a model is given). Facts the model recalls are split by subject:
one fixed half is for calibration (and DiKE's disentangler), edits come from the other half.
"""

from __future__ import annotations

import random

import torch

from iclr26.editing.alphaedit import AlphaEdit, AlphaEditConfig
from iclr26.editing.evaluate import counterfact_requests, evaluate_edits, known_facts
from iclr26.editing.memit import MEMIT, MEMITConfig
from iclr26.lm import zoo

SETTINGS = ("tiny", "smollm2")  # the metrics' suffixes: the planted fact world, the real-model setting
REAL_MODEL = "smollm2-135m"  # the real-model setting's default model; `--model X` replaces it


def load_setting(setting: str, cfg, model_name: str | None = None):
    """(model, tok, world, corpus) for ``tiny`` or the real-model setting (named ``smollm2`` in the metrics).

    The real-model setting edits ``model_name`` (any local HF causal LM; default SmolLM2-135M) on real country facts.
    """
    if setting == "tiny":
        model, tok = zoo.load(cfg.tiny_model, progress=True)
        world = zoo.world_of(cfg.tiny_model)
        return model, tok, world, world.sentences()
    from iclr26.editing import real_facts

    model, tok = zoo.load(model_name or REAL_MODEL)
    return model, tok, real_facts.RealFactWorld(), None  # corpus None: the editors' default (Wikipedia text)


def subject_split(world, seed: int = 12345) -> tuple[list[str], list[str]]:
    """A fixed half of the subjects trains the disentangler; edits come from the other half."""
    subs = list(world.entities)
    random.Random(seed).shuffle(subs)
    h = len(subs) // 2
    return subs[:h], subs[h:]


def calibrated_lambda(model, tok, layer: int, requests, cov: torch.Tensor) -> float:
    """λ such that a typical edit key has ``kᵀ(λC)⁻¹k = 1`` (see docs: the paper's λ is tied to its model's key
    scale). Computed from KRD-side requests, never from the evaluated edits."""
    from iclr26.editing.compute import compute_keys

    k = compute_keys(model, tok, requests, layer).double()
    q = torch.stack([x @ torch.linalg.solve(cov, x) for x in k])
    return float(q.median())


LAMBDA_DIVISORS = (1, 2, 4, 8, 16, 32, 64)  # λ = λ₁ / q: kᵀ(λC)⁻¹k = q for a typical key
# AlphaEdit threshold on the tiny model as a fraction of λ_max(C): always below the top eigenvalue, so the projector is
# never the identity (an absolute grid 2e-2 × 1…1000 ended at 20 > every eigenvalue: plain ridge regression, issue 11)
RELATIVE_THRESHOLDS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3)


def efficacy_of(editor, model, tok, requests) -> float:
    """Mean CounterFact efficacy (prob_gt) of single edits, each restored."""
    effs = []
    for r in requests:
        res = editor.edit(model, tok, [r])
        effs.append(evaluate_edits(model, tok, [r])["efficacy_prob_gt"])
        res.restore()
    return sum(effs) / len(effs)


def tune_knob(make, grid, model, tok, requests, target: float):
    """The first (most preserving) grid value whose editor ``make(value)`` reaches ``target`` efficacy on
    ``requests``; the last value if none does. Returns (value, efficacy)."""
    for i, value in enumerate(grid):
        eff = efficacy_of(make(value), model, tok, requests)
        if eff >= target or i == len(grid) - 1:
            return value, eff


def baseline_knobs(model, tok, corpus, common, cfg, setting, lam_requests, ctx=None) -> tuple[float, float, bool]:
    """(MEMIT/DiKE/SUIT λ, AlphaEdit null-space threshold, whether it is relative to λ_max(C)) for a setting.

    λ₁ makes ``kᵀ(λ₁C)⁻¹k = 1`` for a typical key (the ratio d_ff/λ of MEMIT on GPT-J and AlphaEdit on LLaMA-3).
    On the tiny model the baselines' knobs are then tuned by one rule, the same for each: the most preserving value
    (largest λ, smallest threshold) whose editor reaches ``cfg.calibration_efficacy`` on calibration edits drawn from
    the disentangler-side subjects (never the evaluated edits). DiKE uses MEMIT's λ and SUIT (built on AlphaEdit)
    AlphaEdit's threshold as they come out: the methods under test are not tuned."""
    probe = MEMIT(MEMITConfig(**common), corpus=corpus)
    last = probe.layers(model)[-1]
    lam1 = calibrated_lambda(model, tok, last, lam_requests, probe.covariance(model, tok, last))
    thr0 = AlphaEditConfig().nullspace_threshold
    if setting != "tiny" or cfg.calibration_efficacy <= 0:
        return lam1, thr0, False
    reqs = lam_requests[: cfg.calibration_edits]
    q, eff_m = tune_knob(
        lambda q: MEMIT(MEMITConfig(**common, mom2_update_weight=lam1 / q), corpus=corpus),
        LAMBDA_DIVISORS,
        model,
        tok,
        reqs,
        cfg.calibration_efficacy,
    )
    f, eff_a = tune_knob(
        lambda f: AlphaEdit(AlphaEditConfig(**common, nullspace_threshold=f, nullspace_relative=True), corpus=corpus),
        RELATIVE_THRESHOLDS,
        model,
        tok,
        reqs,
        cfg.calibration_efficacy,
    )
    if ctx is not None:
        ctx.log(
            f"{setting}: calibration on {len(reqs)} edits: MEMIT λ = λ₁/{q} (efficacy {eff_m:.2f}), "
            f"AlphaEdit threshold = {f:g}×λ_max(C) (efficacy {eff_a:.2f})"
        )
    return lam1 / q, f, True


def prepare(setting: str, cfg, ctx=None, model_name: str | None = None):
    """Everything a seed needs that does not depend on the seed (model, facts, split, editors)."""
    model, tok, world, corpus = load_setting(setting, cfg, model_name)
    known_list = known_facts(model, tok, world)
    known = set(known_list)
    recall = len(known_list) / len(world.facts)
    krd_subj, edit_subj = subject_split(world)
    krd_facts = [f for f in known_list if f.subject in set(krd_subj)]
    if not krd_facts or not any(f.subject in set(edit_subj) for f in known_list):
        name = model_name or (cfg.tiny_model if setting == "tiny" else REAL_MODEL)
        raise ValueError(
            f"{name!r} completes {len(known_list)} of the {len(world.facts)} facts of the {setting} setting "
            f"(recall {recall:.3f}); editing needs known facts on both sides of the subject split (disentangler "
            "training and evaluated edits). Use a model that knows some of these facts"
        )
    lam_reqs = counterfact_requests(world, krd_facts[:32], seed=0)
    return dict(
        model=model,
        tok=tok,
        world=world,
        corpus=corpus,
        known=known,
        known_list=known_list,
        recall=recall,
        edit_subj=set(edit_subj),
        krd_facts=krd_facts,
        lam_reqs=lam_reqs,
    )


def single_edits(editor, model, tok, requests) -> tuple[dict[str, float], float, float]:
    """Edit each request alone, evaluate, restore; mean metrics, seconds per edit, peak MB."""
    acc: dict[str, list[float]] = {}
    secs, peaks = [], []
    for r in requests:
        res = editor.edit(model, tok, [r])
        m = evaluate_edits(model, tok, [r])
        res.restore()
        secs.append(res.seconds_per_edit)
        peaks.append(max(res.peak_mem_mb))
        for k, v in m.items():
            acc.setdefault(k, []).append(v)
    mean = {k: _nanmean(v) for k, v in acc.items()}
    return mean, sum(secs) / len(secs), max(peaks)


def _nanmean(xs):
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else float("nan")


def summarise(prefix: str, m: dict[str, float], setting: str) -> dict[str, float]:
    """Rename evaluate_edits' metrics to this paper's names."""
    pick = {
        "efficacy": "efficacy_prob_gt",
        "efficacy_em": "efficacy_greedy_em",
        "paraphrase": "paraphrase_prob_gt",
        "neighborhood": "neighborhood_prob_gt",
        "rloc": "locality_greedy_em",
        **{f"rloc_l{lv}": f"locality_l{lv}_greedy_em" for lv in (0, 1, 2)},
    }
    return {f"{prefix}_{k}_{setting}": m.get(v, float("nan")) for k, v in pick.items()}


def nullspace_metrics(editor, setting: str) -> dict[str, float]:
    """AlphaEdit's projector as it was used: absolute threshold, kept dimension / d_ff, share of K₀'s energy kept."""
    info = getattr(editor, "nullspace_info", None) or {}
    if not info:
        return {}
    vals = list(info.values())
    return {
        f"alphaedit_threshold_{setting}": sum(v["threshold"] for v in vals) / len(vals),
        f"alphaedit_null_frac_{setting}": sum(v["null_dim"] / v["d"] for v in vals) / len(vals),
        f"alphaedit_null_energy_{setting}": sum(v["energy_share"] for v in vals) / len(vals),
    }


def plot_rloc_by_level(run_dir, per_seed, methods, title):
    import matplotlib.pyplot as plt
    import numpy as np

    settings = [s for s in SETTINGS if any(f"{methods[0]}_rloc_l0_{s}" in m for m in per_seed.values())]
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 3.6), squeeze=False)
    for ax, s in zip(axes[0], settings):
        for j, meth in enumerate(methods):
            ys = np.array([[m.get(f"{meth}_rloc_l{lv}_{s}", np.nan) for lv in (0, 1, 2)] for m in per_seed.values()])
            mean = np.nanmean(ys, 0)
            err = np.nanstd(ys, 0)
            ax.errorbar(np.arange(3) + 0.06 * (j - len(methods) / 2), mean, yerr=err, marker="o", capsize=3, label=meth)
        ax.set_xticks([0, 1, 2], ["0 (low)", "1 (medium)", "2 (high)"])
        ax.set_xlabel("similarity of the probe's relation to the edited one")
        ax.set_ylabel("R-Loc (same-subject facts kept, greedy EM)")
        ax.set_title(f"{title}: {s}")
        ax.legend(fontsize=7)
    return fig
