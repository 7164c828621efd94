import math

import pytest

from iclr26.core.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Check,
    Claim,
    aggregate,
    check_verdict,
    verdict,
)

CLAIM = Claim("c", "a beats b", (Check("a", ">", "b"),))


def seeds(pairs):
    return [{"a": a, "b": b} for a, b in pairs]


def test_verdict_reproduced_when_gap_exceeds_two_standard_errors():
    assert verdict(CLAIM, seeds([(2.0, 1.0), (2.1, 1.0), (1.9, 1.0)])).verdict == REPRODUCED


def test_verdict_flips_when_numbers_flip():
    assert verdict(CLAIM, seeds([(1.0, 2.0), (1.0, 2.1), (1.0, 1.9)])).verdict == NOT_REPRODUCED


def test_noisy_right_direction_is_inconclusive():
    assert verdict(CLAIM, seeds([(3.0, 1.0), (0.95, 1.0), (1.2, 1.0)])).verdict == INCONCLUSIVE


def test_single_seed_is_never_reproduced():
    assert verdict(CLAIM, seeds([(5.0, 1.0)])).verdict == INCONCLUSIVE


def test_margin_and_direction_and_constant_rhs():
    c = Claim("c", "r below -0.5", (Check("r", "<", -0.5),))
    assert verdict(c, [{"r": -0.8}, {"r": -0.7}, {"r": -0.75}]).verdict == REPRODUCED
    assert verdict(c, [{"r": -0.3}, {"r": -0.4}, {"r": -0.35}]).verdict == NOT_REPRODUCED
    m = Claim("m", "a beats b by 2", (Check("a", ">", "b", margin=2.0),))
    assert verdict(m, seeds([(2.0, 1.0), (2.1, 1.0), (2.2, 1.0)])).verdict == NOT_REPRODUCED


def test_gap_and_standard_error_values():
    r = check_verdict(Check("a", ">", "b"), seeds([(2.0, 1.0), (3.0, 1.0)]))
    assert r.mean_gap == pytest.approx(1.5)
    assert r.se == pytest.approx(0.5)  # std(ddof=1) = 0.7071, / sqrt(2)


def test_worst_check_wins():
    c = Claim("c", "two checks", (Check("a", ">", "b"), Check("a", ">", 10.0)))
    assert verdict(c, seeds([(2.0, 1.0), (2.1, 1.0), (2.2, 1.0)])).verdict == NOT_REPRODUCED


def test_missing_metric_is_inconclusive_and_nan_ignored():
    assert verdict(CLAIM, [{"a": 1.0}]).verdict == INCONCLUSIVE
    assert verdict(CLAIM, seeds([(2.0, 1.0), (float("nan"), 1.0), (2.1, 1.0), (2.2, 1.0)])).checks[0].n == 3


def test_bad_claims_are_rejected():
    with pytest.raises(ValueError, match="direction"):
        Check("a", ">=", "b")
    with pytest.raises(ValueError, match="no checks"):
        Claim("x", "nothing", ())


def test_aggregate():
    agg = aggregate([{"x": 1.0}, {"x": 3.0}])
    assert agg["x"]["mean"] == 2.0 and agg["x"]["n"] == 2
    assert math.isclose(agg["x"]["std"], math.sqrt(2))
