"""Abstention metrics (protocol of the paper's tables): EM, true-positive rate on unanswerables, over-abstention.

EM compares normalised strings (lower-case, stripped) and counts "No Answer" on an unanswerable as a match; TP is the
share of unanswerable questions answered "No Answer"; over-abstention the share of answerable ones answered so.
A completion without an <answer> block counts as a wrong answer that does not abstain.
"""

from __future__ import annotations

from collections.abc import Sequence

from .reward import FORMAT_RE, NO_ANSWER, extract_answer


def _norm(x: str | None) -> str | None:
    return None if x is None else x.strip().lower()


def abstention_metrics(
    completions: Sequence[str], golds: Sequence[str], kinds: Sequence[str] | None = None, no_answer: str = NO_ANSWER
) -> dict[str, float]:
    """``em``, ``tp_unanswerable``, ``over_abstention``, ``em_answerable``, ``format_rate``, ``abstain_rate``, and
    ``em_<kind>`` per question kind when ``kinds`` is given. Rates over an empty group are NaN."""
    if len(completions) != len(golds) or (kinds is not None and len(kinds) != len(golds)):
        raise ValueError(
            f"completions, golds (and kinds) must have equal lengths, got {len(completions)}, {len(golds)}"
        )
    na = no_answer.lower()
    preds = [_norm(extract_answer(c)) for c in completions]
    gold = [_norm(g) for g in golds]
    hit = [p is not None and p == g for p, g in zip(preds, gold)]
    unans = [g == na for g in gold]
    abst = [p == na for p in preds]

    def mean(xs):
        xs = list(xs)
        return float(sum(xs) / len(xs)) if xs else float("nan")

    out = {
        "em": mean(hit),
        "tp_unanswerable": mean(a for a, u in zip(abst, unans) if u),
        "over_abstention": mean(a for a, u in zip(abst, unans) if not u),
        "em_answerable": mean(h for h, u in zip(hit, unans) if not u),
        "format_rate": mean(FORMAT_RE.match(c) is not None for c in completions),
        "abstain_rate": mean(abst),
    }
    if kinds is not None:
        for k in sorted(set(kinds)):
            out[f"em_{k}"] = mean(h for h, kk in zip(hit, kinds) if kk == k)
    return out
