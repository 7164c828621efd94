"""Multi-step modular-arithmetic programs with labelled operations (the MLR testbed, `iclr26.papers.mlr`).

A problem is a start value v0 in Z_p and K labelled operations ("d add3", "c mul2", "e rsub4" = 4 - v, ...); the
labels are K consecutive letters of a 16-letter alphabet starting at a random letter, which the prompt names
(`from c`, the ordering hint), listed in a shuffled (or sorted) order, and the program applies the operations in
alphabetical order of their labels (so every letter occurs at training horizons <= 8 and a horizon of 12 needs no
unseen label). Two ways to say what a label does (``operations``):

- ``"library"`` (default): a fixed library (drawn from ``library_seed``, the same for every world seed) maps every
  letter to one operation; the prompt lists the labels only (`start 4 from c ops e c d go`); the library is world
  knowledge, like the arithmetic facts (the base model's pretraining states it: `c = mul3`);
- ``"listed"``: every problem draws its own operations and the prompt lists them (`ops e add2 c mul2 d rsub4`), so
  finding a label's operation is a look-up in the prompt.

Solving it is a two-level process, as in MLR's planner / executor split:

- **planning**: choose the next operation: the label that follows the last one used (`plan c`; listed: `plan c mul2`);
- **execution**: apply it to the current value: `exec 4 mul2 = 3 end` (p = 5).

A full trace is one step per operation and a final step `plan done exec result 3 end`. The answer is computed here
by construction (`Problem.answer`), so every label is exact. The world also writes the compressed planner view
(each executed step summarised by its result only, MLR's compressor) and the teacher's traces with two kinds of
slips (a planning slip: one step applies a later operation first; an execution slip: a result off by one), which
the SFT arms imitate and the preference arms can learn to avoid. Everything is deterministic from the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

LETTERS = tuple("abcdefghijklmnop")
LISTINGS = ("shuffled", "ordered")  # how the prompt lists the operations (see ModProgWorld)
OPERATIONS = ("library", "listed")  # what a label does: a fixed library of the world, or listed in each prompt
OPS = ("add", "mul", "rsub")  # rsub a: v -> a - v (so most pairs of operations do not commute)
PLAN, EXEC, END, DONE, RESULT = "plan", "exec", "end", "done", "result"


def apply(kind: str, v: int, a: int, p: int) -> int:
    """One operation in Z_p."""
    if kind == "add":
        return (v + a) % p
    if kind == "rsub":
        return (a - v) % p
    if kind == "mul":
        return (v * a) % p
    raise ValueError(f"unknown operation {kind!r}; expected one of {OPS}")


@dataclass(frozen=True)
class Problem:
    start: int
    ops: tuple[tuple[str, str, int], ...]  # (label, kind, operand) in the shuffled order shown in the prompt
    p: int
    listed: bool = True  # the prompt lists each label's operation (False: labels only; the world's library)

    @property
    def horizon(self) -> int:
        return len(self.ops)

    @property
    def ordered(self) -> list[tuple[str, str, int]]:
        """The operations in execution order (alphabetical labels): the correct plan."""
        return sorted(self.ops)

    @property
    def prompt(self) -> str:
        listed = " ".join(f"{lab} {k}{a}" if self.listed else lab for lab, k, a in self.ops)
        return f"start {self.start} from {min(self.ops)[0]} ops {listed} go"

    @property
    def answer(self) -> int:
        v = self.start
        for _, k, a in self.ordered:
            v = apply(k, v, a, self.p)
        return v


def step_texts(prob: Problem, order: list[tuple[str, str, int]], exec_slips: set[int] = frozenset()):
    """(descriptor, detail, summary) per step for a given order of operations, then the final step."""
    v, steps = prob.start, []
    for i, (lab, k, a) in enumerate(order):
        w = apply(k, v, a, prob.p)
        if i in exec_slips:
            w = (w + 1) % prob.p  # an execution slip: off by one
        steps.append((f"{lab} {k}{a}" if prob.listed else lab, f"{v} {k}{a} = {w}", str(w)))
        v = w
    steps.append((DONE, f"{RESULT} {v}", str(v)))
    return steps


def trace_text(steps) -> str:
    """The executor's raw view of the steps (what a single policy also writes)."""
    return " ".join(f"{PLAN} {d} {EXEC} {c} {END}" for d, c, _ in steps)


