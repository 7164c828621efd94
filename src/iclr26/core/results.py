"""Recorded results: the reference quick run of each card, committed as ``results/<slug>.json``.

A record is written from a finished run folder (``iclr26 record RUN_DIR`` or ``iclr26 run ... --record``) and holds
what a reader needs without the run folder: the card's VERSION, the code fingerprint and commit it was measured with,
scale, seeds, threads, a one-line machine description (CPU model and cores; no paths, no host names), wall time and
peak memory, every claim's verdict with its check lines and gates (recomputed from the stored metrics with the card's
current claims), and the metrics the claims compare (mean ± std over seeds). A smoke run, an incomplete folder and a
folder measured by other code than the checkout's are refused.

A record is *outdated* when the card's VERSION or the code fingerprint of the paper's modules changed since it was
recorded: ``iclr26 list`` and ``show`` say so. The schema is :data:`SCHEMA` (JSON Schema, draft 2020-12), written to
``results/schema.json`` by ``iclr26 docs --write`` and checked by the tests.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

from .errors import UserError
from .folders import code_of, paper_claims, scale_of, summarise, verdict_counts
from .jsonio import atomic_write_json, read_json
from .registry import PAPERS, PaperCard, get_paper

SCHEMA_VERSION = 1
_ROOT = Path(__file__).resolve().parents[3]  # the checkout: src/iclr26/core -> the repository root

_STAT = {"type": "object", "required": ["mean", "std", "n"],
         "properties": {"mean": {"type": ["number", "null"]}, "std": {"type": ["number", "null"]},
                        "n": {"type": "integer"}, "failed": {"type": "integer"}}}  # fmt: skip
_CHECK = {"type": "object", "required": ["check", "verdict", "line"],
          "properties": {"check": {"type": "string"}, "verdict": {"type": "string"}, "line": {"type": "string"},
                         "mean_gap": {"type": ["number", "null"]}, "lower": {"type": ["number", "null"]},
                         "upper": {"type": ["number", "null"]}, "n": {"type": "integer"},
                         "n_total": {"type": "integer"}}}  # fmt: skip
_VERDICT = {"enum": ["reproduced", "not reproduced", "inconclusive", "not testable", "not run"]}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "iclr26/results/schema.json",
    "title": "iclr26 recorded result of one paper's reproduction",
    "type": "object",
    "required": [
        "schema",
        "slug",
        "title",
        "field",
        "version",
        "code",
        "commit",
        "scale",
        "seeds",
        "threads",
        "jobs",
        "machine",
        "seconds",
        "peak_rss_mb",
        "recorded",
        "rule",
        "status",
        "headline",
        "real_model",
        "counts",
        "claims",
        "metrics",
    ],  # fmt: skip
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "slug": {"type": "string"},
        "title": {"type": "string"},
        "field": {"type": "string"},
        "version": {"type": "integer", "description": "the card's VERSION when it was measured"},
        "code": {"type": "string", "description": "fingerprint of the paper's modules (core.provenance)"},
        "commit": {"type": ["string", "null"], "description": "git commit of the run ('+dirty': uncommitted changes)"},
        "scale": {"enum": ["quick", "full"]},
        "seeds": {"type": "array", "items": {"type": "integer"}},
        "threads": {"type": ["integer", "null"], "description": "ICLR26_THREADS of every seed"},
        "jobs": {"type": ["integer", "null"], "description": "seeds computed at once"},
        "machine": {"type": "string", "description": "CPU model and core count"},
        "model": {"type": ["string", "null"], "description": "--model, if one was given"},
        "seconds": {"type": ["number", "null"], "description": "wall time of the run"},
        "cpu_seconds": {"type": ["number", "null"], "description": "CPU time of every seed and of the driver"},
        "peak_rss_mb": {"type": ["number", "null"]},
        "resumed_seeds": {"type": "array", "items": {"type": "integer"},
                          "description": "seeds measured by an earlier, interrupted invocation: not in the wall time"},
        "recorded": {"type": "string", "description": "date the record was written (YYYY-MM-DD)"},
        "rule": {"type": "string", "description": "the verdict rule"},
        "status": {"type": "string", "description": "one word for the paper's claims"},
        "headline": {"type": "string", "description": "id of the card's headline claim"},
        "real_model": {"type": "boolean", "description": "a claim was measured on a real pretrained model"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "statement", "role", "requires", "verdict", "measured", "checks"],
                "properties": {
                    "id": {"type": "string"},
                    "statement": {"type": "string"},
                    "role": {"type": "string"},
                    "requires": {"type": "array", "items": {"type": "string"}},
                    "verdict": _VERDICT,
                    "measured": {"type": "string"},
                    "note": {"type": "string"},
                    "paper": {"type": "string"},
                    "checks": {"type": "array", "items": _CHECK},
                    "gates": {"type": "array", "items": {"type": "object"}},
                },
            },
        },  # fmt: skip
        "metrics": {"type": "object", "additionalProperties": _STAT},
        "protocols": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def results_dir() -> Path:
    """Where records live: ``$ICLR26_RESULTS``, else ``results/`` at the root of this checkout."""
    return Path(os.environ.get("ICLR26_RESULTS") or _ROOT / "results")


def record_path(slug: str, folder: str | Path | None = None) -> Path:
    return Path(folder or results_dir()) / f"{get_paper(slug).slug}.json"


def headline(mod) -> str:
    """The card's headline claim: ``HEADLINE`` if it names one, else its first paper claim."""
    own = [c.id for c in mod.CLAIMS if c.role == "claim"]
    return getattr(mod, "HEADLINE", None) or (own[0] if own else mod.CLAIMS[0].id)


