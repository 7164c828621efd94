import math

import numpy as np
import pytest
import torch

from iclr26.lenses.dispersion import (
    PushAway,
    PushAwayConfig,
    binned_pearson,
    cross_dispersion,
    dispersion,
    dispersion_gap,
    dispersion_pairwise,
    knn_lm_logprobs,
    knn_lm_mix,
    knn_neighbours,
    segment_stats,
)


def test_hand_computed_cases():
    e1, e2 = torch.eye(3)[0], torch.eye(3)[1]
    assert dispersion(torch.stack([e1, e1, e1])).item() == pytest.approx(0.0, abs=1e-6)
    assert dispersion(torch.stack([e1, -e1])).item() == pytest.approx(2.0)  # 1 − cos(π) = 2
    assert dispersion(torch.stack([e1, e2])).item() == pytest.approx(1.0)
    # three vectors: pairs (e1,e1)=0, (e1,e2)=1, (e1,e2)=1 → mean 2/3
    assert dispersion(torch.stack([e1, e1 * 5, e2])).item() == pytest.approx(2 / 3)


def test_fast_equals_pairwise_and_high_dim_random_is_one():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(50, 16, generator=g) + 0.5
    assert dispersion(h).item() == pytest.approx(dispersion_pairwise(h).item(), abs=1e-5)
    assert dispersion(torch.randn(200, 4096, generator=g)).item() == pytest.approx(1.0, abs=0.01)


def test_mask_and_errors():
    h = torch.stack([torch.eye(2)[0], torch.eye(2)[0], torch.eye(2)[1]])
    assert dispersion(h, mask=torch.tensor([1, 1, 0])).item() == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        dispersion(h[:1])
    with pytest.raises(ValueError, match=r"\[N, d\]"):
        dispersion(torch.zeros(2, 3, 4))


def test_cross_dispersion_and_gap_scale_invariance():
    a, b = torch.randn(10, 8), torch.randn(12, 8)
    brute = np.mean([1 - torch.cosine_similarity(x, y, dim=0).item() for x in a for y in b])
    assert cross_dispersion(a, b).item() == pytest.approx(brute, abs=1e-5)
    e = torch.randn(30, 8)
    assert dispersion_gap(e, range(5), range(5, 30)) == pytest.approx(
        dispersion_gap(7 * e, range(5), range(5, 30)), abs=1e-5
    )


def test_binned_pearson():
    ppl = np.arange(1, 41, dtype=float)
    assert binned_pearson(ppl, -ppl, 4) == pytest.approx(-1.0)
    assert binned_pearson(ppl, 2 * ppl + 1, 4) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="too few"):
        binned_pearson(ppl[:5], ppl[:5], 4)


def test_segment_stats_match_manual_computation():
    from iclr26.lm.tiny import tiny_model

    model = tiny_model("llama", vocab_size=40, d_model=16, n_layers=2, n_heads=2, max_len=16)
    ids = torch.randint(4, 40, (3, 10), generator=torch.Generator().manual_seed(1))
    s = segment_stats(model, ids)
    out = model(ids, output_hidden_states=True)
    logits = out.logits[1].float()
    nll = torch.nn.functional.cross_entropy(logits[:-1], ids[1, 1:])
    assert s["ppl"][1] == pytest.approx(math.exp(nll.item()), rel=1e-4)
    assert s["disp"].shape == (3, 3)
    assert s["disp"][2, -1] == pytest.approx(dispersion_pairwise(out.hidden_states[-1][2, 1:]).item(), abs=1e-5)


def test_push_away_raises_dispersion_and_zero_lambda_is_a_no_op():
    h = torch.randn(64, 8) * 0.1 + torch.tensor([1.0] + [0.0] * 7)
    h.requires_grad_(True)
    loss = PushAway(PushAwayConfig(lam=1.0)).aux(h)
    assert loss.item() == pytest.approx(-dispersion(h).item())
    loss.backward()
    with torch.no_grad():
        h2 = h - 0.5 * h.grad
    assert dispersion(h2) > dispersion(h)  # a gradient step on L_aux spreads the vectors out
    dom = torch.tensor([0] * 32 + [1] * 32)
    assert PushAway(PushAwayConfig(lam=1.0, mode="cross")).aux(h, dom).item() == pytest.approx(
        -cross_dispersion(h[:32], h[32:]).item()
    )
    with pytest.raises(ValueError, match="lam"):
        PushAwayConfig(lam=-1)
    with pytest.raises(ValueError, match="mode"):
        PushAwayConfig(mode="both")


