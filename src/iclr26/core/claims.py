"""Claims are data; verdicts are computed from measured numbers over seeds, by one stated, symmetric rule.

A claim is one or more *checks*. A check compares a measured metric with another measured metric (paired by seed) or
with a constant, in a stated direction, against a margin (the smallest effect that counts):

    lhs > rhs + margin      (direction ">")
    lhs < rhs − margin      (direction "<")

Per seed s the effect is d_s = ±(lhs_s − rhs_s) (positive when the measurement goes the claimed way). Over the n seeds
we take the mean m, the standard error SE = std(d, ddof=1)/√n and the one-sided Student-t quantile t = t_{1−α, n−1}
at level α = 0.05:

- **reproduced**      if the lower bound m − t·SE exceeds the margin (the data support the claim);
- **not reproduced**  if the upper bound m + t·SE is below the margin (the data support the opposite, or bound the
                      effect below the claim's margin: an equivalence-style test);
- **inconclusive**    otherwise, with the number of seeds that would decide it at the observed spread.

Both cut-offs are strict, so a bound that equals the margin is inconclusive. Further:

- A seed whose metric is missing or NaN is a *failed* seed, not an absent one: the verdict line shows "n of N", a
  check with a failed seed cannot be reproduced, and a check whose every seed failed is not reproduced.
- A metric name that no seed produced at all is an error (:class:`MissingMetricError`): a misspelt name must not pass
  as "inconclusive".
- A check on a metric that does not depend on the seed (a parameter count, an exact risk) is declared
  ``deterministic=True`` with a non-zero margin and decided on its value: reproduced if d > margin, not reproduced
  if d < margin. An undeclared check whose effect is identical on every seed has no replication to test and is
  inconclusive, with a note saying so.
- A claim with several checks (e.g. "beats each of three baselines") takes the worst verdict of its checks.
- A claim may name a boolean config field in ``when``; at a scale where that field is false the claim is "not run".
- A claim may ``require`` other claims of its card (gates: a testbed check, headroom, a control, budget parity, a
  non-degenerate arm; see :mod:`iclr26.core.gates`). When a gate does not hold, the claim is **not testable** here:
  its checks are still computed and shown, but it is neither reproduced nor not reproduced.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Literal

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run"
NOT_TESTABLE = "not testable"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE, NOT_RUN)
# what a claim is: a paper's claim, or a gate of one of these kinds (iclr26.core.gates)
ROLES = ("claim", "testbed", "headroom", "positive control", "negative control", "budget", "non-degenerate", "sanity")
LEVEL = 0.05  # one-sided level of both tests
_ORDER = {NOT_REPRODUCED: 0, INCONCLUSIVE: 1, REPRODUCED: 2}
RULE = (
    f"per seed d = ±(lhs − rhs); one-sided Student-t over seeds at level {LEVEL:g}: reproduced if the lower "
    f"{1 - LEVEL:.0%} bound of mean(d) exceeds the margin, not reproduced if the upper bound is below it, "
    "inconclusive otherwise; a missing or NaN metric is a failed seed (no 'reproduced' with failed seeds); "
    "seed-independent metrics are declared deterministic and decided on their value against a non-zero margin; "
    "a claim whose gate (testbed, headroom, control, budget parity, non-degenerate arm) does not hold is not testable"
)
_MAX_SEEDS = 10_000


class MissingMetricError(KeyError):
    """A claim names a metric that no seed produced (a misspelt name, or a part of the run that never ran)."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Check:
    """`lhs direction rhs` beyond a margin; `rhs` is a metric name or a number."""

    lhs: str
    direction: Literal[">", "<"]
    rhs: str | float
    margin: float = 0.0
    deterministic: bool = False  # the metric does not depend on the seed: decided on its value, needs a margin

    def __post_init__(self):
        if self.direction not in (">", "<"):
            raise ValueError(f"Check.direction must be '>' or '<', got {self.direction!r}")
        if not isinstance(self.margin, (int, float)) or not math.isfinite(self.margin):
            raise ValueError(f"Check.margin must be a finite number, got {self.margin!r}")
        if self.deterministic and self.margin == 0:
            raise ValueError(
                f"check {self.lhs} {self.direction} {self.rhs}: a deterministic check needs a non-zero margin "
                "(the smallest difference that counts), since it has no spread over seeds to test against"
            )

    def describe(self) -> str:
        m = f" by {self.margin:g}" if self.margin else ""
        det = " [deterministic]" if self.deterministic else ""
        return f"{self.lhs} {self.direction} {self.rhs}{m}{det}"

    def metrics(self) -> list[str]:
        return [self.lhs] + ([self.rhs] if isinstance(self.rhs, str) else [])


