"""Key-value retrieval with distractors, for PERK (long contexts encoded into a LoRA adapter at test time).

A closed vocabulary of pseudo-words (keys, values and filler words, three disjoint sets). A context is a list of
segments, each of ``sents_per_seg`` three-token sentences: exactly one *item* sentence at a random slot, the rest
filler (``w w .``). Items:

- fact  ``K V .``   (a one-word key and a one-word value, paired at random in every context);
- link  ``K K' .``  (a key pointing to another key; 2-hop chains, as BabiLong's QA2).

Questions end with the key, so that reading the answer is the plain *induction* pattern (find the earlier occurrence
of the last token, copy the token after it), the circuit small transformers learn first:

- ``hop1``: one fact per segment; ``ask K`` -> ``V``;
- ``hop2``: chains link + fact in two random segments (n_seg/2 chains); ``ask K`` -> ``K' V`` (the bridge key is
  written out, then its value: two chained induction steps).

Questions ask about every item of the context, so the needle sits at every position once; its position is its
segment index / n_seg. ``pretrain_texts`` gives causal-LM text of the same world (contexts followed by questions with
answers): the "pretrained LM" that PERK and FT-ICR both start from. Deterministic from a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TASKS = ("hop1", "hop2")
_V = "aeiou"


def _words(prefix_cons: str, n: int, suffix: str) -> list[str]:
    out = [c + v + suffix for c in prefix_cons for v in _V]
    return out[:n]


KEYS = _words("bdgklmnr", 40, "")
VALUES = _words("ptsvfzhw", 40, "x")
FILLER = _words("bdfgklmnprstvz", 40, "m")[::-1]
MARKERS = ["ask", "."]
SENT = 3  # tokens per sentence (``a b .``)


@dataclass(frozen=True)
class Context:
    task: str
    segments: tuple[str, ...]
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    positions: tuple[float, ...]  # needle (item asked) segment index / n_seg, per question

    @property
    def text(self) -> str:
        return " ".join(self.segments)


class KVWorld:
    """Generator of key-value retrieval contexts; ``sample(task, n_seg, rng)``.

    ``n_keys`` / ``n_values`` (<= 40) shrink the key and value vocabularies (a smaller world is easier to learn);
    a context of ``n_seg`` segments needs ``n_seg`` distinct keys (1-hop) and values."""

    def __init__(self, sents_per_seg: int = 4, n_keys: int = 40, n_values: int = 40):
        if sents_per_seg < 1:
            raise ValueError(f"sents_per_seg must be >= 1, got {sents_per_seg!r}")
        if not (2 <= n_keys <= len(KEYS) and 1 <= n_values <= len(VALUES)):
            raise ValueError(f"n_keys must lie in [2, {len(KEYS)}] and n_values in [1, {len(VALUES)}], "
                             f"got {n_keys!r}, {n_values!r}")  # fmt: skip
        self.sents_per_seg = sents_per_seg
        self.keys, self.values = list(KEYS[:n_keys]), list(VALUES[:n_values])

    @property
    def seg_tokens(self) -> int:
        """Words (= tokens of the word-level tokenizer) per segment, without BOS."""
        return SENT * self.sents_per_seg

    @property
    def max_segments(self) -> int:
        """The longest context this world can fill (distinct keys and values per context)."""
        return min(len(self.keys), len(self.values))

    @staticmethod
    def vocabulary_texts() -> list[str]:
        return [" ".join(KEYS + VALUES + FILLER + MARKERS)]

    def _filler(self, rng: random.Random) -> str:
        return " ".join(rng.choice(FILLER) for _ in range(SENT - 1)) + " ."

    def _segment(self, item: str, rng: random.Random) -> str:
        sents = [self._filler(rng) for _ in range(self.sents_per_seg - 1)]
        sents.insert(rng.randrange(self.sents_per_seg), item)
        return " ".join(sents)

    def sample(self, task: str, n_seg: int, rng: random.Random) -> Context:
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
        if n_seg < (1 if task == "hop1" else 2):
            raise ValueError(f"n_seg={n_seg} too small for {task!r} (hop1 needs >= 1, hop2 >= 2)")
        if n_seg > self.max_segments:
            raise ValueError(f"n_seg={n_seg} exceeds this world's {self.max_segments} keys/values: raise n_keys")
        if task == "hop1":
            keys, vals = rng.sample(self.keys, n_seg), rng.sample(self.values, n_seg)
            items = [f"{k} {v} ." for k, v in zip(keys, vals)]
            qs = tuple(f"ask {k}" for k in keys)
            return Context(task, tuple(self._segment(it, rng) for it in items), qs, tuple(vals),
                           tuple(i / n_seg for i in range(n_seg)))  # fmt: skip
        n_chain = n_seg // 2
        keys = rng.sample(self.keys, 2 * n_chain)
        vals = rng.sample(self.values, n_chain)
        slots = list(range(n_seg))
        rng.shuffle(slots)
        items = [self._filler(rng) for _ in range(n_seg)]  # an odd segment out holds only filler
        qs, ans, pos = [], [], []
        for c in range(n_chain):
            src, dst, v = keys[2 * c], keys[2 * c + 1], vals[c]
            s_link, s_fact = slots[2 * c], slots[2 * c + 1]
            items[s_link], items[s_fact] = f"{src} {dst} .", f"{dst} {v} ."
            qs.append(f"ask {src}")
            ans.append(f"{dst} {v}")
            pos.append(s_link / n_seg)
        segs = [self._segment(it, rng) for it in items]
        return Context(task, tuple(segs), tuple(qs), tuple(ans), tuple(pos))

    def pretrain_texts(self, n: int, max_seg: int, seed: int) -> list[str]:
        """Causal-LM corpus: contexts of 2..max_seg segments (both tasks), each followed by its questions with their
        answers (``ask K V .``) in random order: the "pretrained LM" knows the world's text and its question format,
        at every length up to ``max_seg``."""
        rng, out = random.Random(seed), []
        for _ in range(n):
            task = rng.choice(TASKS)
            ctx = self.sample(task, rng.randint(2, max_seg), rng)
            tail = [f"{q} {a} ." for q, a in zip(ctx.questions, ctx.answers)]
            rng.shuffle(tail)
            out.append(" ".join(ctx.segments) + " " + " ".join(tail))
        return out
