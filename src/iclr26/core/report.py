"""`iclr26 report`: every complete run folder -> reports/index.md and a self-contained reports/index.html.

One section per paper: the claim, the paper's own numbers (a different setting, labelled so), our numbers
(mean ± std over seeds), the computed verdict, the metric table and the run's figures.
"""

from __future__ import annotations

import base64
import html
import math
import shutil
from pathlib import Path

from .claims import RULE
from .registry import PAPERS
from .runs import SCALES, atomic_write_text, completed_runs, read_json, summarise


def save_figures(run_dir: Path, figures) -> list[Path]:
    """Save `[(name, matplotlib Figure), ...]` as run_dir/plots/<name>.png and close them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    plot_dir = Path(run_dir) / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    for name, fig in figures or []:
        path = plot_dir / f"{name}.png"
        tmp = plot_dir / f".{name}.tmp.png"
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        tmp.replace(path)
        plt.close(fig)
        out.append(path)
    return out


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    ax = abs(x)
    if ax != 0 and (ax >= 1e4 or ax < 1e-3):
        return f"{x:.3g}"
    return f"{x:.4g}" if ax < 10 else f"{x:.2f}"


def _claim_plot(run_dir: Path, verdicts: list[dict], agg: dict) -> Path | None:
    """A default figure: mean ± std of every metric that a claim compares."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for c in verdicts:
        for chk in c["checks"]:
            for tok in chk["check"].split():
                if tok in agg and tok not in names:
                    names.append(tok)
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(max(4, 0.6 * len(names) + 2), 3.2))
    means = [agg[n]["mean"] for n in names]
    stds = [agg[n]["std"] for n in names]
    ax.bar(range(len(names)), means, yerr=stds, capsize=3, color="#4C72B0")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    ax.set_title("metrics the claims compare (mean ± std over seeds)", fontsize=9)
    path = save_figures(run_dir, [("claims", fig)])[0]
    return path


def _select_runs(out: Path) -> dict[str, list[Path]]:
    """For each paper: its newest complete run at each scale, largest scale first."""
    by_slug: dict[str, dict[str, Path]] = {}
    for run in completed_runs(out):
        slug, scale = run.parent.name, run.name.split("-", 1)[0]
        best = by_slug.setdefault(slug, {})
        if (
            scale not in best
            or (run / "verdicts.json").stat().st_mtime > (best[scale] / "verdicts.json").stat().st_mtime
        ):
            best[scale] = run
    order = {s: i for i, s in enumerate(SCALES)}
    return {slug: [runs[s] for s in sorted(runs, key=lambda s: -order.get(s, -1))] for slug, runs in by_slug.items()}


def build_report(runs_dir: str | Path = "runs", out: str | Path = "reports") -> Path:
    runs_dir, out = Path(runs_dir), Path(out)
    plot_out = out / "plots"
    plot_out.mkdir(parents=True, exist_ok=True)
    selected = _select_runs(runs_dir)
    md = ["# iclr26 — claims vs measurements", "", f"Verdict rule: {RULE}.", ""]
    md += ["| paper | status | scale | seeds | run |", "|---|---|---|---|---|"]
    sections_md: list[str] = []
    sections_html: list[str] = []
    for slug, card in PAPERS.items():
        runs = selected.get(slug)
        if not runs:
            continue
        main = runs[0]
        verdicts = read_json(main / "verdicts.json")
        status = summarise([c["verdict"] for c in verdicts["claims"]])
        md.append(f"| [{slug}](#{slug}) | {status} | {main.name.split('-')[0]} | {verdicts['seeds']} | `{main}` |")
        for run in runs:
            s_md, s_html = _section(card, run, plot_out)
            sections_md.append(s_md)
            sections_html.append(s_html)
    md.append("")
    md += sections_md
    atomic_write_text(out / "index.md", "\n".join(md) + "\n")
    head = (
        "<!doctype html><html><head><meta charset='utf-8'><title>iclr26 report</title><style>"
        "body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
        "table{border-collapse:collapse;margin:.5em 0}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;vertical-align:top}"
        ".reproduced{background:#d4f4d4}.not{background:#f8d0d0}.inconclusive{background:#fff3c4}"
        "img{max-width:100%}</style></head><body><h1>iclr26 — claims vs measurements</h1>"
        f"<p>Verdict rule: {html.escape(RULE)}.</p>"
    )
    atomic_write_text(out / "index.html", head + "\n".join(sections_html) + "</body></html>\n")
    return out / "index.html"


