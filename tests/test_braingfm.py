"""BrainGFM: GCL (NT-Xent) and GMAE losses against hand values, node masking, RWSE, the graph prompt's invariants,
the first-order MAML step, the condition head, the brain-graph recipe, and the world (atlases partition the voxels,
determinism under a seed, disorder edits act on the named networks)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr26.science.braingfm import (
    BrainGFM,
    BrainGFMConfig,
    ConditionHead,
    MetaConfig,
    build_brain_graph,
    encode_text,
    gmae_loss,
    graph_set,
    make_classifier,
    mask_nodes,
    meta_train_prompt,
    nt_xent,
    rwse,
)
from iclr26.science.braingfm.world import DISORDERS, NETWORKS, BrainWorld


@pytest.fixture(scope="module")
def world():
    return BrainWorld(seed=3, n_timepoints=60)


# ---------------------------------------------------------------- losses against hand values


def test_nt_xent_matches_hand_value_on_orthogonal_pair():
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # anchor e1: positive e1 (cos 1), negatives e2, e2 (cos 0); tau 0.5 -> logits 2, 0, 0 for every anchor
    assert float(nt_xent(z, z.clone(), tau=0.5)) == pytest.approx(math.log(1 + 2 * math.exp(-2)), abs=1e-6)


def test_nt_xent_matches_hand_value_on_asymmetric_pair():
    z1 = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
    z2 = torch.tensor([[1.0, 1.0], [0.0, 2.0]])
    u = [np.array(v) / np.linalg.norm(v) for v in ([1, 0], [1, 1], [1, 1], [0, 1])]  # normalised views
    tau, pos, losses = 0.2, {0: 2, 1: 3, 2: 0, 3: 1}, []
    for i in range(4):
        den = sum(math.exp(u[i] @ u[k] / tau) for k in range(4) if k != i)
        losses.append(-math.log(math.exp(u[i] @ u[pos[i]] / tau) / den))
    assert float(nt_xent(z1, z2, tau)) == pytest.approx(np.mean(losses), abs=1e-5)
    # swapping the pairing of the second view (a wrong positive) changes the loss: the positives are (i, i + B)
    assert float(nt_xent(z1, z2.flip(0), tau)) != pytest.approx(np.mean(losses), abs=1e-3)


def test_gmae_loss_matches_hand_value_and_ignores_visible_nodes():
    pred = torch.tensor([[[0.0, 2.0], [9.0, 9.0]]])  # node 0 masked, node 1 visible
    target = torch.tensor([[[0.5, 0.0], [0.0, 0.0]]])
    masked = torch.tensor([[[True, True], [False, False]]])
    z = torch.tensor([[[1.0], [2.0]]])
    adj = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    vis = torch.tensor([[True, True]])
    rec = (0.5 * 0.5**2 + (2.0 - 0.5)) / 2  # SmoothL1 (beta 1): 0.125 and 1.5
    sp = lambda x: math.log1p(math.exp(x))  # noqa: E731
    bce = (sp(1) + (sp(2) - 2) + (sp(2) - 2) + sp(4)) / 4  # logits z z^T = [[1, 2], [2, 4]]
    got = float(gmae_loss(pred, target, masked, z, adj, vis, adj_weight=0.1))
    assert got == pytest.approx(rec + 0.1 * bce, abs=1e-5)
    pred2 = pred.clone()
    pred2[0, 1] = -5.0  # a visible node's prediction does not enter the loss
    assert float(gmae_loss(pred2, target, masked, z, adj, vis, 0.1)) == pytest.approx(got, abs=1e-7)
    # a padded visible slot is excluded from the adjacency term
    vis2 = torch.tensor([[True, False]])
    assert float(gmae_loss(pred, target, masked, z, adj, vis2, 0.1)) == pytest.approx(rec + 0.1 * sp(1), abs=1e-5)


def test_mask_nodes_keeps_the_code_count_and_partitions_valid_nodes():
    n = torch.tensor([10, 6, 20])
    idx, valid, masked = mask_nodes(n, 20, 0.5, torch.Generator().manual_seed(0))
    assert valid.sum(1).tolist() == [5, 4, 10]  # max(4, floor(n (1 - r)))
    for b in range(3):
        kept = set(idx[b][valid[b]].tolist())
        gone = set(torch.nonzero(masked[b]).flatten().tolist())
        assert kept.isdisjoint(gone) and kept | gone == set(range(int(n[b])))
        assert idx[b][valid[b]].tolist() == sorted(kept)


# ---------------------------------------------------------------- encoder pieces


def test_rwse_on_a_triangle():
    a = torch.ones(1, 3, 3) - torch.eye(3)
    r = rwse(a, 3)[0]  # P = A / 2: return probabilities 0, 1/2, 1/4
    assert torch.allclose(r, torch.tensor([[0.0, 0.5, 0.25]] * 3), atol=1e-5)


def test_build_brain_graph_zscores_then_thresholds():
    rng = np.random.default_rng(0)
    ts = rng.standard_normal((50, 5))
    x, a = build_brain_graph(ts, threshold=0.6)
    c = np.corrcoef(ts.T)
    z = (c - c.mean()) / (c.std() + 1e-6)
    assert np.allclose(x, z, atol=1e-5)
    expect = (z > 0.6).astype(float)
    np.fill_diagonal(expect, 0)
    assert np.array_equal(a, expect)
    with pytest.raises(ValueError, match="timeseries"):
        build_brain_graph(np.zeros(5))


def _toy_graphs(n_graphs=6, n=8, seed=0):
    rng = np.random.default_rng(seed)
    series = [rng.standard_normal((40, n)) for _ in range(n_graphs)]
    return graph_set(series, 0, y=[i % 2 for i in range(n_graphs)], n_max=12)


def test_pyg_round_trip_keeps_graphs():
    from torch_geometric.data import Batch

    from iclr26.science.braingfm import from_pyg, to_pyg

    gs = _toy_graphs(n_graphs=3, n=8)
    back = from_pyg(Batch.from_data_list(to_pyg(gs)), n_max=12)
    assert torch.equal(back.x, gs.x) and torch.equal(back.adj, gs.adj) and back.n.tolist() == [8, 8, 8]
    assert back.y.tolist() == gs.y.tolist()


def test_graph_prompt_at_identity_only_adds_symmetric_edges_and_masks_padding():
    torch.manual_seed(0)
    bb = BrainGFM(BrainGFMConfig(n_max=12, n_atlases=1, text_dim=8, hidden=16))
    clf = make_classifier(bb, seed=0)
    gs = _toy_graphs()
    p = clf.backbone.prompt
    with torch.no_grad():
        p.node.normal_(std=1.0), p.edge.normal_(std=1.0)
        cond = p.cond[2]
        cond.bias.copy_(torch.tensor([1.0, 0.3, 1.0, 0.0]))
        feats = torch.randn(len(gs), 12, bb.cfg.d_max)
        td, ap = torch.randn(len(gs), 16), torch.randn(len(gs), 16)
        x2, a2 = p(feats, gs.adj, gs.mask, td, ap)
    valid = gs.mask[:, :, None] & gs.mask[:, None, :]
    assert (a2[valid] >= gs.adj[valid] - 1e-6).all()  # the prompt only adds edges
    assert torch.allclose(a2, a2.transpose(1, 2)) and torch.diagonal(a2, dim1=1, dim2=2).abs().max() == 0
    assert a2[~valid].abs().max() == 0 and x2[~gs.mask].abs().max() == 0  # padded nodes stay empty
    scale = x2[gs.mask] / feats[gs.mask]
    assert scale.min() >= 0 and scale.max() <= 2  # X (1 + tanh(.)) with tanh in [-1, 1]


def test_condition_head_hand_value_and_text_dependence():
    head = ConditionHead(2)
    with torch.no_grad():
        head.lin.weight.copy_(torch.tensor([[1.0, -1.0]]))
        head.lin.bias.fill_(0.5)
        head.bil.weight.copy_(torch.tensor([[0.0, 1.0], [2.0, 0.0]]))
    g, td = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, -1.0]])
    # w.g + b = -1 + 0.5; U g = [2, 2]; (U g).td = 6 - 2 = 4
    with torch.no_grad():
        assert float(head(g, td)) == pytest.approx(3.5)
        assert float(head(g, -td)) == pytest.approx(-4.5)  # the description changes the decision (zero-shot path)


def test_first_order_maml_step_equals_the_hand_computed_update():
    torch.manual_seed(0)
    bb = BrainGFM(BrainGFMConfig(n_max=12, n_atlases=1, text_dim=8, hidden=16, dropout=0.0))
    clf = make_classifier(bb, seed=0)
    gs = _toy_graphs(n_graphs=12)
    text = torch.randn(1, 8)
    cfg = MetaConfig(iters=1, tasks_per_iter=1, k_shot=2, k_query=3, inner_steps=2, inner_lr=0.5, outer_lr=0.1)
    # replay the sampler to know the support and query sets
    gen = torch.Generator().manual_seed(7)
    torch.randint(1, (1,), generator=gen)
    from iclr26.science.braingfm import sample_shots, trainable

    sup, used = sample_shots(gs, 2, gen)
    qry, _ = sample_shots(gs, 3, gen, exclude=used)
    ref = make_classifier(bb, seed=0)
    ref.load_state_dict(clf.state_dict())
    ref.eval()
    params = trainable(ref, "prompt")
    l0 = F.binary_cross_entropy_with_logits(ref(qry, text), qry.y.float())
    g_theta = torch.autograd.grad(l0, params, allow_unused=True)  # what plain multi-task learning would use
    for _ in range(2):  # inner SGD on the support
        loss = F.binary_cross_entropy_with_logits(ref(sup, text), sup.y.float())
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(params, grads):
                if g is not None:
                    p -= 0.5 * g
    lq = F.binary_cross_entropy_with_logits(ref(qry, text), qry.y.float())
    gq = torch.autograd.grad(lq, params, allow_unused=True)  # first-order meta-gradient: dL_q / dphi
    theta0 = [p.detach().clone() for p in trainable(clf, "prompt")]
    frozen0 = clf.backbone.proj.weight.detach().clone()
    meta_train_prompt(clf, [(gs, text)], cfg, seed=7)
    flips = sum(int((torch.sign(a) != torch.sign(b)).sum()) for a, b in zip(gq, g_theta) if a is not None)
    assert flips > 0  # the test tells the meta-gradient at phi from the gradient at theta
    for p0, p1, g in zip(theta0, trainable(clf, "prompt"), gq):
        if g is None or g.abs().max() < 1e-12:
            continue
        step = p1.detach() - p0  # Adam's first step: -lr g / (|g| + eps)
        assert torch.allclose(step, -0.1 * g / (g.abs() + 1e-8), atol=1e-5)
    assert torch.equal(clf.backbone.proj.weight, frozen0)  # the backbone is frozen


def test_encode_text_hash_backend_is_deterministic_and_validates():
    a = encode_text(["reduced visual within-network connectivity"], backend="hash")
    b = encode_text(["reduced visual within-network connectivity"], backend="hash")
    assert a.shape == (1, 384) and torch.equal(a, b)
    with pytest.raises(ValueError, match="backend"):
        encode_text(["x"], backend="bert-from-the-hub")


# ---------------------------------------------------------------- the world


def test_atlas_parcels_partition_the_voxels(world):
    for name, _, n in world.atlases:
        lab = world.parcels[name]
        assert lab.shape == (world.n_voxels,) and set(np.unique(lab)) == set(range(n))  # every parcel non-empty
        m = world.averaging(name)
        assert ((m > 0).sum(1) == 1).all() and np.allclose(m.sum(0), 1.0)  # each voxel in exactly one parcel
    assert world.n_voxels == 264 and set(np.unique(world.network)) == set(range(len(NETWORKS)))


def test_generator_is_deterministic_under_a_seed(world):
    w2 = BrainWorld(seed=3, n_timepoints=60)
    assert all(np.array_equal(world.parcels[a], w2.parcels[a]) for a in world.parcels)
    s1 = world.subjects(6, "S1", np.random.default_rng(5))
    s2 = w2.subjects(6, "S1", np.random.default_rng(5))
    assert np.array_equal(s1["y"], s2["y"]) and s1["disorder"] == s2["disorder"]
    assert all(np.array_equal(a, b) for a, b in zip(s1["series"]["func16"], s2["series"]["func16"]))
    s3 = world.subjects(6, "S1", np.random.default_rng(6))
    assert not np.array_equal(s1["series"]["func16"][0], s3["series"]["func16"][0])
    assert sorted(s1["y"].tolist()) == [0, 0, 0, 1, 1, 1] and set(s1["disorder"]) == {"S1", "control"}


def test_disorder_edit_acts_on_the_named_network(world):
    # ground truth: "reduced default mode within-network connectivity" lowers the mean voxel correlation inside the
    # default-mode network and leaves the visual network's alone (paired draws with the same random stream)
    dmn, vis = NETWORKS.index("default mode"), NETWORKS.index("visual")

    def within(disorder, net, sev):
        rng = np.random.default_rng(11)
        params = world._one(rng, DISORDERS[disorder] if disorder else None, sev, 0)
        ts = world.timeseries(params, rng)[:, world.network == net]
        c = np.corrcoef(ts.T)
        return c[np.triu_indices_from(c, 1)].mean()

    assert within("S1", dmn, 1.0) < within(None, dmn, 0.0) - 0.05
    assert within("S1", vis, 1.0) == pytest.approx(within(None, vis, 0.0), abs=1e-9)
    with pytest.raises(ValueError, match="network"):
        from iclr26.science.braingfm.world import Phrase

        Phrase(1, "within", "cerebellum")


# ---------------------------------------------------------------- the reproduction, end to end (tiny)


def test_reproduction_runs_at_a_tiny_scale_and_returns_every_claimed_metric(monkeypatch, tmp_path):
    """...and a rerun that loads the cached pre-trained backbones returns the same metrics (the units are
    self-contained: nothing after pre-training depends on the random state it leaves)."""
    from iclr26.papers import braingfm as card
    from iclr26.papers.braingfm import backbones, experiment
    from iclr26.science.braingfm import text

    monkeypatch.setattr(experiment, "encode_text", lambda t: text.encode_text(t, backend="hash"))  # no model load
    monkeypatch.setattr(backbones, "encode_text", lambda t: text.encode_text(t, backend="hash"))
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    cfg = card.Cfg(seeds=(0,), n_timepoints=40, n_pretrain=16, n_pretrain_val=8, pretrain_steps=3, pretrain_batch=8,
                   ft_disorders=("S2",), n_train=12, n_val=12, n_test=12, lr_grid=(1e-3, 3e-3), max_epochs=2,
                   patience=1, meta_disorders=("S1",), n_meta=16, meta_iters=2, k_shot=2, shot_reps=1,
                   adapt_lrs=(1e-2,), adapt_steps=(0, 2))  # fmt: skip

    class Ctx:
        def log(self, msg):
            pass

    m = experiment.run(cfg, 0, Ctx())
    for claim in card.CLAIMS:
        for chk in claim.checks:
            for name in (chk.lhs, chk.rhs):
                if isinstance(name, str):
                    assert name in card.METRICS and np.isfinite(m[name]), name
    assert set(m) <= set(card.METRICS)
    assert sorted(p.name.split("-")[1] for p in tmp_path.glob("threads-*/braingfm/*.pt")) == ["multi", "single"]
    assert experiment.run(cfg, 0, Ctx()) == m  # from the cache


def test_backbone_units_are_the_pretraining_and_an_idle_worker_builds_a_later_seeds(monkeypatch, tmp_path):
    """A cached unit is exactly `pretrain` on the seed's own corpus from the seed's initial state; `prepare` builds the
    units of later seeds only (never earlier ones) and skips a unit whose lock another process holds."""
    from filelock import FileLock

    from iclr26.papers import braingfm as card
    from iclr26.papers.braingfm import backbones as units
    from iclr26.science.braingfm import PretrainConfig, pretrain, text

    monkeypatch.setattr(units, "encode_text", lambda t: text.encode_text(t, backend="hash"))
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    cfg = card.Cfg(seeds=(0, 1, 2), n_timepoints=40, n_pretrain=16, n_pretrain_val=8, pretrain_steps=4,
                   pretrain_batch=8, meta_disorders=("S1",))  # fmt: skip
    held = FileLock(str(units.unit_path(cfg, 2, "single").with_suffix(".lock")))
    held.acquire()  # "another process" is building seed 2's single backbone
    try:
        assert units.backbone_unit(cfg, 2, "single", wait=False) is None
        units.prepare(cfg, 1, (0, 1, 2))
    finally:
        held.release()
    built = {(s, n) for s in (0, 1, 2) for n in ("multi", "single") if units.unit_path(cfg, s, n).exists()}
    assert built == {(2, "multi")}
    _, data, corpora, vals = units.world_and_corpora(cfg, 2)
    direct = units.initial_backbone(cfg, 2, len(data.names))
    pcfg = PretrainConfig(max_steps=4, batch=8, schedule_steps=4)
    info = pretrain(direct, corpora["multi"], vals["multi"], units.encode_text([units.PRETRAIN_TEXT]), pcfg, seed=2)
    unit = units.backbone_unit(cfg, 2, "multi")
    assert unit["steps"] == info["steps"] and unit["graphs"] == len(corpora["multi"]) == 16 * 6
    for k, v in direct.state_dict().items():
        assert torch.equal(unit["state"][k], v), k
    fresh = units.initial_backbone(cfg, 2, len(data.names)).state_dict()
    assert any(not torch.equal(unit["state"][k], fresh[k]) for k in fresh)  # pre-training moved it


def test_pretraining_schedule_spans_its_steps_then_holds():
    """VERSION 3: the code's 10-'epoch' mask/augmentation schedules run over `schedule_steps` and then hold their last
    value, so a long, early-stopped run sees them in full; without it they span the whole budget (VERSION 2)."""
    from iclr26.science.braingfm.pretrain import PretrainConfig, schedule_epoch

    held = PretrainConfig(max_steps=3000, schedule_steps=300)
    assert [schedule_epoch(s, held) for s in (0, 29, 30, 299, 300, 2999)] == [0, 0, 1, 9, 9, 9]
    budget = PretrainConfig(max_steps=3000)
    assert [schedule_epoch(s, budget) for s in (0, 299, 300, 2999)] == [0, 0, 1, 9]
    with pytest.raises(ValueError, match="schedule_steps"):
        PretrainConfig(schedule_steps=0)


def test_a_damaged_backbone_unit_is_moved_aside_and_rebuilt(monkeypatch, tmp_path):
    """Backbone units go through iclr26.core.cache: a content digest beside the file, a truncated unit is moved aside
    (never unpickled, never half-read) and rebuilt to the same weights."""
    from iclr26.papers import braingfm as card
    from iclr26.papers.braingfm import backbones as units
    from iclr26.science.braingfm import text

    monkeypatch.setattr(units, "encode_text", lambda t: text.encode_text(t, backend="hash"))
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    cfg = card.Cfg(seeds=(0,), n_timepoints=40, n_pretrain=16, n_pretrain_val=8, pretrain_steps=2,
                   pretrain_batch=8, meta_disorders=("S1",))  # fmt: skip
    first = units.backbone_unit(cfg, 0, "single")
    path = units.unit_path(cfg, 0, "single")
    assert path.with_name(path.name + ".sha256").exists()
    path.write_bytes(path.read_bytes()[:100])  # a truncated copy
    again = units.backbone_unit(cfg, 0, "single")
    assert list(path.parent.glob(path.name + ".corrupt-*"))
    assert again["steps"] == first["steps"]
    for k, v in first["state"].items():
        assert torch.equal(again["state"][k], v), k


def test_padding_nodes_do_not_change_the_graph_embedding():
    """A 16-node graph alone and padded to 20 nodes (as in a mixed-atlas batch) gives the same node states and graph
    embedding: the padded tokens are masked in attention, the GCN, the prompt and the readout (removing the attention
    key-padding mask alone changes the output)."""
    from iclr26.science.braingfm import BrainGFM, BrainGFMConfig, GraphSet, graph_set

    rng = np.random.default_rng(0)
    gs = graph_set([rng.standard_normal((60, 16)) for _ in range(3)], atlas_id=0, y=[0, 1, 0], n_max=16)
    padded = GraphSet.cat([gs, graph_set([rng.standard_normal((60, 20))], atlas_id=1, y=[1], n_max=20)])[:3]
    assert padded.x.shape[1] == 20 and gs.x.shape[1] == 16
    torch.manual_seed(0)
    model = BrainGFM(BrainGFMConfig(n_max=20, n_atlases=2, text_dim=8)).eval()
    text = torch.randn(1, 8)
    with torch.no_grad():
        z1, g1, _ = model(gs.x, gs.adj, gs.n, gs.atlas, text)
        z2, g2, _ = model(padded.x, padded.adj, padded.n, padded.atlas, text)
    torch.testing.assert_close(g1, g2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(z1, z2[:, :16], atol=1e-5, rtol=1e-5)
    # the attention mask is what makes this hold: without it the padded tokens are attended to
    att = model.att[0]
    orig = att.forward
    att.forward = lambda seq, src_key_padding_mask=None, **kw: orig(seq, **kw)
    try:
        with torch.no_grad():
            _, g3, _ = model(padded.x, padded.adj, padded.n, padded.atlas, text)
    finally:
        att.forward = orig
    assert (g3 - g1).abs().max() > 1e-3
