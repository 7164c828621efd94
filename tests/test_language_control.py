"""Logit lens, cross-lingual similarity, selective tuning and the synthetic-language world (LinguaMap)."""

import math
import random

import numpy as np
import pytest
import torch

from iclr26.lenses import (
    SelectiveTuningConfig,
    crosslingual_similarity,
    encode_parts,
    language_probs_by_layer,
    lens_logits,
    logit_lens,
    masked_lm_loss,
    select_layers,
    selective_finetune,
    token_probs_by_layer,
)
from iclr26.lenses.language_control.world import LANGS, SCENARIOS, LanguageWorld, Problem
from iclr26.lm.adapters import ModelAdapter
from iclr26.lm.tiny import ARCHS, tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer


@pytest.fixture(scope="module")
def world():
    return LanguageWorld(0)


@pytest.fixture(scope="module")
def tok(world):
    return build_word_tokenizer(world.vocabulary_texts())


def _model(arch, tok, **kw):
    kw.setdefault("n_kv_heads", None if arch == "gpt2" else 2)
    return tiny_model(arch, vocab_size=len(tok), d_model=32, n_layers=4, n_heads=4, max_len=96, **kw)


@pytest.mark.parametrize("arch", ARCHS)
def test_logit_lens_last_layer_equals_model_logits(arch, tok, world):
    model = _model(arch, tok)
    ids = tok([world.question("en", Problem("tom", "cups", 2, 3))], return_tensors="pt")["input_ids"]
    lens = logit_lens(model, ids)
    assert lens.shape == (4, 1, ids.shape[1], len(tok))
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    torch.testing.assert_close(lens[-1], ref, rtol=1e-5, atol=1e-5)
    # an intermediate layer is NOT the final logits (the lens reads a different state)
    assert (lens[1] - ref).abs().max() > 1e-3
    # the lens of an intermediate layer applies the final norm: equal to lm_head(norm(h))
    ad = ModelAdapter(model)
    h = torch.randn(3, ad.d_model)
    torch.testing.assert_close(lens_logits(model, h), ad.lm_head(ad.final_norm(h)))
    with pytest.raises(ValueError, match="residual stream"):
        lens_logits(model, torch.randn(ad.d_model + 1))


def test_language_probs_counts_top1_language(tok, world):
    model = _model("llama", tok)
    ids = tok(["question : tom has two cups ."], return_tensors="pt")["input_ids"]
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    pos = [[1, 2, 3]]
    shares = language_probs_by_layer(model, ids, pos, lambda t: world.word_language.get(vocab[t]), LANGS)
    top = logit_lens(model, ids).argmax(-1)[:, 0, [1, 2, 3]]
    for layer in range(4):
        langs = [world.word_language.get(vocab[int(t)]) for t in top[layer]]
        for lang in LANGS:
            assert shares[lang][layer] == pytest.approx(langs.count(lang) / 3)
    # every vocabulary token is in some language except specials/punctuation, so the shares sum to ≤ 1
    assert all(sum(shares[lang][layer] for lang in LANGS) <= 1 + 1e-9 for layer in range(4))
    with pytest.raises(ValueError, match="positions"):
        language_probs_by_layer(model, ids, [[1], [2]], lambda t: None, LANGS)


def test_token_probs_by_layer_matches_softmax_of_lens(tok):
    model = _model("qwen2", tok)
    probs = token_probs_by_layer(model, tok, ["tom has"], {"en": ["two"], "x": ["cups"]})
    ids = tok("tom has", return_tensors="pt")["input_ids"]
    p = torch.softmax(logit_lens(model, ids)[:, 0, -1], -1)
    assert np.allclose(probs["en"], p[:, tok.convert_tokens_to_ids("two")].numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="candidates"):
        token_probs_by_layer(model, tok, ["a", "b"], {"en": ["two"]})


@pytest.mark.parametrize("arch", ARCHS)
def test_crosslingual_similarity_self_is_one_and_parallel_less(arch, tok, world):
    model = _model(arch, tok)
    p = Problem("ann", "pens", 4, 5)
    same = crosslingual_similarity(model, tok, [(world.question("l1", p), world.question("l1", p))])
    assert same.shape == (5,)
    assert np.allclose(same, 1.0, atol=1e-5)
    other = crosslingual_similarity(model, tok, [(world.question("en", p), world.question("l2", p))])
    assert other[0] < 0.99  # disjoint vocabularies: different embeddings


def test_token_ranks_by_layer_hand_computed(tok):
    from iclr26.lenses import token_ranks_by_layer

    model = _model("llama", tok)
    prompt = "tom has two"
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    lens = logit_lens(model, ids)[:, 0, -1]
    first = tok("cups", add_special_tokens=False)["input_ids"][0]
    want = [np.log10(1 + int((row > row[first]).sum())) for row in lens]
    got = token_ranks_by_layer(model, tok, [prompt], {"en": ["cups"]})["en"]
    np.testing.assert_allclose(got, want)
    top = int(lens[-1].argmax())
    assert token_ranks_by_layer(model, tok, [prompt], {"x": [tok.decode([top])]})["x"][-1] == 0.0


