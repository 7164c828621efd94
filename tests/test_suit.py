"""SUIT: shared key subspace, purified keys, the 2-D swap residual, and an update that stays in its subspace."""

from __future__ import annotations

import os

import pytest
import torch

from iclr26.editing.suit import (
    SUITConfig,
    alphaedit_delta,
    nullspace_projector,
    purify_keys,
    shared_key_subspace,
    swap_residual,
)


def _entity_keys(d_ff=20, n=200, n_shared=3, seed=0):
    """Keys = a few strong shared directions + weak entity-specific noise."""
    g = torch.Generator().manual_seed(seed)
    shared = torch.linalg.qr(torch.randn(d_ff, n_shared, generator=g, dtype=torch.float64))[0]
    K = shared @ (5 * torch.randn(n_shared, n, generator=g, dtype=torch.float64) + 10)
    return K + 0.3 * torch.randn(d_ff, n, generator=g, dtype=torch.float64), shared


def test_shared_subspace_energy_rule_and_purification():
    K, shared = _entity_keys()
    S = torch.linalg.svdvals(K)
    for tau in (0.3, 0.6, 0.9):
        U = shared_key_subspace(K, tau)
        m = U.shape[1]
        frac = (S[:m] ** 2).sum() / (S**2).sum()
        assert frac >= tau and (m == 1 or (S[: m - 1] ** 2).sum() / (S**2).sum() < tau)  # fewest directions
        assert torch.allclose(U.T @ U, torch.eye(m, dtype=U.dtype), atol=1e-10)
    U = shared_key_subspace(K, 0.99)
    Kp = purify_keys(K, U)
    assert (U.T @ Kp).abs().max() < 1e-9  # k' ⊥ shared subspace
    assert torch.allclose(purify_keys(Kp, U), Kp)  # a projection: idempotent
    assert shared_key_subspace(K, 0.0).shape[1] == 0


def test_swap_residual_swaps_projections():
    torch.manual_seed(0)
    h = torch.randn(3, 8)
    q = torch.linalg.qr(torch.randn(8, 2))[0]
    w1, w2 = 2.0 * q[:, 0], 0.5 * q[:, 1]  # not unit: the function normalises
    hs = h + swap_residual(h, w1, w2)
    assert torch.allclose(hs @ q[:, 0], h @ q[:, 1], atol=1e-6)
    assert torch.allclose(hs @ q[:, 1], h @ q[:, 0], atol=1e-6)
    d = swap_residual(h, w1, w2)  # δ' lives in span(w1, w2)
    assert torch.allclose(d - (d @ q) @ q.T, torch.zeros_like(d), atol=1e-6)


