"""Modular-arithmetic reasoning with a controllable length shift (the LTPO reproduction's world).

A problem composes ``n`` operations modulo a prime ``p`` on a start value, e.g. (p = 23)

    x = 7 ; add3 ; mul2 ; sub5 ; ?      →  ((7 + 3) · 2 − 5) mod 23 = 15

Each operation is one word with a fixed operand (``add1 add3 sub2 sub5 mul2 mul3`` by default), so one step is a
lookup in a table of |ops| × p entries that a tiny transformer learns in minutes on a CPU (free operands, as in the
dossier's ``+ 5 ; * 3``, make a |ops| × p × p table that did not train within our budget).

Models are trained on n ≤ ``max_train_ops`` (in distribution) and tested on n = ``max_train_ops`` (ID) and on longer
chains (out of distribution, the analogue of the paper's hard AIME problems). Multipliers are ≥ 2 and p is prime, so
no operation erases the state. The split between training and test problems is exact
and deterministic: a problem belongs to the held-out side iff a hash of its tokens is 0 mod ``holdout`` (chains with
n ≥ 2; single operations are too few to hold out). Everything is a pure function of the seed.

Also here: one-step questions with exact answers for a real chat model (SmolLM2): integer arithmetic and
next week-day / next month questions.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

OPS = {"add1": ("+", 1), "add3": ("+", 3), "sub2": ("-", 2), "sub5": ("-", 5), "mul2": ("*", 2), "mul3": ("*", 3)}
THINK, ANS = "think", "ans"
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip


@dataclass(frozen=True)
class ModProblem:
    start: int
    ops: tuple[str, ...]  # operation words, e.g. ("add3", "mul2")
    answer: int

    @property
    def n_ops(self) -> int:
        return len(self.ops)

    def prompt(self) -> str:
        """The question text: ``x = 7 ; add3 ; mul2 ; ?``."""
        return " ".join([f"x = {self.start} ;"] + [f"{o} ;" for o in self.ops] + ["?"])


class ModArithWorld:
    """Chains of modular operations; ``sample(n_ops, count, seed, split)`` draws problems deterministically."""

    def __init__(self, modulus: int = 23, max_train_ops: int = 3, holdout: int = 10):
        if modulus < 5 or any(modulus % q == 0 for q in range(2, int(modulus**0.5) + 1)):
            raise ValueError(f"modulus must be a prime ≥ 5, got {modulus!r}")
        if max_train_ops < 1 or holdout < 2:
            raise ValueError(f"need max_train_ops ≥ 1 and holdout ≥ 2, got {max_train_ops!r}, {holdout!r}")
        self.p, self.max_train_ops, self.holdout = modulus, max_train_ops, holdout

    def apply(self, x: int, word: str) -> int:
        if word not in OPS:
            raise ValueError(f"unknown operation {word!r}; expected one of {list(OPS)}")
        op, a = OPS[word]
        if op == "+":
            return (x + a) % self.p
        if op == "-":
            return (x - a) % self.p
        return (x * a) % self.p

    def solve(self, start: int, ops) -> int:
        x = start
        for word in ops:
            x = self.apply(x, word)
        return x

    def held_out(self, start: int, ops) -> bool:
        if len(ops) < 2:
            return False
        blob = repr((self.p, start, tuple(ops))).encode()
        return int.from_bytes(hashlib.sha1(blob).digest()[:4], "big") % self.holdout == 0

    def draw(self, n_ops: int, rng: random.Random, split: str = "test") -> ModProblem:
        """One problem with ``n_ops`` operations from the ``"train"`` or ``"test"`` side of the split."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        while True:
            start = rng.randrange(self.p)
            ops = tuple(rng.choice(list(OPS)) for _ in range(n_ops))
            if n_ops < 2 or self.held_out(start, ops) == (split == "test"):
                return ModProblem(start, ops, self.solve(start, ops))

    def sample(self, n_ops: int, count: int, seed: int, split: str = "test") -> list[ModProblem]:
        rng = random.Random(f"modarith-{self.p}-{n_ops}-{seed}-{split}")
        return [self.draw(n_ops, rng, split) for _ in range(count)]

    def vocabulary_texts(self) -> list[str]:
        """Every word the tokenizer must know."""
        return [" ".join(map(str, range(self.p))), "x = ; ? .", " ".join(OPS), f"{THINK} {ANS}"]


# ------------------------------------------------------------------------------------ questions for a chat model
@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    answer: str


def chat_questions(count: int, seed: int) -> list[Question]:
    """One-step questions with exact answers that a 135M chat model gets partly right: small-integer + / − / ×,
    the next week-day and the next month (cycled in this order)."""
    rng = random.Random(f"ltpo-chat-{seed}")
    out = []
    for i in range(count):
        kind = ("add", "weekday", "sub", "month", "mul")[i % 5]
        if kind == "add":
            a, b = rng.randrange(2, 20), rng.randrange(2, 10)
            out.append(Question(kind, f"What is {a} + {b}?", str(a + b)))
        elif kind == "sub":
            a = rng.randrange(5, 20)
            b = rng.randrange(1, min(a, 10))
            out.append(Question(kind, f"What is {a} - {b}?", str(a - b)))
        elif kind == "mul":
            a, b = rng.randrange(2, 10), rng.randrange(2, 6)
            out.append(Question(kind, f"What is {a} times {b}?", str(a * b)))
        elif kind == "weekday":
            d = rng.randrange(7)
            out.append(Question(kind, f"What day of the week comes after {DAYS[d]}?", DAYS[(d + 1) % 7]))
        else:
            mo = rng.randrange(12)
            out.append(Question(kind, f"Which month comes after {MONTHS[mo]}?", MONTHS[(mo + 1) % 12]))
    return out


def check_answer(q: Question, text: str) -> bool:
    """Exact match of the first number (arithmetic) or the first day / month name (calendar) in the reply."""
    import re

    if q.kind in ("weekday", "month"):
        names = DAYS if q.kind == "weekday" else MONTHS
        found = re.search("|".join(names), text)
        return bool(found) and found.group(0) == q.answer
    found = re.search(r"-?\d+", text.replace(",", ""))
    return bool(found) and found.group(0) == q.answer
