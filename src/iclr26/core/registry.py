"""The paper registry: one card per seed paper, and the reproduction module of each paper that has one.

A paper has a reproduction when `iclr26.papers.<slug with '-' as '_'>` exists. That module (or package) is the paper's
*card*: it defines `CONFIGS`, `CLAIMS` and `METRICS` and imports nothing heavy, so that `iclr26 show` stays fast. The
reproduction itself, `run` (and optionally `plots`), lives in the card or, for a package, in its `experiment` module,
which is imported only when the paper runs. The registry only looks modules up; it never imports a field package itself.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

from .cards import CARDS
from .errors import UserError


class UnknownPaperError(UserError, KeyError):
    """Raised for a slug that is not in the seed list; the message names the closest slugs."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want a readable sentence
        return str(self.args[0])


@dataclass(frozen=True)
class PaperCard:
    slug: str
    title: str
    method: str
    url: str
    seed_file: str
    field: str
    package: str

    @property
    def module_name(self) -> str:
        return "iclr26.papers." + self.slug.replace("-", "_")

    def module(self) -> ModuleType | None:
        """The reproduction module (its claims and gates checked: unknown gate ids or a cycle are an error), or None
        when the paper has none yet."""
        if importlib.util.find_spec(self.module_name) is None:
            return None
        mod = importlib.import_module(self.module_name)
        if not getattr(mod, "_claims_checked", False):
            from .gates import validate

            validate(mod.CLAIMS, where=f"paper {self.slug!r}")
            mod._claims_checked = True
        return mod

    def experiment(self) -> ModuleType:
        """The module that holds `run` (and optionally `plots`): the card itself, or the package's `experiment`."""
        card = self.module()
        if card is None:
            raise LookupError(f"paper {self.slug!r} has no reproduction yet")
        if hasattr(card, "run"):
            return card
        return importlib.import_module(self.module_name + ".experiment")

    @property
    def has_reproduction(self) -> bool:
        return importlib.util.find_spec(self.module_name) is not None


PAPERS: dict[str, PaperCard] = {
    slug: PaperCard(slug, title, method, url, seed, field, package)
    for slug, (title, method, url, seed, field, package) in CARDS.items()
}


def get_paper(slug: str) -> PaperCard:
    """The card for `slug`; an unknown slug raises an error that suggests the closest slugs."""
    key = slug.strip().lower().replace("_", "-")
    if key in PAPERS:
        return PAPERS[key]
    close = difflib.get_close_matches(key, PAPERS, n=3, cutoff=0.4)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UnknownPaperError(f"unknown paper slug {slug!r}.{hint} `iclr26 list` shows all {len(PAPERS)} slugs.")


def reproducible() -> list[PaperCard]:
    """Cards of every paper that has a reproduction module, in registry order."""
    return [card for card in PAPERS.values() if card.has_reproduction]
