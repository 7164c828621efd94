"""Tests of the editing library core: the closed forms of ROME, MEMIT and AlphaEdit, the editor interface (batch,
sequential, copy, restore), covariance statistics, the benchmark metrics, and clear errors on bad input."""

from __future__ import annotations

import math
import os

import pytest
import torch

from iclr26.editing import (
    MEMIT,
    ROME,
    AlphaEdit,
    AlphaEditConfig,
    EditRequest,
    EditRequestError,
    EditState,
    MEMITConfig,
    Probe,
    ROMEConfig,
    alphaedit_delta,
    evaluate_edits,
    memit_delta,
    nullspace_projector,
    rome_delta,
    scaled_layers,
)
from iclr26.editing.compute import activation_at_subject, optimize_delta, subject_last_index
from iclr26.editing.evaluate import score_answers
from iclr26.editing.stats import key_covariances
from iclr26.lm.adapters import ModelAdapter, weight_of
from iclr26.lm.hooks import capture
from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny matrices: extra threads only add contention (50× slower on a busy 2-core machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


FAST = dict(context_templates=((3, 2),), v_num_grad_steps=5, stats_n_tokens=400)
TEXTS = [
    f"{s} {r} {o}"
    for s in ("Ada Kern", "Bo Lund", "Cy Marr", "Di Noll")
    for r, o in (("lives in", "Paris"), ("was born in", "Rome"), ("speaks", "French"), ("plays", "chess"))
]
CORPUS = [" ".join(w for w in (t + " " + u).split()[:8]) for t in TEXTS for u in TEXTS]  # > d_ff distinct keys


def _spd(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, 3 * n, generator=g, dtype=torch.float64)
    return a @ a.T / (3 * n)


# ---------------------------------------------------------------- closed forms
def test_rome_update_inserts_pair_exactly_and_is_rank_one():
    g = torch.Generator().manual_seed(1)
    w = torch.randn(6, 10, generator=g, dtype=torch.float64)
    c = _spd(10)
    k, v = torch.randn(10, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64)
    d = rome_delta(w, c, k, v)
    torch.testing.assert_close((w + d) @ k, v)  # Ŵ k* = v*
    assert torch.linalg.matrix_rank(d).item() == 1
    # the row space is C⁻¹k*: keys C⁻¹-orthogonal to k* keep their values (would fail with C ignored)
    u = torch.linalg.solve(c, k)
    k2 = torch.randn(10, generator=g, dtype=torch.float64)
    k2 = k2 - (k2 @ u) / (k @ u) * k  # now u·k2 = 0
    torch.testing.assert_close(d @ k2, torch.zeros(6, dtype=torch.float64), atol=1e-10, rtol=0)


def test_memit_update_solves_its_least_squares_problem():
    g = torch.Generator().manual_seed(2)
    d_in, d_out, n, lam = 10, 5, 4, 3.0
    k = torch.randn(d_in, n, generator=g, dtype=torch.float64)
    r = torch.randn(d_out, n, generator=g, dtype=torch.float64)
    c = _spd(d_in, 3)
    delta = memit_delta(k, r, c, lam)
    # direct: min ||Δ K − R||² + λ||Δ L||² with C = L Lᵀ, as one stacked least-squares problem
    chol = torch.linalg.cholesky(c)
    a = torch.cat([k, lam**0.5 * chol], 1)
    b = torch.cat([r, torch.zeros(d_out, d_in, dtype=torch.float64)], 1)
    direct = torch.linalg.lstsq(a.T, b.T).solution.T
    torch.testing.assert_close(delta, direct)
    # and its gradient vanishes
    grad = 2 * (delta @ k - r) @ k.T + 2 * lam * delta @ c
    assert grad.abs().max() < 1e-9


def test_alphaedit_update_leaves_preserved_keys_unchanged():
    g = torch.Generator().manual_seed(3)
    d_in, d_out = 12, 6
    k0 = torch.randn(d_in, 6, generator=g, dtype=torch.float64) @ torch.randn(6, 50, generator=g, dtype=torch.float64)
    c = k0 @ k0.T / 50
    p = nullspace_projector(c, 1e-8)
    assert torch.linalg.matrix_rank(p).item() == d_in - 6
    k1 = torch.randn(d_in, 3, generator=g, dtype=torch.float64)
    r = torch.randn(d_out, 3, generator=g, dtype=torch.float64)
    kp = torch.randn(d_in, 2, generator=g, dtype=torch.float64)
    for kpkpt in (None, kp @ kp.T):
        delta = alphaedit_delta(k1, r, p, kpkpt, l2=1.0)
        assert (delta @ k0).abs().max() < 1e-8 * delta.abs().max() * k0.abs().max()  # Δ K₀ ≈ 0
        # it is the paper's expression R K₁ᵀ P (K_pK_pᵀ P + K₁K₁ᵀ P + I)⁻¹
        m = k1 @ k1.T + (0 if kpkpt is None else kpkpt)
        paper = r @ k1.T @ p @ torch.linalg.inv(m @ p + torch.eye(d_in, dtype=torch.float64))
        torch.testing.assert_close(delta, paper)
        assert delta.abs().max() > 1e-3  # not a no-op


def test_scaled_layers_maps_paper_depths():
    assert scaled_layers(48, 13 / 47, 17 / 47) == (13, 14, 15, 16, 17)
    assert scaled_layers(4, 17 / 47, 17 / 47) == (1,)
    assert scaled_layers(2, 13 / 47, 17 / 47, min_count=2) == (0,)  # never the last block
    assert scaled_layers(4, 13 / 47, 17 / 47, min_count=2) == (0, 1)
    assert scaled_layers(30, 13 / 47, 17 / 47) == (8, 9, 10)


# ---------------------------------------------------------------- requests and errors
def test_bad_requests_give_clear_errors():
    with pytest.raises(EditRequestError, match="exactly one"):
        EditRequest("Ada Kern lives in", "Ada Kern", "Rome")  # subject slot missing
    with pytest.raises(EditRequestError, match="empty target_new"):
        EditRequest("{} lives in", "Ada Kern", "  ")
    with pytest.raises(EditRequestError, match="empty subject"):
        EditRequest("{} lives in", "", "Rome")
    with pytest.raises(EditRequestError, match="equals target_true"):
        EditRequest("{} lives in", "Ada Kern", "Rome", "Rome")
    with pytest.raises(EditRequestError, match="empty answer"):
        Probe("Bo Lund lives in", "")
    r = EditRequest.from_dict(
        {
            "prompt": "{} lives in",
            "subject": "Ada Kern",
            "target_new": {"str": "Rome"},
            "neighborhood": [("Bo Lund lives in", "Paris")],
        }
    )
    assert r.text == "Ada Kern lives in" and r.neighborhood[0] == Probe("Bo Lund lives in", "Paris")


def test_bad_configs_and_layers_give_clear_errors():
    with pytest.raises(ValueError, match="v_lr"):
        ROMEConfig(v_lr=0)
    with pytest.raises(ValueError, match="one layer"):
        ROMEConfig(layers=(0, 1))
    with pytest.raises(ValueError, match="nullspace_threshold"):
        AlphaEditConfig(nullspace_threshold=-1)
    tok = build_word_tokenizer(TEXTS)
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=2, n_heads=2)
    req = EditRequest("{} lives in", "Ada Kern", "Rome", "Paris")
    with pytest.raises(ValueError, match=r"layer\(s\) \[7\] do not exist: the model has 2 layers"):
        MEMIT(MEMITConfig(layers=(0, 7), **FAST), corpus=CORPUS).edit(model, tok, [req])
    with pytest.raises(TypeError, match="ROMEConfig"):
        ROME(MEMITConfig())
    with pytest.raises(EditRequestError, match="no edit requests"):
        ROME(ROMEConfig(**FAST)).edit(model, tok, [])


