import importlib.machinery
import os
import sys
import types
from dataclasses import dataclass

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ICLR26_JOBS", "1")  # seeds in this process: fake papers exist only here (test_parallel: 2)


@dataclass(frozen=True)
class FakeCfg:
    seeds: tuple = (0, 1, 2)
    effect: float = 1.0


@pytest.fixture
def fake_paper(monkeypatch):
    """Register a throw-away paper 'fake-paper' whose reproduction returns metrics driven by its config."""
    from iclr26.core import registry
    from iclr26.core.claims import Check, Claim

    mod = types.ModuleType("iclr26.papers.fake_paper")
    mod.__spec__ = importlib.machinery.ModuleSpec("iclr26.papers.fake_paper", None)
    mod.calls = []
    mod.CONFIGS = {"smoke": FakeCfg(seeds=(0, 1)), "quick": FakeCfg(), "full": FakeCfg(seeds=(0, 1, 2, 3))}
    mod.CLAIMS = [Claim("better", "method beats baseline", (Check("method", ">", "baseline"),), paper="+3 points")]
    mod.METRICS = {"method": "accuracy of the method"}

    def run(cfg, seed, ctx):
        mod.calls.append(seed)
        ctx.log("running")
        return {"method": 0.5 + cfg.effect + 0.01 * seed, "baseline": 0.5}

    mod.run = run
    monkeypatch.setitem(sys.modules, "iclr26.papers.fake_paper", mod)
    monkeypatch.setitem(
        registry.PAPERS,
        "fake-paper",
        registry.PaperCard("fake-paper", "A Fake Paper", "FAKE", "https://example.org", "000", "test", "test"),
    )
    return mod


@pytest.fixture
def refused_set(tmp_path, capsys):
    """`refused_set(slug, override, message)`: `iclr26 run SLUG --scale smoke --set OVERRIDE` is refused in the driver
    with exactly one stderr line naming the problem (`message`), exit code 2, and nothing written (no run folder)."""
    from iclr26.cli import main

    def check(slug: str, override: str, message: str) -> None:
        runs = tmp_path / "runs"
        code = main(["run", slug, "--scale", "smoke", "--seeds", "0", "--set", override, "--runs", str(runs)])
        err = capsys.readouterr().err.strip()
        assert code == 2, err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"iclr26: error: --set {override}: ") and message in err, err
        assert not runs.exists()  # no run folder, no cache, no worker

    return check
