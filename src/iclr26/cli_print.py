"""What the command line prints of a run: each claim's verdict (gates marked), its check lines, the run's folder."""

from __future__ import annotations

import dataclasses

from .core.folders import scale_of


def _print_claim(c: dict) -> None:
    kind = "" if c.get("role", "claim") == "claim" else f"(gate: {c['role']}) "
    print(f"  [{c['id']}] {c['verdict']:15s} {kind}{c['statement']}")
    if c.get("note"):
        print(f"      {c['note']}")
    for k in c["checks"]:
        print(f"      {_check_line(k)}")


def _check_line(k: dict) -> str:
    from .core.claims import CheckResult

    fields = {f.name for f in dataclasses.fields(CheckResult)}
    return CheckResult(**{key: v for key, v in k.items() if key in fields}).line()


def _print_result(res) -> None:
    if res.skipped:
        tag = " (already complete; --force reruns)"
        if res.stale:
            tag += "\n  STALE: this folder was measured by other code than this checkout's; rerun with --force"
    else:
        tag = f" in {res.seconds:.1f} s"
    print(f"\n{res.card.slug}: {len(res.per_seed)} seed(s), {scale_of(res.run_dir)}{tag}")
    if scale_of(res.run_dir) == "smoke":
        print("  (smoke scale: a plumbing check; its verdicts are not evidence)")
    for c in res.verdicts:
        _print_claim(c)
    print(f"results: {res.run_dir}")
