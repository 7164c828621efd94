"""The zoo: named tiny models trained from scratch on a world, deterministic from a seed, cached on disk.

``load("facts-tiny")`` trains (first call, with a progress bar) or loads (later calls, under a second) a model and
its tokenizer. Fact models also come with their world: ``world_of("facts-tiny", seed)``. The real pretrained
``smollm2-135m`` is in the zoo too. Models are cached under ``$ICLR26_CACHE`` (default ``~/.cache/iclr26``)/zoo.

Micro variants (``facts-micro-<arch>``) train in seconds and are what the tests use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

from ..core.locks import file_lock
from ..core.paths import trained_cache_dir
from ..core.threads import torch_threads
from ..worlds.facts import FactWorld
from .loading import load_model, load_smollm2
from .tiny import tiny_config
from .tokenizer import build_bpe_tokenizer, build_word_tokenizer
from .train import TrainConfig, train_lm


@dataclass(frozen=True)
class ZooSpec:
    name: str
    arch: str = "llama"
    model: dict = field(default_factory=dict)  # tiny_config kwargs (vocab_size is set from the tokenizer)
    world: str = "facts"  # "facts" or "text"
    world_kwargs: dict = field(default_factory=dict)  # FactWorld kwargs, or {"domains": [...], "max_docs": n}
    train: dict = field(default_factory=dict)  # TrainConfig kwargs
    checkpoints: tuple[int, ...] = ()  # steps at which to keep a copy (for training-dynamics studies)
    description: str = ""

    def key(self, seed: int) -> str:
        blob = json.dumps(dataclasses.asdict(self), sort_keys=True).encode()
        return f"{self.name}-s{seed}-{hashlib.sha1(blob).hexdigest()[:8]}-w{WORLD_VERSION}"


ZOO: dict[str, ZooSpec] = {}
WORLD_VERSION = 3  # bumped whenever the worlds' generators change, so cached models are retrained


def register(spec: ZooSpec) -> ZooSpec:
    ZOO[spec.name] = spec
    return spec


for _arch in ("llama", "gpt2", "qwen2"):
    register(
        ZooSpec(
            f"facts-micro-{_arch}",
            _arch,
            model=dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2 if _arch != "gpt2" else None, max_len=32),
            world_kwargs=dict(n_entities=12, subject_words=3),
            train=dict(steps=400, batch_size=32, lr=1e-2, warmup=20, seq_len=24),
            description="micro fact model for tests (~seconds to train)",
        )
    )
register(
    ZooSpec(
        "facts-small",
        "llama",
        model=dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, max_len=32),
        world_kwargs=dict(n_entities=48, subject_words=3),
        train=dict(steps=800, batch_size=32, lr=3e-3, warmup=20, seq_len=24),
        description="smallest fact model here that locate-then-edit methods can edit (~20 s to train; editing tests)",
    )
)
register(
    ZooSpec(
        "facts-tiny",
        "llama",
        model=dict(d_model=128, n_layers=4, n_heads=4, n_kv_heads=2, max_len=32),
        world_kwargs=dict(n_entities=375, subject_words=3),
        train=dict(steps=2500, batch_size=64, lr=1e-3, warmup=100, seq_len=24),
        description="~1M-parameter llama that memorises a 3,000-fact world (375 three-word subjects × 8 relations)",
    )
)


def world_of(name: str, seed: int = 0) -> FactWorld:
    spec = _spec(name)
    if spec.world != "facts":
        raise ValueError(f"zoo model {name!r} was trained on {spec.world!r}, not on a fact world")
    return FactWorld(seed=seed, **spec.world_kwargs)


def _spec(name: str) -> ZooSpec:
    if name not in ZOO:
        import difflib

        close = difflib.get_close_matches(name, list(ZOO) + ["smollm2-135m"], n=3)
        raise KeyError(
            f"no zoo model {name!r}"
            + (f"; did you mean {', '.join(close)}?" if close else "")
            + f" Known: {', '.join(sorted(ZOO))}, smollm2-135m."
        )
    return ZOO[name]


def _texts(spec: ZooSpec, seed: int) -> tuple[list[str], list[str]]:
    """(training texts, texts that define the vocabulary)."""
    if spec.world == "facts":
        w = world_of(spec.name, seed)
        return w.sentences(), w.vocabulary_texts()
    from ..worlds.text import load_domain, train_split

    docs: list[str] = []
    for d in spec.world_kwargs.get("domains", ["wikipedia"]):
        docs.extend(train_split(load_domain(d))[: spec.world_kwargs.get("max_docs", 10_000)])
    return docs, docs


def folder(name: str, seed: int = 0) -> Path:
    return trained_cache_dir() / "zoo" / _spec(name).key(seed)


def load(name: str, seed: int = 0, checkpoint: int | None = None, progress: bool = True):
    """(model, tokenizer) of a zoo model (trained and cached on first use), or of any local HF model.

    A name that is not in the zoo but is a local folder or looks like a hub name (``org/model``) is handed to
    :func:`iclr26.lm.loading.load_model`, which never downloads.
    """
    if name in ("smollm2-135m", "smollm2"):
        return load_smollm2()
    if name not in ZOO and (Path(name).expanduser().exists() or "/" in name):
        return load_model(name)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    spec = _spec(name)
    out = ensure_trained(name, seed, progress)
    sub = out if checkpoint is None else out / f"ckpt-{checkpoint}"
    if not sub.exists():
        raise ValueError(f"{name} has no checkpoint {checkpoint}; it keeps {list(spec.checkpoints)}")
    tok = PreTrainedTokenizerFast.from_pretrained(out / "tokenizer")
    model = AutoModelForCausalLM.from_pretrained(sub, dtype=torch.float32).eval()
    return model, tok


def ensure_trained(name: str, seed: int = 0, progress: bool = True) -> Path:
    """The folder of a zoo model, trained first if it is not cached yet.

    One process trains; another that wants the same model waits on the lock, then uses what the first one built.
    """
    spec = _spec(name)
    out = folder(name, seed)
    if not _usable(out):
        with file_lock(out.with_name(out.name + ".lock"), f"the zoo model {name}"):
            if not _usable(out):
                _train(spec, seed, out, progress)
    return out


def _usable(out: Path) -> bool:
    """A complete zoo folder whose files match their digest; a damaged one is moved aside (and then retrained)."""
    from ..core.cache import problem, quarantine

    if not out.exists():
        return False
    why = "it has no zoo.json (an interrupted build)" if not (out / "zoo.json").exists() else problem(out)
    if why:
        quarantine(out, why)
        return False
    return True


def info(name: str, seed: int = 0) -> dict:
    """What the zoo recorded when training: parameters, final loss, seconds."""
    path = folder(name, seed) / "zoo.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _train(spec: ZooSpec, seed: int, out: Path, progress: bool) -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    texts, vocab_texts = _texts(spec, seed)
    if spec.world == "facts":
        tok = build_word_tokenizer(vocab_texts, max_vocab=spec.world_kwargs.get("max_vocab"))
    else:  # real text: a small byte-level BPE trained on the same documents
        tok = build_bpe_tokenizer(vocab_texts, vocab_size=spec.world_kwargs.get("vocab_size", 2048))
    torch.manual_seed(seed)
    cfg = tiny_config(spec.arch, vocab_size=len(tok), **spec.model)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    keep = set(spec.checkpoints)

    def callback(step, loss):
        if step + 1 in keep:
            model.save_pretrained(tmp / f"ckpt-{step + 1}")

    t0 = time.time()
    tcfg = TrainConfig(seed=seed, mode="sentences" if spec.world == "facts" else "stream", **spec.train)
    try:  # grad on even if the caller switched autograd off; the temporary folder never outlives a failure
        with torch.enable_grad(), torch_threads():  # ICLR26_THREADS (default 1): see iclr26.core.threads
            losses = train_lm(model, tok, texts, tcfg, callback=callback, progress=progress, desc=f"zoo {spec.name}")
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp / "tokenizer")
        meta = {
            "spec": dataclasses.asdict(spec),
            "seed": seed,
            "seconds": time.time() - t0,
            "n_params": sum(p.numel() for p in model.parameters()),
            "final_loss": sum(losses[-20:]) / len(losses[-20:]),
        }
        (tmp / "zoo.json").write_text(json.dumps(meta, indent=2))
        from ..core.cache import write_digest

        write_digest(tmp)  # a digest of every file, checked when the folder is used
        with contextlib.suppress(OSError):  # another process finished the same model first: keep theirs
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
