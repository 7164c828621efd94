"""Claims are data; verdicts are computed from measured numbers over seeds.

A claim is one or more *checks*. A check compares a measured metric with another measured metric (paired by seed) or
with a constant, in a stated direction and with a margin:

    lhs  >  rhs + margin        (direction ">")
    lhs  <  rhs - margin        (direction "<")

For each seed s we form the signed gap g_s = ±(lhs_s − rhs_s) − margin (positive when the claim holds on that seed),
then its mean m and standard error SE = std(g, ddof=1) / √n. The rule (stated in every report):

- **reproduced**     if m − 2·SE > 0 (the claim holds by more than twice its standard error) and n ≥ 2;
- **not reproduced** if m ≤ 0 (on average the measurement goes against the claim);
- **inconclusive**   otherwise (right direction, within noise, or fewer than two seeds).

A claim with several checks (e.g. "beats each of three baselines") takes the worst verdict of its checks.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Literal

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
_ORDER = {NOT_REPRODUCED: 0, INCONCLUSIVE: 1, REPRODUCED: 2}
RULE = (
    "per seed gap g = ±(lhs − rhs) − margin; reproduced if mean(g) − 2·SE > 0 with ≥ 2 seeds; "
    "not reproduced if mean(g) ≤ 0; inconclusive otherwise"
)


@dataclass(frozen=True)
class Check:
    """`lhs direction rhs` with a margin; `rhs` is a metric name or a number."""

    lhs: str
    direction: Literal[">", "<"]
    rhs: str | float
    margin: float = 0.0

    def __post_init__(self):
        if self.direction not in (">", "<"):
            raise ValueError(f"Check.direction must be '>' or '<', got {self.direction!r}")

    def describe(self) -> str:
        m = f" by {self.margin:g}" if self.margin else ""
        return f"{self.lhs} {self.direction} {self.rhs}{m}"

    def metrics(self) -> list[str]:
        return [self.lhs] + ([self.rhs] if isinstance(self.rhs, str) else [])


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as data.

    id: short key; statement: what the paper claims, in words; checks: how we test it at our scale;
    paper: the paper's own numbers with their setting (shown beside ours, labelled as a different setting).
    """

    id: str
    statement: str
    checks: tuple[Check, ...]
    paper: str = ""
    note: str = ""

    def __post_init__(self):
        if not self.checks:
            raise ValueError(f"claim {self.id!r} has no checks")

    def metrics(self) -> list[str]:
        return sorted({m for c in self.checks for m in c.metrics()})


@dataclass
class CheckResult:
    check: str
    n: int
    mean_gap: float
    se: float
    verdict: str


@dataclass
class ClaimVerdict:
    id: str
    statement: str
    verdict: str
    checks: list[CheckResult] = field(default_factory=list)
    paper: str = ""
    rule: str = RULE

    def to_dict(self) -> dict:
        return asdict(self)


def _gaps(check: Check, per_seed: list[dict[str, float]]) -> list[float]:
    gaps = []
    for metrics in per_seed:
        lhs = metrics.get(check.lhs)
        rhs = metrics.get(check.rhs) if isinstance(check.rhs, str) else check.rhs
        if lhs is None or rhs is None or not math.isfinite(lhs) or not math.isfinite(rhs):
            continue
        diff = lhs - rhs if check.direction == ">" else rhs - lhs
        gaps.append(diff - check.margin)
    return gaps


def check_verdict(check: Check, per_seed: list[dict[str, float]]) -> CheckResult:
    gaps = _gaps(check, per_seed)
    n = len(gaps)
    if n == 0:
        return CheckResult(check.describe(), 0, float("nan"), float("nan"), INCONCLUSIVE)
    mean = sum(gaps) / n
    se = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (n - 1) / n) if n > 1 else float("nan")
    if mean <= 0:
        verdict = NOT_REPRODUCED
    elif n >= 2 and mean - 2 * se > 0:
        verdict = REPRODUCED
    else:
        verdict = INCONCLUSIVE
    return CheckResult(check.describe(), n, mean, se, verdict)


def verdict(claim: Claim, per_seed: list[dict[str, float]]) -> ClaimVerdict:
    """The computed verdict of `claim` over the per-seed metric dicts."""
    results = [check_verdict(c, per_seed) for c in claim.checks]
    worst = min((r.verdict for r in results), key=_ORDER.__getitem__)
    return ClaimVerdict(claim.id, claim.statement, worst, results, claim.paper)


def aggregate(per_seed: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """mean, std (ddof=1; 0 for one seed) and n of every metric over seeds."""
    names = sorted({k for m in per_seed for k in m})
    out = {}
    for name in names:
        vals = [float(m[name]) for m in per_seed if name in m and m[name] is not None and math.isfinite(m[name])]
        if not vals:
            continue
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
        out[name] = {"mean": mean, "std": std, "n": len(vals)}
    return out
