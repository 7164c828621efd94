"""Synthetic languages with disjoint vocabularies and different word orders that render the same task content.

A world for language-control studies (LinguaMap, https://arxiv.org/abs/2601.20009) where language identity and task
answers are exact. Four languages: ``en`` (English words) and ``l1``, ``l2``, ``l3`` (pseudo-words from disjoint
syllable inventories). Each language maps every concept (names, objects, numbers 0–19, function words, language
names) to its own word; only punctuation is shared. ``l1`` keeps English word order, ``l2`` is verb-final and ``l3``
puts numbers after nouns, so a model cannot translate word by word in place.

The task is a templated addition word problem with a reasoning line and an answer::

    P: question :     I: respond in english .
    Q: tom has 3 apples . tom gets 4 more . how many apples ?
    R: 3 plus 4 is 7 .    A: answer 7 .

``render`` builds the prompt parts (P, I, Q) and the output (R, A) each in a chosen language; ``language_of`` gives the
majority language of a text and ``answer_of`` the number it ends with (in any language).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

LANGS = ("en", "l1", "l2", "l3")
NAMES = ("tom", "ann", "bob", "eva", "max", "liz")
OBJECTS = ("apples", "books", "coins", "cups", "pens", "rings")
NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
FUNCTION = ("has", "gets", "more", "how", "many", "plus", "is", "answer", "question", "respond", "in", "and")
LANG_NAMES = ("english", "lone", "ltwo", "lthree")
PUNCT = (".", "?", ":", "=")
_SYLLABLES = {"l1": ("b", "d", "g", "k"), "l2": ("l", "m", "n", "r"), "l3": ("p", "s", "v", "z")}
MAX_OPERAND = 9


@dataclass(frozen=True)
class Problem:
    name: str
    obj: str
    a: int
    b: int

    @property
    def answer(self) -> int:
        return self.a + self.b


class LanguageWorld:
    """Four languages over one concept set; deterministic from ``seed``."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        rng = random.Random(seed)
        concepts = list(NAMES) + list(OBJECTS) + NUMBERS + list(FUNCTION) + list(LANG_NAMES)
        self.lexicon: dict[str, dict[str, str]] = {"en": {c: c for c in concepts}}
        used = set(concepts)
        for lang, cons in _SYLLABLES.items():
            lex = {}
            for c in concepts:
                while True:
                    w = "".join(rng.choice(cons) + rng.choice("aeiou") for _ in range(rng.choice((2, 3))))
                    if w not in used:
                        used.add(w)
                        lex[c] = w
                        break
            self.lexicon[lang] = lex
        self.word_language = {w: lang for lang, lex in self.lexicon.items() for w in lex.values()}
        self.word_number = {lex[n]: i for lex in self.lexicon.values() for i, n in enumerate(NUMBERS)}

    # ---- rendering -------------------------------------------------------------------------------------------
    def words(self, lang: str, concepts: list[str | int]) -> str:
        lex = self.lexicon[lang]
        out = []
        for c in concepts:
            if isinstance(c, int):
                c = NUMBERS[c]
            out.append(c if c in PUNCT else lex[c])
        return " ".join(out)

    def _clauses(self, lang: str, p: Problem) -> tuple[list, list, list, list]:
        """(have clause, get clause, question clause, reasoning clause) in the language's word order."""
        have, get = [p.name, "has", p.a, p.obj], [p.name, "gets", p.b, "more"]
        ask, reason = ["how", "many", p.obj], [p.a, "plus", p.b, "is", p.answer]
        if lang == "l2":  # verb-final
            have, get = [p.name, p.a, p.obj, "has"], [p.name, p.b, "more", "gets"]
            ask, reason = [p.obj, "how", "many"], [p.a, p.b, "plus", p.answer, "is"]
        elif lang == "l3":  # number after the noun
            have, reason = [p.name, "has", p.obj, p.a], [p.answer, "is", p.a, "plus", p.b]
        return have, get, ask, reason

    def preamble(self, lang: str) -> str:
        return self.words(lang, ["question", ":"])

    def instruction(self, lang: str, target: str) -> str:
        return self.words(lang, ["respond", "in", LANG_NAMES[LANGS.index(target)], "."])

    def question(self, lang: str, p: Problem) -> str:
        have, get, ask, _ = self._clauses(lang, p)
        return self.words(lang, have + ["."] + get + ["."] + ask + ["?"])

    def output(self, lang: str, p: Problem) -> str:
        """Reasoning then answer (R, A)."""
        reason = self._clauses(lang, p)[3]
        return self.words(lang, reason + [".", "answer", p.answer, "."])

    def sentence(self, lang: str, p: Problem) -> str:
        """A generic (non-task) sentence: one clause of a problem."""
        return self.words(lang, self._clauses(lang, p)[0] + ["."])

    def scenario(self, scenario: str, target: str, p: Problem, distractor: Problem | None = None) -> tuple[str, str]:
        """(context P+I, prompt content Q) of one of the four scenarios; the expected output is ``output(target)``.

        mono: all in the target language; codemixed: English P/I, target-language Q; distractor: target P/I plus a
        solved English example before Q; bilingual: the instruction given in English and in the target language.
        """
        if scenario == "mono":
            return f"{self.preamble(target)} {self.instruction(target, target)}", self.question(target, p)
        if scenario == "codemixed":
            return f"{self.preamble('en')} {self.instruction('en', target)}", self.question(target, p)
        if scenario == "distractor":
            d = distractor or Problem(NAMES[0], OBJECTS[0], 1, 1)
            example = f"{self.question('en', d)} {self.output('en', d)}"
            return f"{self.preamble(target)} {example} {self.instruction(target, target)}", self.question(target, p)
        if scenario == "bilingual":
            both = f"{self.instruction('en', target)} {self.instruction(target, target)}"
            return f"{self.preamble('en')} {both}", self.question(target, p)
        raise ValueError(f"unknown scenario {scenario!r}; choose one of {SCENARIOS}")

    # ---- sampling -------------------------------------------------------------------------------------------
    @staticmethod
    def problems(n: int, rng: random.Random) -> list[Problem]:
        return [
            Problem(rng.choice(NAMES), rng.choice(OBJECTS), rng.randint(0, MAX_OPERAND), rng.randint(0, MAX_OPERAND))
            for _ in range(n)
        ]

    # ---- reading outputs ------------------------------------------------------------------------------------
    def language_of(self, text: str) -> str | None:
        """Majority language of the words of ``text`` (punctuation and unknown words ignored)."""
        langs = Counter(self.word_language[w] for w in text.split() if w in self.word_language)
        return langs.most_common(1)[0][0] if langs else None

    def answer_of(self, text: str) -> int | None:
        """The last number word of ``text`` in any language (the answer), or None."""
        nums = [self.word_number[w] for w in text.split() if w in self.word_number]
        return nums[-1] if nums else None

    def vocabulary_texts(self) -> list[str]:
        return [" ".join(lex.values()) for lex in self.lexicon.values()] + [" ".join(PUNCT)]


SCENARIOS = ("mono", "codemixed", "distractor", "bilingual")
