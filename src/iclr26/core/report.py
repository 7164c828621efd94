"""`iclr26 report`: the run folders -> REPORT/index.md and a self-contained REPORT/index.html.

A summary table first (paper, scale, seeds, verdict counts, run time, peak memory, commit, stale flag), then one
section per paper: each claim with the paper's own numbers (a different setting, labelled so), our measured values in
the claim's units, the computed verdict, the metric table and the figures. Smoke runs are plumbing checks: left out
unless asked for, and greyed when shown. The report writes only under its own folder; run folders are only read,
and a corrupt one is skipped with a warning.
"""

from __future__ import annotations

import base64
import html
import math
import shutil
import sys
from pathlib import Path

from .claims import RULE
from .errors import UserError
from .figures import save_figures
from .folders import SCALES, completed_runs, is_stale, paper_claims, scale_of, summarise, verdict_counts
from .jsonio import atomic_write_text, read_json
from .registry import PAPERS


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if not isinstance(x, (int, float)):
        return str(x)
    ax = abs(x)
    if ax != 0 and (ax >= 1e4 or ax < 1e-3):
        return f"{x:.3g}"
    return f"{x:.4g}" if ax < 10 else f"{x:.2f}"


def _ms(d) -> str:
    if isinstance(d, (int, float)):
        return _fmt(d)
    if not d or not d.get("n"):
        return "–"
    return f"{_fmt(d['mean'])} ± {_fmt(d['std'])}"


def _ours(k: dict) -> str:
    """Our measured values in the claim's units: lhs vs rhs (mean ± std over seeds)."""
    parts = k["check"].split()
    lhs, rhs = parts[0], parts[2] if len(parts) > 2 else "?"
    if "lhs" not in k:  # a run folder from before values were recorded
        return "–"
    return f"{lhs} = {_ms(k['lhs'])} vs {rhs} = {_ms(k['rhs'])}"


def _check_text(k: dict) -> str:
    if "n_total" not in k:
        return f"{k['check']}: gap {_fmt(k['mean_gap'])} ± {_fmt(k['se'])} (n={k['n']}) → {k['verdict']}"
    det = " deterministic" if k.get("deterministic") else f" ± {_fmt(k['se'])}"
    more = f"; ~{k['seeds_needed']} seeds would decide it" if k.get("seeds_needed") else ""
    note = f"; {k['note']}" if k.get("note") else ""
    return f"{k['check']}: gap {_fmt(k['mean_gap'])}{det} (n={k['n']} of {k['n_total']}) → {k['verdict']}{more}{note}"


def _select_runs(runs_dir: Path, include_smoke: bool) -> dict[str, list[Path]]:
    """For each paper: its newest complete run at each scale, largest scale first."""
    by_slug: dict[str, dict[str, Path]] = {}
    for run in completed_runs(runs_dir):
        slug, scale = run.parent.name, scale_of(run)
        if scale == "smoke" and not include_smoke:
            continue
        best = by_slug.setdefault(slug, {})
        if scale not in best or _mtime(run) > _mtime(best[scale]):
            best[scale] = run
    order = {s: i for i, s in enumerate(SCALES)}
    return {slug: [runs[s] for s in sorted(runs, key=lambda s: -order.get(s, -1))] for slug, runs in by_slug.items()}


def _mtime(run: Path) -> float:
    return (run / "verdicts.json").stat().st_mtime


def _read_run(run: Path) -> dict | None:
    """Everything the report needs from a run folder, or None (with a warning) when a file is corrupt or missing."""
    try:
        return {
            "verdicts": read_json(run / "verdicts.json"),
            "metrics": read_json(run / "metrics.json"),
            "config": read_json(run / "config.json"),
        }
    except (UserError, OSError) as exc:
        print(f"iclr26 report: skipping {run}: {exc}", file=sys.stderr)
        return None


