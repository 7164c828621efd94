"""Efficient Probing: parameter formula, special cases, invariances, the MHCA ≡ multi-query identity, bad arguments."""

import math

import pytest
import torch

from iclr26.papers.efficient_probing import CLAIMS
from iclr26.probing.efficient_probing import (
    PROBES,
    EfficientProbing,
    EPConfig,
    MHCAPool,
    ProbeTrainConfig,
    ep_num_parameters,
    make_probe,
    probe_accuracy,
    train_probe,
)
from iclr26.probing.efficient_probing.vit import MAE, MAEConfig, TinyViT, ViTConfig, extract_tokens


@pytest.mark.parametrize("dim,classes,m,d_out", [(64, 10, 8, 1), (768, 1000, 32, 1), (96, 7, 4, 2), (48, 3, 1, 3)])
def test_ep_parameter_count_matches_formula(dim, classes, m, d_out):
    probe = make_probe("ep", dim, classes, num_queries=m, d_out=d_out)
    assert probe.num_parameters() == ep_num_parameters(dim, classes, m, d_out)
    assert probe.num_parameters() == m * dim + dim * dim // d_out + dim // d_out * classes + classes


def test_ep_vit_b_count_is_under_1_4_million():
    # the paper's headline: < 1.4 M trainable parameters for ViT-B (D = 768), 1000 classes, M = 32
    assert 1.3e6 < ep_num_parameters(768, 1000, 32, 1) < 1.4e6


def test_ep_shapes_and_attention_rows_sum_to_one():
    ep = EfficientProbing(64, EPConfig(num_queries=8, d_out=2))
    x = torch.randn(3, 17, 64)
    y, a = ep(x, return_attention=True)
    assert y.shape == (3, 32) and a.shape == (3, 8, 17)
    torch.testing.assert_close(a.sum(-1), torch.ones(3, 8))


def test_ep_matches_explicit_formula():
    torch.manual_seed(0)
    ep = EfficientProbing(12, EPConfig(num_queries=3))
    x = torch.randn(2, 5, 12)
    y = ep(x)
    v = x @ ep.v.weight.T  # (B, N, D)
    for b in range(2):
        for j in range(3):
            a = torch.softmax(x[b] @ ep.queries[j] / math.sqrt(12), 0)  # Eq. 1, scale 1/√D
            torch.testing.assert_close(y[b, 4 * j : 4 * j + 4], a @ v[b, :, 4 * j : 4 * j + 4])  # Eq. 2: own group


def test_lp_gap_is_the_special_case_of_ep_with_zero_queries_and_identity_values():
    # with q = 0 every query attends uniformly; with W_v = I, EP pools exactly the mean token (GAP)
    ep = EfficientProbing(16, EPConfig(num_queries=4))
    with torch.no_grad():
        ep.queries.zero_()
        ep.v.weight.copy_(torch.eye(16))
    x = torch.randn(5, 9, 16)
    torch.testing.assert_close(ep(x), x.mean(1))
    lp = make_probe("lp_gap", 16, 3, has_cls=False)
    torch.testing.assert_close(lp.features(x), ep(x))


def test_single_query_ep_is_attention_pooling_with_value_projection():
    ep = EfficientProbing(8, EPConfig(num_queries=1))
    x = torch.randn(4, 6, 8)
    a = torch.softmax(x @ ep.queries[0] / math.sqrt(8), 1)
    torch.testing.assert_close(ep(x), torch.einsum("bn,bnd->bd", a, ep.v(x)))


