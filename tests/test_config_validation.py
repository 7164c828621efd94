"""Config errors are found in the driver, before any worker, model load or cache build: one line naming the problem,
a non-zero exit, no run folder, no worker traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from iclr26.cli import main


def test_a_non_finite_override_is_one_line_and_writes_nothing(tmp_path, capsys):
    code = main(["run", "bss-fsl", "--scale", "smoke", "--seeds", "0,1", "--set", "beta=nan", "--runs", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("iclr26: error: --set beta=nan:") and "finite" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not any(tmp_path.iterdir())


def test_the_experiments_check_config_runs_in_the_driver(fake_paper, tmp_path, capsys):
    def check_config(cfg):
        if cfg.effect < 0:
            raise ValueError(f"MethodConfig.effect must be ≥ 0, got {cfg.effect}")

    fake_paper.check_config = check_config
    code = main(["run", "fake-paper", "--scale", "smoke", "--set", "effect=-1", "--runs", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == "iclr26: error: --set effect=-1: MethodConfig.effect must be ≥ 0, got -1.0"
    assert fake_paper.calls == [] and not any(tmp_path.iterdir())


def test_in_a_fresh_process_with_two_workers_no_remote_traceback(tmp_path):
    """As a user types it: the error comes from the driver, not a seed's worker process."""
    out = subprocess.run(
        [sys.executable, "-m", "iclr26.cli", "run", "bss-fsl", "--scale", "smoke", "--seeds", "0,1", "--set",
         "beta=inf", "--runs", str(tmp_path), "--jobs", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "_RemoteTraceback" not in out.stderr
    assert out.stderr.strip().startswith("iclr26: error: --set beta=inf:")


@pytest.mark.parametrize("text", ["x", "1,2"])
def test_type_errors_in_set_stay_caught(tmp_path, capsys, text):
    assert main(["run", "bss-fsl", "--scale", "smoke", "--set", f"beta={text}", "--runs", str(tmp_path)]) == 2
    assert "expected a value of type float" in capsys.readouterr().err


# a range error that only a method config or the card's own check catches, on several cards (their `checks` module)
RANGE_ERRORS = [
    ("bss-fsl", "lr_scale=1000", "lr_scale must be in (0,"),
    ("cluster-preservation", "digits_dim=99", "digits_dim must be an integer in [1, 63]"),
    ("efficient-probing", "image_size=4", "image_size must be ≥ 8"),
    ("kernel-surrogate", "fd_eps=2", "fd_eps must be in (0, 1)"),
    ("policy-newton-rkhs", "gamma=3", "gamma (the return discount) must be in [0, 1]"),
    ("dispersion", "n_bins=1", "n_bins must be ≥ 2"),
]


@pytest.mark.parametrize("slug, override, message", RANGE_ERRORS)
def test_a_range_error_of_a_card_is_one_line_before_any_work(slug, override, message, refused_set):
    refused_set(slug, override, message)


def test_the_checks_module_stays_outside_the_code_fingerprint():
    from iclr26.core.provenance import source_files

    files = {p.name for p in source_files("iclr26.papers.bss_fsl", "iclr26.papers.bss_fsl.experiment")}
    assert "experiment.py" in files and "checks.py" not in files


def test_an_empty_list_override_names_the_field_and_an_example(refused_set):
    refused_set("ltpo", "ood_ops=", "ood_ops: an empty list; give at least one value, e.g. ood_ops=4,5")
