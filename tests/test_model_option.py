"""`iclr26 run SLUG --model PATH`: every LM paper's real-model half runs on any local HF model.

Each test saves a tiny random model (and a word-level tokenizer over the texts the paper feeds it) with
`save_pretrained`, then calls the paper's real-model function with that folder, as `--model` would (the run context
carries the name). The numbers of a random model are meaningless; the tests check that the path exists, that it
really ran on the given model, and that it yields every metric the paper's claims need from the real-model setting.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer


@pytest.fixture(autouse=True)
def _threads():
    """One torch thread (ICLR26_THREADS), as in a run: on a busy 2-core machine two threads spin-wait for each other."""
    from iclr26.core.threads import torch_threads

    with torch_threads():
        yield


class Ctx:
    """The part of the run context a paper's real-model half uses."""

    def __init__(self, model: str | None):
        self.model, self.quiet, self.seed, self.scale = model, True, 0, "smoke"
        self.logs: list[str] = []
        self.artifacts: dict = {}

    def log(self, msg: str) -> None:
        self.logs.append(msg)

    def save_artifact(self, name, obj) -> None:
        self.artifacts[name] = obj


def save_tiny(path, texts, arch="llama", max_vocab=3000, **kw) -> str:
    """A random tiny causal LM with a word-level tokenizer over ``texts``, saved as an HF folder; returns its path."""
    tok = build_word_tokenizer(texts, max_vocab=max_vocab)
    size = dict(d_model=32, n_layers=2, n_heads=4, max_len=512) | kw
    model = tiny_model(arch, seed=0, vocab_size=len(tok), **size)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def claim_metrics(card, suffix: str) -> set[str]:
    """Metric names of the card's claims that end in ``suffix`` (the real-model setting)."""
    names = set()
    for claim in card.CLAIMS:
        for chk in claim.checks:
            names |= {x for x in (chk.lhs, chk.rhs) if isinstance(x, str) and x.endswith(suffix)}
    return names


def assert_finite(m: dict, keys) -> None:
    missing = sorted(set(keys) - set(m))
    assert not missing, f"metrics not produced: {missing}"
    bad = {k: m[k] for k in keys if not math.isfinite(m[k])}
    assert not bad, f"non-finite metrics: {bad}"


LM_CARDS = {"dispersion", "dike", "suit", "restkv", "language-control", "adl", "mindtransformer", "ltpo", "perk"}
LM_CARDS |= {"boolean-llm", "remix", "temporal-abstention", "autort", "vta", "bed-llm"}


def test_cards_that_take_a_model_and_those_that_say_why_not():
    from iclr26.core.registry import reproducible

    cards = {c.slug: c.module() for c in reproducible()}
    assert {s for s, m in cards.items() if getattr(m, "ACCEPTS_MODEL", False) is True} == LM_CARDS
    for slug in set(cards) - LM_CARDS:  # no language model to replace, or a reason why not: the CLI prints it
        assert len(getattr(cards[slug], "MODEL_NOTE", "")) > 20, slug