def test_contrast_uses_shifted_pairs_and_global_centring(tok, world):
    from iclr26.lenses import crosslingual_similarity_contrast

    model = _model("llama", tok)
    probs = world.problems(3, random.Random(0))
    pairs = [(world.question("en", p), world.question("l1", p)) for p in probs]
    shifted = [(pairs[i][0], pairs[(i + 1) % 3][1]) for i in range(3)]
    c = crosslingual_similarity_contrast(model, tok, pairs)
    np.testing.assert_allclose(c["parallel"], crosslingual_similarity(model, tok, pairs), atol=1e-6)
    np.testing.assert_allclose(c["mismatched"], crosslingual_similarity(model, tok, shifted), atol=1e-6)
    np.testing.assert_allclose(c["gap"], c["parallel"] - c["mismatched"], atol=1e-7)
    # identical texts on both sides: parallel similarity 1, the mismatched baseline below it
    same = crosslingual_similarity_contrast(model, tok, [(a, a) for a, _ in pairs])
    assert np.allclose(same["parallel"], 1.0, atol=1e-5) and (same["gap"][1:] > 0).all()
    # centring subtracts the mean over all six texts at each layer, by hand at the last layer
    from iclr26.lenses.logit_lens import _pooled_states

    a = _pooled_states(model, tok, [p[0] for p in pairs], True)[-1]
    b = _pooled_states(model, tok, [p[1] for p in pairs], True)[-1]
    mu = torch.cat([a, b]).mean(0)
    want = torch.nn.functional.cosine_similarity(a - mu, b - mu, dim=-1).mean().item()
    got = crosslingual_similarity_contrast(model, tok, pairs, center=True)["parallel"][-1]
    assert got == pytest.approx(want, abs=1e-5)
    with pytest.raises(ValueError, match="at least 2 pairs"):
        crosslingual_similarity_contrast(model, tok, pairs[:1])


def test_select_layers():
    assert select_layers(8, "last", 2) == [6, 7]
    assert select_layers(8, "first", 3) == [0, 1, 2]
    assert select_layers(8, "all", 1) == list(range(8))
    r = select_layers(8, "random", 2, seed=1)
    assert len(set(r)) == 2 and r == select_layers(8, "random", 2, seed=1)
    with pytest.raises(ValueError, match="k must be in"):
        select_layers(4, "last", 5)
    with pytest.raises(ValueError, match="strategy"):
        select_layers(4, "middle", 1)
    with pytest.raises(ValueError, match="strategy"):
        SelectiveTuningConfig(strategy="middle")
    with pytest.raises(ValueError, match="k"):
        SelectiveTuningConfig(k=0)
    with pytest.raises(ValueError, match="lr"):
        SelectiveTuningConfig(lr=0)


def test_loss_mask_covers_only_supervised_part(tok, world):
    p = Problem("tom", "cups", 1, 2)
    for sc in SCENARIOS:
        ctx, q = world.scenario(sc, "l1", p)
        ids, att, lm = encode_parts(tok, [(ctx, f"{q} {world.output('l1', p)}")])
        n_ctx = 1 + len(tok(ctx, add_special_tokens=False)["input_ids"])
        assert lm[0, :n_ctx].sum() == 0 and lm[0, n_ctx : int(att[0].sum())].all()


def test_masked_loss_equals_manual_nll(tok, world):
    model = _model("gpt2", tok)
    ids, att, lm = encode_parts(tok, [("question :", "tom has two cups ."), ("", "ann gets one more .")])
    loss = masked_lm_loss(model, ids, att, lm)
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=att).logits, -1)
    terms = [-logp[b, t - 1, ids[b, t]] for b in range(2) for t in range(1, ids.shape[1]) if lm[b, t] and att[b, t]]
    assert loss.item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-5)
    with pytest.raises(ValueError, match="selects no tokens"):
        masked_lm_loss(model, ids, att, torch.zeros_like(lm))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("strategy", ["last", "first", "random"])
