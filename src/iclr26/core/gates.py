"""Gates: what makes a claim testable here, as data.

A claim may ``require`` other claims of its card (by id). A required claim is a *gate*: a testbed check (the setting
can show the effect at all), a headroom check (the best achievable arm — an oracle, gold labels, the planted effect —
beats the baseline by more than the claim's margin), a positive control, a negative control (the mechanism removed or
replaced by junk must *not* pass the claim's check: written with :func:`iclr26.core.claims.fails`), a budget-parity
check (measured steps, rollouts, queries or examples equal within 10 %) or a non-degenerate-arm check (the method
changed something). Its ``role`` says which.

Gates are evaluated first, in dependency order (a gate may require gates of its own). When any gate of a claim does not
hold — it is not reproduced, inconclusive, not run, or itself not testable — the claim's verdict is **not testable**,
with the failing gates named; its own checks are still computed and shown (``measured``), but it is never reproduced
or not reproduced. A gate that holds leaves the verdict unchanged. Unknown ids, a claim requiring itself and cycles
are errors when the card is loaded (:func:`validate`).

A paper claim that can have no gate (a closed-form identity, a deterministic theory statement) says why in
``ungated``; a card whose paper claim has neither gates nor that declaration fails the card-load test.
"""

from __future__ import annotations

from collections.abc import Sequence

from .claims import NOT_RUN, NOT_TESTABLE, REPRODUCED, ROLES, Claim, ClaimVerdict, verdict


class ClaimGraphError(ValueError):
    """A card's claims name an unknown gate, repeat an id, or require each other in a cycle."""


def validate(claims: Sequence[Claim], where: str = "card") -> list[str]:
    """Check the claims of one card; returns the ids in evaluation order (every gate before the claims needing it)."""
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ClaimGraphError(f"{where}: claim id(s) {', '.join(dup)} given more than once")
    by_id = {c.id: c for c in claims}
    for c in claims:
        if c.role not in ROLES:
            raise ClaimGraphError(f"{where}: claim {c.id!r} has role {c.role!r}; roles are {', '.join(ROLES)}")
        unknown = [g for g in c.requires if g not in by_id]
        if unknown:
            raise ClaimGraphError(
                f"{where}: claim {c.id!r} requires {', '.join(map(repr, unknown))}, which is not a claim of this card "
                f"(its claims: {', '.join(ids)})"
            )
        if c.id in c.requires:
            raise ClaimGraphError(f"{where}: claim {c.id!r} requires itself")
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(cid: str, path: list[str]) -> None:
        if state.get(cid) == 2:
            return
        if state.get(cid) == 1:
            cycle = path[path.index(cid) :] + [cid]
            raise ClaimGraphError(f"{where}: the gates form a cycle: {' → '.join(cycle)}")
        state[cid] = 1
        for g in by_id[cid].requires:
            visit(g, [*path, cid])
        state[cid] = 2
        order.append(cid)

    for c in claims:
        visit(c.id, [])
    return order


def evaluate(claims: Sequence[Claim], per_seed: list[dict[str, float]], cfg=None) -> list[ClaimVerdict]:
    """Every claim's verdict, gates first; a claim whose gate does not hold is not testable (see the module doc)."""
    order = validate(claims)
    by_id = {c.id: c for c in claims}
    done: dict[str, ClaimVerdict] = {}
    for cid in order:
        claim = by_id[cid]
        v = verdict(claim, per_seed, cfg)
        v.role, v.requires, v.measured = claim.role, list(claim.requires), v.verdict
        if v.verdict != NOT_RUN and claim.requires:
            gates = [(g, done[g].verdict) for g in claim.requires]
            v.gates = [{"id": g, "role": by_id[g].role, "verdict": gv} for g, gv in gates]
            failing = [(g, gv) for g, gv in gates if gv != REPRODUCED]
            if failing:
                v.verdict = NOT_TESTABLE
                named = "; ".join(f"{by_id[g].role} gate {g} is {gv}" for g, gv in failing)
                v.note = (v.note + "; " if v.note else "") + f"not testable here: {named} (own checks: {v.measured})"
        done[cid] = v
    return [done[c.id] for c in claims]
