"""SeekBench's step-level annotation schema and its JSONL trace format.

Paper: *Do LLM Agents Know How to Ground, Recover, and Assess? Evaluating Epistemic Competence in Information-Seeking
Agents* (Shao et al., ICLR 2026, https://arxiv.org/abs/2509.22391). Official toolkit:
https://github.com/SHAO-Jiaqi757/SeekBench (`annotation/ontology.json`, `annotation/prompts.py`).

A *trace* is one agent's attempt at one question: a list of *steps*, each of one type

- ``reasoning``      text (``content``); annotated with a reasoning type (StateAssessment / PlanFormation /
                      InformationSynthesis), ``groundness`` (Grounded / Not Grounded) and ``anchor_type`` (EVIDENCE /
                      QUESTION / TRACE / NONE: what the step's premises rest on);
- ``search``         a query string (``query``); annotated InitialQuery / RefinedQuery / FollowUpQuery / RepeatQuery;
- ``search_result``  retrieved ``documents`` (``[{"title", "content"}]``); annotated with ``information_quality``
                      (Sufficient / Insufficient) and ``information_clarity`` (Clear / Unclear);
- ``answer``         the final answer (``content``); annotated CorrectAnswer / IncorrectAnswer. The official data
                      writes answer steps as ``"type": "CorrectAnswer"`` without an annotation; both are read.

One JSONL line per trace, the official schema (``question``, ``ground_truth``, ``dataset``, ``id``/``question_id``,
``model``, ``is_correct``, ``trace``); each step's labels sit in ``annotation = {"type": ..., "attributes": {...}}``.
Unknown keys are kept and written back (round trip).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REASONING_TYPES = ("StateAssessment", "PlanFormation", "InformationSynthesis")
QUERY_TYPES = ("InitialQuery", "RefinedQuery", "FollowUpQuery", "RepeatQuery")
ANSWER_TYPES = ("CorrectAnswer", "IncorrectAnswer")
STEP_TYPES = ("reasoning", "search", "search_result", "answer") + ANSWER_TYPES
# attribute name -> allowed values (ontology.json and the groundness prompt in annotation/prompts.py)
ATTRIBUTES = {
    "information_quality": ("Sufficient", "Insufficient"),
    "information_clarity": ("Clear", "Unclear"),
    "groundness": ("Grounded", "Not Grounded"),
    "anchor_type": ("EVIDENCE", "QUESTION", "TRACE", "NONE"),
}


def evidence_level(quality: str | None, clarity: str | None) -> int:
    """E of one search result: 0 if not Sufficient; 1 if Sufficient but not Clear; 2 if Sufficient and Clear.

    Same mapping as the official ``map_evidence_level`` (a missing clarity counts as Unclear).
    """
    if (quality or "").strip() != "Sufficient":
        return 0
    return 2 if (clarity or "").strip() == "Clear" else 1


@dataclass
class Annotation:
    """The labels of one step. ``type`` is the step's class (a reasoning type, a query type, ``search_result``, or an
    answer type); the attributes are None where they do not apply or were not annotated."""

    type: str | None = None
    groundness: str | None = None
    anchor_type: str | None = None
    information_quality: str | None = None
    information_clarity: str | None = None

    def __post_init__(self):
        for name, options in ATTRIBUTES.items():
            value = getattr(self, name)
            if value is not None and value not in options:
                raise ValueError(
                    f"annotation attribute {name}={value!r} is not in the schema; expected one of {options}"
                )

    def to_dict(self) -> dict:
        attrs = {k: getattr(self, k) for k in ATTRIBUTES if getattr(self, k) is not None}
        return {"type": self.type, "attributes": attrs}

    @classmethod
    def from_dict(cls, d: dict | None) -> Annotation:
        if not d:
            return cls()
        if not isinstance(d, dict):
            raise ValueError(f"a step's 'annotation' must be an object, got {d!r}")
        attrs = d.get("attributes") or {}
        # the official data writes "Not Grounded"; normalise case ("grounded" -> "Grounded") but nothing else
        g = attrs.get("groundness")
        if isinstance(g, str) and g.lower() in ("grounded", "not grounded"):
            g = "Grounded" if g.lower() == "grounded" else "Not Grounded"
        anchor = attrs.get("anchor_type")
        return cls(
            type=d.get("type"),
            groundness=g,
            anchor_type=anchor.upper() if isinstance(anchor, str) else anchor,
            information_quality=attrs.get("information_quality"),
            information_clarity=attrs.get("information_clarity"),
        )


@dataclass
class Step:
    type: str
    content: str = ""  # reasoning text or the answer
    query: str = ""  # search steps
    documents: list[dict] = field(default_factory=list)  # search results: [{"title": ..., "content": ...}]
    annotation: Annotation = field(default_factory=Annotation)
    extra: dict = field(default_factory=dict)  # keys we do not interpret, written back unchanged

    def __post_init__(self):
        if self.type not in STEP_TYPES:
            raise ValueError(f"step type {self.type!r} is not in the schema; expected one of {STEP_TYPES}")

    @property
    def is_answer(self) -> bool:
        return self.type in ("answer",) + ANSWER_TYPES or self.annotation.type in ANSWER_TYPES

    @property
    def answer_correct(self) -> bool | None:
        """True/False for an annotated (or typed) answer step, None otherwise."""
        for t in (self.annotation.type, self.type):
            if t in ANSWER_TYPES:
                return t == "CorrectAnswer"
        return None

    @property
    def evidence(self) -> int | None:
        """E of a search result step (None for other steps)."""
        if self.type != "search_result":
            return None
        return evidence_level(self.annotation.information_quality, self.annotation.information_clarity)

    def text(self) -> str:
        """Everything a text-only judge may read of this step."""
        if self.type == "search":
            return self.query
        if self.type == "search_result":
            return "\n".join(f"{d.get('title', '')}: {d.get('content', '')}" for d in self.documents)
        return self.content

    def to_dict(self) -> dict:
        d = {"type": self.type, **self.extra}
        if self.content or self.type in ("reasoning", "answer"):
            d["content"] = self.content
        if self.type == "search":
            d["query"] = self.query
        if self.type == "search_result":
            d["documents"] = self.documents
        d["annotation"] = self.annotation.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Step:
        if not isinstance(d, dict) or "type" not in d:
            raise ValueError(f"each element of 'trace' must be an object with a 'type', got {d!r}")
        known = {"type", "content", "query", "documents", "annotation"}
        return cls(
            type=d["type"],
            content=str(d.get("content") or ""),
            query=str(d.get("query") or ""),
            documents=list(d.get("documents") or []),
            annotation=Annotation.from_dict(d.get("annotation")),
            extra={k: v for k, v in d.items() if k not in known},
        )


@dataclass
class Trace:
    question: str
    steps: list[Step]
    question_id: str = ""
    dataset: str = "default"
    model: str = "agent"
    ground_truth: list[str] = field(default_factory=list)
    is_correct: bool | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.question_id:
            # the official fallback: a hash of dataset and question text
            self.question_id = hashlib.sha1(f"{self.dataset}||{self.question}".encode()).hexdigest()[:16]

    @property
    def cluster(self) -> tuple[str, str]:
        """The bootstrap cluster: one question of one dataset (all agents' traces on it fall in one cluster)."""
        return (self.dataset, str(self.question_id))

    @property
    def success(self) -> bool:
        """``is_correct`` when given, else ``reward``, else whether the trace holds a CorrectAnswer (the official
        ``prefer_success_flag``)."""
        if self.is_correct is not None:
            return bool(self.is_correct)
        if "reward" in self.extra:
            return bool(self.extra["reward"])
        return any(s.answer_correct for s in self.steps)

    def to_dict(self) -> dict:
        d = {
            "question": self.question,
            "question_id": self.question_id,
            "dataset": self.dataset,
            "model": self.model,
            "ground_truth": self.ground_truth,
            **self.extra,
            "trace": [s.to_dict() for s in self.steps],
        }
        if self.is_correct is not None:
            d["is_correct"] = self.is_correct
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Trace:
        if not isinstance(d, dict) or "trace" not in d:
            raise ValueError(
                "a trace record must be a JSON object with a 'trace' list of steps (see docs/papers/seekbench.md)"
            )
        known = {"question", "question_id", "id", "dataset", "model", "ground_truth", "is_correct", "trace"}
        qid = d.get("question_id", d.get("id"))
        gt = d.get("ground_truth") or []
        return cls(
            question=str(d.get("question") or ""),
            steps=[Step.from_dict(s) for s in d["trace"] or []],
            question_id="" if qid is None else str(qid),
            dataset=str(d.get("dataset") or "default"),
            model=str(d.get("model") or "agent"),
            ground_truth=[gt] if isinstance(gt, str) else list(gt),
            is_correct=None if d.get("is_correct") is None else bool(d["is_correct"]),
            extra={k: v for k, v in d.items() if k not in known},
        )


def read_jsonl(path: str | Path) -> list[Trace]:
    """Read traces, one JSON object per line; a bad line raises an error naming the file and line number."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"trace file {path} does not exist")
    traces = []
    with path.open() as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                traces.append(Trace.from_dict(json.loads(line)))
            except (json.JSONDecodeError, ValueError) as exc:
                raise ValueError(f"{path}:{n}: {exc}") from exc
    return traces


def write_jsonl(traces: Iterable[Trace], path: str | Path) -> Path:
    path = Path(path)
    with path.open("w") as f:
        for t in traces:
            f.write(json.dumps(t.to_dict(), ensure_ascii=False) + "\n")
    return path


def as_traces(source: str | Path | Iterable[Trace | dict]) -> Iterator[Trace]:
    """A path to a JSONL file, or records (dicts in the JSONL schema, or Trace objects)."""
    if isinstance(source, str | Path):
        yield from read_jsonl(source)
        return
    for r in source:
        yield r if isinstance(r, Trace) else Trace.from_dict(r)
