"""Long-context retrieval tasks with known answers, in the spirit of RULER (Hsieh et al., 2024).

Four tasks, each a haystack with planted items and a question at the end whose answer is a short continuation:

- ``niah``: one needle (key → value) at a chosen depth;
- ``multikey``: several needles with distractor keys, one of them asked;
- ``vartrack``: chains of assignments (``x2 ← x8 ← x5 ← value``) plus a distractor chain; the answer walks the chain;
- ``factqa``: facts of a :class:`~iclr26.worlds.facts.FactWorld` spread over the haystack, one asked.

Two renderings:

- :class:`SyntheticLongCtx`, a closed vocabulary (filler sentences of a toy grammar, ``k*``/``v*``/``x*`` symbols,
  fact-world words) for a tiny model trained from scratch; lengths in words = tokens of the word-level tokenizer;
- :class:`WikiLongCtx`, needles planted in real Wikipedia text (gensim's sample, :func:`iclr26.worlds.text.wikipedia`)
  for a pretrained model, with lengths measured by its tokenizer.

Every example is a :class:`LongCtxExample` (prompt, answer, task, depth); all generation is deterministic from an RNG.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from iclr26.worlds.facts import FactWorld

TASKS = ("niah", "multikey", "vartrack", "factqa")
DEPTHS = (0.1, 0.3, 0.5, 0.7, 0.9)


@dataclass(frozen=True)
class LongCtxExample:
    task: str
    prompt: str  # haystack + question + answer prefix; the answer follows after a space
    answer: str
    depth: float  # relative position of the asked needle in the haystack
    n_words: int


def _check(task: str, n: int, minimum: int) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if n < minimum:
        raise ValueError(f"context length {n} too short for {task!r}: need at least {minimum}")


def _plant(hay: list[str], items: list[tuple[float, str]]) -> str:
    """Insert each (depth, sentence) between haystack sentences at relative position depth, in order."""
    out = list(hay)
    for depth, sent in sorted(items, key=lambda x: -x[0]):  # from the back so earlier indices stay valid
        out.insert(round(depth * len(hay)), sent)
    return " ".join(out)


def _items(task: str, rng: random.Random, depth: float, keys, values, variables, world: FactWorld, render):
    """(planted (depth, sentence) list, question subject, answer) for one task; ``render`` formats each piece."""
    if task in ("niah", "multikey"):
        n = 1 if task == "niah" else 6
        ks, vs = rng.sample(keys, n), [rng.choice(values) for _ in range(n)]
        depths = [depth] + [rng.uniform(0.05, 0.95) for _ in range(n - 1)]
        return [(d, render("needle", k, v)) for d, k, v in zip(depths, ks, vs)], render("ask", ks[0]), vs[0]
    if task == "vartrack":
        names = rng.sample(variables, 8)
        chains = [names[:4], names[4:]]  # chain[0] ← chain[1] ← chain[2] ← chain[3] ← value
        items, vals = [], [rng.choice(values) for _ in chains]
        for c, (chain, val) in enumerate(zip(chains, vals)):
            ds = sorted(rng.uniform(0.05, 0.95) for _ in range(len(chain)))
            if c == 0:
                ds[0] = depth  # the root assignment sits at the asked depth
                ds = [ds[0]] + sorted(max(depth, x) for x in ds[1:])
            items.append((ds[0], render("assign", chain[-1], val)))
            for d, (lhs, rhs) in zip(ds[1:], zip(reversed(chain[:-1]), reversed(chain[1:]))):
                items.append((d, render("assign", lhs, rhs)))
        return items, render("ask_var", chains[0][0]), render("chain", chains[0][1:], vals[0])
    facts = world.facts
    rels = rng.sample([r.name for r in world.relations], 4)
    subjects = rng.sample(world.entities, 4)
    chosen = [next(f for f in facts if f.subject == s and f.relation == r) for s, r in zip(subjects, rels)]
    depths = [depth] + [rng.uniform(0.05, 0.95) for _ in range(3)]
    items = [(d, render("fact", world.sentence(f))) for d, f in zip(depths, chosen)]
    return items, render("ask_fact", world.prompt(chosen[0])), chosen[0].object


class SyntheticLongCtx:
    """Closed-vocabulary rendering for a tiny model (one token per word with the word-level tokenizer)."""

    NOUNS = (
        "cat",
        "dog",
        "bird",
        "fish",
        "tree",
        "house",
        "river",
        "stone",
        "road",
        "cloud",
        "field",
        "boat",
        "lamp",
        "door",
        "hill",
        "garden",
        "window",
        "bridge",
        "forest",
        "horse",
    )
    VERBS = ("sees", "likes", "finds", "follows", "moves", "paints", "hears", "holds", "wants", "visits")

    def __init__(self, n_symbols: int = 64, world_entities: int = 40, seed: int = 0):
        self.keys = [f"k{i}" for i in range(n_symbols)]
        self.values = [f"v{i}" for i in range(n_symbols)]
        self.variables = [f"x{i}" for i in range(n_symbols)]
        self.world = FactWorld(n_entities=world_entities, seed=seed)

    def vocabulary_texts(self) -> list[str]:
        words = [
            *self.NOUNS,
            *self.VERBS,
            *self.keys,
            *self.values,
            *self.variables,
            "the",
            "note",
            "question",
            "answer",
            "?",
            ".",
        ]
        return [" ".join(words), *self.world.vocabulary_texts()]

    def _render(self, kind, *a):
        return {
            "needle": lambda k, v: f"note {k} {v} .",
            "ask": lambda k: f"question {k} ? answer {k}",
            "assign": lambda lhs, rhs: f"note {lhs} {rhs} .",
            "ask_var": lambda x: f"question {x} ? answer {x}",
            "chain": lambda rest, v: " ".join([*rest, v]),
            "fact": lambda s: f"note {s} .",
            "ask_fact": lambda p: f"question {p} ? answer {p}",
        }[kind](*a)

    def sample(self, task: str, n_words: int, rng: random.Random, depth: float | None = None) -> LongCtxExample:
        _check(task, n_words, 64)
        depth = rng.choice(DEPTHS) if depth is None else depth
        items, question, answer = _items(
            task, rng, depth, self.keys, self.values, self.variables, self.world, self._render
        )
        used = sum(len(s.split()) for _, s in items) + len(question.split())
        hay = []
        while sum(len(s.split()) for s in hay) < n_words - used:
            hay.append(f"the {rng.choice(self.NOUNS)} {rng.choice(self.VERBS)} the {rng.choice(self.NOUNS)} .")
        return LongCtxExample(task, f"{_plant(hay, items)} {question}", answer, depth, n_words)

    def training_segments(
        self, n_words: int, rng: random.Random, density: tuple[float, float] = (0.2, 0.5)
    ) -> list[tuple[str, bool]]:
        """One training text of about ``n_words`` words as (piece, is_answer) segments, MQAR style.

        The items of many examples (needles with distinct keys, assignment chains of 1–4 hops over distinct
        variables, facts of the world's subjects and relations with random objects, so that they must be read, not
        remembered) are spread over a filler haystack, and each is asked once by a question placed anywhere after
        its last item (so retrieval is practised at every distance, up to the whole text). Items and questions take a
        fraction ``density`` (drawn uniformly from the range) of the words. Rendered exactly as :meth:`sample` renders
        the evaluation tasks; ``is_answer`` marks the answer pieces (the tokens a model must retrieve).
        """
        if n_words < 64:
            raise ValueError(f"training text of {n_words} words is too short: need at least 64")
        keys, variables = rng.sample(self.keys, len(self.keys)), rng.sample(self.variables, len(self.variables))
        facts = rng.sample(self.world.facts, min(len(self.world.facts), 64))  # distinct (subject, relation) pairs
        target = rng.uniform(*density) * n_words
        events: list[tuple[float, str, bool]] = []  # (position in [0, 1), piece, is_answer)
        used = 0
        while used < target:
            kind = rng.choice(("needle", "needle", "chain", "fact"))
            if kind == "needle" and keys:
                k, v = keys.pop(), rng.choice(self.values)
                items, question, answer = [self._render("needle", k, v)], self._render("ask", k), v
            elif kind == "chain" and len(variables) >= 5:
                chain = [variables.pop() for _ in range(rng.randint(2, 5))]  # chain[0] ← … ← chain[-1] ← value
                v = rng.choice(self.values)
                items = [self._render("assign", chain[-1], v)]
                items += [self._render("assign", lhs, rhs) for lhs, rhs in zip(chain[-2::-1], chain[:0:-1])]
                question, answer = self._render("ask_var", chain[0]), self._render("chain", chain[1:], v)
            elif kind == "fact" and facts:  # a random object of its type: the text, not a memorised world, answers
                f = facts.pop()
                obj = rng.choice(self.world.objects[self.world.relation[f.relation].object_type])
                items = [self._render("fact", f"{self.world.prompt(f)} {obj}")]
                question, answer = self._render("ask_fact", self.world.prompt(f)), obj
            else:
                if not keys and not facts and len(variables) < 5:
                    break
                continue
            pos = sorted(rng.random() for _ in items)
            events += [(p, it, False) for p, it in zip(pos, items)]
            q = rng.uniform(pos[-1], 1.0)
            events += [(q, question, False), (q, answer, True), (q, ".", False)]  # equal positions keep this order
            used += sum(len(x.split()) for x in (*items, question, answer)) + 1
        while used < n_words:
            s = f"the {rng.choice(self.NOUNS)} {rng.choice(self.VERBS)} the {rng.choice(self.NOUNS)} ."
            events.append((rng.random(), s, False))
            used += 6
        events.sort(key=lambda e: e[0])  # stable: a question, its answer and its full stop stay together
        return [(piece, flag) for _, piece, flag in events]


class WikiLongCtx:
    """Needles planted in real Wikipedia text for a pretrained model; lengths counted with its tokenizer."""

    WORDS = (
        "apple",
        "river",
        "candle",
        "violin",
        "harbor",
        "meadow",
        "falcon",
        "lantern",
        "orchid",
        "glacier",
        "pepper",
        "saddle",
        "thunder",
        "velvet",
        "walnut",
        "compass",
        "emerald",
        "island",
        "jacket",
        "marble",
    )

    def __init__(self, world_entities: int = 40, seed: int = 0):
        from iclr26.worlds.text import wikipedia

        text = " ".join(wikipedia())
        self.sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 5 <= len(s.split()) <= 60]
        self.world = FactWorld(n_entities=world_entities, seed=seed)
        self.variables = ["".join(random.Random(i).choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ", k=5)) for i in range(200)]

    def _render(self, kind, *a):
        return {
            "needle": lambda k, v: f"The special magic number for {k} is {v}.",
            "ask": lambda k: (
                f"\nWhat is the special magic number for {k} mentioned in the text above?\n"
                f"Answer: The special magic number for {k} is"
            ),
            "assign": lambda lhs, rhs: f"VAR {lhs} = {rhs}.",
            "ask_var": lambda x: (
                f"\nFollow the assignments in the text above to find the number.\nAnswer: VAR {x} = VAR"
            ),
            "chain": lambda rest, v: " = VAR ".join(rest) + f" = {v}",
            "fact": lambda s: f"{s[0].upper()}{s[1:]}.",
            "ask_fact": lambda p: f"\nAnswer using the text above.\nAnswer: {p[0].upper()}{p[1:]}",
        }[kind](*a)

    def sample(self, task: str, n_tokens: int, tok, rng: random.Random, depth: float | None = None) -> LongCtxExample:
        _check(task, n_tokens, 128)
        depth = rng.choice(DEPTHS) if depth is None else depth
        numbers = [str(rng.randrange(1_000_000, 10_000_000)) for _ in range(40)]
        items, question, answer = _items(
            task, rng, depth, list(self.WORDS), numbers, self.variables, self.world, self._render
        )

        def n_tok(s: str) -> int:
            return len(tok(s, add_special_tokens=False)["input_ids"])

        budget = n_tokens - sum(n_tok(s) for _, s in items) - n_tok(question)
        start = rng.randrange(len(self.sentences) - 2000)
        hay, used = [], 0
        for s in self.sentences[start:]:
            c = n_tok(s) + 1
            if used + c > budget:
                break
            hay.append(s)
            used += c
        return LongCtxExample(task, f"{_plant(hay, items)}{question}", answer, depth, n_tokens)
