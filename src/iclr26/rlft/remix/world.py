"""A verifiable-reward arithmetic world for reinforcement finetuning (the ReMix reproduction's world).

A problem adds three digits, ``"3 + 9 + 8 ="``, and the answer is the two-digit sum ``"2 0"`` (leading zero kept,
every digit one token). A response may first show a scratchpad, the partial sum a + b and ``;``: ``"1 2 ; 2 0"``. The
reward is exact: 1 iff the digits after the last ``;`` (or all of them, without a scratchpad) spell the sum.

The supervised data come from a sloppy teacher: with probability ``noise`` it forgets the last operand and answers
a + b (a procedural slip, so the fitted policy holds two clean behaviours, the right one and the slip, rather than
diffuse noise), and with probability ``pad_prob`` it writes the scratchpad. A policy fitted to it samples the right
answer about 1 - noise of the time (c = 0 makes the slip harmless), which leaves room for RL to pick the right
behaviour. The 1000 problems are split into train / validation / test deterministically from the seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

DIGITS = tuple(str(d) for d in range(10))
SEP = ";"


@dataclass(frozen=True)
class Problem:
    a: int
    b: int
    c: int

    @property
    def answer(self) -> int:
        return self.a + self.b + self.c

    @property
    def prompt(self) -> str:
        return f"{self.a} + {self.b} + {self.c} ="


def digits(n: int) -> str:
    """Two-digit rendering with spaces between digits: 7 -> '0 7'."""
    if not 0 <= n <= 99:
        raise ValueError(f"only 0..99 can be rendered, got {n!r}")
    return f"{n // 10} {n % 10}"


def parse_answer(completion: str) -> int | None:
    """The final answer of a response (digits after the last ';'), or None when it is not two digits."""
    tail = completion.split(SEP)[-1].split()
    if len(tail) != 2 or not all(t in DIGITS for t in tail):
        return None
    return int(tail[0]) * 10 + int(tail[1])


def reward(completion: str, problem: Problem) -> float:
    """The verifiable reward: 1.0 iff the parsed final answer equals a + b + c."""
    return float(parse_answer(completion) == problem.answer)


# --- the same problems for a real (chat) LM, which writes "20" rather than the micro policy's "2 0" -----------------
_INT = re.compile(r"-?\d+")


def chat_prompt(problem: Problem, chat: bool = True):
    """A chat question ``[{"role": "user", ...}]`` for a model with a chat template, else the plain prompt."""
    if chat:
        return [{"role": "user", "content": f"What is {problem.a} + {problem.b} + {problem.c}? Reply with the number "
                 "only."}]  # fmt: skip
    return problem.prompt


def first_int_reward(completion, problem: Problem) -> float:
    """1.0 iff the first integer of the completion (text, or TRL's conversational message list) is a + b + c."""
    if isinstance(completion, list):
        completion = completion[-1]["content"] if completion else ""
    if not isinstance(completion, str):
        raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")
    m = _INT.search(completion)
    return float(m is not None and int(m.group()) == problem.answer)


class ArithmeticWorld:
    """All 1000 problems a + b + c (digits), a seeded split, and a noisy teacher."""

    def __init__(self, seed: int = 0, n_val: int = 100, n_test: int = 200):
        probs = [Problem(a, b, c) for a in range(10) for b in range(10) for c in range(10)]
        random.Random(seed).shuffle(probs)
        if n_val + n_test >= len(probs):
            raise ValueError(f"n_val + n_test must be < {len(probs)}, got {n_val + n_test}")
        self.test, self.val, self.train = probs[:n_test], probs[n_test : n_test + n_val], probs[n_test + n_val :]

    def teacher(self, problem: Problem, rng: random.Random, noise: float, pad_prob: float) -> str:
        """One demonstration; with probability ``noise`` the final answer forgets c (a + b)."""
        ans = problem.a + problem.b if rng.random() < noise else problem.answer
        text = digits(ans)
        if rng.random() < pad_prob:
            text = f"{digits(problem.a + problem.b)} {SEP} {text}"
        return text

    def sft_texts(self, n: int, seed: int, noise: float, pad_prob: float) -> list[str]:
        """``n`` prompt + demonstration texts drawn from the training problems."""
        rng = random.Random(seed)
        return [
            f"{p.prompt} {self.teacher(p, rng, noise, pad_prob)}" for p in (rng.choice(self.train) for _ in range(n))
        ]

    @staticmethod
    def vocabulary_texts() -> list[str]:
        return [" ".join(DIGITS) + f" + = {SEP}"]