def _solver_problem(seed=0, d=6, d_ff=20, n1=3):
    K, shared = _entity_keys(d_ff=d_ff, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    K1 = K[:, :n1]
    R = torch.randn(d, n1, generator=g, dtype=torch.float64)
    return K, K1, R


def test_update_row_space_avoids_shared_keys_without_nullspace():
    """With P = I the update is R'(K1'ᵀK1' + I)⁻¹K1'ᵀ: its row space is span(K1') ⊥ U_s, so ΔW U_s = 0."""
    K, K1, R = _solver_problem()
    U = shared_key_subspace(K, 0.9)
    K1p = purify_keys(K1, U)
    delta = alphaedit_delta(K1p, R, torch.eye(K.shape[0], dtype=torch.float64))
    assert (delta @ U).abs().max() < 1e-10
    plain = alphaedit_delta(K1, R, torch.eye(K.shape[0], dtype=torch.float64))
    assert (plain @ U).abs().max() > 1e-3  # without purification the update reads shared directions


def test_update_stays_in_nullspace_and_in_swap_plane():
    """Rows of Δ lie in range(P) (ΔK0 ≈ 0 on preserved keys); a single-layer residual δ' in span(w1, w2) gives
    columns of Δ in span(w1, w2)."""
    K, K1, _ = _solver_problem()
    g = torch.Generator().manual_seed(3)
    K0 = torch.randn(K.shape[0], 12, generator=g, dtype=torch.float64)  # rank 12 < d_ff: a non-trivial null space
    P = nullspace_projector(K0 @ K0.T, 1e-2)
    h = torch.randn(3, 6, generator=g, dtype=torch.float64)
    w1, w2 = torch.randn(6, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64)
    R = swap_residual(h, w1, w2).T  # [d, n]
    U = shared_key_subspace(K, 0.9)
    Kp = K[:, 5:9]
    delta = alphaedit_delta(purify_keys(K1, U), R, P, Kp @ Kp.T)
    assert (delta @ K0).abs().max() < 1e-8
    basis = torch.linalg.qr(torch.stack([w1, w2], 1))[0]
    assert torch.allclose(basis @ (basis.T @ delta), delta, atol=1e-10)
    assert delta.abs().max() > 1e-4  # not a no-op


def test_solver_matches_formula():
    K, K1, R = _solver_problem()
    P = nullspace_projector(K[:, :10] @ K[:, :10].T, 1e-2)
    Kp = K[:, 30:33]
    n = K.shape[0]
    ref = R @ K1.T @ P @ torch.linalg.inv(Kp @ Kp.T @ P + K1 @ K1.T @ P + torch.eye(n, dtype=torch.float64))
    assert torch.allclose(alphaedit_delta(K1, R, P, Kp @ Kp.T), ref, atol=1e-8)


def test_config_range_checks():
    with pytest.raises(ValueError, match="tau_energy"):
        SUITConfig(tau_energy=1.0)
    with pytest.raises(ValueError, match="lam"):
        SUITConfig(lam=-0.1)
    with pytest.raises(ValueError, match="tau_energy"):
        shared_key_subspace(torch.randn(5, 5), 1.5)


# ---------------------------------------------------------------- the editor on tiny models
from iclr26.editing import AlphaEdit, AlphaEditConfig, EditRequest  # noqa: E402
from iclr26.editing.suit import SUIT, SwapDelta  # noqa: E402
from iclr26.lm.tiny import tiny_model  # noqa: E402
from iclr26.lm.tokenizer import build_word_tokenizer  # noqa: E402

SUBJ = ("Ada", "Bo", "Cy", "Di", "Ed", "Fa")
TEXTS = [f"{s} {r} {o}" for s in SUBJ for r, o in (("lives in", "Paris"), ("speaks", "French"), ("plays", "chess"))]
_WORDS = sorted(set(" ".join(TEXTS).split()))
# enough tokens for a full-rank key covariance (≥ d_ff)
CORPUS = TEXTS + [" ".join(_WORDS[(7 * i + 3 * j) % len(_WORDS)] for j in range(8)) for i in range(100)]
FAST = dict(context_templates=((3, 1),), v_num_grad_steps=4, stats_n_tokens=800, nullspace_threshold=1e-1)
REQS = [EditRequest("{} lives in", "Ada", "Rome", "Paris"), EditRequest("{} speaks", "Bo", "Greek", "French")]


def _model(arch, tok):
    kw = {} if arch == "gpt2" else {"n_kv_heads": 1}
    return tiny_model(arch, vocab_size=len(tok), d_model=32, n_layers=3, n_heads=2, max_len=64, **kw)


@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen2"])
def test_suit_runs_on_each_architecture_and_restores(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS + ["Rome Greek"])
    model = _model(arch, tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ed = SUIT(SUITConfig(**FAST), corpus=CORPUS, entities=SUBJ)
    res = ed.edit_sequential(model, tok, REQS, batch_size=1)
    assert set(res.deltas) == set(ed.layers(model)) and all(torch.isfinite(d).all() for d in res.deltas.values())
    res.restore()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_suit_update_stays_in_its_subspaces(tmp_path, monkeypatch):
    """On a real (tiny) model: every layer's ΔW has its rows in AlphaEdit's null space (ΔW(I − P) = 0), the keys
    remembered for later batches are the purified ones (U_sᵀ K_p = 0), and ΔW reads the shared key directions far less
    than AlphaEdit's update for the same requests."""
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS + ["Rome Greek"])
    model = _model("llama", tok)
    ed = SUIT(SUITConfig(**FAST, tau_energy=0.6), corpus=CORPUS, entities=SUBJ)
    res = ed.edit(model, tok, REQS)
    res2 = AlphaEdit(AlphaEditConfig(**FAST), corpus=CORPUS).edit(model, tok, REQS, copy=True)
    kp = res.state.extra["alphaedit_kpkpt"]
    for layer, d in res.deltas.items():
        P = ed.projector(model, tok, layer)
        d = d.double()
        assert (d - d @ P).abs().max() < 1e-6 * max(1.0, d.abs().max().item())
        U = ed.subspaces[layer]
        assert U.shape[1] >= 1
        assert (U.T @ kp[layer] @ U).abs().max() < 1e-6 * kp[layer].abs().max()
        leak_suit = (d @ U).norm() / d.norm()
        leak_alpha = (res2.deltas[layer].double() @ U).norm() / res2.deltas[layer].double().norm()
        assert leak_suit < 0.5 * leak_alpha
    res.restore()


def test_swap_delta_penalty_and_init():
    w1, w2 = torch.tensor([1.0, 0.0, 0.0]), torch.tensor([1.0, 1.0, 0.0])
    fn = SwapDelta(w1, w2, lam=0.3)
    assert torch.isclose(fn.penalty(), torch.tensor(0.3 * 0.5))  # λ cos²(45°)
    h = torch.tensor([[2.0, 0.0, 1.0]])
    assert torch.allclose(fn(h), swap_residual(h, w1, w2))


def test_suit_needs_entities(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tok = build_word_tokenizer(TEXTS + ["Rome Greek"])
    model = _model("gpt2", tok)
    with pytest.raises(ValueError, match="entity names"):
        SUIT(SUITConfig(**FAST), corpus=CORPUS).edit(model, tok, REQS[:1])
    res = SUIT(SUITConfig(**FAST, use_key_projection=False), corpus=CORPUS).edit(model, tok, REQS[:1])
    assert res.deltas


def test_smoke_run_through_the_harness(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("suit", scale="smoke", out=tmp_path / "runs", quiet=True)
    ok = ("reproduced", "not reproduced", "inconclusive", "not testable", "not run")  # not run: SmolLM2 at smoke
    assert res.verdicts and all(v["verdict"] in ok for v in res.verdicts)
    for m in res.per_seed.values():
        names = ("suit_efficacy_tiny", "alphaedit_neighborhood_tiny", "recall_tiny", "suit_score_tiny",
                 "best_baseline_neighborhood_tiny", "min_baseline_key_leak_tiny",
                 "unedited_neighborhood_tiny")  # fmt: skip
        for k in names:
            assert m[k] == m[k]
        assert m["unedited_rloc_tiny"] == 1.0 and m["n_edits_tiny"] == 4
    assert (res.run_dir / "plots" / "efficacy_vs_specificity.png").exists()


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
def test_suit_on_smollm2_raises_the_new_object_and_restores():
    from iclr26.editing.evaluate import score_answers
    from iclr26.lm import zoo

    model, tok = zoo.load("smollm2-135m")
    ed = SUIT(SUITConfig(context_templates=(), stats_n_tokens=5000), entities=["France", "Japan", "Brazil", "Kenya"])
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


def test_key_leak_diagnostic_by_hand():
    """‖ΔW U_s‖/‖ΔW‖: 1 for an update that reads only shared key directions, 0 for one orthogonal to them."""
    import types

    from iclr26.papers.suit.experiment import key_diagnostic

    u = torch.eye(6, dtype=torch.float64)[:, :2]  # shared subspace: the first two key coordinates
    suit = types.SimpleNamespace(subspaces={0: u, 1: u})
    prep = {"editors": {"suit": suit}, "U06": {0: u[:, :1], 1: u[:, :1]}}
    inside = torch.zeros(3, 6)
    inside[:, 0] = 1.0
    outside = torch.zeros(3, 6)
    outside[:, 4] = 2.0
    half = torch.zeros(3, 6)
    half[0, 1], half[0, 5] = 1.0, 1.0
    out = key_diagnostic(prep, "tiny", {"a": {0: inside, 1: inside}, "b": {0: outside}, "c": {1: half}}, None)
    assert out["a_key_leak_tiny"] == pytest.approx(1.0) and out["b_key_leak_tiny"] == 0.0
    assert out["c_key_leak_tiny"] == pytest.approx(2**-0.5)
    assert out["shared_dim_tiny"] == 2 and out["shared_dim_tau06_tiny"] == 1


def _suit_verdicts(**means):
    import random

    from iclr26.core.gates import evaluate
    from iclr26.papers import suit

    rng = random.Random(0)
    names = {n for c in suit.CLAIMS if not c.when for n in c.metrics()}
    noisy = [{n: means.get(n, 0.5) + rng.gauss(0, 0.005) for n in sorted(names)} for _ in range(5)]  # fixed order
    per_seed = [m | {"recall_tiny": 1.0} for m in noisy]
    return {v.id: v for v in evaluate(suit.CLAIMS, per_seed, suit.Cfg(smollm2=False))}


_SPECIFIC = dict(
    memit_efficacy_tiny=0.9, alphaedit_efficacy_tiny=0.8, best_baseline_efficacy_tiny=0.9, suit_efficacy_tiny=0.9,
    memit_neighborhood_tiny=0.7, alphaedit_neighborhood_tiny=0.75, best_baseline_neighborhood_tiny=0.75,
    suit_neighborhood_tiny=0.9, suit_no_kp_neighborhood_tiny=0.72, unedited_neighborhood_tiny=1.0,
    memit_key_leak_tiny=0.3, alphaedit_key_leak_tiny=0.5, min_baseline_key_leak_tiny=0.3, suit_key_leak_tiny=0.01,
    suit_no_kp_key_leak_tiny=0.45,
)  # fmt: skip


def test_specificity_needs_efficacy_parity_headroom_and_a_failing_no_kp_control():
    vs = _suit_verdicts(**_SPECIFIC)
    assert vs["specificity_tiny"].verdict == "reproduced" and vs["key_leak_tiny"].verdict == "reproduced"
    vs = _suit_verdicts(**_SPECIFIC | dict(suit_efficacy_tiny=0.3))  # SUIT barely edits: nothing is disturbed
    assert vs["specificity_tiny"].measured == "reproduced" and vs["specificity_tiny"].verdict == "not testable"
    assert vs["key_leak_tiny"].verdict == "not testable"  # an update that does not edit can avoid any direction
    vs = _suit_verdicts(**_SPECIFIC | dict(suit_no_kp_neighborhood_tiny=0.9))  # no key projection, same Specificity
    assert vs["control_no_kp_specificity_tiny"].verdict == "not reproduced"
    assert vs["specificity_tiny"].verdict == "not testable"
    ceiling = dict(memit_neighborhood_tiny=1.0, alphaedit_neighborhood_tiny=1.0, best_baseline_neighborhood_tiny=1.0)
    vs = _suit_verdicts(**_SPECIFIC | ceiling)  # the baselines disturb nothing: no room
    assert vs["headroom_specificity_tiny"].verdict != "reproduced" and vs["specificity_tiny"].verdict == "not testable"


def test_key_leak_needs_a_leak_to_remove_and_a_failing_no_kp_control():
    vs = _suit_verdicts(**_SPECIFIC | dict(memit_key_leak_tiny=0.02, min_baseline_key_leak_tiny=0.02))
    assert vs["headroom_leak_tiny"].verdict == "not reproduced" and vs["key_leak_tiny"].verdict == "not testable"
    vs = _suit_verdicts(**_SPECIFIC | dict(suit_no_kp_key_leak_tiny=0.02))
    assert vs["control_no_kp_leak_tiny"].verdict == "not reproduced" and vs["key_leak_tiny"].verdict == "not testable"