def test_subject_last_token_is_found():
    tok = build_word_tokenizer(TEXTS)
    text = "Bo Lund was born in"
    i = subject_last_index(tok, text, 0, len("Bo Lund"))
    assert tok.convert_ids_to_tokens(tok(text)["input_ids"])[i] == "Lund"


# ---------------------------------------------------------------- statistics
def test_key_covariance_streams_exactly_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    model = tiny_model("gpt2", vocab_size=len(tok), d_model=32, n_layers=2, n_heads=2)
    cov = key_covariances(model, tok, [0, 1], CORPUS, n_tokens=1000, max_len=16, batch_size=3, progress=False)
    ids = [i for t in CORPUS for i in tok(t)["input_ids"]][:1000]
    chunks = [ids[i : i + 16] for i in range(0, len(ids), 16)]
    for layer in (0, 1):
        keys = []
        for c in chunks:
            with capture(model, [("mlp_key", layer)]) as acts:
                model(input_ids=torch.tensor([c]))
            keys.append(acts["mlp_key", layer][0].double())
        k = torch.cat(keys)
        torch.testing.assert_close(cov[layer], k.T @ k / len(k))
    assert len(list(tmp_path.glob("threads-*/editing_stats/*.pt"))) == 2
    again = key_covariances(model, tok, [1], CORPUS, n_tokens=1000, max_len=16, progress=False)
    assert torch.equal(again[1], cov[1])


