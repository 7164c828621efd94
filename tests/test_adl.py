"""Activation Difference Lens: the difference, its readouts, steering, the projection replacement, the topic world."""

import copy
import math
import random

import pytest
import torch

from iclr26.lenses import (
    ADLConfig,
    activation_difference,
    find_max_coherent_alpha,
    logit_lens_tokens,
    patchscope_tokens,
    projection_delta_ce,
    remove_projection,
    steering,
)
from iclr26.lenses.logit_lens import lens_logits
from iclr26.lm.adapters import ModelAdapter
from iclr26.lm.hooks import capture
from iclr26.lm.tiny import ARCHS, tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer
from iclr26.worlds.topics import TopicWorld


@pytest.fixture(scope="module")
def world():
    return TopicWorld(n_topics=4, seed=0)


@pytest.fixture(scope="module")
def tok(world):
    return build_word_tokenizer(world.vocabulary_texts())


def _model(arch, tok, seed=0):
    return tiny_model(
        arch,
        seed=seed,
        vocab_size=len(tok),
        d_model=32,
        n_layers=3,
        n_heads=4,
        n_kv_heads=None if arch == "gpt2" else 2,
        max_len=64,
    )


def _ids(tok, world, n=6, k=5):
    docs = world.base_corpus(n, random.Random(1), copy_frac=0.0)
    return torch.tensor([x[:k] for x in tok(docs)["input_ids"]])


@pytest.mark.parametrize("arch", ARCHS)
def test_difference_of_model_with_itself_is_zero(arch, tok, world):
    base = _model(arch, tok)
    d = activation_difference(base, copy.deepcopy(base), _ids(tok, world), layer=1)
    assert d.diff.shape == (5, ModelAdapter(base).d_model)
    assert torch.count_nonzero(d.diff) == 0
    assert d.act_norm > 0 and d.n == 6


