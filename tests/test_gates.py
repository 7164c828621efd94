"""Gates in the claim model: a claim whose gate does not hold is never reproduced or not reproduced (it is "not
testable", its own checks still shown), a gate that holds leaves the verdict unchanged, and bad claim graphs fail when
the card is loaded."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from iclr26.core.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    NOT_TESTABLE,
    REPRODUCED,
    Check,
    Claim,
    fails,
    verdict,
)
from iclr26.core.gates import ClaimGraphError, evaluate, validate


def seeds(**cols):
    """Per-seed metric dicts from columns: seeds(a=[1, 2], b=[0, 0]) -> [{'a': 1, 'b': 0}, {'a': 2, 'b': 0}]."""
    n = len(next(iter(cols.values())))
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


GATE = Claim("headroom", "the oracle beats the baseline", (Check("oracle", ">", "base", 0.1),), role="headroom")
CLAIM = Claim("wins", "the method beats the baseline", (Check("method", ">", "base", 0.05),), requires=("headroom",))
WIN = [1.00, 1.02, 0.98, 1.01, 0.99]  # the method far ahead of base = 0
LOSE = [-1.0, -1.02, -0.98, -1.01, -0.99]


def by_id(vs):
    return {v.id: v for v in vs}


@pytest.mark.parametrize("own", [WIN, LOSE], ids=["would be reproduced", "would be not reproduced"])
@pytest.mark.parametrize(
    "oracle,gate_verdict",
    [([0.0, 0.01, -0.01, 0.0, 0.02], NOT_REPRODUCED), ([0.0, 0.3, -0.1, 0.5, 0.1], INCONCLUSIVE)],
    ids=["gate not reproduced", "gate inconclusive"],
)
def test_a_claim_whose_gate_fails_is_not_testable_whatever_its_own_checks_say(own, oracle, gate_verdict):
    vs = by_id(evaluate([GATE, CLAIM], seeds(method=own, oracle=oracle, base=[0.0] * 5)))
    assert vs["headroom"].verdict == gate_verdict
    v = vs["wins"]
    assert v.verdict == NOT_TESTABLE
    assert v.measured == (REPRODUCED if own is WIN else NOT_REPRODUCED)  # its own checks are computed and kept
    assert v.checks and v.checks[0].verdict == v.measured
    assert "headroom gate headroom is " + gate_verdict in v.note
    assert v.gates == [{"id": "headroom", "role": "headroom", "verdict": gate_verdict}]


@pytest.mark.parametrize("own,expected", [(WIN, REPRODUCED), (LOSE, NOT_REPRODUCED)])
def test_a_gate_that_holds_leaves_the_verdict_unchanged(own, expected):
    data = seeds(method=own, oracle=[2.0, 2.1, 1.9, 2.0, 2.05], base=[0.0] * 5)
    vs = by_id(evaluate([GATE, CLAIM], data))
    assert vs["headroom"].verdict == REPRODUCED
    assert vs["wins"].verdict == expected == verdict(CLAIM, data).verdict
    assert vs["wins"].measured == expected and "not testable" not in vs["wins"].note


def test_gates_are_evaluated_first_and_a_gate_can_require_gates():
    """A chain: the claim needs a control that needs the testbed check; the testbed failing makes both not testable,
    in whatever order the card lists them."""
    testbed = Claim("testbed", "the world has the effect", (Check("planted", ">", 0.5),), role="testbed")
    control = Claim("control", "junk does not win", (fails(Check("junk", ">", "base", 0.05)),), role="negative control",
                    requires=("testbed",))  # fmt: skip
    claim = Claim("wins", "method wins", (Check("method", ">", "base", 0.05),), requires=("control",))
    data = seeds(planted=[0.1, 0.12, 0.09], junk=[0.0, 0.01, -0.01], method=[1.0, 1.1, 0.9], base=[0.0] * 3)
    vs = by_id(evaluate([claim, control, testbed], data))
    assert vs["testbed"].verdict == NOT_REPRODUCED
    assert vs["control"].measured == REPRODUCED and vs["control"].verdict == NOT_TESTABLE
    assert vs["wins"].verdict == NOT_TESTABLE and "negative control gate control is not testable" in vs["wins"].note
    assert [v.id for v in evaluate([claim, control, testbed], data)] == ["wins", "control", "testbed"]  # card order


def test_a_gate_not_run_at_this_scale_makes_the_claim_not_testable_and_a_claim_not_run_stays_not_run():
    @dataclass(frozen=True)
    class Cfg:
        real: bool = False

    gate = Claim("real_gate", "the real model does the task", (Check("task", ">", 0.5),), role="testbed", when="real")
    tiny = Claim("tiny", "method wins", (Check("method", ">", "base"),), requires=("real_gate",))
    real = Claim("real", "method wins on the real model", (Check("method", ">", "base"),), requires=("real_gate",),
                 when="real")  # fmt: skip
    vs = by_id(evaluate([gate, tiny, real], seeds(method=WIN, base=[0.0] * 5), Cfg()))
    assert vs["real_gate"].verdict == NOT_RUN and vs["real"].verdict == NOT_RUN
    assert vs["tiny"].verdict == NOT_TESTABLE and "is not run" in vs["tiny"].note


def test_fails_is_reproduced_exactly_when_the_check_is_not_reproduced():
    """The negative-control form: on random data, for both directions, margins and deterministic checks."""
    rng = random.Random(0)
    for trial in range(300):
        direction, margin = rng.choice([">", "<"]), rng.choice([0.0, 0.05, -0.05, 0.2])
        det = trial % 7 == 0 and margin != 0
        k = Check("a", direction, "b", margin, det)
        n = 1 + trial % 6
        shift = rng.uniform(-0.5, 0.5)
        data = [{"a": shift + (0 if det else rng.gauss(0, 0.2)), "b": 0.0} for _ in range(n)]
        orig = verdict(Claim("c", "c", (k,)), data).verdict
        neg = verdict(Claim("c", "c", (fails(k),)), data).verdict
        assert (neg == REPRODUCED) == (orig == NOT_REPRODUCED), (k, data, orig, neg)
        assert (neg == NOT_REPRODUCED) == (orig == REPRODUCED), (k, data, orig, neg)


@pytest.mark.parametrize(
    "claims,match",
    [
        ([CLAIM], "requires 'headroom', which is not a claim of this card"),
        ([GATE, GATE], "given more than once"),
        ([Claim("a", "a", (Check("x", ">", 0),), requires=("a",))], "requires itself"),
        (
            [
                Claim("a", "a", (Check("x", ">", 0),), requires=("b",), role="testbed"),
                Claim("b", "b", (Check("x", ">", 0),), requires=("c",), role="testbed"),
                Claim("c", "c", (Check("x", ">", 0),), requires=("a",), role="testbed"),
            ],
            r"cycle: a → b → c → a",
        ),  # fmt: skip
    ],
    ids=["unknown id", "duplicate id", "self", "cycle"],
)
def test_bad_claim_graphs_raise(claims, match):
    with pytest.raises(ClaimGraphError, match=match):
        validate(claims)


def test_claim_fields_are_checked():
    with pytest.raises(ValueError, match="role 'gate' is not one of"):
        Claim("a", "a", (Check("x", ">", 0),), role="gate")
    with pytest.raises(ValueError, match="requires must be a tuple of claim ids"):
        Claim("a", "a", (Check("x", ">", 0),), requires="b")
    with pytest.raises(ValueError, match="has gates and declares itself ungated"):
        Claim("a", "a", (Check("x", ">", 0),), requires=("b",), ungated="an identity")
    with pytest.raises(ValueError, match="only a paper claim"):
        Claim("a", "a", (Check("x", ">", 0),), role="testbed", ungated="an identity")


def test_a_card_with_a_gate_cycle_fails_when_loaded(fake_paper):
    from iclr26.core.registry import get_paper

    fake_paper.CLAIMS = [Claim("a", "a", (Check("method", ">", 0),), requires=("b",)),
                         Claim("b", "b", (Check("method", ">", 0),), requires=("a",), role="testbed")]  # fmt: skip
    with pytest.raises(ClaimGraphError, match="paper 'fake-paper'.*cycle"):
        get_paper("fake-paper").module()


def test_run_folders_report_and_status_count_not_testable_apart(fake_paper, tmp_path):
    from iclr26.core.folders import status_of, verdict_counts
    from iclr26.core.report import build_report
    from iclr26.core.runs import run_paper

    gate = Claim("headroom", "oracle headroom", (Check("method", ">", "baseline", 5.0),), role="headroom")
    fake_paper.CLAIMS = [gate, Claim("better", "method beats baseline", (Check("method", ">", "baseline"),),
                                     requires=("headroom",))]  # fmt: skip
    res = run_paper("fake-paper", scale="quick", out=tmp_path / "runs")
    claims = {c["id"]: c for c in res.verdicts}
    assert claims["headroom"]["verdict"] == NOT_REPRODUCED and claims["headroom"]["role"] == "headroom"
    assert claims["better"]["verdict"] == NOT_TESTABLE and claims["better"]["measured"] == REPRODUCED
    counts = verdict_counts(res.verdicts)
    assert counts["not testable"] == 1 and counts["reproduced"] == 0
    assert (counts["gates held"], counts["gates"]) == (0, 1)
    assert status_of("fake-paper", tmp_path / "runs").startswith("not testable")
    md = build_report(tmp_path / "runs", tmp_path / "rep").with_suffix(".md").read_text()
    assert "| not testable |" in md and "[gate: headroom] oracle headroom" in md
    assert "not testable here: headroom gate headroom is not reproduced" in md
