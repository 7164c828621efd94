"""`iclr26 reproduce`: every paper (or the ones named) one after another, with one overall progress bar whose ETA
comes from the cards' expected times, the report, and a final table of verdict counts."""

from __future__ import annotations

import sys
import time

from .core.registry import get_paper, reproducible


def expected_seconds(slug: str, scale: str) -> float:
    mod = get_paper(slug).module()
    return float(getattr(mod, "EXPECTED_SECONDS", {}).get(scale, 60.0))


def cmd_reproduce(args) -> int:
    from tqdm.auto import tqdm

    from .core.folders import paper_claims, summarise, verdict_counts
    from .core.report import build_report
    from .core.runs import run_paper

    slugs = [get_paper(s).slug for s in args.slugs] or [c.slug for c in reproducible()]  # unknown slugs fail first
    budget = {s: expected_seconds(s, args.scale) for s in slugs}
    rows, failed = [], []
    bar = tqdm(total=round(sum(budget.values())), unit="s", desc=f"{len(slugs)} papers ({args.scale})",
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} expected s [{elapsed}<{remaining}]",
               file=sys.stderr)  # fmt: skip
    try:
        for slug in slugs:
            bar.set_postfix_str(slug)
            t0 = time.time()
            try:
                res = run_paper(slug, scale=args.scale, seeds=args.seeds, out=args.runs, force=args.force,
                                jobs=args.jobs, cluster=args.cluster)  # fmt: skip
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # one broken paper must not stop the others; its traceback is printed
                import traceback

                failed.append(slug)
                traceback.print_exc()
                print(f"{slug}: FAILED: {exc!r}", file=sys.stderr)
                rows.append((slug, "FAILED", {}, time.time() - t0))
            else:
                from .cli_print import _print_result

                tqdm.write("", file=sys.stderr)
                _print_result(res)
                own = paper_claims(res.verdicts)
                rows.append((slug, summarise([c["verdict"] for c in own]), verdict_counts(res.verdicts),
                             res.seconds))  # fmt: skip
            bar.update(round(budget[slug]))
    finally:
        bar.close()
        if args.cluster:
            from .core.cluster import shutdown

            shutdown()
    path = build_report(args.runs, args.report)
    _summary(rows)
    print(f"report: {path}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _summary(rows) -> None:
    keys = ("reproduced", "not reproduced", "inconclusive", "not testable", "not run")
    head = " ".join(f"{k:>14s}" for k in keys)
    print(f"\n{'paper':22s} {'status':16s} {head} {'gates held':>11s} {'time':>9s}")
    total = dict.fromkeys(keys, 0)
    for slug, status, counts, seconds in rows:
        cells = " ".join(f"{counts.get(k, 0):>14d}" if counts else f"{'–':>14s}" for k in keys)
        gates = f"{counts.get('gates held', 0)}/{counts.get('gates', 0)}" if counts else "–"
        print(f"{slug:22s} {status:16s} {cells} {gates:>11s} {seconds / 60:>7.1f} m")
        for k in keys:
            total[k] += counts.get(k, 0) if counts else 0
    print(f"{'all':22s} {'':16s} " + " ".join(f"{total[k]:>14d}" for k in keys))
