"""The scisor card's config check (`iclr26.papers.scisor.checks`): a bad `--set` is one line naming the field and
its range, before any worker, model load or cache build, and no run folder is written."""

from __future__ import annotations

import pytest

from iclr26.cli import main


@pytest.mark.parametrize(
    "override, message",
    [
        ("d_model=30", "d_model must be divisible by the 4 attention heads"),
        ("n_match=20", "n_match must be an integer ≥ 39"),
    ],
)
def test_a_bad_set_is_one_line_and_writes_no_run_folder(override, message, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["run", "scisor", "--scale", "smoke", "--seeds", "0", "--set", override, "--runs", str(runs)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"iclr26: error: --set {override}: ") and message in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not runs.exists()  # no run folder, no cache, no worker


def test_every_scale_passes_the_check():
    from iclr26.papers.scisor import CONFIGS
    from iclr26.papers.scisor.checks import check_config

    for cfg in CONFIGS.values():
        check_config(cfg)