def build_report(
    runs_dir: str | Path = "runs",
    out: str | Path = "reports",
    include_smoke: bool = False,
    recorded: bool = False,
    results: str | Path | None = None,
) -> Path:
    """The report from the run folders, or (``recorded``) from the recorded results alone, with each paper's plots
    when its run folder (the one the record was measured in) is under ``runs_dir``."""
    runs_dir, out = Path(runs_dir), Path(out)
    plot_out = out / "plots"
    try:
        plot_out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from .errors import unwritable

        raise unwritable(out, exc) from exc
    rows, sections_md, sections_html, skipped = [], [], [], []
    sources = _recorded_sources(runs_dir, results) if recorded else _run_sources(runs_dir, include_smoke, skipped)
    for card, run, data, stale, facts, first in sources:
        if first or scale_of(run) == "smoke":
            rows.append(_row(card, data, stale, data["scale"]))
        s_md, s_html = _section(card, run, data, plot_out, stale, facts)
        sections_md.append(s_md)
        sections_html.append(s_html)
    rows.sort(key=lambda r: list(PAPERS).index(r["slug"]))
    _write(out, rows, sections_md, sections_html, skipped)
    return out / "index.html"


def _run_sources(runs_dir: Path, include_smoke: bool, skipped: list):
    for slug, runs in _select_runs(runs_dir, include_smoke).items():
        card = PAPERS.get(slug)
        if card is None:
            continue
        for i, run in enumerate(runs):
            data = _read_run(run)
            if data is None:
                skipped.append(str(run))
                continue
            v = data["verdicts"]
            data["scale"] = scale_of(run)
            facts = (f"run folder `{run}` · commit {v.get('commit') or '–'} · wall time {_fmt(v.get('seconds'))} s · "
                     f"peak memory {_fmt(v.get('peak_rss_mb'))} MB")  # fmt: skip
            yield card, run, data, is_stale(run, card), facts, i == 0


def _recorded_sources(runs_dir: Path, results):
    from .results import all_records, outdated

    for slug, rec in all_records(results).items():
        card = PAPERS[slug]
        run = next((r for r in completed_runs(runs_dir) if r.parent.name == slug and _same_run(r, rec)), None)
        data = {"verdicts": rec, "metrics": {"aggregate": rec["metrics"], "protocols": rec.get("protocols", {})},
                "config": {"model": rec.get("model")}, "scale": rec["scale"]}  # fmt: skip
        facts = (f"recorded {rec['recorded']} on {rec['machine']} · VERSION {rec['version']} · commit "
                 f"{rec.get('commit') or '–'} · wall time {_fmt(rec.get('seconds'))} s · peak memory "
                 f"{_fmt(rec.get('peak_rss_mb'))} MB")  # fmt: skip
        why = outdated(rec, card)
        yield card, run, data, bool(why), facts + (f" · {why.upper()}" if why else ""), True


def _same_run(run: Path, rec: dict) -> bool:
    try:
        v = read_json(run / "verdicts.json")
    except (UserError, OSError):
        return False
    return v.get("code") == rec.get("code") and [int(s) for s in v.get("seeds", [])] == rec.get("seeds")


def _row(card, data: dict, stale: bool, scale: str) -> dict:
    v = data["verdicts"]
    counts = verdict_counts(v["claims"])
    return {"slug": card.slug, "scale": scale, "seeds": v.get("seeds"), "counts": counts,
            "status": summarise([c["verdict"] for c in paper_claims(v["claims"])]), "seconds": v.get("seconds"),
            "peak": v.get("peak_rss_mb"), "cpu": v.get("cpu_seconds"), "commit": v.get("commit"),
            "stale": stale}  # fmt: skip


def _summary_cells(r: dict) -> list[str]:
    c = r["counts"]
    mins = f"{r['seconds'] / 60:.1f} min" if isinstance(r["seconds"], (int, float)) else "–"
    cpu = f"{r['cpu'] / 60:.1f} min" if isinstance(r.get("cpu"), (int, float)) else "–"
    peak = f"{r['peak']:.0f} MB" if isinstance(r["peak"], (int, float)) else "–"
    status = r["status"] + (" (plumbing check)" if r["scale"] == "smoke" else "") + (" — STALE" if r["stale"] else "")
    gates = f"{c['gates held']} of {c['gates']}" if c["gates"] else "–"
    return [r["slug"], status, r["scale"], str(r["seeds"]), str(c["reproduced"]), str(c["not reproduced"]),
            str(c["inconclusive"]), str(c["not testable"]), str(c["not run"]), gates, mins, cpu, peak,
            str(r["commit"] or "–")]  # fmt: skip