def _css(v: str) -> str:
    return {"reproduced": "reproduced", "not reproduced": "not"}.get(v, "inconclusive")


def _section(card, run: Path, plot_out: Path) -> tuple[str, str]:
    verdicts = read_json(run / "verdicts.json")
    metrics = read_json(run / "metrics.json")
    config = read_json(run / "config.json")
    agg = metrics["aggregate"]
    protocols = metrics.get("protocols", {})
    scale = run.name.split("-", 1)[0]
    title = f"{card.slug} — {card.title} ({scale}, seeds {verdicts['seeds']})"
    md = [f"## {title}", "", f"Paper: {card.url} · method: {card.method} · run folder: `{run}`", ""]
    if config.get("model"):
        md.append(f"Model: `{config['model']}`\n")
    md += ["| claim | paper's numbers (their setting) | our check: mean gap ± SE (n) | verdict |", "|---|---|---|---|"]
    h = [
        f"<h2 id='{card.slug}'>{html.escape(title)}</h2>",
        f"<p><a href='{card.url}'>{html.escape(card.url)}</a> · {html.escape(card.method)} · <code>{run}</code></p>",
        "<table><tr><th>claim</th><th>paper's numbers (their setting)</th><th>our checks</th><th>verdict</th></tr>",
    ]
    for c in verdicts["claims"]:
        checks = "; ".join(
            f"{k['check']}: {_fmt(k['mean_gap'])} ± {_fmt(k['se'])} (n={k['n']}) → {k['verdict']}" for k in c["checks"]
        )
        md.append(f"| {c['statement']} | {c.get('paper', '')} | {checks} | **{c['verdict']}** |")
        h.append(
            f"<tr><td>{html.escape(c['statement'])}</td><td>{html.escape(c.get('paper', ''))}</td>"
            f"<td>{html.escape(checks)}</td><td class='{_css(c['verdict'])}'><b>{c['verdict']}</b></td></tr>"
        )
    h.append("</table>")
    md += ["", "| metric | mean ± std | n | protocol |", "|---|---|---|---|"]
    h.append(
        "<details><summary>all metrics</summary><table><tr><th>metric</th><th>mean ± std</th><th>n</th>"
        "<th>protocol</th></tr>"
    )
    for name, a in agg.items():
        proto = protocols.get(name, "")
        md.append(f"| {name} | {_fmt(a['mean'])} ± {_fmt(a['std'])} | {a['n']} | {proto} |")
        h.append(
            f"<tr><td>{html.escape(name)}</td><td>{_fmt(a['mean'])} ± {_fmt(a['std'])}</td><td>{a['n']}</td>"
            f"<td>{html.escape(proto)}</td></tr>"
        )
    h.append("</table></details>")
    pngs = sorted((run / "plots").glob("*.png")) if (run / "plots").exists() else []
    if not pngs:
        p = _claim_plot(run, verdicts["claims"], agg)
        pngs = [p] if p else []
    for png in pngs:
        name = f"{card.slug}-{scale}-{png.name}"
        shutil.copyfile(png, plot_out / name)
        md.append(f"\n![{png.stem}](plots/{name})")
        data = base64.b64encode(png.read_bytes()).decode()
        h.append(f"<p><img alt='{html.escape(png.stem)}' src='data:image/png;base64,{data}'></p>")
    md.append("")
    return "\n".join(md), "\n".join(h)
