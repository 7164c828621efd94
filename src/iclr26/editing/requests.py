"""Edit requests: one counterfactual fact each, checked when built (see :mod:`iclr26.editing.base` for the contract).

An :class:`EditRequest` is ``(prompt with one "{}", subject, target_new, target_true)`` plus the probes its metrics
read: paraphrases, neighbourhood probes about other subjects and FINE-KED's fine-grained probes about the same subject
(each with a relation-similarity ``level``). Bad requests raise :class:`EditRequestError`.
"""

from __future__ import annotations

from dataclasses import dataclass


class EditRequestError(ValueError):
    pass


@dataclass(frozen=True)
class Probe:
    """A prompt (subject filled in) and the answer it should keep giving; ``level`` = relation similarity (0..2)."""

    prompt: str
    answer: str
    level: int | None = None

    def __post_init__(self):
        if not isinstance(self.prompt, str) or not isinstance(self.answer, str):
            raise EditRequestError(f"a Probe's prompt and answer must be strings, got {self.prompt!r}, {self.answer!r}")
        if not self.prompt.strip():
            raise EditRequestError("probe prompt is empty")
        if not self.answer.strip():
            raise EditRequestError(f"probe {self.prompt!r} has an empty answer")


@dataclass(frozen=True)
class EditRequest:
    """One edit ``(subject, relation, target_true → target_new)``; ``prompt`` has one ``"{}"`` for the subject."""

    prompt: str
    subject: str
    target_new: str
    target_true: str | None = None
    paraphrase_prompts: tuple[str, ...] = ()
    neighborhood: tuple[Probe, ...] = ()
    fine_grained: tuple[Probe, ...] = ()
    relation: str | None = None

    def __post_init__(self):
        for name in ("prompt", "subject", "target_new"):
            if not isinstance(getattr(self, name), str):
                raise EditRequestError(
                    f"EditRequest.{name} must be a string, got {getattr(self, name)!r}; e.g. "
                    "EditRequest('The capital of {} is', 'France', 'Rome', 'Paris')"
                )
        if self.target_true is not None and not isinstance(self.target_true, str):
            raise EditRequestError(f"EditRequest.target_true must be a string or None, got {self.target_true!r}")
        if isinstance(self.paraphrase_prompts, str):
            raise EditRequestError(
                f"paraphrase_prompts must be a sequence of prompts, got the string {self.paraphrase_prompts!r}; "
                "wrap it: (prompt,)"
            )
        if self.prompt.count("{}") != 1:
            raise EditRequestError(
                f"prompt {self.prompt!r} must contain exactly one '{{}}' where the subject goes, "
                f"e.g. '{{}} was born in'"
            )
        if not self.subject.strip():
            raise EditRequestError(f"request {self.prompt!r} has an empty subject")
        if not self.target_new.strip():
            raise EditRequestError(f"request {self.text!r} has an empty target_new: give the new object, e.g. 'Rome'")
        if self.target_true is not None and not self.target_true.strip():
            raise EditRequestError(f"request {self.text!r} has an empty target_true: give the object or None")
        if self.target_true is not None and self.target_true.strip() == self.target_new.strip():
            raise EditRequestError(f"request {self.text!r}: target_new equals target_true ({self.target_new!r})")
        object.__setattr__(self, "paraphrase_prompts", tuple(self.paraphrase_prompts))
        object.__setattr__(self, "neighborhood", tuple(_probe(p) for p in self.neighborhood))
        object.__setattr__(self, "fine_grained", tuple(_probe(p) for p in self.fine_grained))

    @property
    def text(self) -> str:
        """The prompt with the subject filled in."""
        return self.prompt.replace("{}", self.subject)

    @classmethod
    def from_dict(cls, d: dict) -> EditRequest:
        """Also accepts ROME/MEMIT's CounterFact layout (``{"target_new": {"str": ...}, ...}``)."""

        def s(x):
            return x["str"] if isinstance(x, dict) else x

        return cls(
            prompt=d["prompt"],
            subject=d["subject"],
            target_new=s(d["target_new"]),
            target_true=s(d.get("target_true")) if d.get("target_true") is not None else None,
            paraphrase_prompts=tuple(d.get("paraphrase_prompts", ())),
            neighborhood=tuple(d.get("neighborhood", ())),
            fine_grained=tuple(d.get("fine_grained", ())),
            relation=d.get("relation"),
        )


def _probe(p) -> Probe:
    if isinstance(p, Probe):
        return p
    if isinstance(p, (tuple, list)) and len(p) in (2, 3):
        return Probe(*p)
    raise EditRequestError(f"expected a Probe or a (prompt, answer[, level]) tuple, got {p!r}")


def as_requests(requests) -> list[EditRequest]:
    if isinstance(requests, (EditRequest, dict)):
        requests = [requests]
    if isinstance(requests, (str, bytes)) or not hasattr(requests, "__iter__"):
        raise EditRequestError(
            f"requests must be an EditRequest, a CounterFact-style dict or a list of them, got {requests!r}; "
            "e.g. [EditRequest('The capital of {} is', 'France', 'Rome', 'Paris')]"
        )
    requests = list(requests)
    bad = [r for r in requests if not isinstance(r, (EditRequest, dict))]
    if bad:
        raise EditRequestError(
            f"every request must be an EditRequest or a dict, got {bad[0]!r}; "
            "e.g. EditRequest('The capital of {} is', 'France', 'Rome', 'Paris')"
        )
    out = [r if isinstance(r, EditRequest) else EditRequest.from_dict(r) for r in requests]
    if not out:
        raise EditRequestError("no edit requests given")
    return out
