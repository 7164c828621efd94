"""Queries over run folders: which are complete, which speaks for a paper, whether code changed since, its status."""

from __future__ import annotations

from pathlib import Path

from .errors import UserError
from .jsonio import read_json
from .registry import PaperCard, get_paper

SCALES = ("smoke", "quick", "full")


def code_of(card: PaperCard) -> str:
    """The fingerprint of the code this paper's reproduction runs (see core.provenance)."""
    from .provenance import code_fingerprint

    return code_fingerprint(card.module_name, card.module_name + ".experiment")


def completed_runs(out: str | Path = "runs") -> list[Path]:
    """Every complete run folder under `out`."""
    root = Path(out)
    if not root.exists():
        return []
    return sorted(p.parent for p in root.glob("*/*/verdicts.json"))


def scale_of(run: Path) -> str:
    return run.name.split("-", 1)[0]


def latest_run(slug: str, out: str | Path = "runs", include_smoke: bool = True) -> Path | None:
    """The run folder that speaks for `slug`: the largest scale, then the newest."""
    runs = [p for p in completed_runs(out) if p.parent.name == slug and (include_smoke or scale_of(p) != "smoke")]
    if not runs:
        return None

    def key(p: Path):
        scale = scale_of(p)
        return (SCALES.index(scale) if scale in SCALES else -1, (p / "verdicts.json").stat().st_mtime)

    return max(runs, key=key)


def is_stale(run: Path, card: PaperCard | None = None) -> bool:
    """Whether a complete run folder was made by other code than the current checkout's (or cannot be told)."""
    card = card or get_paper(run.parent.name)
    try:
        return read_json(run / "verdicts.json").get("code") != code_of(card)
    except UserError:
        return True


def status_of(slug: str, out: str | Path = "runs") -> str:
    """not yet / method / reproduced / partial / not reproduced / inconclusive (+ the scale), from the latest run.

    A smoke run is a plumbing check, not evidence: a paper with only smoke runs is "method (smoke run only)".
    """
    card = get_paper(slug)
    if not card.has_reproduction:
        return "not yet"
    run = latest_run(card.slug, out)
    if run is None:
        return "method"
    if scale_of(run) == "smoke":
        return "method (smoke run only)"
    try:
        verdicts = [c["verdict"] for c in paper_claims(read_json(run / "verdicts.json")["claims"])]
    except (UserError, KeyError):
        return f"unreadable ({scale_of(run)})"
    stale = ", stale" if is_stale(run, card) else ""
    return f"{summarise(verdicts)} ({scale_of(run)}{stale})"


def paper_claims(claims: list[dict]) -> list[dict]:
    """The paper's own claims of a verdicts list (gates left out; a record from before gates counts every claim)."""
    return [c for c in claims if c.get("role", "claim") == "claim"]


def verdict_counts(claims: list[dict]) -> dict[str, int]:
    """{verdict: n} over the paper's claims, and gates held / gates evaluated (a gate not run is not counted)."""
    from .claims import VERDICTS

    own = paper_claims(claims)
    out = {v: sum(c["verdict"] == v for c in own) for v in VERDICTS}
    gates = [c for c in claims if c.get("role", "claim") != "claim" and c["verdict"] != "not run"]
    out["gates held"] = sum(c["verdict"] == "reproduced" for c in gates)
    out["gates"] = len(gates)
    return out


def summarise(verdicts: list[str]) -> str:
    """One word for a paper from its claims' verdicts (pass the paper's claims, not its gates)."""
    verdicts = [v for v in verdicts if v != "not run"]
    if verdicts and all(v == "reproduced" for v in verdicts):
        return "reproduced"
    if any(v == "reproduced" for v in verdicts):
        return "partial"
    if any(v == "not reproduced" for v in verdicts):
        return "not reproduced"
    if verdicts and all(v == "not testable" for v in verdicts):
        return "not testable"
    return "inconclusive"