@pytest.mark.parametrize("arch", ARCHS)
def test_difference_is_mean_of_per_sample_differences(arch, tok, world):
    base, ft = _model(arch, tok, 0), _model(arch, tok, 1)
    ids = _ids(tok, world)
    d = activation_difference(base, ft, ids, layer=2, batch_size=4)  # two batches
    acts = []
    for m in (base, ft):
        with capture(m, [("resid", 2)]) as a, torch.no_grad():
            m(input_ids=ids)
        acts.append(a["resid", 2])
    torch.testing.assert_close(d.diff, (acts[1] - acts[0]).mean(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(d.mean_base, acts[0].mean(0), rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match="layers"):
        activation_difference(base, ft, ids, layer=7)
    with pytest.raises(ValueError, match="N, n_positions"):
        activation_difference(base, ft, ids[0], layer=1)


def test_projection_removal_idempotent_and_exact():
    torch.manual_seed(0)
    h_ft, h_base, v = torch.randn(2, 5, 16), torch.randn(2, 5, 16), torch.randn(16)
    once = remove_projection(h_ft, h_base, v)
    torch.testing.assert_close(remove_projection(once, h_base, v), once)  # idempotent
    u = v / v.norm()
    P = torch.outer(u, u)
    torch.testing.assert_close(once, h_base @ P + h_ft @ (torch.eye(16) - P), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(once @ u, h_base @ u)  # the component along v is the base model's
    torch.testing.assert_close(remove_projection(h_ft, h_base, torch.zeros(16)), h_ft)  # P = 0: no-op


@pytest.mark.parametrize("arch", ARCHS)
def test_projection_delta_ce_zero_for_identical_models_nonzero_otherwise(arch, tok, world):
    base = _model(arch, tok)
    ids = _ids(tok, world, k=12)
    v = torch.randn(ModelAdapter(base).d_model)
    assert projection_delta_ce(base, copy.deepcopy(base), v, 1, ids) == pytest.approx(0.0, abs=1e-6)
    assert abs(projection_delta_ce(base, _model(arch, tok, 1), v, 1, ids)) > 1e-6


@pytest.mark.parametrize("arch", ARCHS)
def test_steering_adds_vector_and_alpha_zero_is_noop(arch, tok, world):
    model = _model(arch, tok)
    ids = _ids(tok, world)
    v = torch.randn(ModelAdapter(model).d_model)
    with capture(model, [("resid", 1)]) as a, torch.no_grad():
        model(input_ids=ids)
    plain = a["resid", 1]
    with steering(model, v, 1, 2.0), capture(model, [("resid_pre", 2)]) as b, torch.no_grad():
        model(input_ids=ids)
    torch.testing.assert_close(b["resid_pre", 2], plain + 2.0 * v)
    with torch.no_grad():
        ref = model(input_ids=ids).logits
        with steering(model, v, 1, 0.0):
            zero = model(input_ids=ids).logits
    torch.testing.assert_close(zero, ref)


def test_lens_and_patchscope_readouts(tok, world):
    model = _model("llama", tok)
    ad = ModelAdapter(model)
    v = torch.randn(ad.d_model)
    top = logit_lens_tokens(model, v, k=5)
    assert top == lens_logits(model, v).topk(5).indices.tolist()
    cfg = ADLConfig(scales=(1.0, 2.0), top_k=5, intersect_k=50)
    prompts = [world.copy_list(random.Random(i), 3) for i in range(2)]
    toks, scale = patchscope_tokens(model, tok, v, 1, 3.0, cfg, prompts)
    assert scale in (1.0, 2.0) and len(toks) <= 5
    with pytest.raises(ValueError, match="zero vector"):
        patchscope_tokens(model, tok, torch.zeros(ad.d_model), 1, 3.0, cfg, prompts)


def test_binary_search_finds_threshold():
    alpha = find_max_coherent_alpha(lambda a: 1.0 if a <= 3.3 else 0.0, max_strength=10, steps=20, threshold=0.75)
    assert alpha == pytest.approx(3.3, abs=1e-3)
    assert find_max_coherent_alpha(lambda a: 1.0, max_strength=10) == 10
    assert find_max_coherent_alpha(lambda a: 0.0, max_strength=10) == 0


def test_adl_config_validation():
    with pytest.raises(ValueError, match="relative_layer"):
        ADLConfig(relative_layer=1.5)
    with pytest.raises(ValueError, match="n_positions"):
        ADLConfig(n_positions=0)
    with pytest.raises(ValueError, match="scales"):
        ADLConfig(scales=(0.0,))
    assert ADLConfig().layer(30) == 15 and ADLConfig().layer(4) == 2


def test_topic_world_ground_truth(world):
    rng = random.Random(0)
    doc = world.document([1], rng)
    assert world.coherence(doc) == 1.0
    sentence = world.sentence(2, rng)
    assert world.is_grammatical(sentence)
    assert not world.is_grammatical(" ".join(reversed(sentence.split())))
    mixed = sentence.split()
    other = world.vocab[3][world.word_pos[mixed[1]]][0] if mixed[1] in world.word_pos else None
    if other is not None:  # swap one topic word for another topic's word of the same part of speech
        mixed[1] = other
        assert world.is_grammatical(" ".join(mixed)) and not world.is_grammatical(" ".join(mixed), single_topic=True)
    assert world.is_grammatical(world.fact_sentence(rng))
    ft = world.finetune_corpus(3, rng)
    assert all(world.topic_ranking(d.split())[0] == world.held_out for d in ft)
    assert world.relevant == world.topic_words(world.held_out) | {world.country, world.city}
    base_words = {w for d in world.base_corpus(50, rng, copy_frac=0.0) for w in d.split()}
    assert not base_words & world.relevant  # the held-out topic never appears in base documents
    with pytest.raises(ValueError, match="n_topics"):
        TopicWorld(n_topics=1)


def test_smoke_run(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("adl", scale="smoke", out=tmp_path, quiet=True)
    assert res.verdicts and all(c["verdict"] for c in res.verdicts)
    for metrics in res.per_seed.values():
        assert all(math.isfinite(v) for v in metrics.values())
        assert 0 <= metrics["rel_ps_adl"] <= 1