# verdict counts are over the paper's claims; gates (testbed checks, controls, budget parity) are counted apart
HEADERS = ["paper", "status", "scale", "seeds", "reproduced", "not reproduced", "inconclusive", "not testable",
           "not run", "gates held", "run time", "CPU time", "peak memory", "commit"]  # fmt: skip


def _write(out: Path, rows, sections_md, sections_html, skipped) -> None:
    md = ["# iclr26 — claims vs measurements", "", f"Verdict rule: {RULE}.", ""]
    md += ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    md += ["| " + " | ".join(_summary_cells(r)) + " |" for r in rows]
    if skipped:
        md += ["", "Skipped (corrupt or incomplete run folders): " + ", ".join(f"`{s}`" for s in skipped)]
    md += [""] + sections_md
    atomic_write_text(out / "index.md", "\n".join(md) + "\n")
    table = ["<table class='summary'><tr>" + "".join(f"<th>{h}</th>" for h in HEADERS) + "</tr>"]
    for r in rows:
        cells = _summary_cells(r)
        cls = " class='smoke'" if r["scale"] == "smoke" else ""
        cells[0] = f"<a href='#{r['slug']}-{r['scale']}'>{html.escape(cells[0])}</a>"
        table.append(f"<tr{cls}>" + "".join(f"<td>{c if i == 0 else html.escape(c)}</td>" for i, c in enumerate(cells))
                     + "</tr>")  # fmt: skip
    table.append("</table>")
    if skipped:
        table.append("<p>Skipped (corrupt or incomplete run folders): " + html.escape(", ".join(skipped)) + "</p>")
    head = (
        "<!doctype html><html><head><meta charset='utf-8'><title>iclr26 report</title><style>"
        "body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
        "table{border-collapse:collapse;margin:.5em 0}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;vertical-align:top}"
        ".reproduced{background:#d4f4d4}.not{background:#f8d0d0}.inconclusive{background:#fff3c4}.notrun{color:#888}"
        ".nottestable{background:#dde6f2}tr.gate td:first-child{padding-left:1.5em;font-style:italic}"
        ".smoke{color:#888;background:#f2f2f2}section.smoke{padding:.2em 1em;border:1px dashed #bbb}"
        "img{max-width:100%}</style></head><body><h1>iclr26 — claims vs measurements</h1>"
        f"<p>Verdict rule: {html.escape(RULE)}.</p>"
    )
    atomic_write_text(out / "index.html", head + "\n".join(table) + "\n".join(sections_html) + "</body></html>\n")


def _css(v: str) -> str:
    css = {"reproduced": "reproduced", "not reproduced": "not", "not run": "notrun", "not testable": "nottestable"}
    return css.get(v, "inconclusive")


def _claim_label(c: dict) -> str:
    """The claim's statement; a gate is labelled with its kind, a gated claim with the gates it needs."""
    role = c.get("role", "claim")
    text = c["statement"] if role == "claim" else f"[gate: {role}] {c['statement']}"
    if c.get("requires"):
        text += f" (gates: {', '.join(c['requires'])})"
    return text


