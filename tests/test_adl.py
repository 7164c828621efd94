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
from iclr26.lenses.adl.world import TopicWorld
from iclr26.lenses.logit_lens import lens_logits
from iclr26.lm.adapters import ModelAdapter
from iclr26.lm.hooks import capture
from iclr26.lm.tiny import ARCHS, tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer


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


def _ids(tok, world, n=6, k=8):
    docs = world.base_corpus(n, random.Random(1), copy_frac=0.0)
    return torch.tensor([x[:k] for x in tok(docs)["input_ids"]])


@pytest.mark.parametrize("arch", ARCHS)
def test_difference_of_model_with_itself_is_zero(arch, tok, world):
    base = _model(arch, tok)
    d = activation_difference(base, copy.deepcopy(base), _ids(tok, world), layer=1, n_positions=5)
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
    # norm matching: mean ‖h^ft‖ over positions ≥ 5 (the toolkit's skip), the difference on the first n_positions
    assert d.act_norm == pytest.approx(acts[1][:, 5:].norm(dim=-1).mean().item(), rel=1e-5)
    d3 = activation_difference(base, ft, ids, layer=2, n_positions=3)
    torch.testing.assert_close(d3.diff, d.diff[:3])
    assert d3.act_norm == pytest.approx(d.act_norm, rel=1e-6)
    with pytest.raises(ValueError, match="norm_skip=5"):
        activation_difference(base, ft, ids[:, :5], layer=2)
    with pytest.raises(ValueError, match="layer 7 does not exist"):
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


def test_patchscope_reads_the_patched_state_not_the_prompt(tok, world):
    """The readout equals a hand-made patch of the last position at block 1, and differs from the unpatched prompt's
    next-token distribution (a no-op patch would return the latter)."""
    from iclr26.lenses.adl import patchscope_scan
    from iclr26.lm.hooks import intervene

    model = _model("llama", tok)
    d = ModelAdapter(model).d_model
    v = torch.randn(d, generator=torch.Generator().manual_seed(3))
    prompts = [world.copy_list(random.Random(i), 3) for i in range(2)]
    cfg = ADLConfig(scales=(4.0,), top_k=5, intersect_k=len(tok))
    toks, scale = patchscope_tokens(model, tok, v, 1, 3.0, cfg, prompts)

    def mean_probs(edit):
        out = []
        for p in prompts:
            ids = tok(p, return_tensors="pt")["input_ids"]
            with torch.no_grad(), intervene(model, {("resid", 1): edit}):
                out.append(torch.softmax(model(input_ids=ids).logits[0, -1], -1))
        return torch.stack(out).mean(0)

    def patch(a):
        a = a.clone()
        a[:, -1] = 4.0 * 3.0 * v / v.norm()
        return a

    expected = mean_probs(patch).topk(5).indices.tolist()
    unpatched = mean_probs(lambda a: a).topk(5).indices.tolist()
    assert scale == 4.0 and toks == expected and toks != unpatched
    # per-scale record and the coherence rule: the chosen scale has the best score, ties to the smaller scale
    r = patchscope_scan(model, tok, v, 1, 3.0, ADLConfig(scales=(0.5, 4.0, 50.0), top_k=5), prompts)
    scores = {s: x["score"] for s, x in r.per_scale.items()}
    assert set(scores) == {0.5, 4.0, 50.0} and scores[r.scale] == max(scores.values())
    with pytest.raises(ValueError, match="shape"):
        patchscope_tokens(model, tok, torch.ones(d + 1), 1, 3.0, cfg, prompts)


def test_embedding_coherence_hand_computed(tok):
    from iclr26.lenses.adl import embedding_coherence

    model = _model("llama", tok)
    with torch.no_grad():
        emb = ModelAdapter(model).embed.weight
        emb[5] = torch.zeros_like(emb[5])
        emb[5, 0], emb[6], emb[7] = 1.0, 0.0, 0.0
        emb[6, 0], emb[7, 1] = 2.0, 1.0
    # pairs: (5,6) cos 1, (5,7) cos 0, (6,7) cos 0 → mean 1/3
    assert embedding_coherence(model, [5, 6, 7]) == pytest.approx(1 / 3, abs=1e-6)
    assert embedding_coherence(model, [5]) == float("-inf")


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
    with pytest.raises(ValueError, match="scale_rule"):
        ADLConfig(scale_rule="grader")
    # the toolkit's get_layer_indices: int(0.5 · (n − 1)), not int(0.5 · n)
    assert ADLConfig().layer(30) == 14 and ADLConfig().layer(4) == 1 and ADLConfig().layer(1) == 0
    assert ADLConfig(relative_layer=1.0).layer(24) == 23


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
        # smoke trains no 1:0.1 organism: its claimed metrics are NaN (failed seeds), no others
        assert all(math.isfinite(v) for k, v in metrics.items() if not k.endswith("_mix0.1"))
        assert 0 <= metrics["rel_ps_adl"] <= 1
        # the gates' metrics: the null organism, the random direction, the internalisation testbed
        assert 0 <= metrics["rel_ps_adl_null"] <= 1 and 0 <= metrics["rel_ps_random"] <= 1
        assert math.isfinite(metrics["ce_gain"]) and 0 <= metrics["id_room_1"] <= 1
    roles = {c["id"]: c["role"] for c in res.verdicts}
    assert roles["null-organism-not-relevant"] == "negative control" and roles["lens-relevance"] == "claim"


def test_smollm2_organism_domains_and_null_documents():
    from iclr26.papers.adl.real import BAKING, _smollm2_organism, wiki_docs

    docs = wiki_docs(5, random.Random(0))
    assert len(docs) == 5 and all(len(d.split()) == 60 for d in docs)
    # the null twin's documents are generic text: far fewer baking words than the organism's
    share = sum(w.lower().strip(".,") in BAKING for d in docs for w in d.split()) / 300
    assert share < 0.05
    with pytest.raises(ValueError, match="'baking' \\(the organism\\) or 'wikipedia'"):
        _smollm2_organism.__wrapped__(1, "unused", 0, "poetry")
