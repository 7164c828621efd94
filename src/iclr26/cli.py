"""The `iclr26` command line: list, show, run, reproduce, report. Thin: it only looks things up in the registry."""

from __future__ import annotations

import argparse
import sys
import textwrap

from .core.registry import PAPERS, UnknownPaperError, get_paper, reproducible
from .core.runs import SCALES, latest_run, read_json, run_paper, status_of


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds takes integers separated by commas, e.g. 0,1,2; got {text!r}"
        ) from None
    if not seeds:
        raise argparse.ArgumentTypeError("--seeds needs at least one seed, e.g. 0,1,2")
    return seeds


def cmd_list(args) -> int:
    print(f"{'slug':22s} {'status':15s} {'field':10s} title")
    for slug, card in PAPERS.items():
        print(f"{slug:22s} {status_of(slug, args.runs):15s} {card.field:10s} {card.title[:70]}")
    print(f"\n{len(PAPERS)} papers; {len(reproducible())} with a reproduction.")
    return 0


def cmd_show(args) -> int:
    card = get_paper(args.slug)
    print(
        f"{card.slug}: {card.title}\n  {card.url}\n  method: {card.method}\n  field: {card.field}"
        f" (iclr26.{card.package})  seed file: {card.seed_file}\n  status: {status_of(card.slug, args.runs)}"
    )
    mod = card.module()
    if mod is None:
        print("\n  No reproduction yet.")
        return 0
    if mod.__doc__:
        print("\n" + textwrap.indent(textwrap.dedent(mod.__doc__).strip(), "  "))
    print("\nClaims:")
    for c in mod.CLAIMS:
        print(f"  [{c.id}] {c.statement}")
        if c.paper:
            print(f"      paper (its setting): {c.paper}")
        for chk in c.checks:
            print(f"      check: {chk.describe()}")
    run = latest_run(card.slug, args.runs)
    if run is not None:
        v = read_json(run / "verdicts.json")
        print(f"\nLast measured ({run}, seeds {v['seeds']}):")
        for c in v["claims"]:
            print(f"  [{c['id']}] {c['verdict']}")
            for k in c["checks"]:
                print(f"      {k['check']}: gap {k['mean_gap']:.4g} ± {k['se']:.3g} (n={k['n']}) → {k['verdict']}")
    return 0


def _print_result(res) -> None:
    tag = " (already complete; --force reruns)" if res.skipped else f" in {res.seconds:.1f} s"
    print(f"\n{res.card.slug}: {len(res.per_seed)} seed(s){tag}")
    for c in res.verdicts:
        print(f"  [{c['id']}] {c['verdict']:15s} {c['statement']}")
        for k in c["checks"]:
            print(f"      {k['check']}: gap {k['mean_gap']:.4g} ± {k['se']:.3g} (n={k['n']}) → {k['verdict']}")
    print(f"results: {res.run_dir}")


def cmd_run(args) -> int:
    res = run_paper(args.slug, scale=args.scale, seeds=args.seeds, model=args.model, out=args.out, force=args.force)
    _print_result(res)
    return 0


def cmd_reproduce(args) -> int:
    from .core.report import build_report

    slugs = args.slugs or [c.slug for c in reproducible()]
    failed = []
    for slug in slugs:
        try:
            _print_result(run_paper(slug, scale=args.scale, seeds=args.seeds, out=args.out, force=args.force))
        except Exception as exc:  # one broken paper must not stop the others
            failed.append(slug)
            print(f"{slug}: FAILED: {exc!r}", file=sys.stderr)
    path = build_report(args.out, args.report)
    print(f"report: {path}")
    return 1 if failed else 0


def cmd_report(args) -> int:
    from .core.report import build_report

    path = build_report(args.runs, args.out)
    print(f"report: {path} and {path.with_suffix('.md')}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="iclr26", description="ICLR 2026 methods and their small-scale reproductions.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("list", help="every seed paper with its status")
    s.add_argument("--runs", default="runs", help="run folders to read statuses from (default: runs)")
    s.set_defaults(func=cmd_list)
    s = sub.add_parser("show", help="a paper's card, claims and last verdicts")
    s.add_argument("slug")
    s.add_argument("--runs", default="runs")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("run", help="run one paper's reproduction")
    s.add_argument("slug")
    s.add_argument("--scale", choices=SCALES, default="quick", help="smoke (seconds), quick (default), full")
    s.add_argument("--seeds", type=_seeds, default=None, help="comma-separated seeds (default: the scale's)")
    s.add_argument("--model", default=None, help="HF model name or local path, for papers that run on an LM")
    s.add_argument("--out", default="runs", help="run folder root (default: runs)")
    s.add_argument("--force", action="store_true", help="rerun even if a complete run folder exists")
    s.set_defaults(func=cmd_run)
    s = sub.add_parser("reproduce", help="run every paper that has a reproduction, then the report")
    s.add_argument("slugs", nargs="*", help="only these papers (default: all with a reproduction)")
    s.add_argument("--scale", choices=SCALES, default="quick")
    s.add_argument("--seeds", type=_seeds, default=None)
    s.add_argument("--out", default="runs")
    s.add_argument("--report", default="reports")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_reproduce)
    s = sub.add_parser("report", help="collect every run folder into reports/index.md and index.html")
    s.add_argument("--runs", default="runs")
    s.add_argument("--out", default="reports")
    s.set_defaults(func=cmd_report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UnknownPaperError, LookupError, ValueError, FileNotFoundError) as exc:
        print(f"iclr26: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
