"""The editing benchmark: CounterFact-style requests from a fact world and FINE-KED-style fine-grained locality.

**Requests** (:func:`counterfact_requests`). For a fact ``(s, r, o)`` the request asks for ``o → o*`` (``o*`` another
object of the same type) on ``r``'s first template; the other templates of ``r`` are the paraphrases (generalisation);
the neighbourhood probes are *other* subjects with relation ``r`` (CounterFact, Meng et al. 2022: preferably ones whose
true object is ``o`` too) with their own objects; the fine-grained probes are the *same* subject's facts under the
other relations (FINE-KED, the DiKE paper), tagged with the world's similarity level between ``r`` and the other
relation (0 low, 1 medium, 2 high). ``keep`` filters the facts used as probes, e.g. to those the model knows.

**Metrics** (:func:`evaluate_edits`), each named ``<group>_<protocol>``, groups ``efficacy`` (the edit prompt, answer
``o*``), ``paraphrase`` (answer ``o*``), ``neighborhood`` and ``locality`` / ``locality_l{0,1,2}`` (answer: the probe's
own object, which must survive the edit). Protocols (:data:`METRIC_PROTOCOLS`):

- ``prob_gt``: the answer's mean per-token log-probability beats the competitor's (CounterFact's efficacy/paraphrase
  score ``1[P(o*) > P(o)]`` and neighbourhood score ``1[P(o) > P(o*)]``, as in ROME/MEMIT/AlphaEdit, DiKE, SUIT);
- ``token_acc``: teacher-forced token accuracy of the answer (MEMIT's zsRE protocol);
- ``greedy_em``: greedy decoding reproduces the answer exactly. Computed from the same teacher-forced pass: greedy
  decoding yields the answer iff every answer token is the argmax given the prompt and the answer's earlier tokens.

Each is averaged over a request's prompts, then over requests (CounterFact's convention).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence

import torch

from .compute import encode_batch, target_ids
from .requests import EditRequest, Probe

PROTOCOLS = ("prob_gt", "token_acc", "greedy_em")
METRIC_PROTOCOLS = {
    "prob_gt": "fraction of prompts where the answer's mean per-token log-prob beats the competitor's (CounterFact: "
    "P(new) > P(true) on edit/paraphrase prompts; P(own object) > P(new) on neighbourhood/locality probes)",
    "token_acc": "teacher-forced token accuracy of the answer (its tokens are the argmax given the prompt and the "
    "earlier answer tokens), averaged over prompts",
    "greedy_em": "greedy decoding after the prompt reproduces the answer's tokens exactly",
}


@torch.no_grad()
def score_answers(model, tok, prompts: Sequence[str], answers: Sequence[str], batch_size: int = 64):
    """Per (prompt, answer): (mean per-token log-prob, teacher-forced token accuracy, all tokens argmax)."""
    if len(prompts) != len(answers):
        raise ValueError(f"{len(prompts)} prompts but {len(answers)} answers")
    dev = next(model.parameters()).device
    lp, acc, em = [], [], []
    for i in range(0, len(prompts), batch_size):
        pairs = [target_ids(tok, p, a) for p, a in zip(prompts[i : i + batch_size], answers[i : i + batch_size])]
        ids, mask = encode_batch(tok, [full for full, _ in pairs])
        logp = torch.log_softmax(model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits.float(), -1)
        for j, (full, st) in enumerate(pairs):
            pos = torch.arange(st - 1, len(full) - 1, device=dev)
            tgt = torch.tensor(full[st:], device=dev)
            lp.append(logp[j, pos, tgt].mean().item())
            hit = logp[j, pos].argmax(-1) == tgt
            acc.append(hit.float().mean().item())
            em.append(float(hit.all().item()))
    return lp, acc, em


def _mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def evaluate_edits(model, tok, requests: Sequence[EditRequest], batch_size: int = 64) -> dict[str, float]:
    """Every metric of the module docstring, averaged over ``requests`` (nan where a group has no prompts)."""
    # one scoring pass over every (prompt, answer) pair needed
    jobs: list[tuple[str, str]] = []
    plan = []  # (request index, group, level, index of answer job, index of competitor job or None)
    for i, r in enumerate(requests):
        for group, prompts in (("efficacy", [r.text]), ("paraphrase", list(r.paraphrase_prompts))):
            for p in prompts:
                a = len(jobs)
                jobs.append((p, r.target_new))
                b = None
                if r.target_true is not None:
                    b = len(jobs)
                    jobs.append((p, r.target_true))
                plan.append((i, group, None, a, b))
        for group, probes in (("neighborhood", r.neighborhood), ("locality", r.fine_grained)):
            for pr in probes:
                a = len(jobs)
                jobs.append((pr.prompt, pr.answer))
                b = None
                if pr.answer.strip() != r.target_new.strip():
                    b = len(jobs)
                    jobs.append((pr.prompt, r.target_new))
                plan.append((i, group, pr.level, a, b))
    lp, acc, em = score_answers(model, tok, [p for p, _ in jobs], [a for _, a in jobs], batch_size)
    per: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i, group, level, a, b in plan:
        names = [group] + ([f"{group}_l{level}"] if group == "locality" and level is not None else [])
        for g in names:
            if b is not None:
                per[g, "prob_gt"][i].append(float(lp[a] > lp[b]))
            per[g, "token_acc"][i].append(acc[a])
            per[g, "greedy_em"][i].append(em[a])
    out = {}
    for (g, proto), by_req in sorted(per.items()):
        out[f"{g}_{proto}"] = _mean([_mean(v) for v in by_req.values()])
    return out


def known_mask(model, tok, prompts: Sequence[str], answers: Sequence[str]) -> list[bool]:
    """Which (prompt, answer) pairs the model gets exactly right by greedy decoding."""
    return [bool(e) for e in score_answers(model, tok, prompts, answers)[2]]


def known_facts(model, tok, world, facts=None, template: int = 0) -> list:
    """The world's facts (or ``facts``) that the model recalls exactly on the given template."""
    facts = list(world.facts if facts is None else facts)
    ok = known_mask(model, tok, [world.prompt(f, template) for f in facts], [f.object for f in facts])
    return [f for f, k in zip(facts, ok) if k]


