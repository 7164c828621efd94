"""A temporal-QA world with abstention: tenures, easy / hard / unanswerable questions, programmatic CoT rationales.

The synthetic stand-in for TimeQA used by the temporal-abstention reproduction (Zhou et al., ICLR 2026,
https://arxiv.org/abs/2602.04755). Each person holds 3-4 non-overlapping tenures ``(org, start, end)`` (years,
both ends inclusive) separated by gaps of at least one year, rendered as shuffled sentences with distractor
sentences about other people. Questions:

- easy: "Where did P work in Y ?" (the year is explicit);
- hard: "Where did P work between Y1 and Y2 ?" (interval containment) or "Where did P work N years after leaving O ?"
  (arithmetic, then containment);
- unanswerable: the asked year (or interval) falls in a gap, outside all tenures, or spans two tenures: the gold
  answer is "No Answer".

Answers are correct by construction: :func:`answer_for` decides by interval checks on the tenures (a year or an
interval is answered by org k iff it lies inside ``[start_k, end_k]``), and the rationale is the trace of that same
check, in the paper's output layout ``<think>\\n...\\n</think>\\n\\n<answer>\\n...\\n</answer>``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NO_ANSWER = "No Answer"
PEOPLE = [
    "Alice",
    "Bruno",
    "Carla",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Luca",
    "Mara",
    "Nils",
    "Olga",
    "Pavel",
]
ORGS = [
    "Acme",
    "Boreal",
    "Cobalt",
    "Delta",
    "Ember",
    "Fjord",
    "Granite",
    "Helix",
    "Indigo",
    "Juniper",
    "Kestrel",
    "Lumen",
    "Meridian",
    "Nova",
    "Orbit",
]
KINDS = ("easy", "hard", "unanswerable")


@dataclass(frozen=True)
class Tenure:
    org: str
    start: int
    end: int  # inclusive

    def holds(self, lo: int, hi: int) -> bool:
        """The interval check: [lo, hi] lies inside this tenure."""
        return self.start <= lo and hi <= self.end


@dataclass(frozen=True)
class Item:
    person: str
    tenures: tuple[Tenure, ...]  # chronological
    question: str
    context: str
    lo: int  # asked interval [lo, hi] (lo == hi for a single year)
    hi: int
    qtype: str  # "year", "between" or "after"
    kind: str  # "easy", "hard" or "unanswerable"
    answer: str  # org or NO_ANSWER
    rationale: str  # the full completion: <think> ... </think> <answer> ... </answer>
    after_org: str = ""
    after_n: int = 0

    @property
    def prompt(self) -> str:
        """The paper's user message: ``"Question: " + q + "\\nContext: " + c + "\\n"``."""
        return f"Question: {self.question}\nContext: {self.context}\n"


def answer_for(tenures, lo: int, hi: int) -> str:
    """Gold answer by interval checks: the org whose tenure contains [lo, hi], else "No Answer"."""
    hits = [t.org for t in tenures if t.holds(lo, hi)]
    if len(hits) > 1:
        raise AssertionError(f"tenures overlap at {lo}-{hi}: {hits}")
    return hits[0] if hits else NO_ANSWER


def _tenures(rng: random.Random, years: tuple[int, int], n: int) -> tuple[Tenure, ...]:
    orgs = rng.sample(ORGS, n)
    while True:
        lengths = [rng.randint(2, 5) for _ in range(n)]  # tenure spans 2-5 years (end - start + 1 = 3..6)
        gaps = [rng.randint(2, 4) for _ in range(n - 1)]  # start_{k+1} - end_k: 1-3 gap years
        span = sum(lengths) + sum(gaps)
        if span + 2 <= years[1] - years[0]:
            break
    y, out = rng.randint(years[0] + 1, years[1] - 1 - span), []
    for k in range(n):
        out.append(Tenure(orgs[k], y, y + lengths[k]))
        y += lengths[k] + (gaps[k] if k < n - 1 else 0)
    return tuple(out)


def _sentence(rng: random.Random, person: str, t: Tenure) -> str:
    if rng.random() < 0.5:
        return f"{person} joined {t.org} in {t.start} and left in {t.end} ."
    return f"From {t.start} to {t.end} {person} worked at {t.org} ."


def _rationale(tenures, lo: int, hi: int, qtype: str, after: Tenure | None, n: int, answer: str) -> str:
    steps = []
    if qtype == "after":
        steps.append(f"{after.org} ends {after.end} ; {after.end} + {n} = {lo} .")
    steps.append(f"target {lo} ." if lo == hi else f"target {lo} - {hi} .")
    for t in tenures:
        steps.append(f"{t.org} {t.start} - {t.end} {'yes' if t.holds(lo, hi) else 'no'} .")
    steps.append("so none ." if answer == NO_ANSWER else f"so {answer} .")
    return f"<think>\n{' '.join(steps)}\n</think>\n\n<answer>\n{answer}\n</answer>"


