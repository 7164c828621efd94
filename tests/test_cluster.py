"""The suite on a Ray cluster (a local Ray instance with 2 CPUs here): the metrics equal a local run's with the same
seeds and thread count, a killed worker's task is retried, a seed that fails for good is reported clearly with the
finished seeds kept, and a missing Ray is a one-line error naming the extra."""

from __future__ import annotations

import re
import sys

import pytest

from iclr26.core.errors import UserError
from iclr26.core.runs import run_paper

TIMING = re.compile(r"sec|seconds|time|fps|speedup|_ms\b|ms_|peak_mb|wall")


def _measured(res):
    return {s: {k: v for k, v in m.items() if not TIMING.search(k)} for s, m in res.per_seed.items()}


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    from iclr26.core import cluster

    cluster.connect("local", num_cpus=2)
    yield ray
    cluster.shutdown()


def test_a_missing_ray_is_one_line_naming_the_extra(monkeypatch, tmp_path, capsys):
    from iclr26.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert main(["run", "bss-fsl", "--scale", "smoke", "--cluster", "local", "--runs", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "iclr26: error: --cluster needs Ray, which is not installed: pip install 'iclr26[cluster]'"


@pytest.mark.parametrize("slug", ["bss-fsl", "dike"])  # dike: its seeds share a disentangler and key statistics
def test_cluster_metrics_equal_a_local_run(ray_local, slug, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache-local"))
    local = run_paper(slug, scale="smoke", seeds=(0, 1), out=tmp_path / "local", jobs=1, quiet=True)
    on_ray = run_paper(slug, scale="smoke", seeds=(0, 1), out=tmp_path / "ray", quiet=True, cluster="local")
    assert _measured(on_ray) == _measured(local)
    folder = on_ray.run_dir
    assert sorted(p.name for p in (folder / "seeds").iterdir()) == ["seed-0.json", "seed-1.json"]
    assert "as Ray tasks on local" in (folder / "log.txt").read_text()
    assert [c["verdict"] for c in on_ray.verdicts] == [c["verdict"] for c in local.verdicts]


def test_a_killed_worker_is_retried(ray_local, tmp_path, monkeypatch):
    """The task's worker dies once (as on a lost node): Ray runs it again and the run completes."""
    marker = tmp_path / "crashed"
    monkeypatch.setenv("ICLR26_CLUSTER_CRASH_ONCE", str(marker))
    from iclr26.core import cluster

    cluster.shutdown()  # the workers read the variable when the cluster starts
    cluster.connect("local", num_cpus=2)
    res = run_paper("bss-fsl", scale="smoke", seeds=(0, 1), out=tmp_path / "runs", quiet=True, cluster="local")
    assert marker.exists() and sorted(res.per_seed) == [0, 1]


def test_a_seed_that_fails_for_good_is_reported_and_the_others_are_kept(ray_local, tmp_path, monkeypatch):
    from iclr26.core import cluster

    monkeypatch.setattr(cluster, "_RETRIES", 0)
    monkeypatch.setenv("ICLR26_CLUSTER_CRASH_ONCE", str(tmp_path / "crashed"))
    cluster.shutdown()
    cluster.connect("local", num_cpus=1)  # one at a time: the first task dies, the second finishes
    with pytest.raises(UserError, match=r"bss-fsl seed \d failed on the cluster .* rerun the same command to resume"):
        run_paper("bss-fsl", scale="smoke", seeds=(0, 1), out=tmp_path / "runs", quiet=True, cluster="local")
    kept = list((tmp_path / "runs").rglob("seeds/seed-*.json"))
    assert len(kept) == 1  # the finished seed is written; a rerun resumes from it
    monkeypatch.delenv("ICLR26_CLUSTER_CRASH_ONCE")
    cluster.shutdown()
    cluster.connect("local", num_cpus=2)
    res = run_paper("bss-fsl", scale="smoke", seeds=(0, 1), out=tmp_path / "runs", quiet=True, cluster="local")
    assert "resumed from" in (res.run_dir / "log.txt").read_text()


def test_the_shared_hook_runs_once_before_the_seeds(fake_paper, tmp_path):
    calls = []
    fake_paper.shared = lambda cfg: calls.append(("shared", cfg.effect))
    run = fake_paper.run

    def seed_run(cfg, seed, ctx):
        calls.append(("seed", seed))
        return run(cfg, seed, ctx)

    fake_paper.run = seed_run
    run_paper("fake-paper", scale="quick", out=tmp_path / "runs", quiet=True)
    assert calls == [("shared", 1.0), ("seed", 0), ("seed", 1), ("seed", 2)]