# ---------------------------------------------------------------- editors on real (tiny) models
@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen2"])
@pytest.mark.parametrize("editor", [ROME, MEMIT, AlphaEdit])
def test_each_editor_runs_on_each_architecture_and_restores(arch, editor, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    kw = {} if arch == "gpt2" else {"n_kv_heads": 1}
    model = tiny_model(arch, vocab_size=len(tok), d_model=32, n_layers=3, n_heads=2, max_len=64, **kw)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    reqs = [
        EditRequest("{} lives in", "Ada Kern", "Rome", "Paris"),
        EditRequest("{} speaks", "Bo Lund", "French", "chess"),
    ]
    ed = editor(editor.config_class(**FAST), corpus=CORPUS)
    res = ed.edit_sequential(model, tok, reqs, batch_size=1)
    ad = ModelAdapter(model)
    layers = ed.layers(model)
    assert set(res.deltas) == set(layers)
    for layer in range(ad.n_layers):
        w = weight_of(ad.mlp_out(layer))
        changed = not torch.equal(
            w,
            before[_param_name(model, ad.mlp_out(layer))].T
            if arch == "gpt2"
            else before[_param_name(model, ad.mlp_out(layer))],
        )
        assert changed == (layer in layers)
        if layer in layers:
            assert torch.isfinite(res.deltas[layer]).all()
    assert len(res.seconds) == 2 and res.seconds_per_edit > 0
    res.restore()
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # exact original weights


def _param_name(model, module):
    return next(n for n, m in model.named_modules() if m is module) + ".weight"


def test_copy_leaves_the_model_untouched_and_alphaedit_remembers_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=3, n_heads=2, max_len=64)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    reqs = [
        EditRequest("{} lives in", "Ada Kern", "Rome", "Paris"),
        EditRequest("{} speaks", "Bo Lund", "French", "chess"),
    ]
    res = AlphaEdit(AlphaEditConfig(**FAST), corpus=CORPUS).edit_sequential(model, tok, reqs, batch_size=1, copy=True)
    assert res.model is not model
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    kp = res.state.extra["alphaedit_kpkpt"]
    assert set(kp) == {0, 1} and all(torch.linalg.matrix_rank(m).item() == 2 for m in kp.values())


