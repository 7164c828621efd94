"""The verdict rule: one-sided Student-t tests each way at level 0.05, strict cut-offs, failed seeds counted."""

import math
from dataclasses import dataclass

import pytest
from scipy import stats

from iclr26.core import claims as claims_mod
from iclr26.core.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Check,
    Claim,
    MissingMetricError,
    aggregate,
    check_verdict,
    seeds_needed,
    verdict,
)

CLAIM = Claim("c", "a beats b", (Check("a", ">", "b"),))


def seeds(pairs):
    return [{"a": a, "b": b} for a, b in pairs]


def gaps(values):
    return [{"a": 1.0 + g, "b": 1.0} for g in values]


def test_clear_gap_is_reproduced_and_its_mirror_is_not():
    assert verdict(CLAIM, gaps([1.0, 1.1, 0.9])).verdict == REPRODUCED
    assert verdict(CLAIM, gaps([-1.0, -1.1, -0.9])).verdict == NOT_REPRODUCED


def test_a_tie_is_inconclusive_not_a_refutation():
    # the audit's case: mean −0.004 with an SE of about 0.015 used to be "not reproduced"
    r = check_verdict(Check("a", ">", "b"), gaps([-0.03, 0.02, -0.002]))
    assert r.mean_gap == pytest.approx(-0.004)
    assert r.verdict == INCONCLUSIVE
    assert r.lower < 0 < r.upper


def test_two_seeds_at_t_2_2_are_not_enough():
    # n=2 with mean/SE = 2.2 (p ≈ 0.14): the old 2·SE cut-off called this reproduced
    r = check_verdict(Check("a", ">", "b"), gaps([1.0, 8 / 3]))
    assert r.mean_gap / r.se == pytest.approx(2.2)
    assert r.verdict == INCONCLUSIVE
    assert r.seeds_needed == seeds_needed(r.mean_gap, math.sqrt(2) * r.se) >= 3


def test_bounds_are_one_sided_student_t():
    g = [0.3, 0.1, 0.5, 0.2, 0.4]
    r = check_verdict(Check("a", ">", "b"), gaps(g))
    se = stats.sem(g)
    t = stats.t.ppf(0.95, len(g) - 1)
    assert r.se == pytest.approx(se)
    assert r.lower == pytest.approx(0.3 - t * se) and r.upper == pytest.approx(0.3 + t * se)
    # the same decision as scipy's one-sided one-sample t-test at 0.05
    assert (r.verdict == REPRODUCED) == (stats.ttest_1samp(g, 0.0, alternative="greater").pvalue < 0.05)


def test_cut_offs_are_strict_at_both_ends(monkeypatch):
    monkeypatch.setattr(claims_mod, "t_quantile", lambda n: 1.0)
    at_lower = check_verdict(Check("a", ">", "b"), gaps([0.0, 2.0]))  # mean 1, SE 1: lower bound exactly 0
    assert at_lower.lower == 0.0 and at_lower.verdict == INCONCLUSIVE
    at_upper = check_verdict(Check("a", ">", "b"), gaps([0.0, -2.0]))  # upper bound exactly 0
    assert at_upper.upper == 0.0 and at_upper.verdict == INCONCLUSIVE
    assert check_verdict(Check("a", ">", "b"), gaps([0.01, 2.01])).verdict == REPRODUCED
    assert check_verdict(Check("a", ">", "b"), gaps([-0.01, -2.01])).verdict == NOT_REPRODUCED


def test_zero_gap_is_inconclusive_and_no_seed_count_would_decide_it():
    r = check_verdict(Check("a", ">", "b"), gaps([-1.0, 1.0, 0.0]))
    assert r.mean_gap == 0 and r.verdict == INCONCLUSIVE and r.seeds_needed is None
    equal = check_verdict(Check("a", ">", "b"), gaps([0.0, 0.0, 0.0]))  # `>` is strict: a == b does not hold
    assert equal.verdict == INCONCLUSIVE


def test_direction_and_margin_are_symmetric():
    data = [{"a": 1.0 + 0.1 * i, "b": 3.0 + 0.05 * i} for i in range(4)]
    less = check_verdict(Check("a", "<", "b"), data)
    more = check_verdict(Check("b", ">", "a"), data)
    assert less.verdict == more.verdict == REPRODUCED and less.mean_gap == pytest.approx(more.mean_gap)
    # a margin the effect clearly falls short of: the data bound the effect below the claim's margin
    assert check_verdict(Check("b", ">", "a", margin=5.0), data).verdict == NOT_REPRODUCED
    # a negative margin is a tolerance ("within 0.5"): a is below b, yet clearly within 5 of it
    assert check_verdict(Check("a", ">", "b", margin=-5.0), data).verdict == REPRODUCED


def test_constant_right_hand_side():
    c = Claim("c", "r below -0.5", (Check("r", "<", -0.5),))
    assert verdict(c, [{"r": -0.8}, {"r": -0.7}, {"r": -0.75}]).verdict == REPRODUCED
    assert verdict(c, [{"r": -0.3}, {"r": -0.4}, {"r": -0.35}]).verdict == NOT_REPRODUCED


