import json

import pytest

from iclr26.core.runs import atomic_write_text, run_paper, status_of


def test_run_folder_contents_and_verdicts(fake_paper, tmp_path):
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    for name in ("config.json", "env.json", "metrics.json", "verdicts.json", "log.txt"):
        assert (res.run_dir / name).exists(), name
    v = json.loads((res.run_dir / "verdicts.json").read_text())
    assert v["seeds"] == [0, 1, 2] and v["claims"][0]["verdict"] == "reproduced"
    assert res.run_dir.parent.name == "fake-paper" and res.run_dir.name.startswith("quick-")
    assert status_of("fake-paper", tmp_path) == "reproduced"


def test_verdict_is_computed_not_written(fake_paper, tmp_path, monkeypatch):
    monkeypatch.setitem(fake_paper.CONFIGS, "quick", type(fake_paper.CONFIGS["quick"])(effect=-1.0))
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    assert res.verdicts[0]["verdict"] == "not reproduced"
    assert status_of("fake-paper", tmp_path) == "not reproduced"


def test_complete_run_is_skipped_unless_forced(fake_paper, tmp_path):
    run_paper("fake-paper", scale="smoke", out=tmp_path)
    assert fake_paper.calls == [0, 1]
    assert run_paper("fake-paper", scale="smoke", out=tmp_path).skipped
    assert fake_paper.calls == [0, 1]
    run_paper("fake-paper", scale="smoke", out=tmp_path, force=True)
    assert fake_paper.calls == [0, 1, 0, 1]


def test_interrupted_run_resumes_from_finished_seeds(fake_paper, tmp_path):
    real_run = fake_paper.run

    def crash_on_seed_2(cfg, seed, ctx):
        if seed == 2:
            raise KeyboardInterrupt
        return real_run(cfg, seed, ctx)

    fake_paper.run = crash_on_seed_2
    with pytest.raises(KeyboardInterrupt):
        run_paper("fake-paper", scale="quick", out=tmp_path)
    assert fake_paper.calls == [0, 1]
    fake_paper.run = real_run
    res = run_paper("fake-paper", scale="quick", out=tmp_path)
    assert fake_paper.calls == [0, 1, 2]  # seeds 0 and 1 were not run again
    assert sorted(res.per_seed) == [0, 1, 2]
    assert not list(res.run_dir.rglob("*.tmp"))


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    p = tmp_path / "x.json"
    atomic_write_text(p, "old")

    with pytest.raises(TypeError):
        atomic_write_text(p, 123)  # type: ignore[arg-type]
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["x.json"]


def test_bad_scale_and_no_reproduction(fake_paper, tmp_path):
    with pytest.raises(ValueError, match="scale"):
        run_paper("fake-paper", scale="huge", out=tmp_path)
    with pytest.raises(LookupError, match="no reproduction yet"):
        run_paper("gf-screen", out=tmp_path)
    with pytest.raises(ValueError, match="at least one seed"):
        run_paper("fake-paper", seeds=(), out=tmp_path)


def test_torch_threads_sets_and_restores_also_on_error():
    import torch

    from iclr26.core.threads import torch_threads

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
