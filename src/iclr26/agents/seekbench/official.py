"""SeekBench's own expert-annotated traces: where to find them, and the paper's two findings tested on them.

The official toolkit ships 190 expert-annotated traces of five Qwen2.5-7B search agents (`data/seekbench_data.jsonl`
of https://github.com/SHAO-Jiaqi757/SeekBench). They are not redistributed here; `find_official` looks for the file
at ``$ICLR26_SEEKBENCH_DATA`` or ``$ICLR26_CACHE/seekbench/seekbench_data.jsonl`` (default cache ``~/.cache/iclr26``):

    git clone https://github.com/SHAO-Jiaqi757/SeekBench
    mkdir -p ~/.cache/iclr26/seekbench && cp SeekBench/data/seekbench_data.jsonl ~/.cache/iclr26/seekbench/

Two tests, each a question-clustered bootstrap (official seed 42):

- `pairwise_separation`: for every pair of agents, the difference of accuracy and of each process metric, as
  z = difference / bootstrap sd. The paper's claim "process metrics reveal gaps that accuracy misses" holds when some
  pair whose accuracy is not separated (|z| < 1.96) differs in a process metric beyond the Bonferroni bound over all
  (pair, metric) contrasts: ``separation = max |z| / z_bonf > 1``.
- `exit_contrasts`: the one-turn exit hazard from a low-quality episode after a refined or a follow-up query minus
  the hazard after a repeated query, pooled over the agents (the paper's "repeated queries stall recovery").

Controls: `split_agents` cuts each agent's questions at random into two pseudo-agents (no real difference, so no
pair should separate), and `permute_query_types` shuffles the Refined / FollowUp / Repeat labels across the queries
(the label no longer says anything about the outcome, so no hazard contrast should hold).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .bootstrap import bootstrap_ci, paired_difference
from .judges import relabel_copy
from .metrics import cluster_table, global_prevalence, metric_statistic
from .schema import Trace, read_jsonl

PROCESS_METRICS = ("grounded_rate", "refined_rate", "followup_rate", "repeat_rate", "calibration_error",
                   "premature_rate", "overcautious_rate", "recovery_auc", "lqe_exit_rate")  # fmt: skip
RECOVERY_TYPES = ("RefinedQuery", "FollowUpQuery", "RepeatQuery")
HOW_TO_GET = (
    "git clone https://github.com/SHAO-Jiaqi757/SeekBench, then copy SeekBench/data/seekbench_data.jsonl to "
    "$ICLR26_CACHE/seekbench/ (default ~/.cache/iclr26/seekbench/) or point $ICLR26_SEEKBENCH_DATA at it"
)


def find_official() -> Path | None:
    """The official annotated traces, if present (see the module docstring); None otherwise."""
    env = os.environ.get("ICLR26_SEEKBENCH_DATA")
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"ICLR26_SEEKBENCH_DATA={env} is not a file; {HOW_TO_GET}")
        return p
    from ...core.paths import cache_dir

    p = cache_dir() / "seekbench" / "seekbench_data.jsonl"
    return p if p.is_file() else None


def _bonferroni(m: int, level: float = 0.05) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - level / 2 / max(m, 1)))


def pairwise_separation(
    traces: Sequence[Trace],
    metrics: Sequence[str] = PROCESS_METRICS,
    unit: str = "step",
    n_boot: int = 2000,
    seed: int = 42,
    by: str = "model",
) -> dict:
    """Every agent pair's accuracy and process-metric contrasts (z), and the Bonferroni-scaled separation.

    Returns {"acc_z_max", "separation" (max |z| / z_bonf over the pairs whose accuracy is not separated; NaN when
    every pair's accuracy is), "n_separated" (contrasts beyond z_bonf among those pairs), "z_bonf", "best" (the
    largest contrast as (agent a, agent b, metric, z)), "pairs"}."""
    groups = sorted({str(getattr(t, by)) for t in traces})
    if len(groups) < 2:
        raise ValueError(f"need traces of at least two agents (by {by!r}), got {groups}")
    clusters = sorted({t.cluster for t in traces})
    tabs = {g: cluster_table([t for t in traces if str(getattr(t, by)) == g], clusters, unit=unit)[0] for g in groups}
    w = global_prevalence(sum(tabs.values()))
    kw = {"n_boot": n_boot, "seed": seed}
    pairs, z_acc = list(itertools.combinations(groups, 2)), []
    contrasts = []
    for a, b in pairs:
        acc = metric_statistic("success")
        za = paired_difference(acc, tabs[a], acc, tabs[b], **kw).z()
        z_acc.append(abs(za))
        if abs(za) >= 1.96:
            continue  # accuracy already separates this pair: not a gap accuracy misses
        for met in metrics:
            st = metric_statistic(met, ce_weights=w)
            contrasts.append((a, b, met, paired_difference(st, tabs[a], st, tabs[b], **kw).z()))
    zb = _bonferroni(len(pairs) * len(metrics))
    best = max(contrasts, key=lambda c: abs(c[3]), default=None)
    return {
        "acc_z_max": float(max(z_acc)),
        "separation": abs(best[3]) / zb if best else float("nan"),
        "n_separated": float(sum(abs(c[3]) > zb for c in contrasts)),
        "z_bonf": zb,
        "best": best,
        "pairs": len(pairs),
    }


def exit_contrasts(traces: Sequence[Trace], n_boot: int = 2000, seed: int = 42) -> dict[str, float]:
    """z of exit_after_refine − exit_after_repeat and exit_after_followup − exit_after_repeat, pooled over agents
    (one question-clustered table; both hazards from the same resamples), and the hazards themselves."""
    table, _ = cluster_table(list(traces))
    rep = metric_statistic("exit_after_repeat")
    out = {"exit_after_repeat": float(rep(np.ones((1, len(table))), table)[0])}
    for act in ("refine", "followup"):
        st = metric_statistic(f"exit_after_{act}")
        out[f"exit_after_{act}"] = float(st(np.ones((1, len(table))), table)[0])
        ci = bootstrap_ci(lambda w, s, st=st: st(w, s) - rep(w, s), table, n_boot=n_boot, seed=seed)
        out[f"z_{act}_vs_repeat"] = ci.z()
    return out


def split_agents(traces: Sequence[Trace], seed: int) -> list[Trace]:
    """Control: each agent's questions cut at random into two halves, renamed "<agent>/A" and "<agent>/B"."""
    rng = np.random.default_rng(seed)
    out = []
    for model in sorted({t.model for t in traces}):
        mine = [t for t in traces if t.model == model]
        qs = sorted({t.cluster for t in mine})
        half = {qs[i] for i in rng.permutation(len(qs))[: len(qs) // 2]}
        for t in mine:
            c = relabel_copy(t)
            c.model = f"{model}/{'A' if t.cluster in half else 'B'}"
            out.append(c)
    return out


def split_separation(traces: Sequence[Trace], seed: int, **kw) -> float:
    """The largest Bonferroni-scaled process contrast between the two halves of the same agent (a null pair)."""
    split = split_agents(traces, seed)
    worst = 0.0
    models = sorted({t.model for t in traces})
    m_total = len(models) * len(kw.get("metrics", PROCESS_METRICS))
    for model in models:
        mine = [t for t in split if t.model.startswith(model + "/")]
        r = pairwise_separation(mine, **kw)
        if r["best"] is not None:
            worst = max(worst, abs(r["best"][3]) / _bonferroni(m_total))
    return worst


def permute_query_types(traces: Sequence[Trace], seed: int) -> list[Trace]:
    """Control: the Refined / FollowUp / Repeat labels of all queries shuffled among those queries (same counts)."""
    out = [relabel_copy(t) for t in traces]
    steps = [s for t in out for s in t.steps if s.annotation.type in RECOVERY_TYPES]
    labels = [s.annotation.type for s in steps]
    for s, i in zip(steps, np.random.default_rng(seed).permutation(len(steps))):
        s.annotation.type = labels[i]
    return out


def load_official(path: str | Path | None = None) -> list[Trace]:
    """The official traces from `path` or `find_official()`; a clear error saying how to get them otherwise."""
    p = Path(path) if path is not None else find_official()
    if p is None:
        raise FileNotFoundError(f"the official SeekBench traces are not here: {HOW_TO_GET}")
    return read_jsonl(p)