def test_selective_tuning_freezes_exactly_the_other_layers(arch, strategy, tok, world):
    model = _model(arch, tok)
    ad = ModelAdapter(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    rng = random.Random(0)
    data = [
        (world.preamble("en"), f"{world.question('l1', p)} {world.output('l1', p)}") for p in world.problems(8, rng)
    ]
    cfg = SelectiveTuningConfig(strategy=strategy, k=1, epochs=1, lr=1e-2, batch_size=4, seed=3)
    res = selective_finetune(model, tok, data, cfg, progress=False)
    blocks = ad.spec.blocks + "."
    final_norm = ad.spec.final_norm + "."
    trained = [f"{blocks}{i}." for i in res.layers]
    n_train = 0
    for name, p in model.named_parameters():
        is_trained = any(name.startswith(t) for t in trained) or name.startswith(final_norm)
        if is_trained:
            n_train += p.numel()
        else:
            assert torch.equal(p, before[name]), f"{name} changed although frozen"
    assert any(
        not torch.equal(p, before[n]) for n, p in model.named_parameters() if n.startswith(f"{blocks}{res.layers[0]}.")
    )
    total = sum(p.numel() for p in model.parameters())
    assert res.trainable_fraction == pytest.approx(n_train / total)
    assert res.n_trainable == n_train
    assert len(res.losses) == 2 and all(math.isfinite(x) for x in res.losses)


def test_full_tuning_fraction_counts_tied_weights_once(tok, world):
    model = _model("llama", tok, tie_embeddings=True)
    data = [("", world.question("en", Problem("tom", "cups", 1, 1)))]
    res = selective_finetune(model, tok, data, SelectiveTuningConfig(strategy="all", epochs=1), progress=False)
    assert res.trainable_fraction == pytest.approx(1.0)
    assert res.n_trainable == sum(p.numel() for p in model.parameters())  # parameters() dedups tied weights


def test_world_languages_are_disjoint_and_answers_exact(world):
    vocabs = [set(world.lexicon[lang].values()) for lang in LANGS]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not vocabs[i] & vocabs[j]
    p = Problem("eva", "rings", 7, 8)
    for lang in LANGS:
        out = world.output(lang, p)
        assert world.language_of(out) == lang
        assert world.answer_of(out) == 15
        assert world.language_of(world.question(lang, p)) == lang
    # l2 is verb-final: "has" comes after the object
    l2 = world.question("l2", p).split()
    assert l2.index(world.lexicon["l2"]["has"]) > l2.index(world.lexicon["l2"]["rings"])
    with pytest.raises(ValueError, match="scenario"):
        world.scenario("poetry", "l1", p)


def test_smoke_run(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("language-control", scale="smoke", out=tmp_path, quiet=True)
    assert res.verdicts and all(c["verdict"] for c in res.verdicts)
    for metrics in res.per_seed.values():
        assert all(math.isfinite(v) for v in metrics.values())
        assert metrics["sim_gap_mid"] == metrics["sim_gap_mid"]  # the mismatched-pair contrast is computed
        assert 0 <= metrics["cons_pre"] <= 1 and 0 < metrics["frac_last"] < metrics["frac_full"] == 1.0
        assert 0 <= metrics["cons_pre_en"] <= 1 and metrics["budget_dev_first"] == 0.0  # the gates' metrics


def test_the_seeds_measure_disjoint_slices_of_the_hand_written_text():
    """Seeds 0, 1, 2 of the quick scale are independent samples of the pool (no item measured twice), not
    overlapping resamples whose spread would understate the sampling noise."""
    from iclr26.papers.language_control import CONFIGS
    from iclr26.papers.language_control.real import SENTENCES, WORDS, seed_items

    for n_items, pool in ((CONFIGS["quick"].smollm2_sentences, SENTENCES), (CONFIGS["quick"].smollm2_concepts, WORDS)):
        parts = [set(seed_items(s, n_items, len(pool))) for s in CONFIGS["quick"].seeds]
        assert all(len(p) == n_items for p in parts)
        assert not set.intersection(*parts) and len(set.union(*parts)) == n_items * len(parts)
    assert seed_items(3, 20, 60) == seed_items(0, 20, 60)  # a fourth seed wraps around: only 3 disjoint slices
    with pytest.raises(ValueError, match="1..60 items"):
        seed_items(0, 61, 60)


def test_parallel_text_rows_are_complete_and_translations_differ_from_english():
    from iclr26.papers.language_control.texts import SENTENCES, WORDS, _table

    assert len(SENTENCES) == 60 and len(WORDS) == 48
    assert len({row[0] for row in SENTENCES}) == 60 and len({row[0] for row in WORDS}) == 48
    # the lens compares the English word with its translation: a translation spelt like the English word says nothing
    assert all(row[j].lower() != row[0].lower() for row in WORDS for j in (2, 3))
    with pytest.raises(ValueError, match="four non-empty columns"):
        _table("cat | chat | gato")


def test_english_positive_control_reads_english_answers(tok, world):
    """evaluate_english counts an output as consistent exactly when its majority language is English."""
    from iclr26.papers.language_control.experiment import evaluate_english

    class Echo(torch.nn.Module):  # a "model" that always answers the same English output
        def __init__(self, text):
            super().__init__()
            self.ids = tok(text)["input_ids"]

        def generate(self, input_ids, **kw):
            out = torch.tensor(self.ids)[None].expand(input_ids.shape[0], -1)
            return torch.cat([input_ids, out], 1)

    p = Problem("tom", "apples", 3, 4)
    en, l1 = world.output("en", p), world.output("l1", p)
    assert evaluate_english(Echo(en), tok, world, 5, 0)["cons"] == 1.0
    assert evaluate_english(Echo(l1), tok, world, 5, 0)["cons"] == 0.0
