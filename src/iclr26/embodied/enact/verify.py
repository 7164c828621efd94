"""ENACT's online verifier: exact and semantic acceptance, task / pairwise accuracy and the error taxonomy (§3.3).

- Forward (order the future frames): step i passes iff the true visible change C_i is contained in the change
  implied by the answer, C_i ⊆ C~_i = delta(pred_{i-1}, pred_i) with pred_0 = o_0 (the official verifier compares
  the visible diff of the truth with the unfiltered diff of the answer). The answer is accepted
  (task accuracy 1) when it equals the ground truth or every step passes. Any order whose scene-graph sequence is
  identical to the truth (frames with identical graphs swapped) is therefore accepted.
- Inverse (order the actions): step i passes iff the chosen action's changes are a subset of the full transition
  F_i = delta(o_{i-1}, o_i): C~_i ⊆ F_i.
- Pairwise accuracy (ENACT): the share of the L-1 steps that pass (README example: L = 3, gt [2, 1], answer [1, 2]:
  0.5). We also report ``order_accuracy``: the share of choice pairs placed in their true relative order (Kendall
  style; a random answer scores 0.5 on it).
- Error taxonomy of a failed step: compare the true change set with the predicted one; a missing and an extra
  signature that differ only in gamma are a polarity inversion, only in the entity an entity substitution, only in the
  predicate a predicate substitution; the remaining missing ones are omissions, extra ones hallucinations.

Answers are strings or lists; the last bracketed list of integers is parsed (1-based, as the official parser);
anything that is not a permutation of 1..L-1 is wrong (task and pairwise accuracy 0; the official code aligns other
lengths monotonically). A permutation of 0..L-2 is a 0-based answer: an error, unless ``zero_based=True`` shifts it
(the official code re-indexes such lists). Items need L >= 2.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

import numpy as np

from .pipeline import signatures
from .world import SceneGraph, diff, visible_diff

ERRORS = ("omission", "hallucination", "entity_substitution", "polarity_inversion", "predicate_substitution")


def _integers(answer) -> list[int] | None:
    """The integers of an answer: a list, or a string's last bracketed list; None if there are none."""
    if isinstance(answer, str):
        found = re.findall(r"\[([^\[\]]*)\]", answer)
        if not found:
            return None
        try:
            return [int(x) for x in found[-1].replace(",", " ").split()]
        except ValueError:
            return None
    try:
        return [int(a) for a in answer]
    except (TypeError, ValueError):
        return None


def parse_answer(answer, k: int, zero_based: bool = False) -> list[int] | None:
    """A permutation of 1..k from a list or a string such as "[2, 1]" (its last bracketed list); None otherwise.

    A permutation of 0..k-1 is a 0-based answer: an error naming the fix, unless ``zero_based=True`` shifts it by one
    (as the official evaluator's re-indexing does)."""
    ans = _integers(answer)
    if ans is None:
        return None
    if sorted(ans) == list(range(k)):
        if not zero_based:
            raise ValueError(
                f"answer {ans} is a permutation of 0..{k - 1}: ENACT answers are 1-based (choice numbers 1..{k}); "
                "add 1 to each entry, or pass zero_based=True to score 0-based answers"
            )
        ans = [a + 1 for a in ans]
    return ans if sorted(ans) == list(range(1, k + 1)) else None


def _frames(item) -> list[SceneGraph]:
    return [SceneGraph.from_json(g) for g in item["frames"]]


def step_sets(item, order: list[int]) -> list[tuple[frozenset, frozenset, bool]]:
    """Per step: (true change set, predicted change set, passes) for a parsed 1-based order."""
    fr = _frames(item)
    true = [visible_diff(a, b) for a, b in zip(fr, fr[1:])]
    if item["task"] == "forward":
        pred = [fr[0]] + [SceneGraph.from_json(item["choices"][a - 1]) for a in order]
        implied = [diff(a, b) for a, b in zip(pred, pred[1:])]
        return [(c, p, c <= p) for c, p in zip(true, implied)]
    if item["task"] == "inverse":
        full = [diff(a, b) for a, b in zip(fr, fr[1:])]
        chosen = [signatures(item["choices"][a - 1]) for a in order]
        return [(c, p, p <= f) for c, p, f in zip(true, chosen, full)]
    raise ValueError(f"item task must be 'forward' or 'inverse', got {item['task']!r}")