@pytest.fixture(scope="module")
def fact_model():
    """A 3-layer llama that memorises 12 two-token subjects × 2 relations (a few seconds of training on a free CPU)."""
    import random

    from iclr26.lm.train import TrainConfig, train_lm

    rng = random.Random(0)
    subjects = [f"{a} {b}" for a in ("Ada", "Bo", "Cy", "Di") for b in ("Kern", "Lund", "Marr")]
    facts = {
        s: (rng.choice(["Paris", "Rome", "Oslo", "Lima"]), rng.choice(["French", "Greek", "Dutch", "Thai"]))
        for s in subjects
    }
    texts = [f"{s} lives in {c}" for s, (c, _) in facts.items()] + [f"{s} speaks {la}" for s, (_, la) in facts.items()]
    tok = build_word_tokenizer(texts)
    words = sorted(set(" ".join(texts).split()))
    corpus = texts + [" ".join(rng.choice(words) for _ in range(8)) for _ in range(300)]
    model = tiny_model("llama", vocab_size=len(tok), d_model=64, n_layers=3, n_heads=4, n_kv_heads=2, max_len=64)
    # Trained to a stated accuracy, not for a fixed budget: every fact recalled with p > 0.9. (At lr 1e-2 for 300 steps,
    # as before, the result depended on the CPU and the init: 21 of 24 facts and p(answer) ≈ 0.4 for some.) At lr 3e-3
    # one round of 300 steps reaches it for every init seed tried (min p ≥ 0.989); four rounds at most.
    prompts = [t.rsplit(" ", 1)[0] for t in texts]
    answers = [t.rsplit(" ", 1)[1] for t in texts]
    for round_ in range(4):
        cfg = TrainConfig(steps=300, batch_size=24, lr=3e-3, warmup=10, seq_len=16, seed=round_)
        train_lm(model, tok, texts, cfg, progress=False)
        logp = score_answers(model.eval(), tok, prompts, answers)[0]
        if min(logp) > math.log(0.9):
            break
    assert min(logp) > math.log(0.9), f"the fixture did not memorise its facts: min p = {math.exp(min(logp)):.3f}"
    return model, tok, facts, corpus


def test_rome_weight_edit_realises_the_optimised_value(fact_model, tmp_path, monkeypatch):
    """End to end on a trained model: after the edit, the MLP output at the subject's last token is exactly the
    optimised target ``h + δ`` (so ``Ŵ k* = v*`` holds inside the network), and restore() is exact."""
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    model, tok, facts, corpus = fact_model
    s = next(iter(facts))
    new = next(c for c in ("Paris", "Rome", "Oslo", "Lima") if c != facts[s][0])
    req = EditRequest("{} lives in", s, new, facts[s][0])
    cfg = ROMEConfig(context_templates=(), v_lr=5.0, stats_n_tokens=2000)  # no prefixes: k* is this prompt's key
    layer = ROME(cfg).layers(model)[0]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    h0 = activation_at_subject(model, tok, [req], "mlp_out", layer)[0]
    opt = optimize_delta(model, tok, req, layer, "mlp_out", cfg)
    res = ROME(cfg, corpus=corpus).edit(model, tok, [req])
    h1 = activation_at_subject(model, tok, [req], "mlp_out", layer)[0]
    torch.testing.assert_close(h1, h0 + opt.delta, atol=1e-3 * h0.norm().item(), rtol=1e-4)
    assert torch.linalg.matrix_rank(res.deltas[layer].double(), rtol=1e-6).item() == 1
    res.restore()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_memit_spreads_the_residual_so_the_last_layer_reaches_its_target(fact_model, tmp_path, monkeypatch):
    """With a negligible covariance weight, MEMIT's layer-by-layer updates must bring the residual stream at the last
    edited layer to the optimised target z (MEMIT Eq. 16–19): the spreading and the recomputation are right."""
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    model, tok, facts, corpus = fact_model
    s = next(iter(facts))
    new = next(c for c in ("Paris", "Rome", "Oslo", "Lima") if c != facts[s][0])
    req = EditRequest("{} lives in", s, new, facts[s][0])
    cfg = MEMITConfig(layers=(0, 1), context_templates=(), mom2_update_weight=1e-6, v_lr=5.0, stats_n_tokens=2000)
    ed = MEMIT(cfg, corpus=corpus)
    h_before = activation_at_subject(model, tok, [req], "resid", 1)[0]
    z = ed.targets(model, tok, [req], EditState())[0]
    res = ed.edit(model, tok, [req])
    h_after = activation_at_subject(model, tok, [req], "resid", 1)[0]
    res.restore()
    assert (z - h_before).norm() > 1.0  # a real move
    torch.testing.assert_close(h_after, z, atol=1e-3 * z.norm().item(), rtol=0)


