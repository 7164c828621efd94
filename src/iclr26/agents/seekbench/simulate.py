"""Scripted search agents with tunable *process* knobs, run against a real BM25 retriever over a `SearchWorld`.

The dossier's testbed: agents that differ in how they search and reason but, after one stated tuning rule, not in
final-answer accuracy. Knobs (``AgentKnobs``):

- ``answer_threshold``: answer as soon as the state evidence E reaches it (2: sufficient and clear; 0: right after the
  first search) - calibration;
- ``recovery`` and ``p_repeat``: after a low-quality result, repeat the last query with probability ``p_repeat``,
  else reformulate: *refine* (edit the query: the keyword swapped for its synonym + "archive", or a generic word
  added) or *follow-up*
  (search the archive record code read in a result; refine when none was seen) - recovery;
- ``grounding``: probability that a reasoning claim copies the retrieved value instead of the agent's prior belief -
  groundedness;
- ``p_prior``: probability that the prior belief (parametric knowledge) is right. Not a process knob: it is the one
  parameter tuned (by bisection on validation questions) to equalise accuracy across agents.

Each step is written with its exact gold annotation (the simulator knows what it did and what was retrieved).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field, replace

from iclr26.agents.seekbench.world import Question, SearchWorld

from .schema import Annotation, Step, Trace

GENERIC_REFINEMENTS = ("details", "biography", "profile")


@dataclass(frozen=True)
class AgentKnobs:
    name: str
    answer_threshold: int = field(default=2, metadata={"help": "answer once state E >= this (0, 1 or 2)"})
    recovery: str = field(default="followup", metadata={"help": "'refine' or 'followup' after a low-quality result"})
    p_repeat: float = field(default=0.0, metadata={"help": "probability of repeating the last query instead"})
    grounding: float = field(default=0.95, metadata={"help": "probability a claim copies the evidence, not the prior"})
    p_prior: float = field(default=0.5, metadata={"help": "probability the prior belief is right (accuracy knob)"})
    max_searches: int = field(default=5, metadata={"help": "search budget; the agent answers when it runs out"})
    p_helpful_refine: float = field(default=0.6, metadata={"help": "share of refinements that use the synonym"})

    def __post_init__(self):
        if self.answer_threshold not in (0, 1, 2):
            raise ValueError(f"AgentKnobs.answer_threshold must be 0, 1 or 2, got {self.answer_threshold}")
        if self.recovery not in ("refine", "followup"):
            raise ValueError(f"AgentKnobs.recovery must be 'refine' or 'followup', got {self.recovery!r}")
        for name in ("p_repeat", "grounding", "p_prior", "p_helpful_refine"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"AgentKnobs.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.max_searches < 1:
            raise ValueError(f"AgentKnobs.max_searches must be ≥ 1, got {self.max_searches}")


def _reasoning(text: str, rtype: str, anchor: str, grounded: bool) -> Step:
    g = "Grounded" if grounded else "Not Grounded"
    return Step("reasoning", content=text, annotation=Annotation(type=rtype, groundness=g, anchor_type=anchor))


def run_agent(world: SearchWorld, retriever, q: Question, knobs: AgentKnobs, seed: int = 0) -> Trace:
    """One trace of agent ``knobs`` on question ``q``, every step with its gold annotation."""
    # independent random streams, so that the prior draw (the accuracy knob) never shifts the search decisions
    key = f"{knobs.name}|{q.qid}|{seed}".encode()
    rng = random.Random(zlib.crc32(key))
    prior_rng = random.Random(zlib.crc32(key + b"|prior"))
    a = world.attributes[q.attribute]
    u, wrong = prior_rng.random(), prior_rng.choice([v for v in world.values[q.attribute] if v != q.answer])
    prior = q.answer if u < knobs.p_prior else wrong
    kw, name = a.keyword, q.entity

    steps = [_reasoning(f"I need to find the {kw} of {name}.", "PlanFormation", "QUESTION", True)]
    seen_docs: list[int] = []
    state_e, best_vals = 0, []  # state evidence and the values of the best result so far
    query, qtype = f"{name} {kw}", "InitialQuery"
    issued: set[str] = set()
    for n_search in range(1, knobs.max_searches + 1):
        steps.append(Step("search", query=query, annotation=Annotation(type=qtype)))
        issued.add(query)
        ids = retriever.search(query)
        docs = [{"title": world.docs[i]["title"], "content": world.docs[i]["content"]} for i in ids]
        quality, clarity = world.label_result(ids, name, q.attribute)
        steps.append(
            Step(
                "search_result",
                documents=docs,
                annotation=Annotation("search_result", information_quality=quality, information_clarity=clarity),
            )
        )
        seen_docs.extend(ids)
        e = steps[-1].evidence
        if e >= state_e:  # the agent keeps the values of the strongest result (the latest among equals)
            state_e, best_vals = e, world.stated_values(ids, name, q.attribute)
        if state_e >= knobs.answer_threshold or n_search == knobs.max_searches:
            break
        # state assessment: a true statement about the evidence, or a claim from the prior belief
        if rng.random() < knobs.grounding:
            steps.append(
                _reasoning(f"The results do not settle the {kw} of {name}.", "StateAssessment", "EVIDENCE", True)
            )
        else:
            ok = prior in world.stated_values(seen_docs, name, q.attribute)
            steps.append(
                _reasoning(f"The results suggest the {kw} of {name} may be {prior}.", "StateAssessment", "EVIDENCE", ok)
            )
        # recovery action
        if rng.random() < knobs.p_repeat:
            qtype = "RepeatQuery"
        else:
            # follow-up: an archive record code read in a result about this fact (else about this entity), not yet used
            codes = [
                w.rstrip(".")
                for i in sorted(set(seen_docs), key=lambda i: world.docs[i]["attribute"] != q.attribute)
                if world.docs[i]["entity"] == name
                for w in world.docs[i]["content"].split()
                if w.startswith("R") and w.rstrip(".")[1:].isdigit()
            ]
            codes = [c for c in dict.fromkeys(codes) if f"archive record {c}" not in issued]
            if knobs.recovery == "followup" and codes:
                query, qtype = f"archive record {codes[0]}", "FollowUpQuery"
            else:  # a refinement edits the last query: keyword -> synonym + "archive", or a generic word added
                if rng.random() < knobs.p_helpful_refine:
                    query = f"{name} {a.synonym} archive"
                else:
                    query = f"{name} {kw} {rng.choice(GENERIC_REFINEMENTS)}"
                qtype = "RefinedQuery"
        if query in issued:  # the ontology's RepeatQuery: the same as a previous query, whatever was intended
            qtype = "RepeatQuery"
    # synthesis: the evidence value (a conflict is resolved by the prior if it is among the values) or the prior
    if best_vals and rng.random() < knobs.grounding:
        value = prior if prior in best_vals else rng.choice(best_vals)
    else:
        value = prior
    grounded = value in world.stated_values(seen_docs, name, q.attribute)
    steps.append(
        _reasoning(
            f"According to the results, the {kw} of {name} is {value}.", "InformationSynthesis", "EVIDENCE", grounded
        )
    )
    correct = value == q.answer
    steps.append(
        Step("answer", content=value, annotation=Annotation("CorrectAnswer" if correct else "IncorrectAnswer"))
    )
    return Trace(
        q.text,
        steps,
        question_id=q.qid,
        dataset="searchworld",
        model=knobs.name,
        ground_truth=[q.answer],
        is_correct=correct,
    )


def run_agents(world, retriever, questions, agents: list[AgentKnobs], seed: int = 0) -> dict[str, list[Trace]]:
    return {k.name: [run_agent(world, retriever, q, k, seed) for q in questions] for k in agents}


def accuracy(traces: list[Trace]) -> float:
    return sum(t.success for t in traces) / max(len(traces), 1)


def match_accuracy(
    world, retriever, questions, knobs: AgentKnobs, target: float, seed: int = 0, iters: int = 14
) -> AgentKnobs:
    """Bisection on ``p_prior`` so that the agent's accuracy on ``questions`` (validation) is closest to ``target``.

    With the prior drawn from its own random stream, accuracy is non-decreasing in ``p_prior``; the returned knobs
    are the closest of the bracket's ends. If even p_prior = 0 (1) over- (under-)shoots, that end is returned."""
    lo, hi = 0.0, 1.0
    acc = lambda p: accuracy([run_agent(world, retriever, q, replace(knobs, p_prior=p), seed) for q in questions])  # noqa: E731
    a_lo, a_hi = acc(lo), acc(hi)
    if a_lo >= target or a_hi <= target:
        return replace(knobs, p_prior=lo if abs(a_lo - target) <= abs(a_hi - target) else hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        a_mid = acc(mid)
        if a_mid < target:
            lo, a_lo = mid, a_mid
        else:
            hi, a_hi = mid, a_mid
    return replace(knobs, p_prior=lo if abs(a_lo - target) <= abs(a_hi - target) else hi)
