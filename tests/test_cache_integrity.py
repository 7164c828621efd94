"""Cache and unit files are trusted only after their content digest checks: a truncated or damaged file is reported in
one line, moved aside and rebuilt (giving the same result), never used half-read; nothing in the sources unpickles."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from iclr26.core import cache
from iclr26.core.locks import cached_json
from iclr26.core.units import cached_unit

SRC = Path(__file__).resolve().parents[1] / "src"


def _build_counter(value):
    calls = []

    def build():
        calls.append(1)
        return value

    return build, calls


@pytest.mark.parametrize("damage", ["truncate", "flip", "drop digest", "garbage"])
def test_a_damaged_unit_is_moved_aside_and_rebuilt_identically(tmp_path, damage, capsys):
    path = tmp_path / "u.pt"
    build, calls = _build_counter({"w": torch.arange(6.0).reshape(2, 3), "steps": 7})
    first = cached_unit(path, build, "a unit")
    assert cached_unit(path, build, "a unit")["steps"] == 7 and len(calls) == 1  # read back, not rebuilt
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        path.write_bytes(raw[:-9] + bytes([raw[-9] ^ 1]) + raw[-8:])
    elif damage == "drop digest":
        cache.digest_path(path).unlink()
    else:  # garbage with a matching digest: verified, but it does not parse
        path.write_bytes(b"not a torch file")
        cache.write_digest(path)
    again = cached_unit(path, build, "a unit")
    assert len(calls) == 2 and torch.equal(again["w"], first["w"]) and again["steps"] == 7
    err = capsys.readouterr().err
    assert err.count("is unusable") == 1 and "u.pt" in err and "rebuilt" in err
    aside = [p for p in tmp_path.glob("u.pt.corrupt-*") if not p.name.endswith(".sha256")]
    assert len(aside) == 1  # kept aside for inspection, never read again


def test_a_truncated_json_cache_is_rebuilt(tmp_path, capsys):
    path = tmp_path / "tuning.json"
    build, calls = _build_counter({"lr": 0.001, "grid": [1, 2, 3]})
    assert cached_json(path, "a tuning", build) == {"lr": 0.001, "grid": [1, 2, 3]}
    path.write_text(path.read_text()[:5])
    assert cached_json(path, "a tuning", build) == {"lr": 0.001, "grid": [1, 2, 3]} and len(calls) == 2
    assert "tuning.json is unusable" in capsys.readouterr().err
    assert json.loads(path.read_text()) == {"lr": 0.001, "grid": [1, 2, 3]}


def test_a_folder_digest_names_the_damaged_file(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"abc")
    (folder / "sub").mkdir()
    (folder / "sub" / "b.json").write_text("{}")
    cache.write_digest(folder)
    assert cache.problem(folder) == ""
    (folder / "sub" / "b.json").write_text("{ }")
    cache._VERIFIED.clear()
    assert "sub/b.json" in cache.problem(folder)


@pytest.mark.parametrize("damage", ["truncate", "drop digest", "extra file"])
def test_a_damaged_model_folder_is_moved_aside_and_rebuilt(tmp_path, damage, capsys):
    calls = []

    def build(tmp):  # a model folder: weights, a config, a tokenizer subfolder
        calls.append(1)
        torch.save({"w": torch.arange(4.0)}, tmp / "weights.pt")
        (tmp / "tokenizer").mkdir()
        (tmp / "tokenizer" / "vocab.json").write_text('{"a": 0, "b": 1}')
        return {"acc": 0.75, "steps": 3}

    folder = tmp_path / "zoo" / "m"
    assert cache.cached_folder(folder, "a model", build) == {"acc": 0.75, "steps": 3}
    assert cache.cached_folder(folder, "a model", build)["steps"] == 3 and len(calls) == 1  # verified, not rebuilt
    vocab = folder / "tokenizer" / "vocab.json"
    if damage == "truncate":
        vocab.write_text('{"a": 0')
    elif damage == "drop digest":  # a folder written by older code or an interrupted build
        (folder / cache.FOLDER_DIGEST).unlink()
    else:
        (folder / "stray.bin").write_bytes(b"x")
    assert cache.cached_folder(folder, "a model", build) == {"acc": 0.75, "steps": 3} and len(calls) == 2
    err = capsys.readouterr().err
    assert err.count("is unusable") == 1 and str(folder) in err
    assert json.loads(vocab.read_text()) == {"a": 0, "b": 1} and not (folder / "stray.bin").exists()
    assert len(list(folder.parent.glob("m.corrupt-*"))) == 1 and not list(folder.parent.glob(".m.*.tmp"))


def test_a_model_folder_build_that_fails_leaves_nothing_trusted(tmp_path):
    def fail(tmp):
        (tmp / "half.bin").write_bytes(b"x")
        raise RuntimeError("killed mid-training")

    folder = tmp_path / "m"
    with pytest.raises(RuntimeError, match="killed"):
        cache.cached_folder(folder, "a model", fail)
    assert not folder.exists() and not list(tmp_path.glob(".m.*"))
    assert cache.cached_folder(folder, "a model", lambda tmp: {"ok": 1}) == {"ok": 1}


def test_a_unit_written_by_an_interrupted_process_is_never_trusted(tmp_path):
    """A crash between writing the data and its digest leaves a file without a digest: it is rebuilt."""
    path = tmp_path / "u.pt"
    torch.save({"w": torch.zeros(2)}, path)  # as old code, or a crash before the digest
    build, calls = _build_counter({"w": torch.ones(2)})
    assert torch.equal(cached_unit(path, build, "a unit")["w"], torch.ones(2)) and calls == [1]


def test_a_truncated_cached_unit_gives_the_same_metrics_on_rebuild(fake_paper, tmp_path, monkeypatch):
    """End to end through the harness: a paper whose training is a cached unit; truncate the unit, rerun: the rebuilt
    unit gives identical metrics (the build starts from the seed, never from the caller's state)."""
    from iclr26.core.paths import trained_cache_dir
    from iclr26.core.runs import run_paper

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))

    def run(cfg, seed, ctx):
        def train():
            g = torch.Generator().manual_seed(seed)
            w = torch.randn(8, generator=g)
            for _ in range(50):
                w = w - 0.1 * (w - 1.0) + 0.01 * torch.randn(8, generator=g)
            return {"w": w}

        unit = cached_unit(trained_cache_dir() / "fake" / f"arm-{seed}.pt", train, f"seed {seed}'s arm")
        return {"method": float(unit["w"].mean()), "baseline": 0.5}

    fake_paper.run = run
    first = run_paper("fake-paper", scale="smoke", out=tmp_path / "runs", quiet=True)
    unit = sorted((tmp_path / "cache").rglob("arm-0.pt"))[0]
    unit.write_bytes(unit.read_bytes()[:64])
    again = run_paper("fake-paper", scale="smoke", out=tmp_path / "runs", force=True, quiet=True)
    assert again.per_seed == first.per_seed
    assert list(unit.parent.glob("arm-0.pt.corrupt-*"))