def test_value_optimisation_raises_the_new_object(fact_model):
    """δ optimised at the position that predicts the object, in the last block's residual stream (the "subject" here
    is the whole prompt, so its last token is that position): that residual feeds the logits directly, so on any model
    the optimisation can make the new object near-certain, and it must. The fixture recalls every fact with p > 0.9,
    so the new object starts below 0.1. (The former check, δ at layer 0 of the subject's last token lowering the NLL
    by 0.05, sat on how one CPU's training routed the fact: 0.9055 → 0.9007 on another machine, issue 10.)"""
    model, tok, facts, _ = fact_model
    s = next(iter(facts))
    new = next(c for c in ("Paris", "Rome", "Oslo", "Lima") if c != facts[s][0])
    req = EditRequest("{}", f"{s} lives in", new)
    cfg = ROMEConfig(
        v_num_grad_steps=25, v_lr=1.0, context_templates=(), kl_factor=0.0, v_weight_decay=0.0, clamp_norm_factor=4.0
    )
    last = ModelAdapter(model).n_layers - 1
    res = optimize_delta(model, tok, req, last, "resid", cfg)
    assert res.losses[0] > -math.log(0.1)  # before: p(new) < 0.1
    assert res.prob_new > 0.9 and res.losses[-1] < -math.log(0.9)  # after: near-certain (measured ≥ 0.95, ≤ 8 steps)
    assert res.delta.norm() > 0 and res.delta.norm() <= cfg.clamp_norm_factor * res.h.norm() + 1e-3  # the clamp holds


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
@pytest.mark.parametrize("editor", [ROME, AlphaEdit])  # MEMIT at GPT-2 XL's λ does not flip it: docs/editing.md
def test_editing_smollm2_makes_the_new_object_the_top_prediction(editor):
    from iclr26.lm import zoo

    model, tok = zoo.load("smollm2-135m")
    req = EditRequest(
        "The capital of {} is",
        "France",
        "Rome",
        "Paris",
        fine_grained=(Probe("The official language of France is", "French", 0),),
    )
    before = {k: v.clone() for k, v in model.state_dict().items() if "mlp" in k}
    res = editor(editor.config_class(context_templates=((5, 3),), stats_n_tokens=20_000)).edit(model, tok, [req])
    m = evaluate_edits(model, tok, [req])
    res.restore()
    assert m["efficacy_greedy_em"] == 1.0 and m["efficacy_prob_gt"] == 1.0
    assert all(torch.equal(before[k], model.state_dict()[k]) for k in before)


def test_metrics_follow_their_protocols():
    tok = build_word_tokenizer(TEXTS + ["New York"])
    model = tiny_model("gpt2", vocab_size=len(tok), d_model=32, n_layers=2, n_heads=2, max_len=64)
    prompts, answers = ["Ada Kern lives in", "Bo Lund speaks"], ["New York", "French"]
    lp, acc, em = score_answers(model, tok, prompts, answers)
    for p, a, e in zip(prompts, answers, em):  # greedy_em == greedy decoding reproduces the answer
        ids = tok(p, return_tensors="pt")["input_ids"]
        n = len(tok(" " + a, add_special_tokens=False)["input_ids"])
        out = model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False, pad_token_id=0
        )
        assert float(tok.decode(out[0, ids.shape[1] :]).strip() == a) == e
    req = EditRequest(
        "{} lives in",
        "Ada Kern",
        "Rome",
        "Paris",
        ("Ada Kern was born in",),
        (Probe("Bo Lund lives in", "Paris"),),
        (Probe("Ada Kern speaks", "French", 0),),
    )
    m = evaluate_edits(model, tok, [req])
    assert {"efficacy_prob_gt", "paraphrase_token_acc", "neighborhood_greedy_em", "locality_l0_prob_gt"} <= set(m)
    lp2 = score_answers(model, tok, ["Ada Kern lives in"] * 2, ["Rome", "Paris"])[0]
    assert m["efficacy_prob_gt"] == float(lp2[0] > lp2[1])


