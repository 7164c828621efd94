import errno
import json
import subprocess
import sys
import threading
import time

import pytest

from iclr26.core import folders as folders_mod
from iclr26.core import jsonio as jsonio_mod
from iclr26.core import runs as runs_mod
from iclr26.core.claims import Check, Claim, MissingMetricError
from iclr26.core.errors import UserError
from iclr26.core.folders import is_stale, status_of
from iclr26.core.jsonio import atomic_write_text, read_json
from iclr26.core.runs import run_paper


def test_run_folder_contents_and_verdicts(fake_paper, tmp_path):
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    for name in ("config.json", "env.json", "metrics.json", "verdicts.json", "log.txt"):
        assert (res.run_dir / name).exists(), name
    v = json.loads((res.run_dir / "verdicts.json").read_text())
    assert v["seeds"] == [0, 1, 2] and v["claims"][0]["verdict"] == "reproduced"
    assert v["peak_rss_mb"] > 0 and v["seconds"] >= 0 and "commit" in v and v["code"]
    assert res.run_dir.parent.name == "fake-paper" and res.run_dir.name.startswith("quick-")
    assert status_of("fake-paper", tmp_path) == "reproduced (quick)"


def test_every_seed_file_records_its_environment(fake_paper, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_THREADS", "3")
    res = run_paper("fake-paper", scale="smoke", out=tmp_path)
    seed = read_json(res.run_dir / "seeds" / "seed-0.json")
    assert seed["env"]["code"] == runs_mod.code_of(res.card) and "git_commit" in seed["env"]
    assert seed["env"]["peak_rss_mb"] > 0
    assert seed["env"]["iclr26_threads"] == 3 == read_json(res.run_dir / "env.json")["iclr26_threads"]


def test_trained_models_are_cached_per_thread_count(tmp_path, monkeypatch):
    """A model trained with another torch thread count ends elsewhere: trained artefacts (zoo models, tuned lrs) live in
    one folder per count, so a run never reuses what a run with another count built; converted weights do not."""
    import torch

    from iclr26.core.paths import cache_dir, trained_cache_dir
    from iclr26.lm import zoo

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one, zoo_one = trained_cache_dir(), zoo.folder("facts-micro-llama")
        torch.set_num_threads(2)
        two, zoo_two = trained_cache_dir(), zoo.folder("facts-micro-llama")
    finally:
        torch.set_num_threads(before)
    assert (one, two) == (tmp_path / "threads-1", tmp_path / "threads-2") and one.is_dir() and two.is_dir()
    assert zoo_one.parent == one / "zoo" and zoo_two.parent == two / "zoo" and zoo_one.name == zoo_two.name
    assert cache_dir() == tmp_path


def test_verdict_is_computed_not_written(fake_paper, tmp_path, monkeypatch):
    monkeypatch.setitem(fake_paper.CONFIGS, "quick", type(fake_paper.CONFIGS["quick"])(effect=-1.0))
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    assert res.verdicts[0]["verdict"] == "not reproduced"
    assert status_of("fake-paper", tmp_path) == "not reproduced (quick)"


def test_smoke_runs_are_not_evidence(fake_paper, tmp_path):
    run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert status_of("fake-paper", tmp_path) == "method (smoke run only)"


@pytest.mark.parametrize("seeds", [(0, 0, 0), (1, 2, 1)])
def test_repeated_seeds_are_rejected(fake_paper, tmp_path, seeds):
    with pytest.raises(UserError, match="more than once"):
        run_paper("fake-paper", seeds=seeds, out=tmp_path)
    assert fake_paper.calls == []


def test_negative_seeds_are_rejected(fake_paper, tmp_path):
    with pytest.raises(UserError, match="non-negative"):
        run_paper("fake-paper", seeds=(0, -1), out=tmp_path)


def test_a_misspelt_metric_is_an_error_at_the_end_of_a_run_and_loses_nothing(fake_paper, tmp_path, monkeypatch):
    monkeypatch.setattr(fake_paper, "CLAIMS", [Claim("typo", "x", (Check("methd", ">", "baseline"),))])
    with pytest.raises(MissingMetricError, match="methd"):
        run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert len(list(tmp_path.rglob("seeds/seed-*.json"))) == 2  # the measurements are kept
    assert list(tmp_path.rglob("metrics.json")) and not list(tmp_path.rglob("verdicts.json"))


def test_a_nan_seed_is_a_failed_seed(fake_paper, tmp_path, monkeypatch):
    real = fake_paper.run

    def nan_on_seed_1(cfg, seed, ctx):
        out = real(cfg, seed, ctx)
        return {**out, "method": float("nan")} if seed == 1 else out

    monkeypatch.setattr(fake_paper, "run", nan_on_seed_1)
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    chk = res.verdicts[0]["checks"][0]
    assert (chk["n"], chk["n_total"]) == (2, 3) and res.verdicts[0]["verdict"] == "inconclusive"
    assert res.aggregate["method"]["failed"] == 1


def test_complete_run_is_skipped_unless_forced(fake_paper, tmp_path):
    run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert fake_paper.calls == [0, 1]
    again = run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert again.skipped and not again.stale
    assert fake_paper.calls == [0, 1]
    run_paper("fake-paper", scale="smoke", out=tmp_path, force=True)
    assert fake_paper.calls == [0, 1, 0, 1]


def test_a_run_made_by_other_code_is_flagged_and_its_seeds_are_never_mixed(fake_paper, tmp_path, monkeypatch):
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    monkeypatch.setattr(runs_mod, "code_of", lambda card: "other-code")
    monkeypatch.setattr(folders_mod, "code_of", lambda card: "other-code")
    again = run_paper("fake-paper", scale="quick", out=tmp_path)
    assert again.skipped and again.stale and is_stale(res.run_dir)
    assert "stale" in status_of("fake-paper", tmp_path)
    # adding a seed resumes the folder: the seeds of the old code are rerun, not mixed in, and kept aside
    run_paper("fake-paper", scale="quick", seeds=(0, 1, 2, 3), out=tmp_path)
    assert fake_paper.calls == [0, 1, 2, 0, 1, 2, 3]
    assert (res.run_dir / "seeds" / f"seed-0.code-{res.info['code']}.json").exists()
    assert read_json(res.run_dir / "seeds" / "seed-0.json")["env"]["code"] == "other-code"


def test_the_paper_version_enters_the_run_key(fake_paper, tmp_path, monkeypatch):
    a = run_paper("fake-paper", scale="smoke", out=tmp_path).run_dir
    monkeypatch.setattr(fake_paper, "VERSION", 2, raising=False)
    b = run_paper("fake-paper", scale="smoke", out=tmp_path).run_dir
    assert a != b


def test_interrupted_run_resumes_and_its_log_was_written_as_it_went(fake_paper, tmp_path):
    real_run = fake_paper.run

    def crash_on_seed_2(cfg, seed, ctx):
        if seed == 2:
            raise KeyboardInterrupt
        return real_run(cfg, seed, ctx)

    fake_paper.run = crash_on_seed_2
    with pytest.raises(KeyboardInterrupt):
        run_paper("fake-paper", scale="quick", out=tmp_path)
    log = next(tmp_path.rglob("log.txt")).read_text()
    assert "[fake-paper seed 1] running" in log and "seed 1] finished" in log  # kept although the run died
    assert fake_paper.calls == [0, 1]
    fake_paper.run = real_run
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    assert fake_paper.calls == [0, 1, 2]  # seeds 0 and 1 were not run again
    assert sorted(res.per_seed) == [0, 1, 2]
    assert not list(res.run_dir.rglob("*.tmp"))
    assert res.info["resumed_seeds"] == [0, 1]  # their time is not in this invocation's wall time: said so
    from iclr26.core.docs import claims_table
    from iclr26.core.results import build_record

    rec = build_record(res.run_dir)
    assert rec["resumed_seeds"] == [0, 1]
    assert "leaves out seed(s) 0, 1" in claims_table("fake-paper", rec, rec["version"])


def test_a_corrupt_seed_file_names_the_file_and_the_fix(fake_paper, tmp_path):
    res = run_paper("fake-paper", scale="smoke", out=tmp_path)
    bad = res.run_dir / "seeds" / "seed-1.json"
    bad.write_text('{"seed": 1, "metrics": {')
    (res.run_dir / "verdicts.json").unlink()
    with pytest.raises(UserError, match=r"seed-1\.json.*--force"):
        run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert run_paper("fake-paper", scale="smoke", out=tmp_path, force=True).verdicts


def test_an_unwritable_folder_is_a_clear_error(fake_paper, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(UserError, match="cannot write to .*not-a-folder"):
        run_paper("fake-paper", scale="smoke", out=blocker)

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonio_mod.tempfile, "mkstemp", full_disk)
    with pytest.raises(UserError, match="disk is full"):
        run_paper("fake-paper", scale="smoke", out=tmp_path / "runs")


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    p = tmp_path / "x.json"
    atomic_write_text(p, "old")

    with pytest.raises(TypeError):
        atomic_write_text(p, 123)  # type: ignore[arg-type]
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["x.json"]


def test_bad_scale_and_no_reproduction(fake_paper, tmp_path, monkeypatch):
    from iclr26.core import registry

    with pytest.raises(UserError, match="scale"):
        run_paper("fake-paper", scale="huge", out=tmp_path)
    # every listed paper has a reproduction now: a registered card without a module stands for one that has none
    card = registry.PaperCard("no-card-paper", "No Card", "NONE", "https://example.org", "000", "test", "test")
    monkeypatch.setitem(registry.PAPERS, "no-card-paper", card)
    with pytest.raises(UserError, match="no reproduction yet"):
        run_paper("no-card-paper", out=tmp_path)
    with pytest.raises(UserError, match="at least one seed"):
        run_paper("fake-paper", seeds=(), out=tmp_path)
    with pytest.raises(UserError, match="does not take --model"):
        run_paper("fake-paper", model="gpt2", out=tmp_path)


def test_overrides_change_the_config_and_the_run_key(fake_paper, tmp_path):
    a = run_paper("fake-paper", scale="smoke", out=tmp_path)
    b = run_paper("fake-paper", scale="smoke", out=tmp_path, overrides={"effect": "-1"})
    assert a.run_dir != b.run_dir and b.verdicts[0]["verdict"] != "reproduced"
    assert read_json(b.run_dir / "config.json")["config"]["effect"] == -1.0
    with pytest.raises(UserError, match="no field 'efect'.*effect"):
        run_paper("fake-paper", scale="smoke", out=tmp_path, overrides={"efect": "1"})
    with pytest.raises(UserError, match="expected a value of type float"):
        run_paper("fake-paper", scale="smoke", out=tmp_path, overrides={"effect": "big"})


def test_a_second_process_waits_for_the_lock_instead_of_building_twice(tmp_path):
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom iclr26.core.locks import file_lock\n"
         f"with file_lock({str(lock)!r}, 'x'):\n    print('held', flush=True)\n    time.sleep(1.5)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    from iclr26.core.locks import file_lock

    t0 = time.perf_counter()
    with file_lock(lock, "x", quiet=True):
        waited = time.perf_counter() - t0
    holder.wait()
    assert waited > 0.5


def test_threads_wait_on_the_run_folder_lock_and_the_second_reuses_the_first_run(fake_paper, tmp_path):
    real = fake_paper.run

    def slow(cfg, seed, ctx):
        time.sleep(0.2)
        return real(cfg, seed, ctx)

    fake_paper.run = slow
    results = []
    workers = [threading.Thread(target=lambda: results.append(run_paper("fake-paper", "smoke", out=tmp_path,
                                                                        quiet=True))) for _ in range(2)]  # fmt: skip
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(fake_paper.calls) == [0, 1] and sorted(r.skipped for r in results) == [False, True]


def test_torch_threads_sets_and_restores_also_on_error(monkeypatch):
    import torch

    from iclr26.core.threads import default_threads, torch_threads

    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with torch_threads(target):
        assert torch.get_num_threads() == target
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="boom"), torch_threads(target):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="thread count"), torch_threads(0):
        pass
    monkeypatch.delenv("ICLR26_THREADS", raising=False)
    assert default_threads() == 1
    monkeypatch.setenv("ICLR26_THREADS", "2")
    assert default_threads() == 2
    with torch_threads():
        assert torch.get_num_threads() == 2
    monkeypatch.setenv("ICLR26_THREADS", "two")
    with pytest.raises(UserError, match="ICLR26_THREADS"):
        default_threads()


