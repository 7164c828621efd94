"""DiKE: the closed form minimises the four-term objective; the disentangler and the editor work on every arch."""

from __future__ import annotations

import os

import pytest
import torch

from iclr26.editing.dike import dike_update, four_term_objective
from iclr26.editing.dike.disentangler import Disentangler, KRDConfig, info_nce


def _problem(d=6, d_ff=10, n0=40, n1=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(d, d_ff, generator=g, dtype=torch.float64)
    K0 = torch.randn(d_ff, n0, generator=g, dtype=torch.float64)
    K1 = torch.randn(d_ff, n1, generator=g, dtype=torch.float64)
    V1 = torch.randn(d, n1, generator=g, dtype=torch.float64)
    W3 = torch.randn(d, d, generator=g, dtype=torch.float64)
    return W, K0, K1, V1, W3


@pytest.mark.parametrize("n1", [1, 3])
def test_closed_form_has_zero_gradient(n1):
    W, K0, K1, V1, W3 = _problem(n1=n1)
    W_hat = (W + dike_update(W, K1, V1, K0 @ K0.T, W3)).requires_grad_(True)
    four_term_objective(W_hat, W, K1, V1, K0, W3).backward()
    assert W_hat.grad.abs().max() < 1e-9


def test_closed_form_equals_direct_least_squares():
    """Stack the four terms as one linear least-squares problem in vec(Ŵ) and solve it with lstsq."""
    W, K0, K1, V1, W3 = _problem(n1=2)
    d = W.shape[0]
    eye = torch.eye(d, dtype=torch.float64)

    # vec(A X B) = (Bᵀ ⊗ A) vec(X), column-major vec
    def vec(x):
        return x.T.reshape(-1)

    V0, v0 = W @ K0, W @ K1
    k1t, k0t = K1.T.contiguous(), K0.T.contiguous()
    A = torch.cat([torch.kron(k1t, eye), torch.kron(k0t, eye), torch.kron(k1t, W3), torch.kron(k0t, W3)])
    b = torch.cat([vec(V1), vec(V0), vec(W3 @ v0), vec(W3 @ V0)])
    x = torch.linalg.lstsq(A, b[:, None]).solution[:, 0]
    W_direct = x.reshape(W.shape[1], d).T
    W_closed = W + dike_update(W, K1, V1, K0 @ K0.T, W3)
    assert torch.allclose(W_closed, W_direct, atol=1e-8)


def test_fine_grained_term_shrinks_update_along_w3():
    """μ = 0 is MEMIT's solve; μ > 0 moves the update out of the directions W3 reads (||W3 Δ k*|| falls)."""
    W, K0, K1, V1, W3 = _problem(n1=1)
    C0 = K0 @ K0.T
    d0 = dike_update(W, K1, V1, C0, W3, mu=0.0)
    d1 = dike_update(W, K1, V1, C0, W3, mu=1.0)
    memit = (V1 - W @ K1) @ K1.T @ torch.linalg.inv(C0 + K1 @ K1.T)
    assert torch.allclose(d0, memit, atol=1e-10)
    assert (W3 @ d1 @ K1).norm() < 0.5 * (W3 @ d0 @ K1).norm()
    assert torch.linalg.matrix_rank(d1) == 1  # one edit: a rank-one update


def test_dike_update_rejects_bad_shapes():
    W, K0, K1, V1, W3 = _problem()
    with pytest.raises(ValueError, match="K1"):
        dike_update(W, K1[:-1], V1, K0 @ K0.T, W3)
    with pytest.raises(ValueError, match="W3"):
        dike_update(W, K1, V1, K0 @ K0.T, W3[:-1])


def test_info_nce_prefers_aligned_components():
    torch.manual_seed(0)
    h = torch.randn(8, 16)
    good = info_nce(h + 0.01 * torch.randn_like(h), h + 0.01 * torch.randn_like(h), h, tau=0.1)
    bad = info_nce(torch.randn_like(h), torch.randn_like(h), h, tau=0.1)
    assert good < bad


def test_disentangler_shapes_and_config_errors():
    dis = Disentangler(16)
    z_r, z_u = dis(torch.randn(4, 16), torch.randn(4, 16))
    assert z_r.shape == z_u.shape == (4, 16) and dis.recompose(z_r, z_u).shape == (4, 16)
    with pytest.raises(ValueError, match="tau"):
        KRDConfig(tau=0.0)
    with pytest.raises(ValueError, match="steps"):
        KRDConfig(steps=0)


# ---------------------------------------------------------------- the editor on tiny models
from iclr26.editing import EditRequest  # noqa: E402
from iclr26.editing.dike import DiKE, DiKEConfig  # noqa: E402
from iclr26.editing.dike.disentangler import KRDSample, train_disentangler  # noqa: E402
from iclr26.lm.tiny import tiny_model  # noqa: E402
from iclr26.lm.tokenizer import build_word_tokenizer  # noqa: E402

SUBJ = ("Ada", "Bo", "Cy", "Di")
RELS = (("lives in", ("Paris", "Rome")), ("speaks", ("French", "Greek")), ("plays", ("chess", "golf")))
FACTS = [(s, r, objs[(i + j) % 2]) for i, s in enumerate(SUBJ) for j, (r, objs) in enumerate(RELS)]
TEXTS = [f"{s} {r} {o}" for s, r, o in FACTS]
_WORDS = sorted(set(" ".join(TEXTS).split()))
# enough tokens for a full-rank key covariance (≥ d_ff)
CORPUS = TEXTS + [" ".join(_WORDS[(7 * i + 3 * j) % len(_WORDS)] for j in range(8)) for i in range(100)]
SAMPLES = [
    KRDSample(f"{s} {r}", s, o, tuple((f"{s} {r2}", o2) for s2, r2, o2 in FACTS if s2 == s and r2 != r))
    for s, r, o in FACTS
]
FAST = dict(context_templates=((3, 1),), v_num_grad_steps=4, stats_n_tokens=800, mom2_update_weight=10.0)


def _model(arch, tok):
    kw = {} if arch == "gpt2" else {"n_kv_heads": 1}
    return tiny_model(arch, vocab_size=len(tok), d_model=32, n_layers=3, n_heads=2, max_len=64, **kw)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen2"])
def test_dike_runs_on_each_architecture_and_restores(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    torch.manual_seed(0)
    tok = build_word_tokenizer(TEXTS)
    model = _model(arch, tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ed = DiKE(DiKEConfig(**FAST), corpus=CORPUS)
    dis = ed.fit_disentangler(model, tok, SAMPLES, KRDConfig(steps=3, batch_size=4), progress=False)
    assert all(not p.requires_grad for p in dis.parameters()) and len(ed.krd_history) == 3
    req = [EditRequest("{} lives in", "Ada", "Rome", "Paris"), EditRequest("{} speaks", "Bo", "Greek", "French")]
    res = ed.edit_sequential(model, tok, req, batch_size=1)
    (layer,) = ed.layers(model)
    assert set(res.deltas) == {layer} and torch.isfinite(res.deltas[layer]).all()
    assert res.deltas[layer].abs().max() > 0
    res.restore()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_editor_applies_the_fine_grained_left_factor(tmp_path, monkeypatch):
    """Same request, same seed: DiKE's update with μ = 1 is (I + W3ᵀW3)⁻¹ times the μ = 0 update, with W3 from the
    trained disentangler, and it moves the unrelated component z_u less."""
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    model = _model("llama", tok)
    dis, _ = train_disentangler(model, tok, 1, SAMPLES, KRDConfig(steps=3, batch_size=4), progress=False)
    req = [EditRequest("{} lives in", "Ada", "Rome", "Paris")]
    deltas = {}
    for mu in (0.0, 1.0):
        torch.manual_seed(0)
        res = DiKE(DiKEConfig(**FAST, layers=(1,), mu=mu), corpus=CORPUS, disentangler=dis).edit(model, tok, req)
        deltas[mu] = res.deltas[1].double()
        res.restore()
    W3 = dis.W3.weight.double()
    expect = torch.linalg.solve(torch.eye(32, dtype=torch.float64) + W3.T @ W3, deltas[0.0])
    assert torch.allclose(deltas[1.0], expect, atol=1e-5 * deltas[0.0].abs().max().item())
    assert (W3 @ deltas[1.0]).norm() < (W3 @ deltas[0.0]).norm()


def test_dike_errors_are_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS)
    model = _model("gpt2", tok)
    with pytest.raises(ValueError, match="disentangler"):
        DiKE(DiKEConfig(**FAST), corpus=CORPUS).edit(model, tok, [EditRequest("{} lives in", "Ada", "Rome")])
    with pytest.raises(ValueError, match="layer"):
        DiKE(DiKEConfig(**FAST, layers=(7,)), corpus=CORPUS).edit(
            model, tok, [EditRequest("{} lives in", "Ada", "Rome")]
        )
    with pytest.raises(ValueError, match="layers"):
        DiKEConfig(layers=(0, 1))
    with pytest.raises(ValueError, match="mu"):
        DiKEConfig(mu=-1.0)
    with pytest.raises(ValueError, match="does not occur"):
        train_disentangler(
            model, tok, 0, [KRDSample("Ada lives in", "Zed", "Paris"), *SAMPLES[:2]], KRDConfig(steps=1), progress=False
        )


def test_smoke_run_through_the_harness(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("dike", scale="smoke", out=tmp_path / "runs", quiet=True)
    ok = ("reproduced", "not reproduced", "inconclusive", "not testable", "not run")  # not run: SmolLM2 at smoke
    assert res.verdicts and all(v["verdict"] in ok for v in res.verdicts)
    for m in res.per_seed.values():
        names = ("dike_efficacy_tiny", "rome_efficacy_tiny", "recall_tiny", "dike_neighborhood_tiny",
                 "best_baseline_rloc_tiny", "baseline_level_drop_tiny", "best_baseline_same_efficacy_tiny")  # fmt: skip
        for k in names:
            assert m[k] == m[k]  # finite, not nan
        assert m["unedited_rloc_tiny"] == 1.0  # probes are facts the unedited model completes: the ceiling
        assert m["n_edits_tiny"] == 2
    assert (res.run_dir / "plots" / "rloc_by_level.png").exists()


@pytest.fixture(scope="module")
def fact_model():
    """A 3-layer llama that memorises 12 two-token subjects × 2 relations (as in test_editing_core: two-token subjects
    make the subject's last token gather the subject's identity in the early MLPs, as in real models)."""
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
    torch.manual_seed(0)
    model = tiny_model("llama", vocab_size=len(tok), d_model=64, n_layers=3, n_heads=4, n_kv_heads=2, max_len=64)
    train_lm(model, tok, texts, TrainConfig(steps=300, batch_size=24, lr=1e-2, warmup=10, seq_len=16), progress=False)
    return model, tok, facts, corpus


def test_dike_edit_on_a_trained_model_writes_its_closed_form(fact_model, tmp_path, monkeypatch):
    """On a trained micro model: the FFN output at the subject's last token moves by exactly Δk* (the closed form is
    what the network computes), the move is smaller along W3 than MEMIT's (μ = 0) solve, and restore() is exact."""
    from iclr26.editing.compute import activation_at_subject, compute_keys

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    model, tok, facts, corpus = fact_model
    samples = [KRDSample(f"{s} lives in", s, c, ((f"{s} speaks", la),)) for s, (c, la) in facts.items()]
    samples += [KRDSample(f"{s} speaks", s, la, ((f"{s} lives in", c),)) for s, (c, la) in facts.items()]
    s0 = next(iter(facts))
    req = EditRequest("{} lives in", s0, "Oslo" if facts[s0][0] != "Oslo" else "Rome", facts[s0][0])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    moves = {}
    for mu in (0.0, 1.0):
        torch.manual_seed(0)
        ed = DiKE(DiKEConfig(context_templates=(), stats_n_tokens=2000, mom2_update_weight=1.0, mu=mu), corpus=corpus)
        if mu == 0.0:
            dis = ed.fit_disentangler(model, tok, samples, KRDConfig(steps=10, batch_size=12), progress=False)
        ed.disentangler = dis
        (layer,) = ed.layers(model)
        h0 = activation_at_subject(model, tok, [req], "mlp_out", layer)[0]
        k = compute_keys(model, tok, [req], layer)[0]
        res = ed.edit(model, tok, [req])
        moves[mu] = activation_at_subject(model, tok, [req], "mlp_out", layer)[0] - h0
        torch.testing.assert_close(moves[mu], res.deltas[layer] @ k, atol=1e-4 * h0.norm().item(), rtol=1e-4)
        res.restore()
    W3 = dis.W3.weight
    assert moves[1.0].norm() > 0 and (W3 @ moves[1.0]).norm() < (W3 @ moves[0.0]).norm()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
def test_dike_on_smollm2_raises_the_new_object_and_restores():
    from iclr26.editing.evaluate import score_answers
    from iclr26.lm import zoo

    model, tok = zoo.load("smollm2-135m")
    samples = [
        KRDSample("The capital of France is", "France", "Paris", (("The currency of France is the", "euro"),)),
        KRDSample("The capital of Japan is", "Japan", "Tokyo", (("The currency of Japan is the", "yen"),)),
    ]
    ed = DiKE(DiKEConfig(context_templates=(), stats_n_tokens=5000))
    ed.fit_disentangler(model, tok, samples, KRDConfig(steps=2, batch_size=2), progress=False)
    req = EditRequest("The capital of {} is", "Italy", "Berlin", "Rome")
    # measured in the reproduction: this editor makes the new object the greedy answer in only ~half of the SmolLM2
    # edits (docs), so the test checks that the edit moves P(new) a lot, not that it always wins, and restore()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    lp0 = score_answers(model, tok, [req.text], [req.target_new])[0][0]
    res = ed.edit(model, tok, [req])
    lp1 = score_answers(model, tok, [req.text], [req.target_new])[0][0]
    res.restore()
    assert lp1 > lp0 + 1.0, (lp0, lp1)  # mean per-token log-prob of the new object up by more than one nat
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_calibration_rule_picks_the_most_preserving_value_that_reaches_the_target(monkeypatch):
    """tune_knob walks the grid from the most preserving value and stops at the first that reaches the target
    efficacy; if none does it returns the last (least preserving) value. Every baseline's knob goes through it."""
    from iclr26.editing import benchmark as dike

    effs = {1: 0.1, 2: 0.5, 4: 0.92, 8: 1.0}
    calls = []

    def fake_efficacy(editor, model, tok, reqs):
        calls.append(editor)
        return effs[editor]

    monkeypatch.setattr(dike, "efficacy_of", fake_efficacy)
    assert dike.tune_knob(lambda q: q, (1, 2, 4, 8), None, None, [], 0.9) == (4, 0.92)
    assert calls == [1, 2, 4]  # stops at the first hit: the most preserving value that reaches the target
    assert dike.tune_knob(lambda q: q, (1, 2), None, None, [], 0.9) == (2, 0.5)  # none reaches it: the last
    assert dike.tune_knob(lambda q: q, (1, 2, 4), None, None, [], 0.05) == (1, 0.1)


def _tiny_metrics(rng, **means):
    """One seed's tiny-setting metrics of every DiKE claim: ``means`` (name → mean) plus a little noise."""
    from iclr26.papers import dike

    names = {n for c in dike.CLAIMS if not c.when for n in c.metrics()}
    return {n: means.get(n, 0.5) + rng.gauss(0, 0.01) for n in sorted(names)} | {"recall_tiny": 1.0}


def _dike_verdicts(**means):
    import random

    from iclr26.core.gates import evaluate
    from iclr26.papers import dike

    rng = random.Random(0)
    per_seed = [_tiny_metrics(rng, **means) for _ in range(5)]
    return {v.id: v for v in evaluate(dike.CLAIMS, per_seed, dike.Cfg(smollm2=False))}


# the recorded VERSION 2 run on facts-tiny: DiKE keeps the subject's other facts because its edits barely take
_BARELY_EDITS = dict(
    rome_efficacy_tiny=0.92, memit_efficacy_tiny=0.74, alphaedit_efficacy_tiny=0.29, dike_efficacy_tiny=0.09,
    dike_mu0_efficacy_tiny=0.39, best_baseline_efficacy_tiny=0.92, rome_rloc_tiny=0.61, memit_rloc_tiny=0.80,
    alphaedit_rloc_tiny=0.93, dike_rloc_tiny=0.96, dike_mu0_rloc_tiny=0.87, best_baseline_rloc_tiny=0.93,
    unedited_rloc_tiny=1.0,
)  # fmt: skip


def test_a_locality_win_without_efficacy_parity_is_not_testable():
    vs = _dike_verdicts(**_BARELY_EDITS)
    assert vs["efficacy_parity_tiny"].verdict == "not reproduced"
    assert vs["rloc_tiny"].measured == "reproduced" and vs["rloc_tiny"].verdict == "not testable"
    assert "efficacy_parity_tiny is not reproduced" in vs["rloc_tiny"].note
    assert vs["mechanism_tiny"].verdict == "not testable"  # DiKE 0.09 vs μ = 0 0.39: the ablation changes strength
    assert vs["efficacy_tiny"].verdict == "not reproduced"  # the efficacy claim itself is decided


def test_a_locality_win_at_parity_is_reproduced_unless_the_mu0_control_wins_too():
    at_parity = _BARELY_EDITS | dict(dike_efficacy_tiny=0.91, dike_mu0_efficacy_tiny=0.90, dike_mu0_rloc_tiny=0.80)
    vs = _dike_verdicts(**at_parity)
    assert vs["efficacy_parity_tiny"].verdict == vs["control_mu0_tiny"].verdict == "reproduced"
    assert vs["rloc_tiny"].verdict == "reproduced" and vs["mechanism_tiny"].verdict == "reproduced"
    vs = _dike_verdicts(**at_parity | dict(dike_mu0_rloc_tiny=0.97))  # the mechanism removed keeps as much
    assert vs["control_mu0_tiny"].verdict == "not reproduced" and vs["rloc_tiny"].verdict == "not testable"
    vs = _dike_verdicts(**at_parity | dict(best_baseline_rloc_tiny=1.0, unedited_rloc_tiny=1.0))  # no headroom
    assert vs["headroom_tiny"].verdict != "reproduced" and vs["rloc_tiny"].verdict == "not testable"


def test_edits_at_the_ceiling_pass_the_ceiling_prone_gates():
    """Every seed at efficacy 1.0 (SmolLM2's baselines): the gates declared deterministic decide on the value instead
    of calling identical seeds inconclusive."""
    from iclr26.core.claims import verdict
    from iclr26.papers import dike

    gate = next(c for c in dike.CLAIMS if c.id == "efficacy_parity_smollm2")
    seeds = [{"dike_efficacy_smollm2": 1.0, "best_baseline_efficacy_smollm2": 1.0}] * 5
    assert verdict(gate, seeds).verdict == "reproduced"
    seeds = [{"dike_efficacy_smollm2": 0.4 + 0.1 * i, "best_baseline_efficacy_smollm2": 1.0} for i in range(5)]
    assert verdict(gate, seeds).verdict == "not reproduced"