def test_rome_makes_the_new_object_the_top_prediction_on_a_zoo_fact_model(tmp_path, monkeypatch):
    """On ``facts-small`` (three-word subjects, so facts flow through the subject's last token), a ROME edit raises
    the new object's log-probability by nats on average and makes it the greedy answer of the edited prompt for a
    share of the edits (never before the edit), and restore() is exact. A no-op editor scores 0 on both.

    The zoo trains this model for a fixed budget, so how many facts it routes through the edited MLP depends on the
    CPU. Measured on five trainings (the cached one and init seeds 0–3): recall 0.948–0.992, greedy wins 5, 6, 6, 7
    and 10 of 12, mean rise 3.6–5.1 nats. The bounds below sit well inside that spread (issue 10); the 4-layer
    ``facts-tiny`` does better (9 of 10, docs/papers/dike.md)."""
    from iclr26.editing.evaluate import counterfact_requests, evaluate_edits, known_facts
    from iclr26.lm import zoo

    model, tok = zoo.load("facts-small", progress=False)
    world = zoo.world_of("facts-small")
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))  # covariance statistics: a fresh cache
    known = known_facts(model, tok, world)
    assert len(known) >= 0.9 * len(world.facts)
    reqs = counterfact_requests(world, known[:: len(known) // 12][:12], seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    editor = ROME(ROMEConfig(context_templates=(), stats_n_tokens=4000), corpus=world.sentences())
    hits, rise = 0, []

    def logp_new(r):
        return score_answers(model, tok, [r.prompt.format(r.subject)], [r.target_new])[0][0]

    for r in reqs:
        assert evaluate_edits(model, tok, [r])["efficacy_greedy_em"] == 0.0
        lp0 = logp_new(r)
        res = editor.edit(model, tok, [r])
        hits += evaluate_edits(model, tok, [r])["efficacy_greedy_em"]
        rise.append(logp_new(r) - lp0)
        res.restore()
    assert sum(rise) / len(rise) > 2.0, f"mean rise of log p(new) {sum(rise) / len(rise):.2f} nats"
    assert hits >= 3, f"only {hits} of {len(reqs)} edits made the new object the top prediction"
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


# ---------------------------------------------------------------- issue 11: fidelity to the official code
def test_rome_default_makes_the_unprefixed_prompt_exact_with_prefixes(fact_model, tmp_path, monkeypatch):
    """With random prefixes, ROME's code makes the *un-prefixed* prompt's key k₀ map to v* = W k₀ + δ (u = C⁻¹k̄ from
    the prefix average): the MLP output at the edit prompt moves by exactly δ. The prefix-averaged option instead
    realises δ at k̄ and only part of it at the prompt."""
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    model, tok, facts, corpus = fact_model
    s = list(facts)[1]
    new = next(c for c in ("Paris", "Rome", "Oslo", "Lima") if c != facts[s][0])
    req = EditRequest("{} lives in", s, new, facts[s][0])
    moved = {}
    for target in ("prompt", "prefix_mean"):
        cfg = ROMEConfig(
            context_templates=((3, 3),), v_lr=5.0, v_num_grad_steps=5, stats_n_tokens=2000, value_target=target
        )
        ed = ROME(cfg, corpus=corpus)
        layer = ed.layers(model)[0]
        state = EditState()
        templates = ed.context_templates(model, tok, state)
        assert len(templates) == 4  # "{}" + 3 prefixes
        h0 = activation_at_subject(model, tok, [req], "mlp_out", layer)[0]
        delta = optimize_delta(model, tok, req, layer, "mlp_out", cfg, templates).delta
        res = ed.edit(model, tok, [req], state=state)
        h1 = activation_at_subject(model, tok, [req], "mlp_out", layer)[0]
        res.restore()
        moved[target] = float((h1 - h0) @ delta / (delta @ delta))  # share of δ realised at the edit prompt
    assert moved["prompt"] == pytest.approx(1.0, abs=1e-3)
    assert abs(moved["prefix_mean"] - 1.0) > 1e-3


def test_weight_decay_and_kl_follow_the_official_code():
    from iclr26.editing.compute import delta_weight_decay, essence_kl

    d, h = torch.tensor([3.0, 4.0]), torch.tensor([1.0, 1.0])
    assert delta_weight_decay(d, h, 0.5).item() == pytest.approx(0.5 * 5.0 / 2.0)  # w·‖δ‖/‖h‖², not ‖δ‖²
    now = torch.log(torch.tensor([0.7, 0.2, 0.1]))
    init = torch.log(torch.tensor([0.5, 0.25, 0.25]))
    kl_now_init = float((now.exp() * (now - init)).sum())  # KL(p_δ || p₀), as kl_div(init, now, log_target=True)
    assert essence_kl(now, init).item() == pytest.approx(kl_now_init, rel=1e-6)
    assert abs(kl_now_init - float((init.exp() * (init - now)).sum())) > 1e-3  # the direction matters here


def test_suit_step_b_regulariser_is_an_option():
    from iclr26.editing.suit import SUITConfig

    assert SUITConfig().step_b_regulariser is False and SUITConfig(step_b_regulariser=True).step_b_regulariser


def test_bad_editor_inputs_give_clear_errors():
    with pytest.raises(EditRequestError, match="subject must be a string"):
        EditRequest("{} lives in", None, "Rome")
    with pytest.raises(EditRequestError, match="target_new must be a string"):
        EditRequest("{} lives in", "Ada Kern", None)
    with pytest.raises(EditRequestError, match="target_true must be a string or None"):
        EditRequest("{} lives in", "Ada Kern", "Rome", 3)
    with pytest.raises(EditRequestError, match="paraphrase_prompts must be a sequence"):
        EditRequest("{} lives in", "Ada Kern", "Rome", paraphrase_prompts="Ada Kern resides in")
    for bad, match in (
        (10, "tuple of ints or None, got 10"),
        ("10", "tuple of ints or None, got '10'"),
        ([3.7], "must hold ints, got 3.7"),
        ((True,), "must hold ints"),
        ((), "non-empty"),
    ):
        with pytest.raises(ValueError, match=match):
            MEMITConfig(layers=bad)
    assert MEMITConfig(layers=[0, 1]).layers == (0, 1)
    tok = build_word_tokenizer(TEXTS)
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=2, n_heads=2)
    with pytest.raises(EditRequestError, match="requests must be an EditRequest"):
        ROME(ROMEConfig(**FAST)).edit(model, tok, "Ada Kern lives in Rome")
    with pytest.raises(EditRequestError, match="every request must be an EditRequest"):
        ROME(ROMEConfig(**FAST)).edit(model, tok, ["Ada Kern lives in Rome"])


def test_memit_warns_when_its_update_is_negligible(fact_model, tmp_path, monkeypatch):
    import warnings

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    model, tok, facts, corpus = fact_model
    s = next(iter(facts))
    new = next(c for c in ("Paris", "Rome", "Oslo", "Lima") if c != facts[s][0])
    req = EditRequest("{} lives in", s, new, facts[s][0])
    base = dict(layers=(0, 1), context_templates=(), v_lr=5.0, v_num_grad_steps=3, stats_n_tokens=2000)
    with pytest.warns(UserWarning, match="mom2_update_weight"):
        MEMIT(MEMITConfig(mom2_update_weight=1e9, **base), corpus=corpus).edit(model, tok, [req]).restore()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ed = MEMIT(MEMITConfig(mom2_update_weight=1e-3, **base), corpus=corpus)
        ed.edit(model, tok, [req]).restore()
    assert max(ed.realised_share.values()) > 0.5


def test_alphaedit_reports_its_null_space_and_warns_when_it_is_the_identity(tmp_path, monkeypatch):
    from iclr26.editing.alphaedit import nullspace

    c = torch.diag(torch.tensor([10.0, 5.0, 1.0, 0.01], dtype=torch.float64))
    p, info = nullspace(c, 0.02)
    assert info["null_dim"] == 1 and info["energy_share"] == pytest.approx(0.01 / 16.01)
    _, info = nullspace(c, 0.2, relative=True)  # threshold 0.2 × 10 = 2: the two smallest directions
    assert info["null_dim"] == 2 and info["threshold"] == pytest.approx(2.0)
    assert info["energy_share"] == pytest.approx(1.01 / 16.01)
    _, info = nullspace(c, 20.0)
    assert info["null_dim"] == 4 and info["energy_share"] == pytest.approx(1.0)  # P = I
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=3, n_heads=2, max_len=64)
    req = EditRequest("{} lives in", "Ada Kern", "Rome", "Paris")
    ed = AlphaEdit(AlphaEditConfig(nullspace_threshold=1e6, **FAST), corpus=CORPUS)
    with pytest.warns(UserWarning, match="identity"):
        ed.edit(model, tok, [req]).restore()
    ed = AlphaEdit(AlphaEditConfig(nullspace_threshold=0.5, nullspace_relative=True, **FAST), corpus=CORPUS)
    ed.edit(model, tok, [req]).restore()
    info = ed.nullspace_info[ed.layers(model)[0]]
    assert 0 < info["null_dim"] < info["d"] and 0 < info["energy_share"] < 1


