"""A small hand-built set of real facts with several relations per subject, for editing a real pretrained model.

Countries × five relations (capital, largest city, continent, official language, currency). Relations carry an
object type and a family as in :mod:`iclr26.worlds.facts`, so the same similarity levels apply: ``capital`` vs
``largest_city`` is level 2 (both cities, both "which city"), ``capital`` vs ``continent`` level 1 (both places, other
family), anything vs ``currency`` or ``official_language`` level 0. :class:`RealFactWorld` has the interface of
:class:`~iclr26.worlds.facts.FactWorld` (``facts``, ``prompt``, ``siblings``, ``similarity``, ``counterfact``) so the
editing benchmark runs on it unchanged; keep only what a model already knows with
``iclr26.editing.evaluate.known_facts(model, tok, world)``.

Values are common knowledge (one answer per fact; ambiguous facts are left out: a ``None`` in the table).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property

from iclr26.worlds.facts import Fact, FactTable, Relation

REAL_RELATIONS: tuple[Relation, ...] = (
    Relation(
        "capital",
        "place",
        "city",
        (
            "The capital of {s} is",
            "The capital city of {s} is",
            "{s}'s capital city is",
            "The seat of government of {s} is in",
        ),
    ),
    Relation(
        "largest_city",
        "place",
        "city",
        ("The largest city in {s} is", "The biggest city of {s} is", "{s}'s most populous city is"),
    ),
    Relation(
        "continent",
        "place",
        "region",
        (
            "{s} is a country in the continent of",
            "{s} is located in the continent of",
            "The continent where {s} lies is",
        ),
    ),
    Relation(
        "official_language",
        "language",
        "language",
        ("The official language of {s} is", "In {s}, the official language is", "The national language of {s} is"),
    ),
    Relation(
        "currency",
        "currency",
        "money",
        ("The currency of {s} is the", "The official currency of {s} is the", "In {s}, people pay with the"),
    ),
)

# country: (capital, largest city, continent, official language, currency)
COUNTRIES: dict[str, tuple[str | None, ...]] = {
    "France": ("Paris", "Paris", "Europe", "French", "euro"),
    "Germany": ("Berlin", "Berlin", "Europe", "German", "euro"),
    "Italy": ("Rome", "Rome", "Europe", "Italian", "euro"),
    "Spain": ("Madrid", "Madrid", "Europe", "Spanish", "euro"),
    "Portugal": ("Lisbon", "Lisbon", "Europe", "Portuguese", "euro"),
    "Greece": ("Athens", "Athens", "Europe", "Greek", "euro"),
    "Austria": ("Vienna", "Vienna", "Europe", "German", "euro"),
    "Netherlands": ("Amsterdam", "Amsterdam", "Europe", "Dutch", "euro"),
    "Finland": ("Helsinki", "Helsinki", "Europe", "Finnish", "euro"),
    "Ireland": ("Dublin", "Dublin", "Europe", "English", "euro"),
    "Sweden": ("Stockholm", "Stockholm", "Europe", "Swedish", "krona"),
    "Norway": ("Oslo", "Oslo", "Europe", "Norwegian", "krone"),
    "Denmark": ("Copenhagen", "Copenhagen", "Europe", "Danish", "krone"),
    "Poland": ("Warsaw", "Warsaw", "Europe", "Polish", "zloty"),
    "Hungary": ("Budapest", "Budapest", "Europe", "Hungarian", "forint"),
    "Ukraine": ("Kyiv", "Kyiv", "Europe", "Ukrainian", "hryvnia"),
    "Russia": ("Moscow", "Moscow", None, "Russian", "ruble"),
    "United Kingdom": ("London", "London", "Europe", "English", "pound"),
    "Switzerland": ("Bern", "Zurich", "Europe", None, "franc"),
    "Japan": ("Tokyo", "Tokyo", "Asia", "Japanese", "yen"),
    "China": ("Beijing", "Shanghai", "Asia", "Chinese", "yuan"),
    "India": ("New Delhi", "Mumbai", "Asia", "Hindi", "rupee"),
    "Pakistan": ("Islamabad", "Karachi", "Asia", "Urdu", "rupee"),
    "South Korea": ("Seoul", "Seoul", "Asia", "Korean", "won"),
    "Thailand": ("Bangkok", "Bangkok", "Asia", "Thai", "baht"),
    "Vietnam": ("Hanoi", "Ho Chi Minh City", "Asia", "Vietnamese", "dong"),
    "Indonesia": ("Jakarta", "Jakarta", "Asia", "Indonesian", "rupiah"),
    "Iran": ("Tehran", "Tehran", "Asia", "Persian", "rial"),
    "Saudi Arabia": ("Riyadh", "Riyadh", "Asia", "Arabic", "riyal"),
    "Turkey": ("Ankara", "Istanbul", None, "Turkish", "lira"),
    "Egypt": ("Cairo", "Cairo", "Africa", "Arabic", "pound"),
    "Kenya": ("Nairobi", "Nairobi", "Africa", None, "shilling"),
    "Nigeria": ("Abuja", "Lagos", "Africa", "English", "naira"),
    "South Africa": ("Pretoria", "Johannesburg", "Africa", None, "rand"),
    "Canada": ("Ottawa", "Toronto", "North America", None, "dollar"),
    "United States": ("Washington", "New York", "North America", "English", "dollar"),
    "Mexico": ("Mexico City", "Mexico City", "North America", "Spanish", "peso"),
    "Cuba": ("Havana", "Havana", "North America", "Spanish", "peso"),
    "Brazil": ("Brasilia", "Sao Paulo", "South America", "Portuguese", "real"),
    "Argentina": ("Buenos Aires", "Buenos Aires", "South America", "Spanish", "peso"),
    "Chile": ("Santiago", "Santiago", "South America", "Spanish", "peso"),
    "Peru": ("Lima", "Lima", "South America", "Spanish", "sol"),
    "Colombia": ("Bogota", "Bogota", "South America", "Spanish", "peso"),
    "Australia": ("Canberra", "Sydney", "Oceania", "English", "dollar"),
}


@dataclass
class RealFactWorld(FactTable):
    """Real facts about countries, with the :class:`~iclr26.worlds.facts.FactWorld` interface."""

    table: dict[str, tuple[str | None, ...]] = field(default_factory=lambda: dict(COUNTRIES))
    relations: tuple[Relation, ...] = REAL_RELATIONS
    seed: int = 0

    def __post_init__(self):
        bad = [s for s, row in self.table.items() if len(row) != len(self.relations)]
        if bad:
            raise ValueError(f"rows {bad} need {len(self.relations)} values ({[r.name for r in self.relations]})")
        self.entities = list(self.table)
        self._table = {
            (s, r.name): row[i]
            for s, row in self.table.items()
            for i, r in enumerate(self.relations)
            if row[i] is not None
        }

    @cached_property
    def objects(self) -> dict[str, tuple[str, ...]]:
        """Objects seen per relation (edit targets are drawn from the edited relation's own objects)."""
        return {
            r.name: tuple(sorted({o for (s, rel), o in self._table.items() if rel == r.name})) for r in self.relations
        }

    def counterfact(self, fact: Fact, rng: random.Random) -> str:
        """Another object of the same relation (e.g. another country's capital)."""
        return rng.choice([o for o in self.objects[fact.relation] if o != fact.object])
