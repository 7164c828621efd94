"""A document world for information-seeking agents, with exact ground truth for every retrieved document.

Used by the SeekBench reproduction (docs/papers/seekbench.md). Entities have two-word names from a small pool of
first and last names, so names share tokens and BM25 returns near-miss *distractors*. Each entity holds one value per
attribute; each (entity, attribute) fact is written in

- a **primary** document (title = the name; short, ending with the fact's archive record code): it states the value
  clearly, or, with probability ``p_missing``, only says the value is not recorded (→ Insufficient); with
  probability ``p_conflict`` a **rumour** document adds a wrong value for the same fact (→ Sufficient but Unclear);
- an **archive** document (with a unique record code; the attribute under a synonym): always states the value,
  reachable by a *refined* query (name + synonym + "archive") or a *follow-up* query (the record code read in a result).

Every document carries its fact metadata, so the exact labels of any result list are known:
quality = Sufficient iff some document states a value for the queried fact; clarity = Clear iff exactly one distinct
value is stated. A fraction ``p_paraphrase`` of the clear statements uses a paraphrase without the attribute's
keyword: a text-only judge that looks for keywords misses them (the source of judge errors).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SYLLABLES = [
    "ka",
    "lo",
    "ri",
    "ve",
    "sa",
    "mo",
    "tu",
    "ne",
    "di",
    "ba",
    "ro",
    "ki",
    "la",
    "fe",
    "zu",
    "pa",
    "ni",
    "go",
    "ta",
    "me",
]


@dataclass(frozen=True)
class Attribute:
    name: str
    keyword: str  # in the question, the primary document and the basic query
    synonym: str  # in the archive document and refined queries
    statement: str  # clear statement with the keyword: "{n}" name, "{v}" value
    paraphrase: str  # clear statement without the keyword
    n_values: int = 12


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("birthplace", "birthplace", "origin", "The birthplace of {n} is {v}.", "{n} first saw daylight in {v}."),
    Attribute("employer", "employer", "workplace", "The employer of {n} is {v}.", "{n} draws a salary from {v}."),
    Attribute(
        "instrument", "instrument", "music", "The instrument of {n} is the {v}.", "{n} performs nightly on the {v}."
    ),
    Attribute("school", "school", "education", "The school of {n} is {v}.", "{n} graduated from {v}."),
    Attribute("sport", "sport", "pastime", "The sport of {n} is {v}.", "{n} competes every weekend at {v}."),
    Attribute("pet", "pet", "animal", "The pet of {n} is a {v}.", "{n} lives with a loyal {v}."),
)
FILLER = (
    "Local registers list {n} among the residents of the valley.",
    "{n} is mentioned in several regional chronicles.",
    "Little else is documented about {n}.",
)


@dataclass(frozen=True)
class SearchWorldConfig:
    n_entities: int = field(default=120, metadata={"help": "entities (each with one value per attribute)"})
    n_names: int = field(default=14, metadata={"help": "first and last names in the pool (names share tokens)"})
    p_missing: float = field(default=0.3, metadata={"help": "primary document omits the value (Insufficient)"})
    p_conflict: float = field(default=0.2, metadata={"help": "a rumour document gives a wrong value (Unclear)"})
    p_paraphrase: float = field(default=0.25, metadata={"help": "clear statements written without the keyword"})
    archive: bool = field(
        default=True, metadata={"help": "write archive documents (False: a world without a recovery path)"}
    )

    def __post_init__(self):
        if self.n_names**2 < self.n_entities:
            raise ValueError(f"n_names={self.n_names} gives {self.n_names**2} names < n_entities={self.n_entities}")
        for name in ("p_missing", "p_conflict", "p_paraphrase"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"SearchWorldConfig.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.p_missing + self.p_conflict > 1:
            raise ValueError("SearchWorldConfig: p_missing + p_conflict must be ≤ 1")


@dataclass(frozen=True)
class Question:
    qid: str
    entity: str
    attribute: str
    answer: str
    text: str
    record: str  # the archive record code of this fact


class SearchWorld:
    """Entities, documents (``docs[i] = {"title", "content", "entity", "attribute", "value", "kind"}``) and one
    question per (entity, attribute) fact, deterministic from ``seed``."""

    def __init__(self, config: SearchWorldConfig | None = None, seed: int = 0):
        self.config, self.seed = config or SearchWorldConfig(), seed
        rng = random.Random(seed)
        word = lambda k: "".join(rng.choice(SYLLABLES) for _ in range(k)).capitalize()  # noqa: E731
        pool = lambda n, k: list(dict.fromkeys(word(k) for _ in range(50 * n)))[:n]  # noqa: E731
        firsts, lasts = pool(self.config.n_names, 2), pool(self.config.n_names, 3)
        names = [f"{f} {la}" for f in firsts for la in lasts]
        rng.shuffle(names)
        self.entities = names[: self.config.n_entities]
        self.values = {a.name: pool(a.n_values, 3) for a in ATTRIBUTES}
        self.attributes = {a.name: a for a in ATTRIBUTES}
        self.facts = {(e, a.name): rng.choice(self.values[a.name]) for e in self.entities for a in ATTRIBUTES}
        self.docs: list[dict] = []
        self.questions: list[Question] = []
        codes = rng.sample(range(1000, 10000), len(self.facts))
        for (e, a_name), v in self.facts.items():
            a = self.attributes[a_name]
            record = f"R{codes[len(self.questions)]}"
            u = rng.random()
            kind = (
                "missing"
                if u < self.config.p_missing
                else "conflict"
                if u < self.config.p_missing + self.config.p_conflict
                else "clear"
            )
            if kind == "missing":
                text = f"The {a.keyword} of {e} is not recorded in this entry."
                self._doc(e, e, f"{text} See record {record}.", a_name, None, "primary")
            else:
                self._doc(e, e, f"{self._state(rng, a, e, v)} See record {record}.", a_name, v, "primary")
            if kind == "conflict":
                wrong = rng.choice([x for x in self.values[a_name] if x != v])
                text = f"Some say the {a.keyword} of {e} is {wrong}. " + rng.choice(FILLER).format(n=e)
                self._doc(f"{e} (rumour)", e, text, a_name, wrong, "rumour")
            if self.config.archive:
                text = f"Archive record {record}. {e}, {a.synonym}: {v}. Copied from the parish books."
                self._doc(f"{e} (archive {record})", e, text, a_name, v, "archive")
            qid = f"q{len(self.questions)}"
            self.questions.append(Question(qid, e, a_name, v, f"What is the {a.keyword} of {e}?", record))

    def _state(self, rng: random.Random, a: Attribute, e: str, v: str) -> str:
        return (a.paraphrase if rng.random() < self.config.p_paraphrase else a.statement).format(n=e, v=v)

    def _doc(self, title, entity, content, attribute, value, kind):
        self.docs.append(
            {"title": title, "content": content, "entity": entity, "attribute": attribute, "value": value, "kind": kind}
        )

    def stated_values(self, doc_ids, entity: str, attribute: str) -> list[str]:
        """Distinct values the documents state for the fact (entity, attribute), in order of appearance."""
        vals = [self.docs[i]["value"] for i in doc_ids]
        keep = [
            v
            for i, v in zip(doc_ids, vals)
            if v is not None and self.docs[i]["entity"] == entity and self.docs[i]["attribute"] == attribute
        ]
        return list(dict.fromkeys(keep))

    def label_result(self, doc_ids, entity: str, attribute: str) -> tuple[str, str]:
        """Exact (information_quality, information_clarity) of a result list for the fact it was searched for."""
        vals = self.stated_values(doc_ids, entity, attribute)
        quality = "Sufficient" if vals else "Insufficient"
        return quality, "Clear" if len(vals) == 1 else "Unclear"

    def split(self, n_train: int, n_test: int, seed: int = 0) -> tuple[list[Question], list[Question]]:
        """Disjoint question sets drawn at random (validation/judge-training vs test)."""
        if n_train + n_test > len(self.questions):
            raise ValueError(f"asked for {n_train}+{n_test} questions; the world has {len(self.questions)}")
        qs = random.Random(seed).sample(self.questions, n_train + n_test)
        return qs[:n_train], qs[n_train:]