def test_single_seed_is_never_decided_by_the_t_test():
    r = check_verdict(Check("a", ">", "b"), gaps([5.0]))
    assert r.verdict == INCONCLUSIVE and "one seed" in r.note


def test_undeclared_identical_effect_replicates_nothing():
    r = check_verdict(Check("a", ">", "b"), gaps([0.2, 0.2, 0.2]))
    assert r.verdict == INCONCLUSIVE and "deterministic" in r.note


def test_deterministic_checks_need_a_margin_and_are_decided_on_their_value():
    with pytest.raises(ValueError, match="non-zero margin"):
        Check("p", "<", "q", deterministic=True)
    c = Check("p", "<", "q", margin=10, deterministic=True)
    assert check_verdict(c, [{"p": 100, "q": 200}] * 3).verdict == REPRODUCED
    assert check_verdict(c, [{"p": 195, "q": 200}] * 3).verdict == NOT_REPRODUCED
    assert check_verdict(c, [{"p": 190, "q": 200}] * 3).verdict == INCONCLUSIVE  # exactly the margin
    r = check_verdict(c, [{"p": 100, "q": 200}] * 3)
    assert "deterministic" in r.line() and "n=3 of 3" in r.line()
    varies = check_verdict(c, [{"p": 100 + s, "q": 200} for s in (0, 30, 60)])
    assert "varies over seeds" in varies.note and varies.se > 0
    assert "same on all" not in varies.line() and f"± {varies.se:.4g}" in varies.line()  # the line shows the t rule


def test_nan_or_missing_is_a_failed_seed_not_an_absent_one():
    data = gaps([1.0, 1.1, 0.9, 1.05]) + [{"a": float("nan"), "b": 1.0}]
    r = check_verdict(Check("a", ">", "b"), data)
    assert (r.n, r.n_total) == (4, 5)
    assert r.verdict == INCONCLUSIVE and "1 of 5 seeds failed" in r.note and "n=4 of 5" in r.line()
    missing = check_verdict(Check("a", ">", "b"), gaps([1.0, 1.1, 0.9]) + [{"b": 1.0}])
    assert missing.verdict == INCONCLUSIVE and missing.n_total == 4
    # a failed seed cannot hide a refutation either
    assert check_verdict(Check("a", ">", "b"), gaps([-1.0, -1.1, -0.9]) + [{"b": 1.0}]).verdict == NOT_REPRODUCED
    all_nan = check_verdict(Check("a", ">", "b"), [{"a": float("nan"), "b": 1.0}] * 3)
    assert all_nan.verdict == NOT_REPRODUCED and "every seed failed" in all_nan.note


def test_a_metric_no_seed_produced_is_an_error():
    with pytest.raises(MissingMetricError, match="'b'"):
        verdict(CLAIM, [{"a": 1.0}, {"a": 2.0}])
    with pytest.raises(MissingMetricError, match="acuracy"):
        verdict(Claim("c", "typo", (Check("acuracy", ">", 0.5),)), [{"accuracy": 0.9}])


def test_seeds_needed_matches_a_brute_force_search():
    mean, std = 0.5, 1.0
    n = seeds_needed(mean, std)
    assert mean * math.sqrt(n) / std > stats.t.ppf(0.95, n - 1)
    assert mean * math.sqrt(n - 1) / std <= stats.t.ppf(0.95, n - 2)


def test_worst_check_wins_and_values_are_reported_in_the_claims_units():
    c = Claim("c", "two checks", (Check("a", ">", "b"), Check("a", ">", 10.0)))
    v = verdict(c, gaps([1.0, 1.1, 0.9]))
    assert v.verdict == NOT_REPRODUCED
    assert v.checks[0].lhs["mean"] == pytest.approx(2.0) and v.checks[0].rhs["mean"] == 1.0
    assert v.checks[1].rhs == 10.0


def test_claims_can_be_switched_off_by_a_config_flag():
    @dataclass
    class Cfg:
        smollm2: bool = False

    c = Claim("c", "on the real model", (Check("x_real", ">", 0.0),), when="smollm2")
    assert verdict(c, [{"a": 1.0}], Cfg()).verdict == NOT_RUN  # no MissingMetricError: it was not meant to run
    with pytest.raises(MissingMetricError):
        verdict(c, [{"a": 1.0}], Cfg(smollm2=True))


def test_bad_claims_are_rejected():
    with pytest.raises(ValueError, match="direction"):
        Check("a", ">=", "b")
    with pytest.raises(ValueError, match="no checks"):
        Claim("x", "nothing", ())
    with pytest.raises(ValueError, match="margin"):
        Check("a", ">", "b", margin=float("nan"))


def test_aggregate_counts_failed_seeds():
    agg = aggregate([{"x": 1.0}, {"x": 3.0}, {"x": float("nan")}, {}])
    assert agg["x"]["mean"] == 2.0 and agg["x"]["n"] == 2 and agg["x"]["failed"] == 2
    assert math.isclose(agg["x"]["std"], math.sqrt(2))
