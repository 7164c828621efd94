"""Results as data: records written from finished runs (smoke and stale runs refused), flagged outdated when the card
or its code moves on, shown by list/show, a report built from the records alone, and generated docs tables."""

from __future__ import annotations

import json
import time

import jsonschema
import pytest

from iclr26.core import docs, results
from iclr26.core.claims import Check, Claim
from iclr26.core.errors import UserError
from iclr26.core.runs import run_paper


@pytest.fixture
def gated_paper(fake_paper):
    fake_paper.VERSION = 3
    fake_paper.CLAIMS = [
        Claim("headroom", "oracle headroom", (Check("method", ">", "baseline", 0.1),), role="headroom"),
        Claim(
            "better",
            "method beats baseline",
            (Check("method", ">", "baseline"),),
            requires=("headroom",),
            paper="+3 points",
        ),  # fmt: skip
    ]
    return fake_paper


def test_a_record_holds_what_a_reader_needs_and_validates_against_the_schema(gated_paper, tmp_path):
    res = run_paper("fake-paper", scale="quick", out=tmp_path / "runs")
    path = results.record(res.run_dir, tmp_path / "results")
    rec = json.loads(path.read_text())
    jsonschema.validate(rec, results.SCHEMA)
    assert path.name == "fake-paper.json" and rec["version"] == 3 and rec["seeds"] == [0, 1, 2]
    assert rec["scale"] == "quick" and rec["threads"] == 1 and "cores" in rec["machine"]
    assert "/" not in rec["machine"] and str(tmp_path) not in path.read_text()  # no machine paths
    assert rec["headline"] == "better" and rec["status"] == "reproduced" and rec["real_model"] is False
    assert rec["counts"]["reproduced"] == 1 and (rec["counts"]["gates held"], rec["counts"]["gates"]) == (1, 1)
    assert set(rec["metrics"]) == {"method", "baseline"} and rec["metrics"]["method"]["n"] == 3
    claim = {c["id"]: c for c in rec["claims"]}["better"]
    assert claim["checks"][0]["line"].startswith("method > baseline: gap") and claim["gates"][0]["id"] == "headroom"
    assert results.outdated(rec) == ""


def test_smoke_incomplete_and_stale_runs_are_refused(gated_paper, tmp_path, monkeypatch):
    smoke = run_paper("fake-paper", scale="smoke", out=tmp_path / "runs")
    with pytest.raises(UserError, match="smoke run, a plumbing check"):
        results.record(smoke.run_dir, tmp_path / "results")
    with pytest.raises(UserError, match="not a finished run folder"):
        results.record(tmp_path, tmp_path / "results")
    quick = run_paper("fake-paper", scale="quick", out=tmp_path / "runs")
    monkeypatch.setattr(results, "code_of", lambda card: "other-code")
    with pytest.raises(UserError, match="measured by other code"):
        results.record(quick.run_dir, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_a_record_is_outdated_when_the_version_or_the_code_changes(gated_paper, tmp_path, monkeypatch):
    res = run_paper("fake-paper", scale="quick", out=tmp_path / "runs")
    rec = results.build_record(res.run_dir)
    gated_paper.VERSION = 4
    assert "recorded at VERSION 3, the card is at VERSION 4" in results.outdated(rec)
    gated_paper.VERSION = 3
    monkeypatch.setattr(results, "code_of", lambda card: "new-code")
    assert "code changed" in results.outdated(rec)


def test_list_show_and_the_recorded_report(gated_paper, tmp_path, capsys):
    from iclr26.cli import main

    res = run_paper("fake-paper", scale="quick", out=tmp_path / "runs")
    results.record(res.run_dir, tmp_path / "results")
    assert main(["list", "--results", str(tmp_path / "results"), "--runs", str(tmp_path / "none")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fake-paper"))
    assert "1 rep" in line and "outdated" not in line
    assert main(["show", "fake-paper", "--results", str(tmp_path / "results"), "--runs", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "Recorded result (quick, VERSION 3" in out and "gates held 1 of 1" in out
    t0 = time.perf_counter()
    assert main(["report", "--recorded", "--results", str(tmp_path / "results"), "--runs", str(tmp_path / "runs"),
                 "--report", str(tmp_path / "rep")]) == 0  # fmt: skip
    assert time.perf_counter() - t0 < 30
    md = (tmp_path / "rep" / "index.md").read_text()
    assert "fake-paper" in md and "recorded " in md and "| reproduced |" in md
    gated_paper.VERSION = 5  # the report flags an outdated record
    assert main(["report", "--recorded", "--results", str(tmp_path / "results"), "--runs", str(tmp_path / "none"),
                 "--report", str(tmp_path / "rep2")]) == 0  # fmt: skip
    assert "OUTDATED: RECORDED AT VERSION 3" in (tmp_path / "rep2" / "index.md").read_text()


def test_run_record_flag_and_a_smoke_run_refused(gated_paper, tmp_path, capsys):
    from iclr26.cli import main

    common = ["--runs", str(tmp_path / "runs"), "--results", str(tmp_path / "results")]
    assert main(["run", "fake-paper", "--scale", "smoke", "--record", *common]) == 2
    assert "smoke run, a plumbing check" in capsys.readouterr().err
    assert main(["run", "fake-paper", "--record", *common]) == 0
    assert (tmp_path / "results" / "fake-paper.json").exists()


def test_the_generated_table_and_its_markers(gated_paper, tmp_path):
    res = run_paper("fake-paper", scale="quick", out=tmp_path / "runs")
    rec = results.build_record(res.run_dir)
    table = docs.claims_table("fake-paper", rec, 3)
    assert "Recorded quick run of VERSION 3, seeds 0, 1, 2" in table and "*headroom* `headroom`" in table
    assert "| `better`: method beats baseline | +3 points | method " in table and "**reproduced**" in table
    assert "Outdated" in docs.claims_table("fake-paper", rec, 4)
    assert "No recorded run yet for VERSION 3" in docs.claims_table("fake-paper", None, 3)
    page = f"intro\n{docs.BEGIN.format(name='x.json')}\nold table\n{docs.END}\nprose after\n"
    new = docs._replace_block(page, "x.json", "NEW\n", "page")
    assert new == f"intro\n{docs.BEGIN.format(name='x.json')}\nNEW\n{docs.END}\nprose after\n"
    with pytest.raises(UserError, match="has no generated block"):
        docs._replace_block("no markers", "x.json", "NEW\n", "page")


def test_the_committed_schema_is_the_code_schema():
    committed = results.results_dir() / "schema.json"
    assert json.loads(committed.read_text()) == results.SCHEMA


def test_the_docs_tables_and_the_readme_summary_are_what_the_records_generate():
    """`iclr26 docs --write` has been run: no generated block differs from results/ (prose stays hand-written)."""
    assert [str(p) for p in docs.drift()] == []
