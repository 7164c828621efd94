import pytest

from iclr26.cli import main
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
    assert "38 papers" in out and "dispersion" in out and "not yet" in out


def test_cli_unknown_slug_is_a_clear_error(capsys):
    assert main(["show", "dike-editing"]) == 2
    assert "Did you mean" in capsys.readouterr().err


def test_cli_bad_seeds(capsys):
    with pytest.raises(SystemExit):
        main(["run", "dispersion", "--seeds", "a,b"])
    assert "--seeds takes integers" in capsys.readouterr().err


def test_cli_run_show_report_on_fake_paper(fake_paper, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["run", "fake-paper", "--scale", "smoke", "--out", str(runs)]) == 0
    assert "reproduced" in capsys.readouterr().out
    assert main(["show", "fake-paper", "--runs", str(runs)]) == 0
    assert "Last measured" in capsys.readouterr().out
    assert main(["list", "--runs", str(runs)]) == 0
    assert "fake-paper" in capsys.readouterr().out
    assert main(["report", "--runs", str(runs), "--out", str(tmp_path / "rep")]) == 0
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "fake-paper" in html and "data:image/png;base64," in html
    assert "+3 points" in (tmp_path / "rep" / "index.md").read_text()
