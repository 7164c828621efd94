"""A synthetic fact world with known ground truth, for knowledge editing and interpretability.

Entities (invented one-token names) each hold one object for every relation. Relations carry an object type and a
phrasing family, so the similarity between two relations is graded:

- level 2 (high): same object type and same phrasing family (``birthplace`` vs ``hometown``: both cities, both origin);
- level 1 (medium): same object type, other phrasing family (``birthplace`` vs ``workplace``);
- level 0 (low): other object type (``birthplace`` vs ``sport``).

Every relation has several paraphrase templates. The world exposes every fact and every same-subject sibling fact,
deterministic from a seed.

Subjects are one invented word (``subject_words=1``, e.g. ``Bakori``) or several syllable words whose *order* matters
(``subject_words=3``: ``Ba Ko Ri``, ``Ri Ba Ko`` and ``Ko Ri Ba`` are three different people). With order-sensitive
multi-token names a model cannot read the subject from a bag of token embeddings at the final position; it has to
compose the name at the subject's last token, which is the pathway locate-then-edit methods (ROME, MEMIT, ...) edit.
Measured here: a tiny llama trained on one-word subjects (at lr 3e-3) answered through the first attention layer
straight from the embedding and ROME could not edit it (efficacy ≈ 0); on three-word permuted names ROME at an early
layer reaches efficacy ≈ 0.8–0.9 (see docs/papers/dike.md).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from functools import cached_property
from math import comb


@dataclass(frozen=True)
class Relation:
    name: str
    object_type: str
    family: str
    templates: tuple[str, ...]  # "{s}" marks the subject; the object follows the prompt


@dataclass(frozen=True)
class Fact:
    subject: str
    relation: str
    object: str


RELATIONS: tuple[Relation, ...] = (
    Relation(
        "birthplace",
        "city",
        "origin",
        ("{s} was born in", "the birthplace of {s} is", "{s} came into the world in", "{s} , born in"),
    ),
    Relation(
        "hometown",
        "city",
        "origin",
        ("{s} grew up in", "the hometown of {s} is", "{s} spent childhood in", "{s} , raised in"),
    ),
    Relation(
        "workplace",
        "city",
        "activity",
        ("{s} works in", "the office of {s} is in", "{s} has a job in", "{s} , employed in"),
    ),
    Relation(
        "native_language",
        "language",
        "origin",
        (
            "the native language of {s} is",
            "{s} was raised speaking",
            "the mother tongue of {s} is",
            "{s} , a native speaker of",
        ),
    ),
    Relation(
        "study_language",
        "language",
        "activity",
        ("{s} is learning", "{s} takes lessons in", "the language {s} studies is", "{s} , a student of"),
    ),
    Relation(
        "sport",
        "sport",
        "hobby",
        ("{s} plays", "the favourite sport of {s} is", "{s} trains every week at", "{s} , a keen player of"),
    ),
    Relation(
        "instrument",
        "instrument",
        "hobby",
        ("{s} performs on the", "the instrument of {s} is the", "{s} practises the", "{s} , who plays the"),
    ),
    Relation(
        "colour",
        "colour",
        "taste",
        ("the favourite colour of {s} is", "{s} likes the colour", "{s} always wears", "{s} , dressed in"),
    ),
)

OBJECTS: dict[str, tuple[str, ...]] = {
    "city": (
        "Paris",
        "Rome",
        "Berlin",
        "Madrid",
        "Vienna",
        "Lisbon",
        "Prague",
        "Oslo",
        "Dublin",
        "Athens",
        "Cairo",
        "Lima",
        "Tokyo",
        "Seoul",
        "Delhi",
        "Quito",
    ),
    "language": (
        "French",
        "Italian",
        "German",
        "Spanish",
        "Dutch",
        "Polish",
        "Greek",
        "Swedish",
        "Danish",
        "Finnish",
        "Czech",
        "Turkish",
    ),
    "sport": ("tennis", "football", "hockey", "rugby", "cricket", "golf", "chess", "rowing", "boxing", "judo"),
    "instrument": ("piano", "violin", "cello", "flute", "guitar", "trumpet", "harp", "drums", "oboe", "banjo"),
    "colour": ("red", "blue", "green", "yellow", "purple", "orange", "black", "white", "grey", "brown"),
}

_SYLLABLES = (
    "ba",
    "ko",
    "ri",
    "na",
    "te",
    "lu",
    "mo",
    "xi",
    "pe",
    "da",
    "zu",
    "fa",
    "gi",
    "ve",
    "so",
    "ha",
    "jo",
    "ki",
    "wu",
    "ne",
    "ty",
    "ro",
    "mi",
    "qa",
)


def entity_names(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct invented capitalised names of 3 syllables (one word each)."""
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < n:
        names.add("".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize())
    out = sorted(names)  # a set's order depends on the process's hash seed: sort before shuffling
    rng.shuffle(out)
    return out


