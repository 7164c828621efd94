"""The command line's recorded results: `iclr26 record`, `iclr26 docs`, and what `list` and `show` print of
`results/<slug>.json` (see `iclr26.core.results` and `iclr26.core.docs`)."""

from __future__ import annotations

import sys

from .core.errors import UserError


def recorded_summary(slug: str, folder=None) -> dict:
    """{"counts", "status", "outdated", "scale", "version"} of a paper's record, or {} when it has none."""
    from .core.results import load_record, outdated

    rec = load_record(slug, folder)
    if rec is None:
        return {}
    return {"counts": rec["counts"], "status": rec["status"], "outdated": outdated(rec), "scale": rec["scale"],
            "version": rec["version"], "seeds": rec["seeds"], "seconds": rec["seconds"]}  # fmt: skip


def recorded_cell(summary: dict) -> str:
    """A short cell for `iclr26 list`: 2 rep · 1 not · 3 inc · 1 n/t [outdated]."""
    if not summary:
        return "not recorded"
    c = summary["counts"]
    parts = [f"{c.get(k, 0)} {short}" for k, short in
             (("reproduced", "rep"), ("not reproduced", "not"), ("inconclusive", "inc"), ("not testable", "n/t"))
             if c.get(k)]  # fmt: skip
    return " · ".join(parts or ["no claims"]) + (" [outdated]" if summary["outdated"] else "")


def print_recorded(slug: str, folder=None) -> None:
    from .core.docs import counts_text, minutes
    from .core.results import load_record, outdated

    rec = load_record(slug, folder)
    if rec is None:
        print("\nRecorded result: none yet (results/<slug>.json is written by `iclr26 record RUN_DIR`).")
        return
    why = outdated(rec)
    print(f"\nRecorded result ({rec['scale']}, VERSION {rec['version']}, seeds {rec['seeds']}, commit {rec['commit']}, "
          f"{minutes(rec['seconds'])} on {rec['machine']}){': ' + why.upper() if why else ''}:")  # fmt: skip
    print(f"  {counts_text(rec['counts'])}")
    for c in rec["claims"]:
        kind = "" if c.get("role", "claim") == "claim" else f"(gate: {c['role']}) "
        print(f"  [{c['id']}] {c['verdict']:15s} {kind}{c['statement']}")
        if c.get("note") and c["verdict"] == "not testable":
            print(f"      {c['note']}")


def cmd_record(args) -> int:
    from .core.results import record

    path = record(args.run_dir, args.results)
    print(f"recorded: {path}")
    return 0


def cmd_docs(args) -> int:
    from .core import docs

    if args.write:
        changed = docs.write(args.results, only=args.paper)
        print("\n".join(f"wrote {p}" for p in changed) or "docs already up to date")
        return 0
    stale = docs.drift(args.results, only=args.paper)
    if stale:
        print("out of date (run `iclr26 docs --write`): " + ", ".join(str(p) for p in stale), file=sys.stderr)
        return 1
    print("docs match the recorded results")
    return 0


def add_commands(sub) -> None:
    s = sub.add_parser("record", help="write results/<slug>.json from a finished quick (or full) run folder")
    s.add_argument("run_dir", help="a finished run folder, e.g. runs/dike/quick-1a2b3c4d")
    s.add_argument("--results", default=None, help="folder of the records (default: results/ of this checkout)")
    s.set_defaults(func=cmd_record)
    s = sub.add_parser("docs", help="write (or check) the generated tables of the docs pages and the README")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="rewrite the generated blocks from results/")
    g.add_argument("--check", action="store_true", help="exit 1 if a generated block differs from results/")
    s.add_argument("--results", default=None, help="folder of the records (default: results/ of this checkout)")
    s.add_argument("--paper", default=None, metavar="SLUG", help="only this paper's page (not the README)")
    s.set_defaults(func=cmd_docs)


def record_after_run(res, folder=None) -> None:
    """`iclr26 run ... --record`: record the finished run (a smoke run is refused with a clear error)."""
    from .core.results import record

    if res.card is None:  # pragma: no cover
        raise UserError("nothing to record")
    print(f"recorded: {record(res.run_dir, folder)}")
