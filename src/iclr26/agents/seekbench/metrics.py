"""SeekBench's process metrics on annotated traces, with confidence intervals from a bootstrap clustered by question.

Definitions follow the official analysis code (``analysis/grounded_reason.py``, ``recovery.py``, ``calibration.py``
of https://github.com/SHAO-Jiaqi757/SeekBench); every deviation is named in a comment and in
docs/papers/seekbench.md. A *turn* (the paper's unit) is the run of steps up to and including a search result or the
answer; the agent decides whether to answer with the evidence it holds when the turn starts. ``unit="step"`` gives
the official code's variant, in which every step is a turn and its state includes its own result; it is the default
(``DEFAULT_UNIT``), so that values and rankings match the official code. With steps a perfectly calibrated agent gets
CE > 0 (a synthesis step between the decisive result and the answer counts as "not answering at E = 2"), and on the
official data the CE order of ReSearch and few-shot flips between the units: report both (``score_traces`` does).

Evidence. E of a search result is 0 / 1 / 2 (Insufficient / Sufficient but Unclear / Sufficient and Clear); the
*state* evidence after step t is the cumulative maximum of E over the results up to t (not the current result).

Groundedness.
  RQI(trace) = #{reasoning steps with anchor EVIDENCE and Grounded} / #{reasoning steps with anchor EVIDENCE}; NaN when
  the denominator is 0 (excluded from means, not counted as 0).
Calibration (policy "answer iff E >= thr", thr = 2; turns up to and including the first answer, later ones ignored).
  a_k = P(answer at a turn | state E = k)                         (evidence-conditioned answer rate)
  CE  = Σ_k w_k |a_k − 1[k >= thr]|, w_k = share of those turns with E = k (pooled over all scored groups: "global")
  balanced CE = mean_k |a_k − 1[k >= thr]|
  premature = share of traces that answer within the horizon H = 15 with E < thr; over-cautious = share that do
  not answer within H although E >= thr was reached.
Recovery.
  CDF(t) = share of traces whose state evidence reached E = 2 by turn t (t = 0..20); recovery AUC = mean_t CDF(t).
  Low-quality episodes start at a result that is Insufficient or not Clear and end at the next Sufficient-and-Clear
  result or a correct answer (else censored). Exit hazard after an action (Refine / Follow-up / Repeat / grounded
  reasoning): the share of those actions whose next result (or answer) ends the episode (the first step of the
  official Kaplan-Meier curves aligned at actions).

Uncertainty. Every metric is a function of per-cluster sums (a cluster = one question: (dataset, question_id)).
A bootstrap draws clusters with replacement, B times; a statistic maps the B × C matrix of draw counts and the C × F
cluster table to B values, so resampling is exact and vectorised. Percentile 95% intervals (official: 2.5, 97.5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .bootstrap import (  # noqa: F401  (re-exported: the metrics' public surface)
    CI,
    Statistic,
    bootstrap_ci,
    bootstrap_weights,
    clustered_bootstrap,
    paired_difference,
)
from .schema import QUERY_TYPES, REASONING_TYPES, Trace

QUERY_TYPES_ALL = set(QUERY_TYPES) | {"NewQuery", "Query"}  # official QUERY_TYPES_ALL
RECOVERY_ACTIONS = {"RefinedQuery": "refine", "FollowUpQuery": "followup", "RepeatQuery": "repeat"}
DEFAULT_UNIT = "step"  # the official code's unit (its values and rankings); "turn" is the paper's definition
UNIT_METRICS = (
    "calibration_error",
    "balanced_ce",
    "answer_rate_e0",
    "answer_rate_e1",
    "answer_rate_e2",
    "premature_rate",
    "overcautious_rate",
    "recovery_auc",
)  # fmt: skip  (the metrics the unit changes)


# ---------------------------------------------------------------- per-trace quantities


def evidence_states(trace: Trace) -> list[int]:
    """State evidence after each step: the cumulative max of E over the search results so far."""
    cur, out = 0, []
    for s in trace.steps:
        if s.type == "search_result":
            cur = max(cur, s.evidence)
        out.append(cur)
    return out


def first_answer_index(trace: Trace) -> int | None:
    return next((i for i, s in enumerate(trace.steps) if s.is_answer), None)


def rqi(trace: Trace, require_evidence_anchor: bool = True) -> float:
    """Reasoning quality index; with ``require_evidence_anchor=False`` the grounded share of all reasoning steps."""
    n = g = 0
    for s in trace.steps:
        if s.annotation.type not in REASONING_TYPES:
            continue
        if require_evidence_anchor and s.annotation.anchor_type != "EVIDENCE":
            continue  # RQI's denominator holds only evidence-anchored steps
        n += 1
        g += s.annotation.groundness == "Grounded"
    return g / n if n else math.nan


def turns_to_first_sufficient(trace: Trace, require_clear: bool = True) -> float:
    """Index of the first search result that is Sufficient (and Clear); NaN if none."""
    for i, s in enumerate(trace.steps):
        if s.type == "search_result" and s.evidence >= (2 if require_clear else 1):
            return float(i)
    return math.nan


def query_rates(trace: Trace) -> dict[str, float]:
    """Shares of query types among the search steps (NaN without searches)."""
    types = [s.annotation.type for s in trace.steps if s.annotation.type in QUERY_TYPES_ALL]
    n = len(types)
    rate = (lambda t: types.count(t) / n) if n else (lambda t: math.nan)
    return {
        "refined_rate": rate("RefinedQuery"),
        "followup_rate": rate("FollowUpQuery"),
        "repeat_rate": rate("RepeatQuery"),
    }


def units(trace: Trace, unit: str = DEFAULT_UNIT) -> list[tuple[int, int, bool]]:
    """(state E when the unit starts, state E after it, is it the first answer) per unit, up to the first answer.

    ``unit="turn"`` (the paper's definition): a turn ends with a search result or the answer, and the agent decides
    whether to answer with the evidence it has when the turn starts. ``unit="step"`` (the official code): every step
    is a turn and its state includes the step's own result."""
    if unit not in ("turn", "step"):
        raise ValueError(f"unit must be 'turn' or 'step', got {unit!r}")
    out, cur, start, open_turn = [], 0, 0, False
    for s in trace.steps:
        if s.type == "search_result":
            cur = max(cur, s.evidence)
        if unit == "step":
            out.append((cur, cur, s.is_answer))
        elif s.is_answer or s.type == "search_result":
            out.append((start, cur, s.is_answer))
            start, open_turn = cur, False
            if s.is_answer:
                break
        else:
            open_turn = True
        if s.is_answer:
            break
    if unit == "turn" and open_turn:  # steps after the last result, with neither a result nor an answer
        out.append((start, cur, False))
    return out


def calibration_turns(trace: Trace, unit: str = DEFAULT_UNIT) -> list[tuple[int, bool]]:
    """(state E at decision time, is the first answer) per unit up to and including the first answer."""
    return [(e0, ans) for e0, _, ans in units(trace, unit)]


def trajectory_label(trace: Trace, threshold: int = 2, horizon: int = 15, unit: str = DEFAULT_UNIT) -> str:
    """TP (answered with E >= thr), FP (premature: answered with E < thr), FN (over-cautious: never answered within
    the horizon though E >= thr was reached), TN (good deferral), within the first ``horizon`` units."""
    us = units(trace, unit)[:horizon]
    for _, e, ans in us:
        if ans:
            return "TP" if e >= threshold else "FP"
    # official code tests `E >= 2` here whatever the threshold; we use the threshold (same at the default thr = 2)
    return "FN" if any(e >= threshold for _, e, _ in us) else "TN"


def first_hit(trace: Trace, level: int = 2, unit: str = DEFAULT_UNIT) -> float:
    """First unit (up to the first answer) after which the state evidence is >= ``level``; NaN if never."""
    for i, (_, e, _) in enumerate(units(trace, unit)):
        if e >= level:
            return float(i)
    return math.nan


def low_quality_episodes(trace: Trace) -> list[dict]:
    """Low-quality episodes with the recovery actions inside them (official ``detect_low_quality_episodes``)."""
    episodes, ep = [], None
    for i, s in enumerate(trace.steps):
        if s.type == "search_result":
            if s.annotation.type is None and s.annotation.information_quality is None:
                continue  # an unannotated result neither opens nor closes an episode (as in the official code)
            if ep is None and s.evidence < 2:
                ep = {"start": i, "actions": []}
            elif ep is not None and s.evidence == 2:
                episodes.append({**ep, "end": i, "censored": False})
                ep = None
            continue
        if ep is None:
            continue
        if s.answer_correct is True:
            episodes.append({**ep, "end": i, "censored": False})
            ep = None
        elif s.annotation.type in RECOVERY_ACTIONS:
            ep["actions"].append((i, RECOVERY_ACTIONS[s.annotation.type]))
        elif s.annotation.type in REASONING_TYPES and s.annotation.groundness == "Grounded":
            ep["actions"].append((i, "grounded"))
    if ep is not None:
        episodes.append({**ep, "end": len(trace.steps) - 1, "censored": True})
    return episodes


# ---------------------------------------------------------------- sufficient statistics per trace

MEAN_METRICS = {  # per-trace value, averaged within a question, then over questions (official cluster means)
    "success": "share of traces answered correctly (is_correct, else reward, else a CorrectAnswer step)",
    "rqi": "RQI: grounded share of evidence-anchored reasoning steps, per trace, NaN-excluded",
    "grounded_rate": "grounded share of all reasoning steps (any anchor), per trace",
    "turns_to_first_sufficient": "step index of the first Sufficient & Clear result (traces that reach one)",
    "refined_rate": "RefinedQuery share of search steps",
    "followup_rate": "FollowUpQuery share of search steps",
    "repeat_rate": "RepeatQuery share of search steps",
    "total_turns": "number of steps",
}
RATIO_METRICS = {  # name: (numerator, denominator, protocol); ratio of sums over questions
    **{
        f"answer_rate_e{k}": (f"ans{k}", f"pre{k}", f"a_{k} = P(first answer at a turn | state E = {k})")
        for k in range(3)
    },
    **{
        f"accuracy_at_e{k}": (f"cor{k}", f"ans{k}", f"P(correct | first answer given at state E = {k})")
        for k in range(3)
    },
    "premature_rate": ("FP", "one", "share of traces answering within H turns with E < thr"),
    "overcautious_rate": ("FN", "one", "share of traces not answering within H turns although E >= thr was reached"),
    "reach_e2": ("reach", "one", "share of traces whose state evidence reaches E = 2 (up to the first answer)"),
    "recovery_auc": ("cdf", "cdf_den", "mean over t = 0..R of the CDF of the first turn with E = 2"),
    "lqe_exit_rate": (
        "lqe_exit",
        "lqe",
        "share of low-quality episodes that end in Sufficient & Clear or a correct answer",
    ),
    **{
        f"exit_after_{a}": (
            f"ev_{a}",
            f"occ_{a}",
            f"one-turn exit hazard: share of {a} actions inside a low-quality episode whose next result ends it",
        )
        for a in ("refine", "followup", "repeat", "grounded")
    },
}
CE_METRICS = {
    "calibration_error": "CE = Σ_k w_k |a_k − 1[k >= thr]|, w_k pooled over all scored groups (official 'global')",
    "balanced_ce": "mean over k of |a_k − 1[k >= thr]| (levels where a_k is defined)",
}
ALL_METRICS = {**MEAN_METRICS, **{k: v[2] for k, v in RATIO_METRICS.items()}, **CE_METRICS}


def trace_stats(
    trace: Trace, threshold: int = 2, horizon: int = 15, recovery_horizon: int = 20, unit: str = DEFAULT_UNIT
) -> dict[str, float]:
    """All sums a cluster needs for every metric, for one trace."""
    st: dict[str, float] = {"one": 1.0}
    per_trace = {
        "success": float(trace.success),
        "rqi": rqi(trace),
        "grounded_rate": rqi(trace, require_evidence_anchor=False),
        "turns_to_first_sufficient": turns_to_first_sufficient(trace),
        **query_rates(trace),
        "total_turns": float(len(trace.steps)),
    }
    for name, v in per_trace.items():
        st[f"{name}:sum"], st[f"{name}:n"] = (0.0, 0.0) if math.isnan(v) else (v, 1.0)
    for k in range(3):
        st[f"pre{k}"] = st[f"ans{k}"] = st[f"cor{k}"] = 0.0
    for e, is_ans in calibration_turns(trace, unit):
        st[f"pre{e}"] += 1
        if is_ans:
            st[f"ans{e}"] += 1
    ans = first_answer_index(trace)
    if ans is not None:
        e = evidence_states(trace)[ans]
        correct = trace.steps[ans].answer_correct
        st[f"cor{e}"] += float(trace.success if correct is None else correct)
    label = trajectory_label(trace, threshold, horizon, unit)
    for lab in ("TP", "FP", "FN", "TN"):
        st[lab] = float(label == lab)
    hit = first_hit(trace, unit=unit)
    st["reach"] = float(not math.isnan(hit))
    st["cdf"] = float(sum(hit <= t for t in range(recovery_horizon + 1))) if not math.isnan(hit) else 0.0
    st["cdf_den"] = float(recovery_horizon + 1)
    eps = low_quality_episodes(trace)
    st["lqe"] = float(len(eps))
    st["lqe_exit"] = float(sum(not e["censored"] for e in eps))
    for a in ("refine", "followup", "repeat", "grounded"):
        st[f"occ_{a}"] = st[f"ev_{a}"] = 0.0
    outcome_at = [i for i, s in enumerate(trace.steps) if s.type == "search_result" or s.is_answer]
    for e in eps:
        for i, a in e["actions"]:
            # one-turn hazard: does the first result (or answer) after the action end the episode?
            nxt = next((j for j in outcome_at if j > i), None)
            st[f"occ_{a}"] += 1
            st[f"ev_{a}"] += float(not e["censored"] and nxt == e["end"])
    return st


FIELDS = tuple(trace_stats(Trace("q", [], question_id="q")).keys())


def cluster_table(traces: Sequence[Trace], clusters: Sequence | None = None, **kw) -> tuple[np.ndarray, list]:
    """C × F sums of ``trace_stats`` per cluster (question), in the order of ``clusters`` (default: sorted)."""
    keys = clusters if clusters is not None else sorted({t.cluster for t in traces})
    index = {c: i for i, c in enumerate(keys)}
    table = np.zeros((len(keys), len(FIELDS)))
    for t in traces:
        if t.cluster not in index:
            raise ValueError(f"trace of question {t.cluster} is not among the given clusters")
        st = trace_stats(t, **kw)
        table[index[t.cluster]] += [st[f] for f in FIELDS]
    return table, list(keys)


# ---------------------------------------------------------------- statistics on the cluster table

_COL = {f: i for i, f in enumerate(FIELDS)}


def ratio_of_sums(num: str | int, den: str | int) -> Statistic:
    """Σ num / Σ den over the (weighted) clusters; NaN where the denominator is 0."""
    i, j = (_COL.get(num, num), _COL.get(den, den))

    def stat(w: np.ndarray, s: np.ndarray) -> np.ndarray:
        n, d = w @ s[:, i], w @ s[:, j]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(d > 0, n / np.where(d > 0, d, 1), np.nan)

    return stat


def mean_of_cluster_means(total: str | int, count: str | int) -> Statistic:
    """Mean over clusters of each cluster's mean (clusters without a defined value are skipped)."""
    i, j = (_COL.get(total, total), _COL.get(count, count))

    def stat(w: np.ndarray, s: np.ndarray) -> np.ndarray:
        ok = s[:, j] > 0
        m = np.where(ok, s[:, i] / np.where(ok, s[:, j], 1), 0.0)
        d = w @ ok.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(d > 0, (w @ m) / np.where(d > 0, d, 1), np.nan)

    return stat


def calibration_error(threshold: int = 2, weights: Sequence[float] | None = None, balanced: bool = False) -> Statistic:
    """CE = Σ_k w_k |a_k − 1[k >= thr]| (``weights`` fixed, e.g. the global prevalence; None: this group's own);
    balanced: mean over k. Levels where a_k is undefined (no turn at E = k) contribute nothing (official: NaN)."""

    def stat(w: np.ndarray, s: np.ndarray) -> np.ndarray:
        pre = np.stack([w @ s[:, _COL[f"pre{k}"]] for k in range(3)], 1)  # B × 3
        ans = np.stack([w @ s[:, _COL[f"ans{k}"]] for k in range(3)], 1)
        ok = pre > 0
        a = np.where(ok, ans / np.where(ok, pre, 1), 0.0)
        dev = np.abs(a - (np.arange(3) >= threshold))
        if balanced:
            return np.where(ok.any(1), (dev * ok).sum(1) / np.maximum(ok.sum(1), 1), np.nan)
        wk = pre / np.maximum(pre.sum(1, keepdims=True), 1) if weights is None else np.asarray(weights)[None, :]
        return (wk * dev * ok).sum(1)

    return stat


def metric_statistic(name: str, threshold: int = 2, ce_weights: Sequence[float] | None = None) -> Statistic:
    if name in MEAN_METRICS:
        return mean_of_cluster_means(f"{name}:sum", f"{name}:n")
    if name in RATIO_METRICS:
        return ratio_of_sums(*RATIO_METRICS[name][:2])
    if name == "calibration_error":
        return calibration_error(threshold, ce_weights)
    if name == "balanced_ce":
        return calibration_error(threshold, balanced=True)
    raise ValueError(f"unknown SeekBench metric {name!r}; expected one of {sorted(ALL_METRICS)}")


def global_prevalence(table: np.ndarray) -> np.ndarray:
    """w_k = share of pre-answer turns at state E = k, pooled over the table's traces."""
    pre = np.array([table[:, _COL[f"pre{k}"]].sum() for k in range(3)])
    return pre / max(pre.sum(), 1)
