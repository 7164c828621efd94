"""The SeekBench reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import random
import time
from dataclasses import replace

import numpy as np

from iclr26.agents.seekbench.judges import FAMILIES, LearnedJudge, RuleJudge, agreement, annotate_all, relabel_copy
from iclr26.agents.seekbench.metrics import (
    cluster_table,
    first_hit,
    global_prevalence,
    metric_statistic,
    paired_difference,
)
from iclr26.agents.seekbench.retriever import BM25Retriever, RetrieverConfig
from iclr26.agents.seekbench.simulate import AgentKnobs, accuracy, match_accuracy, run_agent
from iclr26.agents.seekbench.world import ATTRIBUTES, SearchWorld, SearchWorldConfig
from iclr26.core.threads import run_threads

from . import Cfg

REFERENCE = "grounded"
# (agent, metric, direction vs the reference) that its knob should move
DESIGNATED = (
    ("refiner", "refined_rate", ">"),
    ("repeater", "repeat_rate", ">"),
    ("repeater", "recovery_auc", "<"),
    ("premature", "calibration_error", ">"),
    ("premature", "premature_rate", ">"),
    ("ungrounded", "rqi", "<"),
)
TWIN_METRICS = (
    "success",
    "rqi",
    "calibration_error",
    "premature_rate",
    "recovery_auc",
    "repeat_rate",
    "refined_rate",
    "lqe_exit_rate",
)
PER_AGENT = ("success", "rqi", "calibration_error", "premature_rate", "repeat_rate", "recovery_auc")


def agents(cfg: Cfg) -> list[AgentKnobs]:
    base = AgentKnobs(REFERENCE, max_searches=cfg.max_searches)
    return [
        base,
        replace(base, name="refiner", recovery="refine"),
        replace(base, name="repeater", p_repeat=0.8),
        replace(base, name="premature", answer_threshold=0),
        replace(base, name="ungrounded", grounding=0.3),
        replace(base, name="twin"),
    ]


def separation(traces: dict[str, list], clusters, cfg: Cfg, seed: int) -> dict[str, float]:
    """Paired clustered-bootstrap contrasts of every agent against the reference on the same test questions."""
    tables = {a: cluster_table(ts, clusters)[0] for a, ts in traces.items()}
    w_ref = global_prevalence(sum(tables.values()))
    kw = {"n_boot": cfg.n_boot, "seed": seed, "level": cfg.level}

    def diff(agent, metric):
        stat = metric_statistic(metric, ce_weights=w_ref)
        return paired_difference(stat, tables[agent], stat, tables[REFERENCE], **kw)

    out = {}
    knob_agents = sorted({a for a, _, _ in DESIGNATED})
    designated = [(diff(a, m), d) for a, m, d in DESIGNATED]
    acc = [diff(a, "success") for a in knob_agents]
    twin = [diff("twin", m) for m in TWIN_METRICS]
    # fractions of 95% CIs that exclude 0 (readable) and z = difference / bootstrap sd (continuous, for the verdicts)
    out["process_sep_frac"] = float(np.mean([c.lo > 0 if d == ">" else c.hi < 0 for c, d in designated]))
    out["acc_sep_frac"] = float(np.mean([c.excludes(0) for c in acc]))
    out["twin_sep_frac"] = float(np.mean([c.excludes(0) for c in twin]))
    out["process_z_min"] = float(min(c.z() if d == ">" else -c.z() for c, d in designated))
    out["acc_z_max"] = float(max(abs(c.z()) for c in acc))
    out["acc_gap_max"] = float(max(abs(c.point) for c in acc))
    out["twin_z_mean"] = float(np.mean([abs(c.z()) for c in twin]))
    out["twin_recovery_absz"] = abs(twin[TWIN_METRICS.index("recovery_auc")].z())
    out["repeater_recovery_z"] = -designated[2][0].z()
    return out, tables, w_ref


def permuted(traces: list, seed: int) -> list:
    """Copies whose labels of each family are permuted across all steps of that family (a judge blind to the step)."""
    out = [relabel_copy(t) for t in traces]
    rng = np.random.default_rng(seed)
    for stype, attr in FAMILIES.values():
        steps = [s for t in out for s in t.steps if s.type == stype]
        labels = [getattr(s.annotation, attr) for s in steps]
        for s, i in zip(steps, rng.permutation(len(steps))):
            setattr(s.annotation, attr, labels[i])
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    wcfg = SearchWorldConfig(
        n_entities=cfg.n_entities, p_missing=cfg.p_missing, p_conflict=cfg.p_conflict, p_paraphrase=cfg.p_paraphrase
    )
    world = SearchWorld(wcfg, seed=seed)
    retriever = BM25Retriever(world.docs, RetrieverConfig(k=cfg.top_k))
    val, test = world.split(cfg.n_val, cfg.n_test, seed=seed)

    # the testbed works: the basic query finds the primary document, the follow-up query the archive
    def hit(query, kind, q):
        return any(world.docs[i]["kind"] == kind and world.docs[i]["entity"] == q.entity
                   and world.docs[i]["attribute"] == q.attribute for i in retriever.search(query))  # fmt: skip

    attrs = world.attributes
    m["bm25_recall_primary"] = float(
        np.mean([hit(f"{q.entity} {attrs[q.attribute].keyword}", "primary", q) for q in test])
    )
    m["bm25_recall_archive"] = float(np.mean([hit(f"archive record {q.record}", "archive", q) for q in test]))

    # one tuning rule for every agent: p_prior by bisection on validation questions to the reference's accuracy
    knobs = agents(cfg)
    ref = knobs[0]
    target = accuracy([run_agent(world, retriever, q, ref, seed) for q in val])
    m["acc_ref_val"] = target
    tuned = [ref] + [
        match_accuracy(world, retriever, val, k, target, seed) if k.name != "twin" else k for k in knobs[1:]
    ]
    for k in tuned:
        m[f"p_prior_{k.name}"] = k.p_prior
    ctx.log(
        f"seed {seed}: reference val accuracy {target:.3f}; tuned p_prior "
        + ", ".join(f"{k.name}={k.p_prior:.3f}" for k in tuned)
    )

    # test: every agent answers every test question (test draws use another stream: seed + 10_000)
    traces = {k.name: [run_agent(world, retriever, q, k, seed + 10_000) for q in test] for k in tuned}
    clusters = sorted({t.cluster for ts in traces.values() for t in ts})
    sep, tables, w_ref = separation(traces, clusters, cfg, seed)
    m.update(sep)
    one = np.ones((1, len(clusters)))
    for a, tab in tables.items():
        for met in PER_AGENT + ("lqe_exit_rate",):
            m[f"{met}_{a}"] = float(metric_statistic(met, ce_weights=w_ref)(one, tab)[0])
    turn_tabs = {a: cluster_table(ts, clusters, unit="turn")[0] for a, ts in traces.items()}  # the paper's unit
    w_turn = global_prevalence(sum(turn_tabs.values()))
    for a, tab in turn_tabs.items():
        m[f"calibration_error_turn_{a}"] = float(metric_statistic("calibration_error", ce_weights=w_turn)(one, tab)[0])
    for a, ts in traces.items():  # the recovery CDF itself, for the plot: share of traces at E = 2 by turn t
        hits = np.array([first_hit(t, unit="turn") for t in ts])
        m.update({f"cdf_{a}_t{t}": float(np.mean(hits <= t)) for t in range(cfg.max_searches + 1)})
    pooled = sum(tables.values())
    for act in ("repeat", "refine", "followup"):
        m[f"exit_after_{act}_pooled"] = float(metric_statistic(f"exit_after_{act}")(one, pooled)[0])
    searching = ("grounded", "refiner", "ungrounded")
    m["recovery_auc_pooled_gap"] = float(
        np.mean([m[f"recovery_auc_{a}"] for a in searching]) - m["recovery_auc_repeater"]
    )

    # judges: 190 "expert" traces (gold) train the learned judge; agreement on all other test traces
    pool = [t for ts in traces.values() for t in ts]
    order = random.Random(seed).sample(range(len(pool)), len(pool))
    expert, rest = [pool[i] for i in order[: cfg.n_expert]], [pool[i] for i in order[cfg.n_expert :]]
    rules = RuleJudge({a.keyword: {a.synonym} for a in ATTRIBUTES})
    learned = LearnedJudge(rules, seed=seed).fit(expert)
    shuffled = LearnedJudge(rules, seed=seed).fit(expert, shuffle_labels=True)
    for name, judge in (("rule", rules), ("learned", learned), ("shuffled", shuffled)):
        judged_rest = annotate_all(judge, rest)
        kap = agreement(rest, judged_rest)
        m[f"kappa_{name}_mean"] = float(np.mean(list(kap.values())))
        if name != "shuffled":
            m.update({f"kappa_{name}_{f}": v for f, v in kap.items()})
        if name == "learned":  # control: the same labels, assigned to the wrong steps (permuted within a family)
            m["kappa_permuted_mean"] = float(np.mean(list(agreement(rest, permuted(judged_rest, seed)).values())))
    # the agent contrasts again, on the learned judge's labels instead of gold
    judged = {a: annotate_all(learned, ts) for a, ts in traces.items()}
    judged_sep = separation(judged, clusters, cfg, seed)[0]
    m["process_sep_frac_judged"], m["process_z_min_judged"] = (
        judged_sep["process_sep_frac"],
        judged_sep["process_z_min"],
    )
    m.update(_official(cfg, seed, ctx))
    ctx.log(
        f"seed {seed}: process_sep {m['process_sep_frac']:.2f} acc_sep {m['acc_sep_frac']:.2f} twin_sep "
        f"{m['twin_sep_frac']:.2f}; kappa rule {m['kappa_rule_mean']:.3f} learned {m['kappa_learned_mean']:.3f} "
        f"shuffled {m['kappa_shuffled_mean']:.3f}; {time.time() - t0:.1f}s"
    )
    return m


_OFFICIAL: dict = {}


def _official(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    """The paper's findings on its own 190 expert-annotated traces (fixed bootstrap seed 42: the same on every seed),
    and the two randomisation controls (their randomness follows the run seed)."""
    from iclr26.agents.seekbench import official as off

    path = off.find_official()
    if path is None:
        ctx.log(f"official SeekBench traces not found; their claims are not testable here ({off.HOW_TO_GET})")
        return {k: float("nan") for k in OFFICIAL_METRICS}
    key = (str(path), cfg.n_boot_official)
    if key not in _OFFICIAL:
        traces = off.load_official(path)
        out = {"official_n_traces": float(len(traces))}
        for unit in ("step", "turn"):
            r = off.pairwise_separation(traces, unit=unit, n_boot=cfg.n_boot_official)
            sfx = "" if unit == "step" else "_turn"
            out[f"official_separation{sfx}"], out[f"official_n_separated{sfx}"] = r["separation"], r["n_separated"]
            out["official_acc_z_max"] = r["acc_z_max"]
        for k, v in off.exit_contrasts(traces, n_boot=cfg.n_boot_official).items():
            out[f"official_{k}"] = v
        _OFFICIAL[key] = (traces, out)
    traces, out = _OFFICIAL[key]
    m = dict(out)
    m["official_split_separation"] = off.split_separation(traces, seed, n_boot=cfg.n_boot_official)
    perm = off.exit_contrasts(off.permute_query_types(traces, seed), n_boot=cfg.n_boot_official, seed=seed)
    m["official_perm_z_refine_vs_repeat"] = perm["z_refine_vs_repeat"]
    m["official_perm_z_followup_vs_repeat"] = perm["z_followup_vs_repeat"]
    return m


OFFICIAL_METRICS = ("official_n_traces", "official_separation", "official_n_separated", "official_separation_turn",
                    "official_n_separated_turn", "official_acc_z_max", "official_exit_after_repeat",
                    "official_exit_after_refine", "official_exit_after_followup", "official_z_refine_vs_repeat",
                    "official_z_followup_vs_repeat", "official_split_separation", "official_perm_z_refine_vs_repeat",
                    "official_perm_z_followup_vs_repeat")  # fmt: skip


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    names = ("grounded", "refiner", "repeater", "premature", "ungrounded", "twin")
    rows = [("success", "accuracy"), ("rqi", "RQI"), ("calibration_error", "calibration error"),
            ("premature_rate", "premature rate"), ("recovery_auc", "recovery AUC")]  # fmt: skip
    fig, axes = plt.subplots(1, len(rows), figsize=(3.1 * len(rows), 3.2), sharey=False)
    for ax, (met, title) in zip(axes, rows):
        vals = [[s[f"{met}_{a}"] for s in per_seed.values() if f"{met}_{a}" in s] for a in names]
        ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="C0")
        ax.set_xticks(range(len(names)), names, rotation=60, fontsize=8)
        ax.set_title(title, fontsize=10)
    fig.suptitle("SeekBench testbed: equal accuracy, different process (mean ± sd over seeds)", fontsize=10)
    fig.tight_layout()
    figs = [("agents_process_metrics", fig)]
    fig, ax = plt.subplots(figsize=(5, 3.4))
    turns = range(cfg.max_searches + 1)
    for a in names:
        ys = [
            np.mean([s[f"cdf_{a}_t{t}"] for s in per_seed.values() if f"cdf_{a}_t{t}" in s] or [np.nan]) for t in turns
        ]
        ax.plot(list(turns), ys, marker="o", label=a)
    ax.set_xlabel("turn")
    ax.set_ylabel("share of traces at E = 2")
    ax.set_title("Recovery: CDF of reaching sufficient & clear evidence", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    figs.append(("recovery_cdf", fig))
    return figs
