"""The suit reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import dataclasses
import random
import time

from iclr26.editing.benchmark import (
    REAL_MODEL,
    SETTINGS,
    baseline_knobs,
    nullspace_metrics,
    plot_rloc_by_level,
    prepare,
    summarise,
)

from ...core.threads import torch_threads
from ...editing import MEMIT, AlphaEdit, AlphaEditConfig, MEMITConfig
from ...editing.evaluate import counterfact_requests, evaluate_edits
from ...editing.suit import SUIT, SUITConfig
from . import BASELINES, METHODS, Cfg


def make_editors(prep: dict, cfg: Cfg, setting: str, ctx=None) -> tuple[dict, tuple[float, float]]:
    model, tok, corpus = prep["model"], prep["tok"], prep["corpus"]
    stats = cfg.stats_n_tokens if setting == "tiny" else cfg.stats_n_tokens_smollm2
    common = dict(context_templates=cfg.prefixes if setting == "tiny" else cfg.prefixes_smollm2, stats_n_tokens=stats)
    lam, thr, rel = baseline_knobs(model, tok, corpus, common, cfg, setting, prep["lam_reqs"], ctx)
    if ctx is not None:
        ctx.log(f"{setting}: layers {MEMIT(MEMITConfig(**common)).layers(model)}, λ = {lam:.1f}")
    eds = {
        "memit": MEMIT(MEMITConfig(**common, mom2_update_weight=lam), corpus=corpus),
        "alphaedit": AlphaEdit(
            AlphaEditConfig(**common, nullspace_threshold=thr, nullspace_relative=rel), corpus=corpus
        ),
    }
    for name, kp in (("suit", True), ("suit_no_kp", False)):  # suit_no_kp: the control, Step A switched off
        eds[name] = SUIT(
            SUITConfig(
                **common,
                mom2_update_weight=lam,
                nullspace_threshold=thr,
                nullspace_relative=rel,
                tau_energy=cfg.tau_energy,
                use_key_projection=kp,
            ),
            corpus=corpus,
            entities=list(prep["world"].entities),
        )
    return eds, (lam, thr, rel)


def _hmean(xs):
    xs = [max(x, 1e-9) for x in xs]
    return len(xs) / sum(1 / x for x in xs)


_PREP: dict = {}
UNEDITED = ("efficacy", "paraphrase", "neighborhood", "rloc")


def run_setting(setting: str, cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    # the real-model setting (metrics suffixed _smollm2) runs on `--model` when given, else SmolLM2-135M
    model_name = None if setting == "tiny" else (getattr(ctx, "model", None) or REAL_MODEL)
    key = (setting, cfg, model_name)
    if key not in _PREP:
        prep = prepare(setting, cfg, ctx, model_name)
        prep["editors"], prep["knobs"] = make_editors(prep, cfg, setting, ctx)
        _PREP[key] = prep
    prep = _PREP[key]
    model, tok = prep["model"], prep["tok"]
    n, bs = (cfg.n_edits, cfg.batch_size) if setting == "tiny" else (cfg.n_edits_smollm2, cfg.batch_size_smollm2)
    rng = random.Random(seed)
    pool = [f for f in prep["known_list"] if f.subject in prep["edit_subj"]]
    # one edit per subject: sequential edits of one subject would overwrite each other's probes
    by_subj = {}
    for f in rng.sample(pool, len(pool)):
        by_subj.setdefault(f.subject, f)
    facts = list(by_subj.values())[:n]
    reqs = counterfact_requests(prep["world"], facts, seed=seed, keep=prep["known"].__contains__)
    out = {
        f"recall_{setting}": prep["recall"],
        f"lambda_{setting}": prep["knobs"][0],
    }
    ctx.log(f"{setting}: recall {prep['recall']:.3f}; {len(reqs)} edits in sequential batches of {bs}")
    out[f"n_edits_{setting}"] = float(len(reqs))
    # the unedited model on the same requests and probes: the ceiling of every preservation metric (headroom gates)
    unedited = summarise("unedited", evaluate_edits(model, tok, reqs), setting)
    out.update({f"unedited_{k}_{setting}": unedited[f"unedited_{k}_{setting}"] for k in UNEDITED})
    curves, deltas = {}, {}
    for name, ed in prep["editors"].items():
        t0 = time.time()
        res = ed.edit_sequential(model, tok, reqs, batch_size=bs)
        m = evaluate_edits(model, tok, reqs)
        deltas[name] = {lay: d.clone() for lay, d in res.deltas.items()}
        res.restore()
        out.update(summarise(name, m, setting))
        out[f"{name}_score_{setting}"] = _hmean(
            [out[f"{name}_{k}_{setting}"] for k in ("efficacy", "paraphrase", "neighborhood")]
        )
        out[f"{name}_sec_per_edit_{setting}"] = res.seconds_per_edit
        out[f"{name}_peak_mb_{setting}"] = max(res.peak_mem_mb)
        curves[name] = {lv: m.get(f"locality_l{lv}_greedy_em", float("nan")) for lv in (0, 1, 2)}
        ctx.log(
            f"{setting} {name}: eff {out[f'{name}_efficacy_{setting}']:.2f} "
            f"spec {out[f'{name}_neighborhood_{setting}']:.2f} rloc {out[f'{name}_rloc_{setting}']:.2f} "
            f"({time.time() - t0:.0f} s)"
        )
    out[f"best_baseline_efficacy_{setting}"] = max(out[f"{b}_efficacy_{setting}"] for b in BASELINES)
    out[f"best_baseline_neighborhood_{setting}"] = max(out[f"{b}_neighborhood_{setting}"] for b in BASELINES)
    out.update(nullspace_metrics(prep["editors"]["alphaedit"], setting))
    out.update(key_diagnostic(prep, setting, deltas, cfg))
    out[f"min_baseline_key_leak_{setting}"] = min(out[f"{b}_key_leak_{setting}"] for b in BASELINES)
    ctx.log(
        f"{setting}: shared key subspace {out[f'shared_dim_{setting}']:.1f} directions (τ {cfg.tau_energy}), "
        f"{out[f'shared_dim_tau06_{setting}']:.1f} at τ 0.6; key leak "
        + ", ".join(f"{k} {out[f'{k}_key_leak_{setting}']:.3f}" for k in deltas)
    )
    ctx.save_artifact(f"rloc_by_level_{setting}_seed{seed}", curves)
    return out


def key_diagnostic(prep: dict, setting: str, deltas: dict, cfg: Cfg) -> dict[str, float]:
    """SUIT's key diagnostic: the share of each method's summed update that acts on the shared key directions,
    ``‖ΔW U_s‖_F / ‖ΔW‖_F`` over the edited layers (U_s as SUIT fitted it), and the size of U_s at τ 0.4 and 0.6."""
    suit = prep["editors"]["suit"]
    if "U06" not in prep:  # the subspace at τ = 0.6, for the size report (fitted once per setting)
        probe = SUIT(dataclasses.replace(suit.cfg, tau_energy=0.6), corpus=prep["corpus"], entities=suit.entities)
        prep["U06"] = probe.fit_subspace(prep["model"], prep["tok"])
    subspaces = suit.subspaces
    out = {
        f"shared_dim_{setting}": sum(u.shape[1] for u in subspaces.values()) / len(subspaces),
        f"shared_dim_tau06_{setting}": sum(u.shape[1] for u in prep["U06"].values()) / len(prep["U06"]),
    }
    for name, d in deltas.items():
        num = sum(float((d[lay].double() @ subspaces[lay].double()).norm() ** 2) for lay in d)
        den = sum(float(d[lay].double().norm() ** 2) for lay in d)
        out[f"{name}_key_leak_{setting}"] = (num / den) ** 0.5 if den > 0 else float("nan")
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads():  # ICLR26_THREADS, default 1: one SmolLM2 edit 7 s vs 50 s with two threads (busy box)
        out = run_setting("tiny", cfg, seed, ctx)
        if cfg.smollm2:
            out.update(run_setting("smollm2", cfg, seed, ctx))
    return out


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt
    import numpy as np

    figs = [("rloc_by_level", plot_rloc_by_level(run_dir, per_seed, list(METHODS), "SUIT"))]
    settings = [s for s in SETTINGS if any(f"suit_efficacy_{s}" in m for m in per_seed.values())]
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 3.6), squeeze=False)
    for ax, s in zip(axes[0], settings):
        for meth in METHODS:
            xs = [m.get(f"{meth}_neighborhood_{s}", np.nan) for m in per_seed.values()]
            ys = [m.get(f"{meth}_efficacy_{s}", np.nan) for m in per_seed.values()]
            ax.scatter(xs, ys, label=meth)
        ax.set_xlabel("specificity (neighbourhood, prob_gt)")
        ax.set_ylabel("efficacy (prob_gt)")
        ax.set_title(f"SUIT vs baselines: {s}")
        ax.legend(fontsize=7)
    figs.append(("efficacy_vs_specificity", fig))
    return figs
