"""The dike reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict

import torch

from ...core.paths import trained_cache_dir
from ...core.threads import torch_threads
from ...editing import MEMIT, ROME, AlphaEdit, AlphaEditConfig, MEMITConfig, ROMEConfig
from ...editing.dike import DiKE, DiKEConfig
from ...editing.dike_disentangler import Disentangler, KRDConfig, KRDSample
from ...editing.evaluate import counterfact_requests, evaluate_edits, known_facts
from ...editing.stats import model_fingerprint
from ...lm import zoo
from ...lm.adapters import ModelAdapter
from . import BASELINES, METHODS, SETTINGS, Cfg

# ---------------------------------------------------------------------------------------------------------------------
# settings: a model, its facts and a corpus for the key statistics


REAL_MODEL = "smollm2-135m"  # the real-model setting's default model; `iclr26 run dike --model X` replaces it


def load_setting(setting: str, cfg: Cfg, model_name: str | None = None):
    """(model, tok, world, corpus) for ``tiny`` or the real-model setting (named ``smollm2`` in the metrics).

    The real-model setting edits ``model_name`` (any local HF causal LM; default SmolLM2-135M) on real country facts.
    """
    if setting == "tiny":
        model, tok = zoo.load(cfg.tiny_model, progress=True)
        world = zoo.world_of(cfg.tiny_model)
        return model, tok, world, world.sentences()
    from ...worlds import real_facts

    model, tok = zoo.load(model_name or REAL_MODEL)
    return model, tok, real_facts.RealFactWorld(), None  # corpus None: the editors' default (Wikipedia text)


def subject_split(world, seed: int = 12345) -> tuple[list[str], list[str]]:
    """A fixed half of the subjects trains the disentangler; edits come from the other half."""
    subs = list(world.entities)
    random.Random(seed).shuffle(subs)
    h = len(subs) // 2
    return subs[:h], subs[h:]


def krd_samples(world, facts, known: set) -> list[KRDSample]:
    return [
        KRDSample(
            world.prompt(f),
            f.subject,
            f.object,
            tuple((world.prompt(x), x.object) for x in world.siblings(f) if x in known),
        )
        for f in facts
    ]


def get_disentangler(model, tok, layer: int, samples, kcfg: KRDConfig, tag: str, ctx=None) -> Disentangler:
    """Train once per model, layer and KRD config; cached on disk under ``trained_cache_dir()/dike_krd``."""
    blob = json.dumps(
        {
            "fp": model_fingerprint(model),
            "layer": layer,
            "krd": asdict(kcfg),
            "tag": tag,
            "n": len(samples),
            "first": [s.prompt for s in samples[:5]],
        },
        sort_keys=True,
    )
    path = trained_cache_dir() / "dike_krd" / f"{hashlib.sha1(blob.encode()).hexdigest()[:16]}.pt"
    d = ModelAdapter(model).d_model
    dis = Disentangler(d)
    if path.exists():
        dis.load_state_dict(torch.load(path, weights_only=True))
        dis.eval().requires_grad_(False)
        return dis
    from ...editing.dike_disentangler import train_disentangler

    t0 = time.time()
    dis, hist = train_disentangler(model, tok, layer, samples, kcfg)
    if ctx is not None:
        ctx.log(
            f"KRD layer {layer}: {len(samples)} samples, {kcfg.steps} steps, {time.time() - t0:.0f} s; "
            f"last losses {hist[-1]}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(dis.state_dict(), tmp)
    tmp.replace(path)
    return dis


def calibrated_lambda(model, tok, layer: int, requests, cov: torch.Tensor) -> float:
    """λ such that a typical edit key has ``kᵀ(λC)⁻¹k = 1`` (see docs: the paper's λ is tied to its model's key
    scale). Computed from KRD-side requests, never from the evaluated edits."""
    from ...editing.compute import compute_keys

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


def make_editors(
    model, tok, world, corpus, cfg: Cfg, setting: str, dis_samples, lam_requests, ctx=None, which=METHODS
) -> tuple[dict, tuple[float, float]]:
    """The editors of a setting and (λ, AlphaEdit threshold) they use."""
    stats = cfg.stats_n_tokens if setting == "tiny" else cfg.stats_n_tokens_smollm2
    common = dict(context_templates=cfg.prefixes if setting == "tiny" else cfg.prefixes_smollm2, stats_n_tokens=stats)
    rome = ROME(ROMEConfig(**common), corpus=corpus)
    (layer,) = rome.layers(model)
    memit_layers = MEMIT(MEMITConfig(**common), corpus=corpus).layers(model)
    lam, thr, rel = baseline_knobs(model, tok, corpus, common, cfg, setting, lam_requests, ctx)
    if ctx is not None:
        ctx.log(f"{setting}: ROME/DiKE layer {layer}, MEMIT/AlphaEdit layers {memit_layers}, λ = {lam:.1f}")
    eds = {}
    if "rome" in which:
        eds["rome"] = rome
    if "memit" in which:
        eds["memit"] = MEMIT(MEMITConfig(**common, mom2_update_weight=lam), corpus=corpus)
    if "alphaedit" in which:
        eds["alphaedit"] = AlphaEdit(
            AlphaEditConfig(**common, nullspace_threshold=thr, nullspace_relative=rel), corpus=corpus
        )
    if "dike" in which:
        if setting == "tiny":
            kcfg = KRDConfig(steps=cfg.krd_steps, batch_size=cfg.krd_batch, lr=1e-3)
        else:  # the real model: fewer, smaller steps (each one is a forward/backward pass of the 135M model)
            kcfg = KRDConfig(steps=cfg.krd_steps_smollm2, batch_size=cfg.krd_batch_smollm2, lr=1e-3, n_siblings=1)
        dis = get_disentangler(model, tok, layer, dis_samples, kcfg, tag=f"{setting}-{cfg.tiny_model}", ctx=ctx)
        eds["dike"] = DiKE(
            DiKEConfig(**common, layers=(layer,), mom2_update_weight=lam), corpus=corpus, disentangler=dis
        )
    if "dike_mu0" in which:  # control: the same DiKE with the fine-grained terms off (μ = 0)
        eds["dike_mu0"] = DiKE(
            DiKEConfig(**common, layers=(layer,), mom2_update_weight=lam, mu=0.0),
            corpus=corpus,
            disentangler=eds["dike"].disentangler if "dike" in eds else dis,
        )
    return eds, (lam, thr, rel)


def prepare(setting: str, cfg: Cfg, ctx=None, model_name: str | None = None):
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
    samples = krd_samples(world, krd_facts, known)
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
        samples=samples,
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


def draw_edits(prep: dict, n: int, seed: int) -> list:
    rng = random.Random(seed)
    pool = [f for f in prep["known_list"] if f.subject in prep["edit_subj"]]
    facts = rng.sample(pool, min(n, len(pool)))
    return counterfact_requests(prep["world"], facts, seed=seed, keep=prep["known"].__contains__)


def same_subject_requests(prep: dict, n_subjects: int, batch: int, seed: int) -> list[list]:
    """Per subject: ``batch`` of its known facts edited together; probes = its other known facts only."""
    rng = random.Random(seed + 7)
    by_subj: dict[str, list] = {}
    for f in prep["known_list"]:
        if f.subject in prep["edit_subj"]:
            by_subj.setdefault(f.subject, []).append(f)
    cands = sorted(s for s, fs in by_subj.items() if len(fs) >= batch + 2)
    out = []
    for s in rng.sample(cands, min(n_subjects, len(cands))):
        facts = rng.sample(by_subj[s], batch)
        edited = {f.relation for f in facts}

        def keep(f, s=s, edited=edited):
            return f in prep["known"] and not (f.subject == s and f.relation in edited)

        out.append(counterfact_requests(prep["world"], facts, seed=seed, keep=keep))
    return out


_PREP: dict = {}


def run_setting(setting: str, cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    model_name = None if setting == "tiny" else (getattr(ctx, "model", None) or REAL_MODEL)
    key = (setting, cfg, model_name)
    if key not in _PREP:
        prep = prepare(setting, cfg, ctx, model_name)
        prep["editors"], prep["knobs"] = make_editors(
            prep["model"],
            prep["tok"],
            prep["world"],
            prep["corpus"],
            cfg,
            setting,
            prep["samples"],
            prep["lam_reqs"],
            ctx,
        )
        _PREP[key] = prep
    prep = _PREP[key]
    model, tok = prep["model"], prep["tok"]
    out = {
        f"recall_{setting}": prep["recall"],
        f"lambda_{setting}": prep["knobs"][0],
    }
    n = cfg.n_edits if setting == "tiny" else cfg.n_edits_smollm2
    reqs = draw_edits(prep, n, seed)
    ctx.log(f"{setting}: recall {prep['recall']:.3f}; {len(reqs)} single edits")
    curves = {}
    for name, ed in prep["editors"].items():
        t0 = time.time()
        m, sec, peak = single_edits(ed, model, tok, reqs)
        out.update(summarise(name, m, setting))
        out[f"{name}_sec_per_edit_{setting}"] = sec
        out[f"{name}_peak_mb_{setting}"] = peak
        curves[name] = {lv: m.get(f"locality_l{lv}_greedy_em", float("nan")) for lv in (0, 1, 2)}
        ctx.log(
            f"{setting} {name}: eff {out[f'{name}_efficacy_{setting}']:.2f} "
            f"rloc {out[f'{name}_rloc_{setting}']:.2f} ({time.time() - t0:.0f} s)"
        )
    if setting == "tiny" or cfg.smollm2_same_subject:
        for name, ed in prep["editors"].items():
            effs, locs = [], []
            for group in same_subject_requests(prep, cfg.n_same_subject, cfg.same_subject_batch, seed):
                res = ed.edit(model, tok, group)
                m = evaluate_edits(model, tok, group)
                res.restore()
                effs.append(m.get("efficacy_prob_gt", float("nan")))
                locs.append(m.get("locality_greedy_em", float("nan")))
            out[f"{name}_same_efficacy_{setting}"] = _nanmean(effs)
            out[f"{name}_same_rloc_{setting}"] = _nanmean(locs)
    out.update(nullspace_metrics(prep["editors"].get("alphaedit"), setting))
    out[f"best_baseline_efficacy_{setting}"] = max(out[f"{b}_efficacy_{setting}"] for b in BASELINES)
    for lv in (0, 2):
        base = [out[f"{b}_rloc_l{lv}_{setting}"] for b in BASELINES]
        base = [x for x in base if x == x]
        out[f"dike_gain_l{lv}_{setting}"] = out[f"dike_rloc_l{lv}_{setting}"] - max(base) if base else float("nan")
    ctx.save_artifact(f"rloc_by_level_{setting}_seed{seed}", curves)
    return out


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


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads():  # ICLR26_THREADS, default 1: one SmolLM2 edit 7 s vs 50 s with two threads (busy box)
        out = run_setting("tiny", cfg, seed, ctx)
        if cfg.smollm2:
            out.update(run_setting("smollm2", cfg, seed, ctx))
    return out


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


def plots(run_dir, per_seed, cfg):
    return [("rloc_by_level", plot_rloc_by_level(run_dir, per_seed, list(METHODS), "DiKE"))]
