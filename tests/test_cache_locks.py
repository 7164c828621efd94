"""Two processes (here: threads, each with its own lock handle) that want the same cached model build it once: the
second waits on the file lock and reuses the first one's result; a failed build leaves no stray folder."""

import threading
import time
from pathlib import Path

import pytest

from iclr26.core.cache import write_digest
from iclr26.lm import loading, zoo


def _race(fn, n=2):
    errors, workers = [], []
    for _ in range(n):

        def target():
            try:
                fn()
            except Exception as exc:  # surfaced below
                errors.append(exc)

        workers.append(threading.Thread(target=target))
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


def test_smollm2_is_converted_once_when_two_loaders_race(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    calls = []

    def fake_convert(out):
        calls.append(out)
        time.sleep(0.5)
        out.mkdir(parents=True)
        (out / "model.safetensors").write_bytes(b"x")
        write_digest(out)  # as the real converter does

    monkeypatch.setattr(loading, "_convert_smollm2", fake_convert)
    _race(loading.smollm2_folder)
    assert len(calls) == 1
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["smollm2-135m", "smollm2-135m.lock"]
    (tmp_path / "models" / "smollm2-135m" / "model.safetensors").write_bytes(b"")  # truncated by a crash
    loading.smollm2_folder()
    assert len(calls) == 2  # found unusable, moved aside, converted again
    assert any(".corrupt-" in p.name for p in (tmp_path / "models").iterdir())


def test_a_failed_conversion_leaves_no_stray_files(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    monkeypatch.setattr(loading, "smollm2_gguf_folder", lambda: tmp_path)

    class Boom(RuntimeError):
        pass

    class Fake:
        config = None

        def state_dict(self):
            return {}

        def load_state_dict(self, sd):
            pass

        def save_pretrained(self, folder):  # the big weights file is written, then the tokenizer fails
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / "model.safetensors").write_bytes(b"x" * 1000)

    class FakeTok:
        def save_pretrained(self, folder):
            raise Boom("disk full")

    monkeypatch.setattr(loading.AutoTokenizer, "from_pretrained", lambda *a, **k: FakeTok())
    monkeypatch.setattr(loading.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: Fake())
    monkeypatch.setattr(loading.AutoModelForCausalLM, "from_config", lambda *a, **k: Fake())
    monkeypatch.setattr(loading.importlib.util, "find_spec", lambda name: object())
    with pytest.raises(Boom):
        loading.smollm2_folder()
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["smollm2-135m.lock"]


def test_a_zoo_model_is_trained_once_when_two_loaders_race(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    calls = []

    def fake_train(spec, seed, out, progress):
        calls.append(spec.name)
        time.sleep(0.5)
        out.mkdir(parents=True)
        (out / "zoo.json").write_text("{}")
        write_digest(out)

    monkeypatch.setattr(zoo, "_train", fake_train)
    _race(lambda: zoo.ensure_trained("facts-micro-llama", progress=False))
    assert calls == ["facts-micro-llama"]
