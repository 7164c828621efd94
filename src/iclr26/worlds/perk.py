"""Key-value retrieval with distractors, for PERK (long contexts encoded into a LoRA adapter at test time).

A closed vocabulary of pseudo-words. A context is a list of segments, each of ``sents_per_seg`` four-token sentences:
exactly one *item* sentence at a random slot, the rest filler (``w w w .``). Items:

- fact  ``K : V .``    (a one-word key and a one-word value, paired at random in every context);
- link  ``K to K' .``  (a key pointing to another key; 2-hop chains, as BabiLong's QA2).

Tasks (questions ask about every item of the context, so the needle sits at every position once):

- ``hop1``: one fact per segment; ``ask K =`` -> ``V``;
- ``hop2``: chains link + fact in two random segments (n_seg/2 chains); ``ask K =`` -> ``K' : V`` (the bridge key
  is written out, then its value: the answer's last tokens repeat the fact's form).

The needle's position is its segment index / n_seg. ``pretrain_texts`` gives causal-LM text of the same world
(contexts of 2..max segments followed by a recap of some items and by questions with answers): the "pretrained LM"
that PERK and FT-ICR both start from. Deterministic from a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TASKS = ("hop1", "hop2")
_C, _V = "bdfgklmnprstvz", "aeiou"


def _words(prefix_cons: str, n: int, suffix: str) -> list[str]:
    out = [c + v + suffix for c in prefix_cons for v in _V]
    return out[:n]


KEYS = _words("bdgklmnr", 40, "")
VALUES = _words("ptsvfzhw", 40, "x")
FILLER = _words("bdfgklmnprstvz", 40, "m")[::-1]
MARKERS = ["ask", "=", ":", ".", "to"]


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
    """Generator of key-value retrieval contexts; ``sample(task, n_seg, rng)``."""

    def __init__(self, sents_per_seg: int = 4):
        if sents_per_seg < 1:
            raise ValueError(f"sents_per_seg must be >= 1, got {sents_per_seg!r}")
        self.sents_per_seg = sents_per_seg
        self.keys, self.values = list(KEYS), list(VALUES)

    @property
    def seg_tokens(self) -> int:
        """Words (= tokens of the word-level tokenizer) per segment, without BOS."""
        return 4 * self.sents_per_seg

    @staticmethod
    def vocabulary_texts() -> list[str]:
        return [" ".join(KEYS + VALUES + FILLER + MARKERS)]

    def _filler(self, rng: random.Random) -> str:
        return " ".join(rng.choice(FILLER) for _ in range(3)) + " ."

    def _segment(self, item: str, rng: random.Random) -> str:
        sents = [self._filler(rng) for _ in range(self.sents_per_seg - 1)]
        sents.insert(rng.randrange(self.sents_per_seg), item)
        return " ".join(sents)

    def sample(self, task: str, n_seg: int, rng: random.Random) -> Context:
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
        if n_seg < (1 if task == "hop1" else 2):
            raise ValueError(f"n_seg={n_seg} too small for {task!r} (hop1 needs >= 1, hop2 >= 2)")
        if task == "hop1":
            keys, vals = rng.sample(self.keys, n_seg), rng.sample(self.values, n_seg)
            items = [f"{k} : {v} ." for k, v in zip(keys, vals)]
            qs = tuple(f"ask {k} =" for k in keys)
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
            items[s_link], items[s_fact] = f"{src} to {dst} .", f"{dst} : {v} ."
            qs.append(f"ask {src} =")
            ans.append(f"{dst} : {v}")
            pos.append(s_link / n_seg)
        segs = [self._segment(it, rng) for it in items]
        return Context(task, tuple(segs), tuple(qs), tuple(ans), tuple(pos))

    def pretrain_texts(self, n: int, max_seg: int, seed: int) -> list[str]:
        """Causal-LM corpus: contexts of 2..max_seg segments (both tasks), each followed by a recap that repeats half
        its items and by questions with their answers (``ask K1 K2 = ... .``), in random order: the "pretrained LM"
        knows the world's text and its question format, at every length up to ``max_seg``."""
        rng, out = random.Random(seed), []
        for _ in range(n):
            task = rng.choice(TASKS)
            n_seg = rng.randint(2, max_seg)
            ctx = self.sample(task, n_seg, rng)
            items = [s for seg in ctx.segments for s in _sentences(seg) if not _is_filler(s)]
            tail = rng.sample(items, max(1, len(items) // 2))
            tail += [f"{q} {a} ." for q, a in zip(ctx.questions, ctx.answers)]
            rng.shuffle(tail)
            out.append(" ".join(ctx.segments) + " " + " ".join(tail))
        return out


def _sentences(seg: str) -> list[str]:
    w = seg.split()
    return [" ".join(w[i : i + 4]) for i in range(0, len(w), 4)]


def _is_filler(sent: str) -> bool:
    return sent.split()[0] in FILLER