def _ask(rng: random.Random, tenures, years, hard: bool, answerable: bool):
    """Draw (lo, hi, qtype, after_tenure, n) until its interval check gives the wanted answerability."""
    for _ in range(1000):
        if not hard:
            lo = hi = rng.randint(tenures[0].start - 2, tenures[-1].end + 2)
            qtype, after, n = "year", None, 0
        elif rng.random() < 0.5:
            lo = rng.randint(tenures[0].start - 2, tenures[-1].end)
            hi = lo + rng.randint(1, 3)
            qtype, after, n = "between", None, 0
        else:
            after = rng.choice(tenures)
            n = rng.randint(1, 4)
            lo = hi = after.end + n
            qtype = "after"
        lo, hi = max(lo, years[0]), min(hi, years[1])
        if lo > hi:
            continue
        if (answer_for(tenures, lo, hi) != NO_ANSWER) == answerable:
            return lo, hi, qtype, after, n
    raise RuntimeError("could not draw a question of the wanted kind")


def make_item(rng: random.Random, kind: str, years=(1980, 2019), n_distractors: int = 1) -> Item:
    """One question of ``kind`` ("easy", "hard" or "unanswerable"; an unanswerable one is easy or hard at random)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    person, *others = rng.sample(PEOPLE, 1 + n_distractors)
    tenures = _tenures(rng, years, rng.randint(3, 4))
    hard = kind == "hard" or (kind == "unanswerable" and rng.random() < 0.5)
    lo, hi, qtype, after, n = _ask(rng, tenures, years, hard, answerable=kind != "unanswerable")
    order = list(tenures)
    rng.shuffle(order)  # the rationale walks the tenures in the order the context states them
    sents = [(t, _sentence(rng, person, t)) for t in order]
    for o in others:
        while True:  # a distractor tenure of another person, at an org this person never worked for
            t = _tenures(rng, years, 3)[rng.randrange(3)]
            if t.org not in {u.org for u in tenures}:
                break
        sents.insert(rng.randint(0, len(sents)), (None, _sentence(rng, o, t)))
    order = [t for t, _ in sents if t is not None]
    if qtype == "year":
        q = f"Where did {person} work in {lo} ?"
    elif qtype == "between":
        q = f"Where did {person} work between {lo} and {hi} ?"
    else:
        q = f"Where did {person} work {n} years after leaving {after.org} ?"
    answer = answer_for(tenures, lo, hi)
    return Item(
        person=person,
        tenures=tenures,
        question=q,
        context=" ".join(x for _, x in sents),
        lo=lo,
        hi=hi,
        qtype=qtype,
        kind=kind,
        answer=answer,
        rationale=_rationale(order, lo, hi, qtype, after, n, answer),
        after_org=after.org if after else "",
        after_n=n,
    )


def short_rationale(rationale: str) -> str:
    """The rationale without the checks of tenures that do not hold the target ("Acme 1994 - 1996 no"): the same
    layout, the arithmetic, the matching tenure (if any) and the conclusion are kept (~25 instead of ~41 tokens)."""
    think, tail = rationale.removeprefix("<think>\n").split("\n</think>", 1)
    kept = [p for p in think.split(" . ") if not p.endswith(" no")]
    return "<think>\n" + " . ".join(kept) + "\n</think>" + tail


def make_temporal_qa(
    n: int, unanswerable_frac: float = 0.25, hard_frac: float = 0.5, seed: int = 0, n_distractors: int = 1
) -> list[Item]:
    """``n`` items: a share ``unanswerable_frac`` unanswerable, the rest split easy / hard by ``hard_frac``.

    Counts are exact (rounded), order shuffled; deterministic from ``seed``."""
    if not 0.0 <= unanswerable_frac <= 1.0:
        raise ValueError(f"unanswerable_frac must be in [0, 1], got {unanswerable_frac!r}")
    if not 0.0 <= hard_frac <= 1.0:
        raise ValueError(f"hard_frac must be in [0, 1], got {hard_frac!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    rng = random.Random(seed)
    n_un = round(n * unanswerable_frac)
    n_hard = round((n - n_un) * hard_frac)
    kinds = ["unanswerable"] * n_un + ["hard"] * n_hard + ["easy"] * (n - n_un - n_hard)
    rng.shuffle(kinds)
    return [make_item(rng, k, n_distractors=n_distractors) for k in kinds]


def vocabulary(years=(1980, 2019)) -> list[str]:
    """Every word the world can write (for closed-vocabulary tokenizers)."""
    words = set(PEOPLE) | set(ORGS) | {str(y) for y in range(years[0], years[1] + 1)} | {str(i) for i in range(1, 6)}
    words |= set(
        [
            "Question:",
            "Context:",
            "Where",
            "did",
            "work",
            "in",
            "between",
            "and",
            "years",
            "after",
            "leaving",
            "?",
            "joined",
            "left",
            "From",
            "to",
            "worked",
            "at",
            ".",
            "<think>",
            "</think>",
            "<answer>",
            "</answer>",
            "target",
            "ends",
            ";",
            "+",
            "=",
            "-",
            "yes",
            "no",
            "so",
            "none",
            "No",
            "Answer",
        ]
    )
    return sorted(words)