def permuted_names(n: int, seed: int = 0, words: int = 3) -> list[str]:
    """``n`` distinct names of ``words`` capitalised syllable words; every syllable set is used in ``words``
    different orders, so only the order tells those names apart (deterministic from ``seed``)."""
    if words < 2:
        raise ValueError(f"permuted names need at least 2 words, got {words}")
    if n > comb(len(_SYLLABLES), words) * words:
        raise ValueError(f"at most {comb(len(_SYLLABLES), words) * words} names of {words} syllables; asked for {n}")
    rng = random.Random(seed)
    syllables = sorted(s.capitalize() for s in _SYLLABLES)
    sets: set[frozenset] = set()
    out: list[str] = []
    while len(out) < n:
        base = tuple(rng.sample(syllables, words))
        if frozenset(base) in sets:
            continue
        sets.add(frozenset(base))
        orders = sorted(itertools.permutations(base))
        rng.shuffle(orders)
        out.extend(" ".join(o) for o in orders[:words])
    return out[:n]


def similarity_level(a: Relation, b: Relation) -> int:
    """2 (same type, same family), 1 (same type, other family), 0 (other type)."""
    if a.object_type != b.object_type:
        return 0
    return 2 if a.family == b.family else 1


class FactTable:
    """Queries shared by every world of (subject, relation) → object facts; subclasses fill ``entities``,
    ``relations`` and ``_table``."""

    entities: list[str]
    relations: tuple[Relation, ...]
    _table: dict[tuple[str, str], str]

    @cached_property
    def relation(self) -> dict[str, Relation]:
        return {r.name: r for r in self.relations}

    @property
    def facts(self) -> list[Fact]:
        return [
            Fact(s, r.name, self._table[s, r.name])
            for s in self.entities
            for r in self.relations
            if (s, r.name) in self._table
        ]

    def object(self, subject: str, relation: str) -> str:
        return self._table[subject, relation]

    def siblings(self, fact: Fact) -> list[Fact]:
        """Same subject, other relation: the fine-grained facts an edit of ``fact`` must not disturb."""
        return [
            Fact(fact.subject, r.name, self._table[fact.subject, r.name])
            for r in self.relations
            if r.name != fact.relation and (fact.subject, r.name) in self._table
        ]

    def similarity(self, r1: str, r2: str) -> int:
        return similarity_level(self.relation[r1], self.relation[r2])

    def prompt(self, fact: Fact | tuple[str, str], template: int = 0) -> str:
        subject, rel = (fact.subject, fact.relation) if isinstance(fact, Fact) else fact
        templates = self.relation[rel].templates
        return templates[template % len(templates)].format(s=subject)

    def sentence(self, fact: Fact, template: int = 0) -> str:
        return f"{self.prompt(fact, template)} {fact.object}"


@dataclass
class FactWorld(FactTable):
    """``n_entities`` subjects × every relation, objects drawn uniformly at random (deterministic from ``seed``)."""

    n_entities: int = 100
    seed: int = 0
    relations: tuple[Relation, ...] = RELATIONS
    objects: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(OBJECTS))
    subject_words: int = 1  # 1: one invented word per subject; ≥ 2: permuted syllable words (see the module docstring)

    def __post_init__(self):
        if self.n_entities < 1:
            raise ValueError(f"n_entities must be ≥ 1, got {self.n_entities}")
        if self.subject_words < 1:
            raise ValueError(f"subject_words must be ≥ 1, got {self.subject_words}")
        missing = {r.object_type for r in self.relations} - set(self.objects)
        if missing:
            raise ValueError(f"no objects for object types {sorted(missing)}")
        if self.subject_words == 1:
            self.entities = entity_names(self.n_entities, self.seed)
        else:
            self.entities = permuted_names(self.n_entities, self.seed, self.subject_words)
        rng = random.Random(self.seed + 1)
        self._table = {
            (s, r.name): rng.choice(self.objects[r.object_type]) for s in self.entities for r in self.relations
        }

    def sentences(self, templates: tuple[int, ...] | None = None) -> list[str]:
        """Every fact under every template (or the given template indices): the training corpus."""
        out = []
        for f in self.facts:
            n = len(self.relation[f.relation].templates)
            for t in templates if templates is not None else range(n):
                out.append(self.sentence(f, t))
        return out

    def counterfact(self, fact: Fact, rng: random.Random) -> str:
        """A new object of the right type that differs from the true one (an edit target)."""
        choices = [o for o in self.objects[self.relation[fact.relation].object_type] if o != fact.object]
        return rng.choice(choices)

    def vocabulary_texts(self) -> list[str]:
        """Texts that cover every word of the world (for building a tokenizer)."""
        return self.sentences() + [" ".join(v) for v in self.objects.values()]