def test_no_pickle_anywhere_a_file_is_read():
    """Tensors through weights_only=True (or safetensors), everything else JSON/npz without object arrays."""
    banned = re.compile(r"weights_only\s*=\s*False|pickle\.loads?\(|allow_pickle\s*=\s*True|joblib\.load|dill\.load")
    bare = re.compile(r"torch\.load\((?![^)]*weights_only\s*=\s*True)")
    hits = []
    for p in SRC.rglob("*.py"):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if banned.search(line) or bare.search(line):
                hits.append(f"{p.relative_to(SRC)}:{i}: {line.strip()}")
    assert hits == []


def test_a_model_folder_that_asks_for_remote_code_is_refused(tmp_path):
    from iclr26.core.errors import UserError
    from iclr26.lm.loading import load_model

    folder = tmp_path / "custom"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "auto_map": {"AutoModel": "m.Model"}}))
    (folder / "m.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(UserError, match="trust_remote_code=False and never runs such code"):
        load_model(str(folder))


def test_no_source_turns_remote_code_on():
    hits = [str(p) for p in SRC.rglob("*.py") if re.search(r"trust_remote_code\s*=\s*True", p.read_text())]
    assert hits == []


# every module that keeps something under the cache goes through core.cache / core.units (digest, lock, rebuild);
# these only look a path up (a data file the user places, the path helpers themselves)
_CACHE_LOOKUPS_ONLY = {"iclr26/core/paths.py", "iclr26/agents/seekbench/official.py"}


def test_every_module_writing_to_the_cache_verifies_what_it_reads():
    verified = re.compile(r"core\.cache import|\.cache import|core\.units import|\.units import|cached_json|_usable")
    bare = []
    for f in (SRC / "iclr26").rglob("*.py"):
        rel = f.relative_to(SRC).as_posix()
        text = f.read_text(encoding="utf-8")
        if re.search(r"\bcache_dir\(\)", text) and rel not in _CACHE_LOOKUPS_ONLY and not verified.search(text):
            bare.append(rel)
    assert not bare, f"these modules read or write the cache without a digest check: {bare}"


def test_the_ltpo_tiny_reasoner_folder_is_rebuilt_when_damaged(tmp_path, monkeypatch, capsys):
    from iclr26.latent.ltpo.world import ModArithWorld
    from iclr26.lm.tiny import tiny_model
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers.ltpo import tinymodel

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    calls = []

    def fake_train(world, k, seed, recipe, progress):  # a stand-in for minutes of training
        calls.append(1)
        tok = build_word_tokenizer(["a b c d"])
        return tiny_model("llama", seed=seed, vocab_size=len(tok), d_model=16, n_layers=1, n_heads=2), tok, {"ok": 1}

    monkeypatch.setattr(tinymodel, "_train", fake_train)
    world = ModArithWorld()
    m1, _, info = tinymodel.load_reasoner(world, 2, progress=False)
    first = {n: t.clone() for n, t in m1.state_dict().items()}  # weights may be memory-mapped from the file
    assert info["ok"] == 1 and "train_s" in info and len(calls) == 1
    tinymodel.load_reasoner(world, 2, progress=False)
    assert len(calls) == 1  # verified and reused
    (folder,) = [p for p in (tmp_path / "cache").rglob("ltpo-modarith-*") if p.is_dir()]
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])  # a half-copied file
    m2, _, _ = tinymodel.load_reasoner(world, 2, progress=False)
    assert len(calls) == 2 and "is unusable" in capsys.readouterr().err
    for (n, a), (_, b) in zip(first.items(), m2.state_dict().items(), strict=True):
        assert torch.equal(a, b), n


def _slow_folder_build(tmp):
    import time as _t

    _t.sleep(0.5)  # long enough for the other process to find the folder bad too
    (tmp / "w.bin").write_bytes(b"new")
    return {"pid": 0}


def _use_folder(folder):
    return cache.cached_folder(Path(folder), "a shared model", _slow_folder_build, quiet=True)


def test_two_processes_meeting_a_damaged_folder_rebuild_it_once(tmp_path):
    """The race of two seeds' workers on a folder written by older code: only the lock holder moves it aside."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    folder = tmp_path / "zoo" / "m"
    folder.mkdir(parents=True)
    (folder / "w.bin").write_bytes(b"old")  # no digest: written by older code
    assert cache.read_checked(folder, lambda p: 1, move_aside=False) is None and folder.exists()
    with ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as pool:
        got = list(pool.map(_use_folder, [str(folder)] * 2))
    assert got == [{"pid": 0}, {"pid": 0}]
    assert (folder / "w.bin").read_bytes() == b"new" and not cache.problem(folder)
    assert len(list(folder.parent.glob("m.corrupt-*"))) == 1
    cache.quarantine(tmp_path / "gone", "a test", log=lambda m: None)  # an entry already moved aside: no error