def test_multihead_cross_attention_reduces_to_ep_queries():
    """MHCA with one learned query and no biases: head h scores x by (W_k^hᵀ W_q^h u)ᵀx/√d_h, i.e. EP with
    q_h = √H · W_k^hᵀ W_q^h u and the same W_v; W_o then acts linearly on EP's output (absorbed by the classifier)."""
    torch.manual_seed(0)
    dim, heads = 16, 4
    mhca = MHCAPool(dim, heads, bias=False)
    wq, wk, wv = mhca.attn.in_proj_weight.detach().chunk(3)
    u = mhca.query.detach()[0, 0]
    dh = dim // heads
    ep = EfficientProbing(dim, EPConfig(num_queries=heads))
    with torch.no_grad():
        for h in range(heads):
            sl = slice(h * dh, (h + 1) * dh)
            ep.queries[h] = math.sqrt(heads) * wk[sl].T @ (wq[sl] @ u)
        ep.v.weight.copy_(wv)
    x = torch.randn(3, 10, dim)
    out, attn = mhca(x, return_attention=True)
    y, a = ep(x, return_attention=True)
    torch.testing.assert_close(a, attn, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out, y @ mhca.attn.out_proj.weight.detach().T, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", [p for p in PROBES if p != "lp_cls"])
def test_token_pooling_probes_are_permutation_invariant(name):
    torch.manual_seed(0)
    probe = make_probe(name, 16, 5, **({"num_queries": 4} if name == "ep" else {})).eval()
    x = torch.randn(6, 1 + 12, 16)
    perm = torch.cat([torch.zeros(1, dtype=torch.long), 1 + torch.randperm(12)])  # keep [CLS] first
    with torch.no_grad():
        # train-mode BN would change with batch statistics; use eval so the check is exact
        torch.testing.assert_close(probe(x), probe(x[:, perm]), atol=1e-5, rtol=1e-5)


def test_ep_attention_is_equivariant_to_token_permutation():
    ep = EfficientProbing(16, EPConfig(num_queries=4))
    x, perm = torch.randn(2, 7, 16), torch.randperm(7)
    _, a = ep(x, return_attention=True)
    _, a_perm = ep(x[:, perm], return_attention=True)
    torch.testing.assert_close(a_perm, a[:, :, perm])


def test_parameter_ordering_of_probes():
    counts = {n: make_probe(n, 64, 10, **({"num_queries": 8} if n == "ep" else {})).num_parameters() for n in PROBES}
    assert counts["lp_cls"] == counts["lp_gap"] == 64 * 10 + 10  # BN has no affine parameters
    assert counts["ep"] < counts["mhca"] and counts["ep"] < counts["aim"] and counts["ep"] < counts["simpool"]


def test_ep_learns_a_task_that_linear_probing_cannot():
    """One informative token among many noise tokens, at a random position: GAP dilutes it, EP can select it."""
    torch.manual_seed(0)
    n, tokens, dim = 600, 16, 16
    labels = torch.randint(0, 2, (n,))
    x = torch.randn(n, tokens, dim) * 0.5
    marker = torch.zeros(dim)
    marker[0] = 4.0
    signal = torch.zeros(dim)
    signal[1] = 1.0
    pos = torch.randint(1, tokens, (n,))
    x[torch.arange(n), pos] = marker + (2 * labels[:, None] - 1) * signal * 2 + torch.randn(n, dim) * 0.1
    x[:, 0] = torch.randn(n, dim) * 0.5  # an uninformative [CLS]
    recipe = ProbeTrainConfig(epochs=40, warmup_epochs=2, batch_size=64, lr=1e-2)
    tr, te = slice(0, 400), slice(400, n)
    acc = {}
    for name in ("lp_cls", "ep"):
        probe = make_probe(name, dim, 2, **({"num_queries": 2} if name == "ep" else {}))
        train_probe(probe, x[tr], labels[tr], recipe)
        acc[name] = probe_accuracy(probe, x[te], labels[te])
    assert acc["ep"] > 90 and acc["lp_cls"] < 70


def test_vit_and_mae_shapes():
    cfg = ViTConfig(image_size=16, patch_size=4, dim=16, depth=1, heads=2)
    vit = TinyViT(cfg)
    imgs = torch.rand(3, 1, 16, 16)
    assert extract_tokens(vit, imgs).shape == (3, 17, 16)
    mae = MAE(cfg, MAEConfig(decoder_dim=8))
    # patchify round trip: patch k of image b holds pixels of the k-th 4×4 block in row-major order
    patches = mae.patchify(imgs)
    assert patches.shape == (3, 16, 16)
    torch.testing.assert_close(patches[1, 5], imgs[1, 0, 4:8, 4:8].reshape(-1))
    loss = mae.loss(imgs)
    loss.backward()
    assert torch.isfinite(loss) and mae.encoder.patch_embed.weight.grad is not None


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="divisible by num_queries"):
        EfficientProbing(64, EPConfig(num_queries=24))
    with pytest.raises(ValueError, match="num_queries"):
        EPConfig(num_queries=0)
    with pytest.raises(ValueError, match="unknown probe"):
        make_probe("linear", 64, 10)
    with pytest.raises(ValueError, match="CLS"):
        make_probe("lp_cls", 64, 10, has_cls=False)
    with pytest.raises(ValueError, match="expected tokens"):
        EfficientProbing(8, EPConfig(num_queries=2))(torch.randn(2, 8))
    with pytest.raises(ValueError, match="warmup_epochs"):
        ProbeTrainConfig(epochs=5, warmup_epochs=5)
    with pytest.raises(ValueError, match="mask_ratio"):
        MAEConfig(mask_ratio=1.0)
    with pytest.raises(ValueError, match="divisible"):
        ViTConfig(image_size=30, patch_size=4)
    with pytest.raises(ValueError, match="expected images"):
        TinyViT(ViTConfig(image_size=16, dim=16, depth=1, heads=2))(torch.rand(2, 3, 16, 16))


def test_smoke_run_through_the_harness(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("efficient-probing", scale="smoke", out=tmp_path, quiet=True)
    assert len(res.per_seed) == 2
    for metrics in res.per_seed.values():
        assert all(math.isfinite(v) for v in metrics.values())
        assert 0 <= metrics["acc_ep_glyphs"] <= 100
    assert {v["id"] for v in res.verdicts} == {c.id for c in CLAIMS}
    assert all(
        v["verdict"] in ("reproduced", "not reproduced", "inconclusive", "not testable", "not run")
        for v in res.verdicts
    )