def _section(card, run: Path | None, data: dict, plot_out: Path, stale: bool, facts: str) -> tuple[str, str]:
    verdicts, metrics, config = data["verdicts"], data["metrics"], data["config"]
    agg, protocols = metrics["aggregate"], metrics.get("protocols", {})
    scale = data["scale"]
    smoke = scale == "smoke"
    title = f"{card.slug} — {card.title} ({scale}, seeds {verdicts['seeds']})"
    anchor = f"{card.slug}-{scale}"
    warn = []
    if smoke:
        warn.append("Smoke scale: a plumbing check of the code path, not evidence for or against the claims.")
    if stale:
        warn.append("STALE: measured by other code than this checkout's; rerun (and record) it.")
    md = [f"## {title}", "", f"Paper: {card.url} · method: {card.method} · {facts}", ""] + [f"**{w}**\n" for w in warn]
    if config.get("model"):
        md.append(f"Model: `{config['model']}`\n")
    md += ["| claim | paper's numbers (their setting) | ours (mean ± std over seeds) | check | verdict |",
           "|---|---|---|---|---|"]  # fmt: skip
    h = [f"<section id='{anchor}' class='{'smoke' if smoke else ''}'><h2>{html.escape(title)}</h2>",
         f"<p><a href='{card.url}'>{html.escape(card.url)}</a> · {html.escape(card.method)} · "
         f"{html.escape(facts.replace('`', ''))}</p>"]  # fmt: skip
    h += [f"<p><b>{html.escape(w)}</b></p>" for w in warn]
    h.append("<table><tr><th>claim</th><th>paper's numbers (their setting)</th><th>ours</th><th>check</th>"
             "<th>verdict</th></tr>")  # fmt: skip
    for c in verdicts["claims"]:
        ours = "<br>".join(html.escape(_ours(k)) for k in c["checks"]) or html.escape(c.get("note", ""))
        checks = [_check_text(k) for k in c["checks"]] or [c.get("note", "")]
        if c["checks"] and c.get("note"):  # e.g. which gate made it not testable
            checks.append(c["note"])
        label, gate = _claim_label(c), c.get("role", "claim") != "claim"
        md.append(f"| {label} | {c.get('paper', '')} | {'; '.join(_ours(k) for k in c['checks'])} | "
                  f"{'; '.join(checks)} | **{c['verdict']}** |")  # fmt: skip
        h.append(
            f"<tr{' class=gate' if gate else ''}><td>{html.escape(label)}</td>"
            f"<td>{html.escape(c.get('paper', ''))}</td><td>{ours}</td>"
            f"<td>{'<br>'.join(html.escape(x) for x in checks)}</td>"
            f"<td class='{_css(c['verdict'])}'><b>{html.escape(c['verdict'])}</b></td></tr>"
        )
    h.append("</table>")
    md += ["", "| metric | mean ± std | n | failed | protocol |", "|---|---|---|---|---|"]
    h.append("<details><summary>all metrics</summary><table><tr><th>metric</th><th>mean ± std</th><th>n</th>"
             "<th>failed</th><th>protocol</th></tr>")  # fmt: skip
    for name, a in agg.items():
        proto, failed = protocols.get(name, ""), a.get("failed", 0)
        md.append(f"| {name} | {_ms(a)} | {a['n']} | {failed} | {proto} |")
        h.append(f"<tr><td>{html.escape(name)}</td><td>{_ms(a)}</td><td>{a['n']}</td><td>{failed}</td>"
                 f"<td>{html.escape(proto)}</td></tr>")  # fmt: skip
    h.append("</table></details>")
    pngs = sorted((run / "plots").glob("*.png")) if run is not None and (run / "plots").exists() else []
    targets = []
    for png in pngs:
        target = plot_out / f"{card.slug}-{scale}-{png.name}"
        shutil.copyfile(png, target)
        targets.append(target)
    if not targets:
        p = _claim_plot(plot_out, f"{card.slug}-{scale}-", verdicts["claims"], agg)
        targets = [p] if p else []
    for png in targets:
        md.append(f"\n![{png.stem}](plots/{png.name})")
        data64 = base64.b64encode(png.read_bytes()).decode()
        h.append(f"<p><img alt='{html.escape(png.stem)}' src='data:image/png;base64,{data64}'></p>")
    h.append("</section>")
    md.append("")
    return "\n".join(md), "\n".join(h)


def _claim_plot(plot_out: Path, prefix: str, claims: list[dict], agg: dict) -> Path | None:
    """A default figure, written under the report folder: mean ± std of every metric that a claim compares."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for c in claims:
        for chk in c["checks"]:
            for tok in chk["check"].split():
                if tok in agg and tok not in names:
                    names.append(tok)
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(max(4, 0.6 * len(names) + 2), 3.2))
    ax.bar(range(len(names)), [agg[n]["mean"] for n in names], yerr=[agg[n]["std"] for n in names], capsize=3,
           color="#4C72B0")  # fmt: skip
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    ax.set_title("metrics the claims compare (mean ± std over seeds)", fontsize=9)
    return save_figures(plot_out, [("claims", fig)], folder=".", prefix=prefix)[0]
