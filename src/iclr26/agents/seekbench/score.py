"""Score annotated traces: JSONL in, a metrics table (per model, with clustered-bootstrap 95% CIs) out.

    from iclr26.agents.seekbench import score_traces
    table = score_traces("traces.jsonl")          # or a list of dicts / Trace objects
    print(table.to_text())                        # table.rows: [{"model", "metric", "point", "lo", "hi", ...}]

Command line (``iclr26 seekbench score traces.jsonl [--json]``, or ``python -m iclr26.agents.seekbench.score``).
The trace format is described in ``schema.py`` and docs/papers/seekbench.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .metrics import (
    ALL_METRICS,
    CI,
    DEFAULT_UNIT,
    UNIT_METRICS,
    bootstrap_ci,
    cluster_table,
    global_prevalence,
    metric_statistic,
)
from .schema import Trace, as_traces

DEFAULT_METRICS = (
    "success",
    "rqi",
    "grounded_rate",
    "turns_to_first_sufficient",
    "refined_rate",
    "followup_rate",
    "repeat_rate",
    "answer_rate_e0",
    "answer_rate_e1",
    "answer_rate_e2",
    "calibration_error",
    "balanced_ce",
    "premature_rate",
    "overcautious_rate",
    "reach_e2",
    "recovery_auc",
    "lqe_exit_rate",
    "exit_after_refine",
    "exit_after_followup",
    "exit_after_repeat",
    "exit_after_grounded",
)


@dataclass
class ScoreConfig:
    threshold: int = field(default=2, metadata={"help": "policy 'answer iff E >= thr' (official: 2; sensitivity 1)"})
    horizon: int = field(default=15, metadata={"help": "turns for premature / over-cautious (official H = 15)"})
    recovery_horizon: int = field(default=20, metadata={"help": "turns of the E = 2 CDF (official 20)"})
    unit: str = field(
        default=DEFAULT_UNIT, metadata={"help": "'step' (official code, default) or 'turn' (paper) for calibration"}
    )
    both_units: bool = field(
        default=True, metadata={"help": "also give the unit-dependent metrics in the other unit ('<metric>@turn')"}
    )
    n_boot: int = field(default=2000, metadata={"help": "bootstrap resamples (official 2000-5000)"})
    seed: int = field(default=42, metadata={"help": "bootstrap seed (official 42)"})
    level: float = field(default=0.95, metadata={"help": "CI level (percentile interval)"})

    def __post_init__(self):
        if self.threshold not in (1, 2):
            raise ValueError(f"ScoreConfig.threshold must be 1 or 2, got {self.threshold}")
        if self.horizon < 1 or self.recovery_horizon < 0 or self.n_boot < 1:
            raise ValueError("ScoreConfig: need horizon ≥ 1, recovery_horizon ≥ 0 and n_boot ≥ 1")
        if self.unit not in ("turn", "step"):
            raise ValueError(f"ScoreConfig.unit must be 'turn' or 'step', got {self.unit!r}")

    def stats_kw(self) -> dict:
        return {
            "threshold": self.threshold,
            "horizon": self.horizon,
            "recovery_horizon": self.recovery_horizon,
            "unit": self.unit,
        }


@dataclass
class MetricsTable:
    rows: list[dict]

    def get(self, model: str, metric: str) -> CI:
        for r in self.rows:
            if r["model"] == model and r["metric"] == metric:
                return CI(r["point"], r["lo"], r["hi"])
        raise KeyError(f"no row for model {model!r}, metric {metric!r}")

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(r["model"] for r in self.rows))

    def to_text(self) -> str:
        metrics = list(dict.fromkeys(r["metric"] for r in self.rows))
        fmt = lambda x: "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"  # noqa: E731
        lines = ["metric".ljust(26) + "".join(m[:24].rjust(26) for m in self.models)]
        for met in metrics:
            cells = []
            for m in self.models:
                c = self.get(m, met)
                cells.append(f"{fmt(c.point)} [{fmt(c.lo)},{fmt(c.hi)}]".rjust(26))
            lines.append(met.ljust(26) + "".join(cells))
        counts = {r["model"]: (r["n_traces"], r["n_questions"]) for r in self.rows}
        lines.append(
            "traces / questions".ljust(26) + "".join(f"{counts[m][0]} / {counts[m][1]}".rjust(26) for m in self.models)
        )
        return "\n".join(lines)

    def to_json(self) -> str:
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in self.rows]
        return json.dumps(clean, indent=1)


def score_traces(
    source: str | Path | Iterable[Trace | dict],
    config: ScoreConfig | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    by: str = "model",
) -> MetricsTable:
    """Every metric per group (``by``: a trace field, default the model) with a question-clustered bootstrap CI.

    The calibration error uses the evidence prevalence pooled over all groups (official default ``global``). The unit
    is the official code's step by default; with ``both_units`` the unit-dependent metrics are given in the paper's
    turn unit as well, named ``<metric>@turn``."""
    cfg = config or ScoreConfig()
    unknown = [m for m in metrics if m not in ALL_METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; expected names from {sorted(ALL_METRICS)}")
    traces = list(as_traces(source))
    if not traces:
        raise ValueError("no traces to score (empty file or list)")
    groups: dict[str, list[Trace]] = {}
    for t in traces:
        groups.setdefault(str(getattr(t, by)), []).append(t)
    units = [(cfg.unit, "")]
    if cfg.both_units:
        other = "turn" if cfg.unit == "step" else "step"
        units.append((other, f"@{other}"))
    rows = []
    for unit, suffix in units:
        kw = {**cfg.stats_kw(), "unit": unit}
        pooled, _ = cluster_table(traces, **kw)
        w_ref = global_prevalence(pooled)
        mets = list(metrics) if not suffix else [m for m in metrics if m in UNIT_METRICS]
        for name, ts in groups.items():
            table, clusters = cluster_table(ts, **kw)
            for met in mets:
                stat = metric_statistic(met, cfg.threshold, ce_weights=w_ref)
                ci = bootstrap_ci(stat, table, n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)
                rows.append(
                    {"model": name, "metric": met + suffix, "point": ci.point, "lo": ci.lo, "hi": ci.hi}
                    | {"n_traces": len(ts), "n_questions": len(clusters)}
                )
    return MetricsTable(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``score TRACES.jsonl [--json] [--threshold 2] [--unit turn|step] [--n-boot 2000] [--by model]``."""
    p = argparse.ArgumentParser(prog="iclr26 seekbench", description="SeekBench process metrics of annotated traces")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score a JSONL file of annotated traces (format: docs/papers/seekbench.md)")
    s.add_argument("traces", help="JSONL file, one trace per line")
    s.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    s.add_argument("--threshold", type=int, default=2, choices=(1, 2))
    s.add_argument(
        "--unit", default=DEFAULT_UNIT, choices=("step", "turn"), help="official step (default) or paper turn"
    )
    s.add_argument("--one-unit", action="store_true", help="omit the '<metric>@<other unit>' rows")
    s.add_argument("--n-boot", type=int, default=2000)
    s.add_argument("--by", default="model", choices=("model", "dataset"))
    s.add_argument("--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names")
    args = p.parse_args(argv)
    try:
        cfg = ScoreConfig(threshold=args.threshold, unit=args.unit, n_boot=args.n_boot, both_units=not args.one_unit)
        table = score_traces(args.traces, cfg, metrics=[m for m in args.metrics.split(",") if m], by=args.by)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table.to_json() if args.json else table.to_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
