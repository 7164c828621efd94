"""The `iclr26` command line: list, show, run, reproduce, report, compare. Thin: it looks things up in the registry.

Names mean the same in every command: ``--runs DIR`` is the root of the run folders (default ``runs``), ``--report
DIR`` the report folder (default ``reports``). Look-ups (list, show, compare) import no ML library, so they are fast.
Errors the user can fix print one line; anything else shows its traceback (``--debug`` shows it for both).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap

from .cli_print import _print_claim, _print_result
from .core.errors import UserError
from .core.folders import SCALES, latest_run, scale_of, status_of
from .core.jsonio import read_json
from .core.registry import PAPERS, get_paper, reproducible
from .core.runs import run_paper


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds takes non-negative integers separated by commas, e.g. 0,1,2; got {text!r}"
        ) from None
    if not seeds:
        raise argparse.ArgumentTypeError("--seeds needs at least one seed, e.g. 0,1,2")
    return seeds


_CLUSTER_HELP = "compute every seed as a Ray task: 'local' starts Ray here, else a Ray address (extra: iclr26[cluster])"
_JOBS_HELP = "seeds computed at once, each in its own process (default: $ICLR26_JOBS, else as many as the cores allow)"


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a positive integer (seeds at once), got {text!r}")
    return n


def _dump(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str, allow_nan=True))


def cmd_list(args) -> int:
    from .cli_records import recorded_cell, recorded_summary

    rows = [
        {
            "slug": s,
            "status": status_of(s, args.runs),
            "recorded": recorded_summary(s, args.results),
            "field": c.field,
            "title": c.title,
        }  # fmt: skip
        for s, c in PAPERS.items()
    ]
    if args.json:
        _dump(rows)
        return 0
    print(f"{'slug':22s} {'recorded verdicts (results/)':36s} {'latest run here':28s} {'field':10s} title")
    for r in rows:
        print(f"{r['slug']:22s} {recorded_cell(r['recorded']):36s} {r['status']:28s} {r['field']:10s} "
              f"{r['title'][:40]}")  # fmt: skip
    print(f"\n{len(PAPERS)} papers; {len(reproducible())} with a reproduction. Recorded verdicts count the paper's "
          "claims (rep reproduced, not not reproduced, inc inconclusive, n/t not testable: a gate did not hold); "
          "smoke runs are plumbing checks only.")  # fmt: skip
    return 0


def _config_table(mod) -> dict:
    out = {}
    for scale in SCALES:
        cfg = mod.CONFIGS[scale]
        out[scale] = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(vars(cfg))
    return out


def _expected(mod, card, runs) -> dict:
    exp = dict(getattr(mod, "EXPECTED_SECONDS", {}))
    for scale in SCALES:
        run = next((r for r in _runs_of(card.slug, runs) if scale_of(r) == scale), None)
        if run is not None:
            exp[f"last {scale} run"] = read_json(run / "verdicts.json").get("seconds")
    return exp


def _runs_of(slug, runs):
    from .core.folders import completed_runs

    return [p for p in completed_runs(runs) if p.parent.name == slug]


def cmd_show(args) -> int:
    card = get_paper(args.slug)
    mod = card.module()
    data = {"slug": card.slug, "title": card.title, "url": card.url, "method": card.method, "field": card.field,
            "package": f"iclr26.{card.package}", "status": status_of(card.slug, args.runs)}  # fmt: skip
    if mod is not None:
        data["claims"] = [
            {
                "id": c.id,
                "statement": c.statement,
                "paper": c.paper,
                "checks": [k.describe() for k in c.checks],
                "role": c.role,
                "requires": list(c.requires),
                "ungated": c.ungated,
            }  # fmt: skip
            for c in mod.CLAIMS
        ]
        data["accepts_model"] = bool(getattr(mod, "ACCEPTS_MODEL", False))
        data["model_note"] = getattr(mod, "MODEL_NOTE", "")
        data["version"] = getattr(mod, "VERSION", 1)
        if args.config:
            data["config"] = _config_table(mod)
            data["expected_seconds"] = _expected(mod, card, args.runs)
    from .cli_records import print_recorded, recorded_summary

    if mod is not None:
        data["recorded"] = recorded_summary(card.slug, args.results)
    run = latest_run(card.slug, args.runs)
    if run is not None:
        from .core.folders import is_stale

        data["last_run"] = {"run_dir": str(run), "stale": is_stale(run, card), **read_json(run / "verdicts.json")}
    if args.json:
        _dump(data)
        return 0
    print(f"{card.slug}: {card.title}\n  {card.url}\n  method: {card.method}\n  field: {card.field}"
          f" (iclr26.{card.package})  seed file: {card.seed_file}\n  status: {data['status']}")  # fmt: skip
    if mod is None:
        print("\n  No reproduction yet.")
        return 0
    if mod.__doc__:
        print("\n" + textwrap.indent(textwrap.dedent(mod.__doc__).strip(), "  "))
    if args.config:
        _print_config(data)
    if getattr(mod, "ACCEPTS_MODEL", False):
        print("\n--model: accepted (a local HF folder or a zoo name replaces the real model of its real-model half)")
    else:
        print(f"\n--model: not accepted: {getattr(mod, 'MODEL_NOTE', 'its reproduction runs on no language model')}")
    print("\nClaims:")
    for c in mod.CLAIMS:
        kind = "" if c.role == "claim" else f"(gate: {c.role}) "
        print(f"  [{c.id}] {kind}{c.statement}")
        if c.requires:
            print(f"      gates: {', '.join(c.requires)}")
        if c.ungated:
            print(f"      no gate: {c.ungated}")
        if c.paper:
            print(f"      paper (its setting): {c.paper}")
        for chk in c.checks:
            print(f"      check: {chk.describe()}")
    print_recorded(card.slug, args.results)
    if run is not None:
        last = data["last_run"]
        stale = "  STALE: measured by other code than this checkout's; rerun with --force" if last["stale"] else ""
        print(f"\nLast measured ({run}, {scale_of(run)}, seeds {last['seeds']}, commit {last.get('commit')}){stale}:")
        if scale_of(run) == "smoke":
            print("  (a smoke run is a plumbing check: its verdicts are not evidence)")
        for c in last["claims"]:
            _print_claim(c)
    return 0


def _print_config(data) -> None:
    cfg = data["config"]
    print("\nConfiguration (override a field with run --set NAME=VALUE):")
    names = list(cfg["quick"])
    print(f"  {'field':26s} " + " ".join(f"{s:>18s}" for s in SCALES))
    for name in names:
        print(f"  {name:26s} " + " ".join(f"{_short(cfg[s].get(name)):>18s}" for s in SCALES))
    exp = data["expected_seconds"]
    times = ", ".join(f"{k} {_secs(v)}" for k, v in exp.items()) if exp else "not recorded"
    print(f"  expected time (2-core CPU, cached models): {times}")


def _short(v) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else v
    return text if len(text) <= 18 else text[:15] + "..."


def _secs(v) -> str:
    if not isinstance(v, (int, float)):
        return "?"
    return f"{v:.0f} s" if v < 120 else f"{v / 60:.1f} min"


def cmd_run(args) -> int:
    from .core.config import parse_assignments

    try:
        res = run_paper(args.slug, scale=args.scale, seeds=args.seeds, model=args.model, out=args.runs,
                        force=args.force, quiet=args.json, overrides=parse_assignments(args.set),
                        jobs=args.jobs, cluster=args.cluster)  # fmt: skip
    finally:
        if args.cluster:
            from .core.cluster import shutdown

            shutdown()
    if args.json:
        _dump(res.to_dict())
    else:
        _print_result(res)
    if args.record:
        from .cli_records import record_after_run

        record_after_run(res, args.results)
    return 0


def cmd_reproduce(args) -> int:
    from .cli_suite import cmd_reproduce as run_suite

    return run_suite(args)


def cmd_report(args) -> int:
    from .core.report import build_report

    path = build_report(args.runs, args.report, include_smoke=args.include_smoke, recorded=args.recorded,
                        results=args.results)  # fmt: skip
    print(f"report: {path} and {path.with_suffix('.md')}")
    return 0


def cmd_compare(args) -> int:
    from .core.compare import compare_runs, format_comparison

    diff = compare_runs(args.run_a, args.run_b)
    if args.json:
        _dump(diff)
    else:
        print(format_comparison(diff))
    return 0


def cmd_seekbench(args) -> int:
    from .agents.seekbench import main as seekbench_main

    return seekbench_main(args.rest)


class _Out(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        parser.error("--out is gone: use --runs DIR for the run folders and --report DIR for the report folder")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="iclr26", description="ICLR 2026 methods and their small-scale reproductions.")
    p.add_argument("--debug", action="store_true", help="show the traceback of every error")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(s, report=False):
        s.add_argument("--runs", default="runs", help="root of the run folders (default: runs)")
        s.add_argument("--results", default=None, help="folder of the recorded results (default: results/)")
        if report:
            s.add_argument("--report", default="reports", help="report folder (default: reports)")
        s.add_argument("--out", action=_Out, help=argparse.SUPPRESS)

    s = sub.add_parser("list", help="every seed paper with its status and the scale it comes from")
    common(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_list)
    s = sub.add_parser("show", help="a paper's card, claims and last verdicts")
    s.add_argument("slug")
    common(s)
    s.add_argument("--config", action="store_true", help="also the scales, seeds, hyper-parameters, expected time")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("run", help="run one paper's reproduction")
    s.add_argument("slug")
    s.add_argument("--scale", choices=SCALES, default="quick", help="smoke (seconds, plumbing), quick (default), full")
    s.add_argument("--seeds", type=_seeds, default=None, help="distinct seeds, comma-separated (default: the scale's)")
    s.add_argument("--model", default=None, help="HF model name (in the local cache) or local path, for LM papers")
    s.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a config field (repeatable)")
    s.add_argument("--force", action="store_true", help="rerun even if a complete run folder exists")
    s.add_argument("--json", action="store_true", help="print the result as JSON (progress still goes to stderr)")
    s.add_argument("--jobs", type=_jobs, default=None, help=_JOBS_HELP)
    s.add_argument("--record", action="store_true", help="then write results/<slug>.json (refused for smoke runs)")
    s.add_argument("--cluster", default=None, metavar="ADDRESS", help=_CLUSTER_HELP)
    common(s)
    s.set_defaults(func=cmd_run)
    s = sub.add_parser("reproduce", help="run every paper that has a reproduction, then the report")
    s.add_argument("slugs", nargs="*", help="only these papers (default: all with a reproduction)")
    s.add_argument("--scale", choices=SCALES, default="quick")
    s.add_argument("--seeds", type=_seeds, default=None)
    s.add_argument("--force", action="store_true")
    s.add_argument("--jobs", type=_jobs, default=None, help=_JOBS_HELP)
    s.add_argument("--cluster", default=None, metavar="ADDRESS", help=_CLUSTER_HELP)
    common(s, report=True)
    s.set_defaults(func=cmd_reproduce)
    s = sub.add_parser("report", help="collect the run folders into REPORT/index.md and index.html")
    common(s, report=True)
    s.add_argument("--include-smoke", action="store_true", help="also show smoke runs (greyed: plumbing checks)")
    s.add_argument("--recorded", action="store_true", help="build it from results/ alone (plots where a run is here)")
    s.set_defaults(func=cmd_report)
    s = sub.add_parser("compare", help="which metrics and verdicts moved between two run folders")
    s.add_argument("run_a")
    s.add_argument("run_b")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_compare)
    from .cli_records import add_commands

    add_commands(sub)
    s = sub.add_parser("seekbench", help="SeekBench tools: `iclr26 seekbench score TRACES.jsonl` scores your traces")
    s.add_argument("rest", nargs=argparse.REMAINDER)
    s.set_defaults(func=cmd_seekbench)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        if args.debug:
            raise
        print(f"iclr26: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\niclr26: interrupted; rerun the same command to resume (finished seeds are kept)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