def test_push_away_lambda_zero_training_is_bit_identical():
    from contextlib import nullcontext

    from iclr26.lm.tiny import tiny_model

    def train(extra):
        torch.manual_seed(0)
        model = tiny_model("llama", vocab_size=30, d_model=16, n_layers=1, n_heads=2, max_len=16)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ids = torch.randint(4, 30, (4, 12), generator=torch.Generator().manual_seed(0))
        with extra.track(model) if extra else nullcontext():
            for _ in range(3):
                out = model(input_ids=ids, labels=ids, output_hidden_states=True)
                loss = out.loss + (extra(model, ids, None, out) if extra else 0)
                opt.zero_grad()
                loss.backward()
                opt.step()
        return model.lm_head.weight.detach()

    base = train(None)
    assert torch.equal(base, train(PushAway(PushAwayConfig(lam=0.0))))
    assert not torch.equal(base, train(PushAway(PushAwayConfig(lam=0.5))))


def test_push_away_layer_names_the_last_block_before_the_final_norm():
    """layer=-1 is the last block's output before the final norm: neither hidden_states[-2] (the block before it)
    nor hidden_states[-1] (normed). The loss must be −λ·dispersion of exactly those vectors (position 0 left out)."""
    from iclr26.lenses.dispersion import block_dispersion, resolve_block
    from iclr26.lm.tiny import tiny_model

    torch.manual_seed(0)
    model = tiny_model("llama", vocab_size=30, d_model=16, n_layers=2, n_heads=2, max_len=16)
    with torch.no_grad():  # a non-trivial final-norm weight, so normed and pre-norm vectors differ in cosine
        model.model.norm.weight.copy_(torch.linspace(0.2, 3.0, 16))
    ids = torch.randint(4, 30, (1, 12), generator=torch.Generator().manual_seed(0))
    with capture_blocks(model) as acts:
        out = model(input_ids=ids, output_hidden_states=True)
    last = acts["resid", 1][0, 1:]
    push = PushAway(PushAwayConfig(lam=1.0, max_vectors=512))
    with push.track(model):
        out = model(input_ids=ids, output_hidden_states=True)
        loss = push(model, ids, None, out)
    assert loss.item() == pytest.approx(-dispersion(last).item(), abs=1e-6)
    for wrong in (out.hidden_states[-2], out.hidden_states[-1]):
        assert abs(loss.item() + dispersion(wrong[0, 1:]).item()) > 1e-4
    assert resolve_block(model, -1) == 1 and resolve_block(model, 0) == 0
    assert block_dispersion(model, ids, -1)[0] == pytest.approx(dispersion(last).item(), abs=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        resolve_block(model, 2)
    with pytest.raises(RuntimeError, match="track"):
        PushAway(PushAwayConfig(lam=1.0))(model, ids, None, out)


def capture_blocks(model):
    from iclr26.lm.hooks import capture

    return capture(model, [("resid", 0), ("resid", 1)])


def test_knn_lm_interpolation():
    keys = torch.tensor([[0.0, 0.0], [10.0, 10.0]])
    values = torch.tensor([3, 5])
    q = torch.tensor([[0.1, 0.0]])
    lm_lp = torch.log(torch.tensor([0.2]))
    # λ = 0 is the LM alone
    assert knn_lm_logprobs(keys, values, q, torch.tensor([3]), lm_lp, k=2, lam=0.0).item() == pytest.approx(
        math.log(0.2), abs=1e-6
    )
    # the nearest key (value 3) takes almost all kNN mass: p = λ·1 + (1−λ)·0.2
    got = knn_lm_logprobs(keys, values, q, torch.tensor([3]), lm_lp, k=2, lam=0.5).exp().item()
    assert got == pytest.approx(0.5 + 0.5 * 0.2, abs=1e-4)


def test_knn_neighbours_and_mix_equal_a_brute_force_loop():
    """The precomputed-neighbour path (used to tune λ and the temperature per key) against an explicit loop over
    every query, with a temperature that makes every neighbour count."""
    g = torch.Generator().manual_seed(0)
    keys, q = torch.randn(40, 5, generator=g), torch.randn(7, 5, generator=g)
    values, targets = torch.randint(0, 4, (40,), generator=g), torch.randint(0, 4, (7,), generator=g)
    lm_lp = torch.log(torch.rand(7, generator=g) * 0.5 + 0.1)
    dist, idx = knn_neighbours(keys, q, k=6, chunk=3)
    got = knn_lm_mix(dist, idx, values, targets, lm_lp, lam=0.3, temperature=4.0)
    for i in range(7):
        d2 = ((keys - q[i]) ** 2).sum(-1)
        near = d2.argsort()[:6]
        w = torch.softmax(-d2[near] / 4.0, 0)
        p_knn = float((w * (values[near] == targets[i]).float()).sum())
        want = math.log(0.3 * p_knn + 0.7 * math.exp(lm_lp[i].item()) + 1e-12)
        assert got[i].item() == pytest.approx(want, abs=1e-5)
    assert torch.allclose(got, knn_lm_logprobs(keys, values, q, targets, lm_lp, k=6, lam=0.3, temperature=4.0))
    # a higher temperature spreads the kNN mass: the result depends on it (the tuned parameter is not a no-op)
    assert not torch.allclose(got, knn_lm_mix(dist, idx, values, targets, lm_lp, lam=0.3, temperature=0.01))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        knn_lm_mix(dist, idx, values, targets, lm_lp, temperature=0.0)
    with pytest.raises(ValueError, match=r"λ must be in \[0, 1\]"):
        knn_lm_mix(dist, idx, values, targets, lm_lp, lam=1.5)
    with pytest.raises(ValueError, match="must share d"):
        knn_neighbours(keys, torch.randn(3, 4))


def test_smoke_reproduction_through_cli(tmp_path, monkeypatch):
    pytest.importorskip("gensim")
    from iclr26.cli import main
    from iclr26.papers import dispersion as paper

    tiny = paper.DispersionConfig(
        seeds=(0, 1),
        real_model="facts-micro-llama",
        domains=("news", "python_manual"),
        segments_per_domain=8,
        seg_len=16,
        n_bins=2,
        tiny_sizes=(8, 16),
        tiny_steps=4,
        tiny_checkpoints=(2,),
        tiny_eval_segments=4,
        tiny_seq=16,
        knn_store_blocks=8,
        knn_eval_blocks=4,
        knn_k=4,
        push_steps=2,
        push_d_model=8,
        push_batch=4,
        tiny_vocab=300,
        tiny_domains=("news", "python_manual"),
        push_domains=("news", "python_manual"),
        max_docs=10,
    )
    monkeypatch.setitem(paper.CONFIGS, "smoke", tiny)
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    assert main(["run", "dispersion", "--scale", "smoke", "--runs", str(tmp_path / "runs")]) == 0
    import json

    run = next((tmp_path / "runs" / "dispersion").iterdir())
    v = json.loads((run / "verdicts.json").read_text())
    assert {c["id"] for c in v["claims"]} >= {"ppl-correlation", "depth", "knn-key", "push-away"}
    m = json.loads((run / "metrics.json").read_text())["aggregate"]
    assert all(math.isfinite(m[k]["mean"]) for k in ("r_real_mean", "r_tiny_models", "knn_choice_gain"))
    # the gates' metrics: the untrained control, budget parity of the push-away arms (equal by construction)
    assert all(math.isfinite(m[k]["mean"]) for k in ("r_untrained_mean", "r_untrained_last", "lm_gain_real"))
    assert m["budget_dev_single"]["mean"] == 0.0 and m["budget_dev_cross"]["mean"] == 0.0
    roles = {c["id"]: c["role"] for c in v["claims"]}
    assert roles["untrained-no-correlation"] == "negative control" and roles["push-budget"] == "budget"
    assert list((run / "plots").glob("*.png"))


def test_unigram_baseline_of_the_push_away_testbed_is_hand_computed():
    """The testbed gate compares the baseline with an add-one unigram model; check it against hand counts."""
    from iclr26.papers.dispersion.experiment import _unigram_ppl

    train = torch.tensor([[9, 0, 0, 1], [9, 0, 2, 2]])  # predicted tokens (positions ≥ 1): 0,0,1,0,2,2
    test = torch.tensor([[9, 0, 1], [9, 2, 2]])
    p = (torch.tensor([3, 1, 2, 0.0]) + 1) / 10  # counts + 1 over a vocabulary of 4
    nll = torch.stack([-(p[0].log() + p[1].log()) / 2, -(p[2].log() * 2) / 2])
    assert _unigram_ppl(train, test, 4) == pytest.approx(math.exp(nll.mean().item()))
