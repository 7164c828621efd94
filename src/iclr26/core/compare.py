"""`iclr26 compare RUN_A RUN_B`: which metrics and verdicts moved between two run folders (e.g. before and after a
fix, or two commits, or two `--set` values)."""

from __future__ import annotations

import math
from pathlib import Path

from .errors import UserError
from .jsonio import read_json


def _load(run: str | Path) -> tuple[dict, dict]:
    run = Path(run)
    if not (run / "metrics.json").exists() or not (run / "verdicts.json").exists():
        raise UserError(f"{run} is not a complete run folder (it needs metrics.json and verdicts.json)")
    return read_json(run / "metrics.json"), read_json(run / "verdicts.json")


def compare_runs(run_a: str | Path, run_b: str | Path) -> dict:
    """Metrics whose mean moved (with the shift in units of the pooled std), metrics only in one run, verdicts
    that changed, and each run's seeds and commit."""
    (ma, va), (mb, vb) = _load(run_a), _load(run_b)
    agg_a, agg_b = ma["aggregate"], mb["aggregate"]
    moved = []
    for name in sorted(set(agg_a) & set(agg_b)):
        a, b = agg_a[name], agg_b[name]
        if a["mean"] == b["mean"] or (math.isnan(a["mean"]) and math.isnan(b["mean"])):
            continue
        pooled = math.sqrt((a["std"] ** 2 + b["std"] ** 2) / 2)
        shift = (b["mean"] - a["mean"]) / pooled if pooled > 0 else math.inf
        moved.append({"metric": name, "a": a["mean"], "b": b["mean"], "delta": b["mean"] - a["mean"],
                      "shift_in_std": shift})  # fmt: skip
    moved.sort(key=lambda r: -abs(r["shift_in_std"]) if not math.isnan(r["shift_in_std"]) else 0)
    claims_a = {c["id"]: c["verdict"] for c in va["claims"]}
    claims_b = {c["id"]: c["verdict"] for c in vb["claims"]}
    verdicts = [
        {"claim": cid, "a": claims_a.get(cid), "b": claims_b.get(cid)}
        for cid in sorted(set(claims_a) | set(claims_b))
        if claims_a.get(cid) != claims_b.get(cid)
    ]
    return {
        "a": {"run": str(run_a), "seeds": va.get("seeds"), "commit": va.get("commit"), "code": va.get("code")},
        "b": {"run": str(run_b), "seeds": vb.get("seeds"), "commit": vb.get("commit"), "code": vb.get("code")},
        "verdicts_changed": verdicts,
        "metrics_moved": moved,
        "only_in_a": sorted(set(agg_a) - set(agg_b)),
        "only_in_b": sorted(set(agg_b) - set(agg_a)),
    }


def format_comparison(diff: dict) -> str:
    a, b = diff["a"], diff["b"]
    lines = [f"A: {a['run']} (seeds {a['seeds']}, commit {a['commit']})",
             f"B: {b['run']} (seeds {b['seeds']}, commit {b['commit']})", ""]  # fmt: skip
    if diff["verdicts_changed"]:
        lines.append("verdicts that changed:")
        lines += [f"  [{v['claim']}] {v['a']} → {v['b']}" for v in diff["verdicts_changed"]]
    else:
        lines.append("no verdict changed")
    lines.append("")
    if diff["metrics_moved"]:
        lines.append(f"{'metric':40s} {'A':>12s} {'B':>12s} {'B − A':>12s} {'in std':>8s}")
        for m in diff["metrics_moved"]:
            lines.append(f"{m['metric'][:40]:40s} {m['a']:12.4g} {m['b']:12.4g} {m['delta']:12.4g} "
                         f"{m['shift_in_std']:8.2f}")  # fmt: skip
    else:
        lines.append("no metric moved")
    for side in ("a", "b"):
        if diff[f"only_in_{side}"]:
            lines.append(f"only in {side.upper()}: {', '.join(diff[f'only_in_{side}'])}")
    return "\n".join(lines)