def _real_model(claims: list[dict], metrics: dict) -> bool:
    """Whether any claim that ran compares a real pretrained model's metrics (named ``*smollm2*`` / ``*real*``)."""
    for c in claims:
        if c["verdict"] == "not run":
            continue
        for k in c["checks"]:
            names = k["check"].split()[:3:2]
            if any(("smollm2" in n or "_real" in n or n.startswith("real_")) and n in metrics for n in names):
                return True
    return False


def _clean(x):
    """NaN/inf as null: the JSON of a record is strict (other tools read it)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def build_record(run: str | Path) -> dict:
    """The record of a finished, current, non-smoke run folder (a clear error otherwise)."""
    from .claims import CheckResult
    from .gates import evaluate

    run = Path(run)
    if not (run / "verdicts.json").exists():
        raise UserError(f"{run} is not a finished run folder (no verdicts.json): finish the run first")
    if scale_of(run) == "smoke":
        raise UserError(f"{run} is a smoke run, a plumbing check: record a quick (or full) run")
    card = get_paper(run.parent.name)
    mod = card.module()
    done, cfg_file = read_json(run / "verdicts.json"), read_json(run / "config.json")
    code = code_of(card)
    if done.get("code") != code:
        raise UserError(
            f"{run} was measured by other code (fingerprint {done.get('code')}, the checkout's is {code}): "
            f"rerun it (iclr26 run {card.slug} --force) before recording"
        )
    metrics = read_json(run / "metrics.json")
    seeds = [int(s) for s in done["seeds"]]
    per_seed = [metrics["per_seed"][str(s)] for s in seeds]
    cfg = mod.CONFIGS.get(scale_of(run))
    if cfg_file.get("overrides"):
        from .config import apply_overrides

        cfg = apply_overrides(cfg, cfg_file["overrides"])
    verdicts = [v.to_dict() for v in evaluate(mod.CLAIMS, per_seed, cfg)]
    fields = set(CheckResult.__dataclass_fields__)
    for c in verdicts:
        for k in c["checks"]:
            k["line"] = CheckResult(**{f: v for f, v in k.items() if f in fields}).line()
    names = sorted({n for c in mod.CLAIMS for n in c.metrics()} | set(getattr(mod, "TABLE_METRICS", ())))
    agg = metrics["aggregate"]
    env = read_json(run / "env.json") if (run / "env.json").exists() else {}
    machine = f"{env.get('cpu') or 'unknown CPU'}, {env.get('cpu_count') or '?'} cores"
    return _clean({
        "schema": SCHEMA_VERSION, "slug": card.slug, "title": card.title, "field": card.field,
        "version": int(done.get("version", 1)), "code": code, "commit": done.get("commit"), "scale": scale_of(run),
        "seeds": seeds, "threads": env.get("iclr26_threads"), "jobs": done.get("jobs"), "machine": machine,
        "model": cfg_file.get("model"), "seconds": done.get("seconds"), "cpu_seconds": done.get("cpu_seconds"),
        "peak_rss_mb": done.get("peak_rss_mb"), "resumed_seeds": done.get("resumed_seeds", []),
        "recorded": time.strftime("%Y-%m-%d"), "rule": done.get("rule", ""),
        "status": summarise([c["verdict"] for c in paper_claims(verdicts)]), "headline": headline(mod),
        "real_model": _real_model(verdicts, agg), "counts": verdict_counts(verdicts), "claims": verdicts,
        "metrics": {n: agg[n] for n in names if n in agg},
        "protocols": {n: p for n, p in getattr(mod, "METRICS", {}).items() if n in names},
    })  # fmt: skip


def record(run: str | Path, folder: str | Path | None = None) -> Path:
    """Write ``results/<slug>.json`` from a finished run folder; returns its path."""
    rec = build_record(run)
    path = record_path(rec["slug"], folder)
    atomic_write_json(path, rec)
    return path


def load_record(slug: str, folder: str | Path | None = None) -> dict | None:
    path = record_path(slug, folder)
    return read_json(path) if path.exists() else None


def outdated(rec: dict, card: PaperCard | None = None) -> str:
    """Why a record no longer speaks for the checkout ('' when it does): the card's VERSION or its code changed."""
    card = card or get_paper(rec["slug"])
    mod = card.module()
    version = int(getattr(mod, "VERSION", 1))
    if rec.get("version") != version:
        return f"outdated: recorded at VERSION {rec.get('version')}, the card is at VERSION {version}"
    if rec.get("code") != code_of(card):
        return "outdated: the paper's code changed since it was recorded"
    return ""


def all_records(folder: str | Path | None = None) -> dict[str, dict]:
    """{slug: record} for every card that has one, in registry order."""
    out = {}
    for slug in PAPERS:
        rec = load_record(slug, folder)
        if rec is not None:
            out[slug] = rec
    return out