def _template(world, relation: str, i: int) -> str:
    return world.relation[relation].templates[i].replace("{s}", "{}")


def counterfact_requests(
    world,
    facts: Sequence,
    seed: int = 0,
    n_neighbours: int = 5,
    keep: Callable[[object], bool] | None = None,
    targets: Sequence[str] | None = None,
) -> list[EditRequest]:
    """One CounterFact-style request per fact (see the module docstring). ``targets`` fixes the new objects
    (otherwise ``world.counterfact`` draws them from ``seed``); ``keep(fact)`` filters probe facts."""
    rng = random.Random(seed)
    keep = keep or (lambda f: True)
    out = []
    by_rel_obj = defaultdict(list)
    for f in world.facts:
        by_rel_obj[f.relation, f.object].append(f)
    for n, fact in enumerate(facts):
        new = targets[n] if targets is not None else world.counterfact(fact, rng)
        n_t = len(world.relation[fact.relation].templates)
        paraphrases = tuple(_template(world, fact.relation, t).replace("{}", fact.subject) for t in range(1, n_t))
        # neighbours: other subjects, same relation, same true object first (CounterFact), then any other object
        same = [f for f in by_rel_obj[fact.relation, fact.object] if f.subject != fact.subject and keep(f)]
        other = [
            f
            for f in world.facts
            if f.relation == fact.relation
            and f.subject != fact.subject
            and f.object not in (fact.object, new)
            and keep(f)
        ]
        rng.shuffle(same)
        rng.shuffle(other)
        neigh = tuple(Probe(world.prompt(f), f.object) for f in (same + other)[:n_neighbours])
        fine = tuple(
            Probe(world.prompt(f), f.object, world.similarity(fact.relation, f.relation))
            for f in world.siblings(fact)
            if keep(f)
        )
        out.append(
            EditRequest(
                _template(world, fact.relation, 0),
                fact.subject,
                new,
                fact.object,
                paraphrases,
                neigh,
                fine,
                relation=fact.relation,
            )
        )
    return out