def fails(check: Check) -> Check:
    """The check that holds when ``check`` is bounded below its margin: ``lhs − rhs < margin`` for ``>``.

    It is reproduced exactly when ``check`` itself is *not reproduced* (the upper bound of its effect lies below its
    margin), so a negative control is written as a gate on the control arm: ``fails(Check("junk_acc", ">",
    "base_acc", 0.02))`` holds when the junk arm is shown not to beat the baseline by the claim's margin."""
    flip = "<" if check.direction == ">" else ">"
    return Check(check.lhs, flip, check.rhs, -check.margin, check.deterministic)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as data.

    id: short key; statement: what the paper claims, in words; checks: how we test it at our scale;
    paper: the paper's own numbers with their setting (shown beside ours, labelled as a different setting);
    when: a boolean config field; the claim is "not run" at scales where it is false (e.g. "smollm2");
    requires: ids of the claims of this card that are its gates (testable only when every one holds);
    role: "claim" for a paper's claim, else the kind of gate this claim is (see ROLES and core.gates);
    ungated: for a paper claim that can have no gate (a closed-form identity, a deterministic theory statement): why.
    """

    id: str
    statement: str
    checks: tuple[Check, ...]
    paper: str = ""
    note: str = ""
    when: str = ""
    requires: tuple[str, ...] = ()
    role: str = "claim"
    ungated: str = ""

    def __post_init__(self):
        if not self.checks:
            raise ValueError(f"claim {self.id!r} has no checks")
        if isinstance(self.requires, str) or not all(isinstance(g, str) for g in self.requires):
            raise ValueError(f"claim {self.id!r}: requires must be a tuple of claim ids, got {self.requires!r}")
        object.__setattr__(self, "requires", tuple(self.requires))
        if self.role not in ROLES:
            raise ValueError(f"claim {self.id!r}: role {self.role!r} is not one of {', '.join(ROLES)}")
        if self.ungated and self.role != "claim":
            raise ValueError(f"claim {self.id!r}: only a paper claim (role 'claim') declares itself ungated")
        if self.ungated and self.requires:
            raise ValueError(f"claim {self.id!r} has gates and declares itself ungated: choose one")

    @property
    def is_gate(self) -> bool:
        return self.role != "claim"

    def metrics(self) -> list[str]:
        return sorted({m for c in self.checks for m in c.metrics()})

    def applies(self, cfg) -> bool:
        return not self.when or bool(getattr(cfg, self.when))


@dataclass
class CheckResult:
    check: str
    n: int  # seeds with a finite effect
    n_total: int  # seeds run
    mean_gap: float  # mean(d) − margin: positive when the claim holds on average
    se: float
    lower: float  # one-sided (1 − LEVEL) bounds of mean(d) − margin
    upper: float
    verdict: str
    deterministic: bool = False
    lhs: dict = field(default_factory=dict)  # our measured values in the claim's units: mean, std, n
    rhs: dict | float = field(default_factory=dict)
    seeds_needed: int | None = None  # for an inconclusive check: seeds that would decide it at the observed spread
    note: str = ""

    def line(self) -> str:
        """One readable line: the check, the gap with its bounds, n of N, the verdict and any note."""
        if self.deterministic and self.n and self.se == 0:  # decided on the value (not when it fell back to the t rule)
            stat = f"gap {_g(self.mean_gap)} (deterministic, same on all {self.n_total} seeds)"
        else:
            stat = f"gap {_g(self.mean_gap)} ± {_g(self.se)} [{_g(self.lower)}, {_g(self.upper)}]"
        more = f"; ~{self.seeds_needed} seeds would decide it" if self.seeds_needed else ""
        note = f"; {self.note}" if self.note else ""
        return f"{self.check}: {stat} (n={self.n} of {self.n_total}) → {self.verdict}{more}{note}"


def _g(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


@dataclass
class ClaimVerdict:
    id: str
    statement: str
    verdict: str
    checks: list[CheckResult] = field(default_factory=list)
    paper: str = ""
    rule: str = RULE
    note: str = ""
    role: str = "claim"
    requires: list[str] = field(default_factory=list)
    measured: str = ""  # the verdict of its own checks, before gating (equal to verdict unless not testable)
    gates: list[dict] = field(default_factory=list)  # [{id, role, verdict}] of its gates

    def to_dict(self) -> dict:
        return asdict(self)


def t_quantile(n: int) -> float:
    """t_{1−LEVEL, n−1}: the one-sided Student-t quantile for n seeds."""
    from scipy.stats import t

    return float(t.ppf(1 - LEVEL, n - 1))


def seeds_needed(mean_gap: float, std: float) -> int | None:
    """The smallest n ≥ 2 at which |mean_gap| would clear the one-sided t bound with this spread (None: never)."""
    if mean_gap == 0 or not math.isfinite(mean_gap) or not math.isfinite(std):
        return None
    if std == 0:
        return 2
    for n in range(2, _MAX_SEEDS + 1):
        if abs(mean_gap) * math.sqrt(n) / std > t_quantile(n):
            return n
    return None


def _summary(values: list[float]) -> dict:
    if not values:
        return {"mean": float("nan"), "std": float("nan"), "n": 0}
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return {"mean": mean, "std": std, "n": len(values)}


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def check_verdict(check: Check, per_seed: list[dict[str, float]]) -> CheckResult:
    for name in check.metrics():
        if per_seed and not any(name in m for m in per_seed):
            raise MissingMetricError(
                f"check '{check.describe()}' names the metric {name!r}, which no seed produced; "
                f"the seeds produced: {', '.join(sorted({k for m in per_seed for k in m})[:40])}"
            )
    n_total = len(per_seed)
    effects, lhs_vals, rhs_vals = [], [], []
    for metrics in per_seed:
        lhs = metrics.get(check.lhs)
        rhs = metrics.get(check.rhs) if isinstance(check.rhs, str) else check.rhs
        if _finite(lhs):
            lhs_vals.append(float(lhs))
        if isinstance(check.rhs, str) and _finite(rhs):
            rhs_vals.append(float(rhs))
        if _finite(lhs) and _finite(rhs):
            effects.append(lhs - rhs if check.direction == ">" else rhs - lhs)
    ours_rhs = _summary(rhs_vals) if isinstance(check.rhs, str) else float(check.rhs)
    n, failed = len(effects), n_total - len(effects)
    res = CheckResult(check.describe(), n, n_total, float("nan"), float("nan"), float("nan"), float("nan"),
                      INCONCLUSIVE, check.deterministic, _summary(lhs_vals), ours_rhs)  # fmt: skip
    if n == 0:
        res.verdict = NOT_REPRODUCED if n_total else INCONCLUSIVE
        res.note = f"no seed of {n_total} produced a finite value: every seed failed" if n_total else "no seeds"
        return res
    gaps = [d - check.margin for d in effects]
    s = _summary(gaps)
    res.mean_gap, spread = s["mean"], max(gaps) - min(gaps)
    identical = spread <= 1e-12 * max(1.0, abs(res.mean_gap))
    if check.deterministic and identical:
        res.se, res.lower, res.upper = 0.0, res.mean_gap, res.mean_gap
        res.verdict = REPRODUCED if res.mean_gap > 0 else NOT_REPRODUCED if res.mean_gap < 0 else INCONCLUSIVE
    elif n < 2:
        res.note = "one seed: no spread to test against"
    elif identical:
        res.se, res.lower, res.upper = 0.0, res.mean_gap, res.mean_gap
        res.note = (
            f"identical on all {n} seeds, so the seeds replicate nothing: if the metric does not depend on the seed, "
            "declare the check deterministic with a margin"
        )
    else:
        res.se = s["std"] / math.sqrt(n)
        t = t_quantile(n)
        res.lower, res.upper = res.mean_gap - t * res.se, res.mean_gap + t * res.se
        res.verdict = REPRODUCED if res.lower > 0 else NOT_REPRODUCED if res.upper < 0 else INCONCLUSIVE
        if check.deterministic:
            res.note = f"declared deterministic but varies over seeds (range {spread:.3g}): tested over seeds"
        if res.verdict == INCONCLUSIVE:
            res.seeds_needed = seeds_needed(res.mean_gap, s["std"])
            if res.seeds_needed is None:
                res.note = (res.note + "; " if res.note else "") + "no number of seeds would decide a zero gap"
    if failed:
        res.note = (res.note + "; " if res.note else "") + f"{failed} of {n_total} seeds failed (missing or NaN)"
        if res.verdict == REPRODUCED:
            res.verdict = INCONCLUSIVE
    return res


def verdict(claim: Claim, per_seed: list[dict[str, float]], cfg=None) -> ClaimVerdict:
    """The computed verdict of `claim` over the per-seed metric dicts (and the run's config, for `when`)."""
    if cfg is not None and not claim.applies(cfg):
        return ClaimVerdict(
            claim.id, claim.statement, NOT_RUN, [], claim.paper, note=f"not run at this scale ({claim.when} is off)"
        )
    results = [check_verdict(c, per_seed) for c in claim.checks]
    worst = min((r.verdict for r in results), key=_ORDER.__getitem__)
    return ClaimVerdict(claim.id, claim.statement, worst, results, claim.paper)


def aggregate(per_seed: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """mean, std (ddof=1; 0 for one seed), n (finite values) and failed (missing or NaN) of every metric."""
    names = sorted({k for m in per_seed for k in m})
    out = {}
    for name in names:
        vals = [float(m[name]) for m in per_seed if _finite(m.get(name))]
        out[name] = {**_summary(vals), "failed": len(per_seed) - len(vals)}
    return out
