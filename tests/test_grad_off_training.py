"""Training must work where the caller switched autograd off globally (``torch.set_grad_enabled(False)``, common in
interpretability notebooks), and a failed zoo training must not leave its temporary folder in the cache."""

import pytest
import torch

from iclr26.lenses import SelectiveTuningConfig, selective_finetune
from iclr26.lm import zoo
from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer

TEXTS = ["tom has two cups .", "ann has one cup .", "tom gets three more cups ."]


@pytest.fixture
def grad_off():
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        yield
    finally:
        torch.set_grad_enabled(prev)


@pytest.fixture
def nano_zoo(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    spec = zoo.ZooSpec(
        "facts-nano-test",
        "llama",
        model=dict(d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, max_len=24),
        world_kwargs=dict(n_entities=4, subject_words=2),
        train=dict(steps=3, batch_size=4, lr=1e-2, warmup=1, seq_len=24),
    )
    monkeypatch.setitem(zoo.ZOO, spec.name, spec)
    return spec


def test_zoo_trains_with_autograd_off(grad_off, nano_zoo):
    model, _ = zoo.load(nano_zoo.name, progress=False)
    assert zoo.info(nano_zoo.name)["final_loss"] > 0
    assert not torch.is_grad_enabled()  # the caller's setting is restored
    assert not list(zoo.folder(nano_zoo.name).parent.glob("*.tmp*"))


def test_failed_zoo_training_leaves_no_temporary_folder(nano_zoo, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(zoo, "train_lm", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        zoo.load(nano_zoo.name, progress=False)
    parent = zoo.folder(nano_zoo.name).parent
    assert not list(parent.glob("*.tmp*")) and not zoo.folder(nano_zoo.name).exists()


def test_selective_finetune_with_autograd_off(grad_off):
    tok = build_word_tokenizer(TEXTS)
    model = tiny_model("llama", vocab_size=len(tok), d_model=16, n_layers=2, n_heads=2, max_len=24)
    before = model.model.layers[1].mlp.down_proj.weight.clone()
    cfg = SelectiveTuningConfig(strategy="last", k=1, epochs=1, lr=1e-2, batch_size=3)
    res = selective_finetune(model, tok, [("", t) for t in TEXTS], cfg, progress=False)
    assert res.losses and not torch.equal(before, model.model.layers[1].mlp.down_proj.weight)
    assert not torch.is_grad_enabled()