def taxonomy(true: frozenset, pred: frozenset) -> Counter:
    """Error types of one step by matching missing against extra signatures (ENACT §4.4)."""
    missing, extra, out = set(true - pred), set(pred - true), Counter()
    rules = (
        ("polarity_inversion", lambda m, x: m[1:] == x[1:] and m.gamma != x.gamma),
        ("entity_substitution", lambda m, x: m.gamma == x.gamma and m.pred == x.pred and (m.a, m.b) != (x.a, x.b)),
        ("predicate_substitution", lambda m, x: m.gamma == x.gamma and m.pred != x.pred and (m.a, m.b) == (x.a, x.b)),
    )
    for name, same in rules:
        for m in sorted(missing):
            x = next((x for x in sorted(extra) if same(m, x)), None)
            if x is not None:
                missing.discard(m), extra.discard(x)
                out[name] += 1
    out["omission"] += len(missing)
    out["hallucination"] += len(extra)
    return +out  # drop zero counts


def order_accuracy(order: list[int], gt: list[int]) -> float:
    """Share of choice pairs whose relative order in the answer matches the truth."""
    pos_pred = {c: p for p, c in enumerate(order)}
    pos_true = {c: p for p, c in enumerate(gt)}
    pairs = list(itertools.combinations(gt, 2))
    if not pairs:
        return 1.0
    return float(np.mean([(pos_pred[a] < pos_pred[b]) == (pos_true[a] < pos_true[b]) for a, b in pairs]))


def _steps_of(item) -> int:
    k = int(item["L"]) - 1
    if k < 1:
        raise ValueError(
            f"item {item.get('id', '?')!r} has L = {item['L']}: an item needs L >= 2 key frames (at least one step to "
            "order); build items with lengths >= 2"
        )
    return k


def score_item(item, answer, zero_based: bool = False) -> dict:
    """{'valid', 'exact', 'semantic', 'task_accuracy', 'pairwise_accuracy', 'order_accuracy', 'errors'}."""
    k = _steps_of(item)
    order = parse_answer(answer, k, zero_based)
    if order is None:
        return {"valid": False, "exact": False, "semantic": False, "task_accuracy": 0.0, "pairwise_accuracy": 0.0,
                "order_accuracy": 0.0, "errors": Counter()}  # fmt: skip
    steps = step_sets(item, order)
    exact = order == list(item["gt_answer"])
    semantic = all(ok for _, _, ok in steps)
    errors = Counter()
    for t, p, ok in steps:
        if not ok:
            errors += taxonomy(t, p)
    return {
        "valid": True, "exact": exact, "semantic": semantic, "task_accuracy": float(exact or semantic),
        "pairwise_accuracy": float(np.mean([ok for _, _, ok in steps])),
        "order_accuracy": order_accuracy(order, list(item["gt_answer"])), "errors": errors,
    }  # fmt: skip


def accepted_orders(item) -> list[list[int]]:
    """Every order the verifier accepts (enumeration; for tests and for exact chance levels)."""
    k = _steps_of(item)
    return [list(p) for p in itertools.permutations(range(1, k + 1)) if score_item(item, list(p))["task_accuracy"]]


def chance(item) -> dict:
    """Exact expected task / pairwise accuracy of a uniformly random permutation on this item (all k! orders)."""
    k = _steps_of(item)
    rows = [score_item(item, list(p)) for p in itertools.permutations(range(1, k + 1))]
    return {m: float(np.mean([r[m] for r in rows])) for m in ("task_accuracy", "pairwise_accuracy")}


def score_answers(items, answers, zero_based: bool = False) -> dict:
    """Score a model's answers (one per item, same order) -> overall / per task / per (task, L) means, error counts
    and the per-item results. ``zero_based``: accept 0-based permutations (shifted by one) instead of an error."""
    if len(items) != len(answers):
        raise ValueError(f"got {len(answers)} answers for {len(items)} items; expected one answer per item")
    if not items:
        raise ValueError("score_answers got no items: build some with build_items(...)")
    per = [score_item(it, a, zero_based) for it, a in zip(items, answers)]
    metrics = ("task_accuracy", "pairwise_accuracy", "order_accuracy")

    def agg(idx):
        return {m: float(np.mean([per[i][m] for i in idx])) for m in metrics} | {"count": len(idx)}

    out = {"overall": agg(range(len(items)))}
    groups: dict = {}
    for i, it in enumerate(items):
        groups.setdefault(it["task"], []).append(i)
        groups.setdefault(f"{it['task']}/L{it['L']}", []).append(i)
    out.update({g: agg(idx) for g, idx in sorted(groups.items())})
    total = sum((r["errors"] for r in per), Counter())
    n_err = sum(total.values())
    out["errors"] = {e: (total[e] / n_err if n_err else 0.0) for e in ERRORS}
    out["items"] = per
    return out