def test_the_readme_lists_exactly_the_cards_that_take_a_model():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("## Bring your own model", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    listed = {s.strip() for row in rows for s in row.split(",")}
    assert listed == LM_CARDS


def test_dispersion_real_model_half_on_a_local_model(tmp_path):
    from iclr26.papers import dispersion
    from iclr26.papers.dispersion.experiment import _real_model_part
    from iclr26.worlds.text import load_domain

    path = save_tiny(tmp_path / "m", load_domain("news")[:200], arch="qwen2")
    cfg = dispersion.DispersionConfig(domains=("news",), segments_per_domain=8, seg_len=16, n_bins=2)
    m = _real_model_part(cfg, 0, Ctx(path), {})
    assert_finite(m, {"r_real_mean", "r_real_last", "r_real_early", "r_real_news"})


@pytest.fixture()
def facts_model(tmp_path):
    """A tiny llama whose vocabulary covers the real country facts and some Wikipedia text."""
    from iclr26.editing.real_facts import RealFactWorld
    from iclr26.worlds.text import load_domain

    world = RealFactWorld()
    texts = [world.prompt(f) + " " + o for f in world.facts for o in world.objects[f.relation]]
    return save_tiny(tmp_path / "m", texts + list(load_domain("wikipedia")[:50]))


def _all_facts_known(monkeypatch, module):
    # A random model knows no real fact; let it "know" all of them so that the editing path runs end to end.
    monkeypatch.setattr(module, "known_facts", lambda model, tok, world: list(world.facts))


def test_dike_real_model_setting_on_a_local_model(facts_model, monkeypatch):
    from iclr26.editing import benchmark
    from iclr26.papers import dike
    from iclr26.papers.dike import experiment as ex

    with pytest.raises(ValueError, match=r"completes \d+ of the \d+ facts"):  # knows (almost) nothing: a clear error
        benchmark.prepare("smollm2", dike.CONFIGS["smoke"], None, facts_model)
    _all_facts_known(monkeypatch, benchmark)
    cfg = dike.Cfg(seeds=(0,), n_edits_smollm2=2, krd_steps_smollm2=2, krd_batch_smollm2=2, stats_n_tokens_smollm2=400)
    m = ex.run_setting("smollm2", cfg, 0, Ctx(facts_model))
    assert ex._PREP[("smollm2", cfg, facts_model)]["model"].config.hidden_size == 32  # ran on our model
    assert m["recall_smollm2"] == 1.0
    assert_finite(m, claim_metrics(dike, "_smollm2"))


def test_suit_real_model_setting_on_a_local_model(facts_model, monkeypatch):
    from iclr26.editing import benchmark
    from iclr26.papers import suit
    from iclr26.papers.suit import experiment as ex

    _all_facts_known(monkeypatch, benchmark)  # suit prepares its settings with the editing testbed's `prepare`
    cfg = suit.Cfg(seeds=(0,), n_edits_smollm2=2, batch_size_smollm2=1, stats_n_tokens_smollm2=400)
    m = ex.run_setting("smollm2", cfg, 0, Ctx(facts_model))
    assert ex._PREP[("smollm2", cfg, facts_model)]["model"].config.hidden_size == 32
    assert_finite(m, claim_metrics(suit, "_smollm2"))


def test_restkv_real_model_half_on_a_local_model(tmp_path):
    from iclr26.papers import restkv
    from iclr26.papers.restkv.experiment import real_model_part
    from iclr26.worlds.text import wikipedia

    path = save_tiny(tmp_path / "m", list(wikipedia()[:100]), n_kv_heads=2)
    cfg = restkv.Cfg(smol_lengths=(160,), smol_examples=1, smol_budgets=(24, 48), smol_window=4, smol_tasks=("niah",))
    m: dict = {}
    curves, eff = real_model_part(cfg, 0, path, random.Random(0), m)
    assert eff is None and set(curves) == set(restkv.METHODS) - {"full"}
    assert_finite(m, claim_metrics(restkv, "_smollm2") - {"prefill_overhead_smollm2_restkv_vs_snapkv"})
    assert "prefill_overhead_smollm2_restkv_vs_snapkv" in m
    assert m["budget_exact_smollm2"] == 1.0  # every press but PyramidKV kept exactly the budget on this model
    short = restkv.Cfg(smol_lengths=(1024,), smol_examples=1)
    with pytest.raises(ValueError, match="takes 512 positions"):
        real_model_part(short, 0, path, random.Random(0), {})


def test_language_control_real_model_probes_on_a_local_model(tmp_path):
    from iclr26.papers import language_control
    from iclr26.papers.language_control.real import SENTENCES, WORDS, _translation_prompt, smollm2_probes

    texts = [s for row in SENTENCES for s in row] + [w for row in WORDS for w in row]
    texts += [_translation_prompt(1, 3, i) + _translation_prompt(3, 2, i) for i in range(len(WORDS))]
    path = save_tiny(tmp_path / "m", texts)
    m, curves = smollm2_probes(language_control.Cfg(smollm2_concepts=4), 0, path)
    assert_finite(m, claim_metrics(language_control, "_smollm2"))
    assert len(curves["sim"]) == 3  # embeddings + 2 blocks: the local model's depth, not SmolLM2's 30 blocks


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_adl_real_organism_on_a_local_model(tmp_path, arch):
    from iclr26.papers import adl
    from iclr26.papers.adl.real import _smollm2_organism, baking_docs, smollm2_adl
    from iclr26.worlds.text import load_domain

    texts = baking_docs(40, random.Random(0)) + list(load_domain("wikipedia")[:50])
    path = save_tiny(tmp_path / arch, texts, arch=arch)
    _smollm2_organism.cache_clear()
    cfg = adl.Cfg(smollm2_steps=2, smollm2_generic=8, n_positions=3)
    m = smollm2_adl(cfg, 0, path)
    base, ft, _ = _smollm2_organism(cfg.smollm2_steps, path)
    assert base.config.model_type == arch
    assert any(not torch.equal(a, b) for a, b in zip(base.parameters(), ft.parameters()))  # LoRA changed weights
    assert_finite(m, claim_metrics(adl, "_smollm2"))
    _smollm2_organism.cache_clear()


def test_mindtransformer_real_model_half_on_a_local_model(tmp_path):
    from iclr26.papers import mindtransformer
    from iclr26.papers.mindtransformer.experiment import _features, analyse
    from iclr26.worlds.text import load_domain

    path = save_tiny(tmp_path / "m", list(load_domain("wikipedia")[:40]))
    cfg = mindtransformer.Cfg(n_runs=3, smol_layers=(0, 1), smol_words_per_run=120, voxels_per_region=8, mode2=False)
    feats, dims, conf = _features("smol", path, cfg.smol_layers, cfg.n_runs, cfg.smol_words_per_run)
    assert conf["hidden_size"] == 32
    m = analyse(feats, dims, cfg, cfg.smol_layers, 0, Ctx(path), "smollm2")
    assert_finite(m, claim_metrics(mindtransformer, "_smollm2") - {"mode2_r_smollm2", "hidden_r_smollm2"})
