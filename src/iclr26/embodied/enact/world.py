"""MiniHome: a symbolic household POMDP whose actions are scene-graph changes (ENACT §3, arXiv:2511.20937).

A state is a scene graph: unary facts (``Open(fridge)``, ``Cooked(apple)``) and binary facts (``OnTop(cup, table)``,
``Inside(apple, fridge)``, ``LeftGrasping(robot, cup)``). A change between two states is a set of *signatures*
c = (gamma, e, rho): gamma in {add, remove}, entity (or entity pair) e, predicate rho (ENACT Eq. 1:
a_t = delta(s_t, s_{t-1})). The agent observes only what it can see (the POMDP): an object inside a closed container
is hidden, so its facts drop out of the *visible* diff (ENACT keeps only changes visible in both frames).

`env.HouseholdEnv` follows the gymnasium API: `reset(seed=...)`, `step(action)`, a `Discrete` action space over action
templates (open/close a container, grasp with the left/right gripper, place on a surface / in a container, cook) and a
`MultiBinary` observation of the visible facts. An invalid action changes nothing (``info["valid"] = False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

OBJECTS = ("apple", "cup", "plate", "bread")
CONTAINERS = ("fridge", "drawer")
SURFACES = ("counter", "table", "stove")
HANDS = ("left", "right")
ROBOT = "robot"
PREDICATES = ("OnTop", "Inside", "Open", "LeftGrasping", "RightGrasping", "Cooked")
GRASP = {"left": "LeftGrasping", "right": "RightGrasping"}


class Fact(NamedTuple):
    """One edge or node state of the scene graph: ``(predicate, entity)`` or ``(predicate, entity, target)``."""

    pred: str
    a: str
    b: str = ""


class Signature(NamedTuple):
    """A change signature c = (gamma, e, rho) (ENACT §3.1): gamma is "add" or "remove"."""

    gamma: str
    pred: str
    a: str
    b: str = ""

    @property
    def fact(self) -> Fact:
        return Fact(self.pred, self.a, self.b)


def all_facts() -> list[Fact]:
    """Every fact the world can hold, in a fixed order (the observation vector's layout)."""
    out = [Fact("Open", c) for c in CONTAINERS] + [Fact("Cooked", o) for o in OBJECTS]
    for o in OBJECTS:
        out += [Fact("OnTop", o, s) for s in SURFACES] + [Fact("Inside", o, c) for c in CONTAINERS]
        out += [Fact(GRASP[h], ROBOT, o) for h in HANDS]
    return out


FACTS = all_facts()
FACT_INDEX = {f: i for i, f in enumerate(FACTS)}


@dataclass(frozen=True)
class SceneGraph:
    """An immutable scene graph: the set of facts that hold."""

    facts: frozenset

    def holds(self, pred: str, a: str, b: str = "") -> bool:
        return Fact(pred, a, b) in self.facts

    def hidden(self) -> set[str]:
        """Objects inside a closed container (invisible from the egocentric camera)."""
        return {f.a for f in self.facts if f.pred == "Inside" and not self.holds("Open", f.b)}

    def visible_facts(self) -> frozenset:
        h = self.hidden()
        return frozenset(f for f in self.facts if f.a not in h and f.b not in h)

    def vector(self, visible: bool = True) -> np.ndarray:
        v = np.zeros(len(FACTS), dtype=np.int8)
        for f in self.visible_facts() if visible else self.facts:
            v[FACT_INDEX[f]] = 1
        return v

    def to_json(self) -> list[list[str]]:
        return sorted([list(f) for f in self.facts])

    @classmethod
    def from_json(cls, rows) -> SceneGraph:
        return cls(frozenset(Fact(*r) for r in rows))


def diff(prev: SceneGraph, nxt: SceneGraph) -> frozenset:
    """The full change delta(s_next, s_prev) as a set of signatures (Eq. 1)."""
    add = {Signature("add", *f) for f in nxt.facts - prev.facts}
    return frozenset(add | {Signature("remove", *f) for f in prev.facts - nxt.facts})


def visible_diff(prev: SceneGraph, nxt: SceneGraph) -> frozenset:
    """Delta_Vis: the changes whose entities are visible in both frames (ENACT §3.2)."""
    hidden = prev.hidden() | nxt.hidden()
    return frozenset(c for c in diff(prev, nxt) if c.a not in hidden and c.b not in hidden)


def holder(g: SceneGraph, obj: str) -> str | None:
    return next((h for h in HANDS if g.holds(GRASP[h], ROBOT, obj)), None)


def held(g: SceneGraph, hand: str) -> str | None:
    return next((o for o in OBJECTS if g.holds(GRASP[hand], ROBOT, o)), None)


def action_templates() -> list[tuple]:
    acts = [("open", c) for c in CONTAINERS] + [("close", c) for c in CONTAINERS]
    acts += [("grasp", o, h) for o in OBJECTS for h in HANDS]
    acts += [("place_on", h, s) for h in HANDS for s in SURFACES]
    acts += [("place_in", h, c) for h in HANDS for c in CONTAINERS]
    return acts + [("cook", o) for o in OBJECTS]


ACTIONS = action_templates()


def apply(g: SceneGraph, act: tuple) -> SceneGraph | None:
    """The successor state, or None when the action is not applicable."""
    f, kind = set(g.facts), act[0]
    if kind in ("open", "close"):
        is_open = g.holds("Open", act[1])
        if is_open == (kind == "open"):
            return None
        f.symmetric_difference_update({Fact("Open", act[1])})
    elif kind == "grasp":
        o, h = act[1], act[2]
        if holder(g, o) or held(g, h) or o in g.hidden():
            return None
        f = {x for x in f if not (x.a == o and x.pred in ("OnTop", "Inside"))} | {Fact(GRASP[h], ROBOT, o)}
    elif kind in ("place_on", "place_in"):
        o = held(g, act[1])
        if o is None or (kind == "place_in" and not g.holds("Open", act[2])):
            return None
        f.discard(Fact(GRASP[act[1]], ROBOT, o))
        f.add(Fact("OnTop" if kind == "place_on" else "Inside", o, act[2]))
    elif kind == "cook":
        o = act[1]
        if not g.holds("OnTop", o, "stove") or g.holds("Cooked", o):
            return None
        f.add(Fact("Cooked", o))
    else:
        raise ValueError(f"unknown action {act!r}; expected one of the templates in ACTIONS")
    return SceneGraph(frozenset(f))


def random_start(rng: np.random.Generator, n_objects: int = 3) -> SceneGraph:
    """n_objects distinct objects, each on the counter or table or inside a (closed) container."""
    places = [("OnTop", "counter"), ("OnTop", "table")] + [("Inside", c) for c in CONTAINERS]
    objs = rng.choice(len(OBJECTS), size=n_objects, replace=False)
    facts = set()
    for i in objs:
        pred, target = places[rng.integers(len(places))]
        facts.add(Fact(pred, OBJECTS[i], target))
    return SceneGraph(frozenset(facts))


_TEXT = {
    "OnTop": "the {a} on top of the {b}",
    "Inside": "the {a} inside the {b}",
    "Open": "the {a} open",
    "Cooked": "the {a} cooked",
    "LeftGrasping": "the robot using the left gripper to grasp the {b}",
    "RightGrasping": "the robot using the right gripper to grasp the {b}",
}


def signature_text(c: Signature) -> str:
    """Template translation of one signature (the paper's translator: 'The robot r1 changes to be ...')."""
    body = _TEXT[c.pred].format(a=c.a, b=c.b)
    return f"{body[0].upper()}{body[1:]} {'is now' if c.gamma == 'add' else 'is no longer'} the case."


def action_text(changes) -> str:
    return " ".join(signature_text(c) for c in sorted(changes))
