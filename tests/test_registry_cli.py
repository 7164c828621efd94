import json
import os
import subprocess
import sys

import pytest

from iclr26.cli import main
from iclr26.core.claims import Check, Claim
from iclr26.core.registry import PAPERS, UnknownPaperError, get_paper


def test_all_38_seed_papers_have_cards():
    assert len(PAPERS) == 38
    for card in PAPERS.values():
        assert card.title and card.url.startswith("https://") and card.seed_file in ("000", "003")


def test_unknown_slug_suggests_close_matches():
    with pytest.raises(UnknownPaperError, match="dispersion"):
        get_paper("dispersio")
    assert get_paper("Policy_Newton_RKHS").slug == "policy-newton-rkhs"


def test_cli_list_shows_38(capsys, tmp_path):
    assert main(["list", "--runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "38 papers; 38 with a reproduction" in out and "dispersion" in out and "gf-screen" in out


def test_cli_list_shows_the_scale_of_each_status(capsys, fake_paper, tmp_path):
    assert main(["run", "fake-paper", "--runs", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["list", "--runs", str(tmp_path), "--json"]) == 0
    rows = {r["slug"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["fake-paper"]["status"] == "reproduced (quick)" and len(rows) == 39


def test_cli_unknown_slug_is_a_clear_error(capsys):
    assert main(["show", "dike-editing"]) == 2
    assert "Did you mean" in capsys.readouterr().err


def test_cli_bad_seeds(capsys, fake_paper, tmp_path):
    with pytest.raises(SystemExit):
        main(["run", "dispersion", "--seeds", "a,b"])
    assert "--seeds takes" in capsys.readouterr().err
    assert main(["run", "fake-paper", "--seeds", "0,0,0", "--runs", str(tmp_path)]) == 2
    assert "more than once" in capsys.readouterr().err
    assert fake_paper.calls == []


def test_a_bug_deep_in_a_paper_shows_its_traceback(fake_paper, tmp_path, monkeypatch):
    def broken(cfg, seed, ctx):
        return {"x": {}["hidden_size"]}

    monkeypatch.setattr(fake_paper, "run", broken)
    with pytest.raises(KeyError, match="hidden_size"):  # not swallowed into "iclr26: error: 'hidden_size'"
        main(["run", "fake-paper", "--runs", str(tmp_path)])


def test_debug_shows_the_traceback_of_user_errors_too(fake_paper, tmp_path):
    from iclr26.core.errors import UserError

    with pytest.raises(UserError, match="more than once"):
        main(["--debug", "run", "fake-paper", "--seeds", "1,1", "--runs", str(tmp_path)])


def test_ctrl_c_says_how_to_resume(fake_paper, tmp_path, monkeypatch, capsys):
    def interrupted(cfg, seed, ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr(fake_paper, "run", interrupted)
    assert main(["run", "fake-paper", "--runs", str(tmp_path)]) == 130
    err = capsys.readouterr().err
    assert "interrupted; rerun the same command to resume" in err and "Traceback" not in err


def test_out_is_replaced_by_distinct_names(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--out", "x"])
    assert "--runs" in capsys.readouterr().err


def test_cli_run_show_report_on_fake_paper(fake_paper, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["run", "fake-paper", "--runs", str(runs)]) == 0
    assert "reproduced" in capsys.readouterr().out
    assert main(["show", "fake-paper", "--runs", str(runs)]) == 0
    assert "Last measured" in capsys.readouterr().out
    assert main(["report", "--runs", str(runs), "--report", str(tmp_path / "rep")]) == 0
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "fake-paper" in html and "data:image/png;base64," in html
    assert "+3 points" in (tmp_path / "rep" / "index.md").read_text()


def test_run_and_show_speak_json(fake_paper, tmp_path, capsys):
    assert main(["run", "fake-paper", "--scale", "smoke", "--runs", str(tmp_path), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["claims"][0]["id"] == "better" and res["per_seed"]["0"]["baseline"] == 0.5
    assert main(["show", "fake-paper", "--runs", str(tmp_path), "--json", "--config"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["config"]["quick"]["seeds"] == [0, 1, 2] and card["claims"][0]["checks"] == ["method > baseline"]


def test_show_config_prints_scales_seeds_time_and_fields(fake_paper, tmp_path, capsys):
    fake_paper.EXPECTED_SECONDS = {"smoke": 1, "quick": 240, "full": 3600}
    assert main(["show", "fake-paper", "--config", "--runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "effect" in out and "seeds" in out and "quick 4.0 min" in out and "[0, 1, 2, 3]" in out


def test_set_overrides_a_field(fake_paper, tmp_path, capsys):
    assert main(["run", "fake-paper", "--scale", "smoke", "--set", "effect=-2", "--runs", str(tmp_path)]) == 0
    assert "not reproduced" in capsys.readouterr().out
    assert main(["run", "fake-paper", "--set", "effect", "--runs", str(tmp_path)]) == 2
    assert "key=value" in capsys.readouterr().err


def test_compare_shows_what_moved(fake_paper, tmp_path, capsys):
    main(["run", "fake-paper", "--scale", "smoke", "--runs", str(tmp_path), "--json"])
    a = json.loads(capsys.readouterr().out)["run_dir"]
    main(["run", "fake-paper", "--scale", "smoke", "--set", "effect=-1", "--runs", str(tmp_path), "--json"])
    b = json.loads(capsys.readouterr().out)["run_dir"]
    assert main(["compare", a, b]) == 0
    out = capsys.readouterr().out
    assert "[better] inconclusive → not reproduced" in out or "[better] reproduced → not reproduced" in out
    assert "method" in out and "baseline" not in out.split("metric")[1]  # the baseline did not move
    assert main(["compare", a, str(tmp_path)]) == 2


def _two_claim_paper(fake_paper):
    fake_paper.CLAIMS = [
        Claim("wins", "method beats baseline", (Check("method", ">", "baseline"),), paper="+3 points"),
        Claim("loses", "baseline beats method", (Check("baseline", ">", "method"),), paper="−3 points"),
    ]


def test_html_report_has_a_summary_and_each_claims_own_verdict_and_values(fake_paper, tmp_path):
    _two_claim_paper(fake_paper)
    main(["run", "fake-paper", "--runs", str(tmp_path / "runs")])
    main(["report", "--runs", str(tmp_path / "runs"), "--report", str(tmp_path / "rep")])
    html = (tmp_path / "rep" / "index.html").read_text()
    summary = html.split("<table class='summary'>")[1].split("</table>")[0]
    assert "fake-paper" in summary and "run time" in summary and "commit" in summary and "peak memory" in summary
    rows = [r for r in html.split("<tr>") if "beats" in r]
    wins = next(r for r in rows if "method beats baseline" in r)
    loses = next(r for r in rows if "baseline beats method" in r)
    assert "<b>reproduced</b>" in wins and "<b>not reproduced</b>" in loses  # a verdict is the claim's own
    assert "method = 1.51 ± 0.01 vs baseline = 0.5 ± 0" in wins  # our values beside the paper's, same units


def test_smoke_runs_are_left_out_of_the_report_unless_asked(fake_paper, tmp_path):
    runs = tmp_path / "runs"
    main(["run", "fake-paper", "--scale", "smoke", "--runs", str(runs)])
    main(["report", "--runs", str(runs), "--report", str(tmp_path / "a")])
    assert "fake-paper" not in (tmp_path / "a" / "index.md").read_text()
    main(["report", "--runs", str(runs), "--report", str(tmp_path / "b"), "--include-smoke"])
    html = (tmp_path / "b" / "index.html").read_text()
    assert "plumbing check" in html and "class='smoke'" in html


def test_report_skips_a_corrupt_run_and_writes_only_under_its_own_folder(fake_paper, tmp_path, capsys):
    runs = tmp_path / "runs"
    good = main(["run", "fake-paper", "--runs", str(runs), "--json"])
    good_dir = json.loads(capsys.readouterr().out)["run_dir"]
    main(["run", "fake-paper", "--set", "effect=2", "--runs", str(runs), "--json"])
    bad_dir = json.loads(capsys.readouterr().out)["run_dir"]
    with open(os.path.join(bad_dir, "metrics.json"), "w") as f:
        f.write("{broken")
    os.utime(os.path.join(bad_dir, "verdicts.json"))  # the newest: the one the report would pick
    before = {p: p.stat().st_mtime_ns for p in runs.rglob("*")}
    assert good == 0 and main(["report", "--runs", str(runs), "--report", str(tmp_path / "rep")]) == 0
    err = capsys.readouterr().err
    assert "skipping" in err and "metrics.json" in err
    assert {p: p.stat().st_mtime_ns for p in runs.rglob("*")} == before  # nothing written into run folders
    assert "Skipped" in (tmp_path / "rep" / "index.md").read_text()
    assert good_dir


def test_show_is_light(tmp_path):
    """`show` imports no ML library (the card is light), so it answers in well under 2 s on a quiet machine."""
    code = ("import sys; from iclr26.cli import main; main(['show', 'dispersion', '--runs', sys.argv[1]]);"
            "heavy = [m for m in ('torch', 'transformers', 'numpy', 'sklearn', 'scipy') if m in sys.modules];"
            "print('HEAVY', heavy)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