def test_a_run_uses_the_configured_threads(fake_paper, tmp_path, monkeypatch):
    import torch

    seen = []
    real = fake_paper.run
    monkeypatch.setattr(fake_paper, "run", lambda cfg, seed, ctx: (seen.append(torch.get_num_threads()),
                                                                   real(cfg, seed, ctx))[1])  # fmt: skip
    monkeypatch.setenv("ICLR26_THREADS", "2")
    run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert seen == [2, 2]


def test_cached_json_computes_once_and_writes_nothing_on_failure(tmp_path):
    from iclr26.core.locks import cached_json

    path, calls = tmp_path / "zoo" / "tuned.json", []

    def compute():
        calls.append(1)
        return {"lr": 3e-4, "scores": {"3e-4": 0.5}}

    def broken():
        raise RuntimeError("tuning crashed")

    path.parent.mkdir()
    with pytest.raises(RuntimeError):
        cached_json(path, "a test tuning", broken, quiet=True)
    assert not path.exists() and not path.with_suffix(".tmp").exists()  # a crash leaves nothing to be reused
    first = cached_json(path, "a test tuning", compute, quiet=True)
    again = cached_json(path, "a test tuning", compute, quiet=True)
    assert first == again == {"lr": 3e-4, "scores": {"3e-4": 0.5}}
    assert len(calls) == 1  # the second call reads the file
    assert not path.with_suffix(".tmp").exists()