def planner_text(steps) -> str:
    """The planner's compressed view: each executed step summarised by its result."""
    return " ".join(f"{PLAN} {d} {EXEC} {s} {END}" for d, _, s in steps)


def parse_answer(text: str) -> int | None:
    """The value after the last `result` (None when there is none)."""
    words = text.split()
    for i in range(len(words) - 2, -1, -1):
        if words[i] == RESULT:
            try:
                return int(words[i + 1])
            except ValueError:
                return None
    return None


class ModProgWorld:
    """Problems of horizon K, traces of a slipping teacher and the vocabulary, all from ``seed``."""

    def __init__(self, seed: int = 0, p: int = 5, listing: str = "shuffled", operations: str = "library",
                 library_seed: int = 0):  # fmt: skip
        if not 3 <= p <= 97:
            raise ValueError(f"ModProgWorld.p must be in [3, 97], got {p!r}")
        if listing not in LISTINGS:
            raise ValueError(f"ModProgWorld.listing must be one of {LISTINGS}, got {listing!r}")
        if operations not in OPERATIONS:
            raise ValueError(f"ModProgWorld.operations must be one of {OPERATIONS}, got {operations!r}")
        self.seed, self.p, self.listing, self.operations = seed, p, listing, operations
        rng = random.Random(f"library/{library_seed}")
        kinds = [OPS[i % len(OPS)] for i in range(len(LETTERS))]  # every kind about equally often
        rng.shuffle(kinds)
        self.library = {lab: (k, rng.randrange(1, p)) for lab, k in zip(LETTERS, kinds)}  # label -> operation

    def problems(self, n: int, horizons, split: str) -> list[Problem]:
        """``n`` problems with horizons drawn uniformly from ``horizons``; ``split`` seeds a disjoint stream."""
        if any(not 1 <= k <= len(LETTERS) for k in horizons):
            raise ValueError(f"horizons must lie in [1, {len(LETTERS)}], got {tuple(horizons)!r}")
        rng = random.Random(f"{self.seed}/{split}")
        out = []
        for _ in range(n):
            k = rng.choice(list(horizons))
            s = rng.randrange(len(LETTERS) - k + 1)
            labels = list(LETTERS[s : s + k])
            rng.shuffle(labels)  # drawn in both listings so that both share the operands' stream
            if self.listing == "ordered":
                labels.sort()
            ops = tuple((lab, rng.choice(OPS), rng.randrange(1, self.p)) for lab in labels)
            if self.operations == "library":
                ops = tuple((lab, *self.library[lab]) for lab, _, _ in ops)
            out.append(Problem(rng.randrange(self.p), ops, self.p, self.operations == "listed"))
        return out

    def teacher_steps(self, prob: Problem, rng: random.Random, plan_slip: float, exec_slip: float):
        """The teacher's steps: with prob ``plan_slip`` one step applies the next-but-one operation first (the two
        are swapped); each step's result is off by one with prob ``exec_slip``."""
        order = list(prob.ordered)
        if prob.horizon >= 2 and rng.random() < plan_slip:
            i = rng.randrange(prob.horizon - 1)
            order[i], order[i + 1] = order[i + 1], order[i]
        slips = {i for i in range(prob.horizon) if rng.random() < exec_slip}
        return step_texts(prob, order, slips)

    def traces(self, problems, plan_slip: float = 0.0, exec_slip: float = 0.0, salt: str = "teacher"):
        """Teacher traces (list of step triples) for ``problems``."""
        rng = random.Random(f"{self.seed}/{salt}")
        return [self.teacher_steps(pr, rng, plan_slip, exec_slip) for pr in problems]

    def pretrain_examples(self, n_lookup: int = 3000, salt: str = "pretrain", reps: int | None = None,
                          n_chains: int = 0):  # fmt: skip
        """The base model's 'pretraining' (the analogue of a pretrained LLM): component skills only, as (question,
        answer) pairs, no program and no trace: every arithmetic fact (``reps`` times), the letter order and (library
        world) the library's entries `c =` -> `mul3` (4 ``reps`` times each), and ``n_lookup`` look-ups of a labelled
        operation in a shuffled list (the listed world's skill); ``n_chains`` execution chains of explicit operations
        (`4` -> `mul3 = 2 end 2 add1 = 3 end ...`: computing step after step, no label, no plan) and as many letter runs
        (`from c next` -> `d e f`: counting on), of 1-12 steps each. Another ``salt`` draws other look-ups, chains and
        runs (a held-out set of the same skills)."""
        facts = [
            (f"{v} {k}{a} =", f"{apply(k, v, a, self.p)}") for k in OPS for v in range(self.p) for a in range(self.p)
        ]
        order = [(f"from {a} next", b) for a, b in zip(LETTERS, LETTERS[1:])]
        rng = random.Random(salt)  # one base for every seed, like a pretrained LLM
        looks = []
        for _ in range(n_lookup):
            labs = rng.sample(LETTERS, rng.randint(2, 12))
            ops = [(lab, rng.choice(OPS), rng.randrange(1, self.p)) for lab in labs]
            q = rng.choice(ops)
            looks.append((f"ops {' '.join(f'{a} {b}{c}' for a, b, c in ops)} next {q[0]}", f"{q[1]}{q[2]}"))
        chains = []
        for _ in range(n_chains):
            v, steps = rng.randrange(self.p), []
            for _ in range(rng.randint(1, 12)):
                k, a = rng.choice(OPS), rng.randrange(1, self.p)
                w = apply(k, v, a, self.p)
                steps.append(f"{v} {k}{a} = {w} {END}")
                v = w
            s = rng.randrange(len(LETTERS) - 1)
            run = LETTERS[s + 1 : s + 1 + rng.randint(1, 12)]
            first, rest = " ".join(steps).split(" ", 1)
            chains += [(first, rest), (f"from {LETTERS[s]} next", " ".join(run))]
        if reps is None:  # facts and the letter order: about a fifth of the examples
            reps = max(1, n_lookup // (8 * len(facts)))
        if self.operations == "library":
            order += [(f"{lab} =", f"{k}{a}") for lab, (k, a) in self.library.items()]
        return facts * reps + order * (reps * 4) + looks + chains

    def label_chains(self, n: int, salt: str = "label-chains") -> list[list[tuple[str, bool]]]:
        """``n`` labelled execution chains of 1-12 steps, as (text, trained) parts: `start 4` then, per step, a given
        library label in the step format (`plan c exec`, not trained) and its execution (`4 mul3 = 2 end`, trained):
        applying a *named* operation of the library to the running value, the executor's skill, with the labels given
        in order (no program statement, nothing to plan, no final step). Library world only (the listed world has no
        library); another ``salt`` draws another set (held out)."""
        if self.operations != "library":
            raise ValueError("label_chains needs the library world (operations='library')")
        rng, out = random.Random(f"{salt}/{self.p}"), []
        for _ in range(n):
            v, s = rng.randrange(self.p), rng.randrange(len(LETTERS))
            k = rng.randint(1, min(12, len(LETTERS) - s))
            parts = [(f"start {v}", False)]
            for lab in LETTERS[s : s + k]:
                kind, a = self.library[lab]
                w = apply(kind, v, a, self.p)
                parts += [(f" {PLAN} {lab} {EXEC}", False), (f" {v} {kind}{a} = {w} {END}", True)]
                v = w
            out.append(parts)
        return out

    def vocabulary_texts(self) -> list[str]:
        ops = [f"{k}{a}" for k in OPS for a in range(self.p)]  # an operation is one token: kind and operand
        words = [*LETTERS, *ops, *(str(i) for i in range(self.p)), PLAN, EXEC, END, DONE, RESULT, "start", "ops"]
        return [" ".join(words + ["go", "from", "next", "="])]