def test_covariance_cache_follows_the_weights_not_the_object(tmp_path, monkeypatch):
    """(1) the same model object with other MLP weights (what a reused id(model) looked like) gets new statistics;
    (2) the disk cache separates two models with the same config and embedding but other MLP weights (a merged
    LoRA); (3) the in-memory cache stays bounded over many copy=True edits; (4) a sequence keeps the unedited
    model's statistics across batches."""
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    ed = MEMIT(MEMITConfig(**FAST), corpus=CORPUS)
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=3, n_heads=2, max_len=64)
    layer = ed.layers(model)[-1]
    c1 = ed.covariance(model, tok, layer).clone()
    with torch.no_grad():  # a merged LoRA: new up/gate weights before the key, same object, same embedding
        ad = ModelAdapter(model)
        for p in ad.block(layer).mlp.parameters():
            if p is not weight_of(ad.mlp_out(layer)):
                p.add_(0.5 * torch.randn_like(p))
    c2 = ed.covariance(model, tok, layer)
    fresh = key_covariances(model, tok, [layer], CORPUS, n_tokens=400, max_len=128, use_cache=False, progress=False)
    torch.testing.assert_close(c2, fresh[layer])
    assert (c2 - c1).norm() / c1.norm() > 0.05
    disk = MEMIT(MEMITConfig(**FAST), corpus=CORPUS).covariance(model, tok, layer)  # new editor: from disk
    torch.testing.assert_close(disk, fresh[layer])
    req = EditRequest("{} lives in", "Ada Kern", "Rome", "Paris")
    for _ in range(ed.max_cached + 4):
        ed.edit(model, tok, [req], copy=True)
    assert len(ed._cov) <= ed.max_cached
    reqs = [req, EditRequest("{} speaks", "Bo Lund", "French", "chess")]
    seen = []
    orig = ed.covariance
    monkeypatch.setattr(ed, "covariance", lambda m, t, lay: seen.append(ed.fingerprint(m)) or orig(m, t, lay))
    ed.edit_sequential(model, tok, reqs, batch_size=1).restore()
    assert len(set(seen)) == 1  # second batch: same (unedited-model) statistics
