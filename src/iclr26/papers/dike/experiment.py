"""The dike reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`). The testbed it
shares with SUIT (settings, baseline calibration, single-edit evaluation) is `iclr26.editing.benchmark`."""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict

from iclr26.editing.benchmark import (
    REAL_MODEL,
    _nanmean,
    baseline_knobs,
    nullspace_metrics,
    plot_rloc_by_level,
    prepare,
    single_edits,
    summarise,
)
from iclr26.editing.dike.disentangler import Disentangler, KRDConfig, KRDSample

from ...core.cache import cached_tensors
from ...core.paths import trained_cache_dir
from ...core.threads import torch_threads
from ...editing import MEMIT, ROME, AlphaEdit, AlphaEditConfig, MEMITConfig, ROMEConfig
from ...editing.dike import DiKE, DiKEConfig
from ...editing.evaluate import counterfact_requests, evaluate_edits
from ...editing.stats import model_fingerprint
from ...lm.adapters import ModelAdapter
from . import BASELINES, METHODS, Cfg


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
    dis = Disentangler(ModelAdapter(model).d_model)

    def build() -> dict:
        from iclr26.editing.dike.disentangler import train_disentangler

        t0 = time.time()
        trained, hist = train_disentangler(model, tok, layer, samples, kcfg)
        if ctx is not None:
            ctx.log(
                f"KRD layer {layer}: {len(samples)} samples, {kcfg.steps} steps, {time.time() - t0:.0f} s; "
                f"last losses {hist[-1]}"
            )
        return trained.state_dict()

    # digest-verified, built once under a file lock (a damaged or half-written file is moved aside and rebuilt)
    log = ctx.log if ctx is not None else None
    dis.load_state_dict(cached_tensors(path, f"the DiKE disentangler {path.name}", build, log=log))
    dis.eval().requires_grad_(False)
    return dis


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
UNEDITED = ("efficacy", "paraphrase", "neighborhood", "rloc")


def run_setting(setting: str, cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    model_name = None if setting == "tiny" else (getattr(ctx, "model", None) or REAL_MODEL)
    key = (setting, cfg, model_name)
    if key not in _PREP:
        prep = prepare(setting, cfg, ctx, model_name)
        prep["samples"] = krd_samples(prep["world"], prep["krd_facts"], prep["known"])
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
    out[f"n_edits_{setting}"] = float(len(reqs))
    # the unedited model on the same requests and probes: the ceiling of every preservation metric (headroom gates)
    unedited = summarise("unedited", evaluate_edits(model, tok, reqs), setting)
    out.update({f"unedited_{k}_{setting}": unedited[f"unedited_{k}_{setting}"] for k in UNEDITED})
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
    out[f"best_baseline_rloc_{setting}"] = max(out[f"{b}_rloc_{setting}"] for b in BASELINES)
    if f"rome_same_efficacy_{setting}" in out:
        out[f"best_baseline_same_efficacy_{setting}"] = max(out[f"{b}_same_efficacy_{setting}"] for b in BASELINES)
    drops = [out[f"{b}_rloc_l0_{setting}"] - out[f"{b}_rloc_l2_{setting}"] for b in BASELINES]
    out[f"baseline_level_drop_{setting}"] = _nanmean(drops)
    for lv in (0, 2):
        base = [out[f"{b}_rloc_l{lv}_{setting}"] for b in BASELINES]
        base = [x for x in base if x == x]
        out[f"dike_gain_l{lv}_{setting}"] = out[f"dike_rloc_l{lv}_{setting}"] - max(base) if base else float("nan")
    ctx.save_artifact(f"rloc_by_level_{setting}_seed{seed}", curves)
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads():  # ICLR26_THREADS, default 1: one SmolLM2 edit 7 s vs 50 s with two threads (busy box)
        out = run_setting("tiny", cfg, seed, ctx)
        if cfg.smollm2:
            out.update(run_setting("smollm2", cfg, seed, ctx))
    return out


def plots(run_dir, per_seed, cfg):
    return [("rloc_by_level", plot_rloc_by_level(run_dir, per_seed, list(METHODS), "DiKE"))]
