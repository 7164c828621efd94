"""GF-Screen: the group-relative RL objective (constant reward → zero gradient, zero-mean advantages, hand values),
rewards and the balanced CE, the gated sliding-window inference against MONAI's plain sliding window and full-volume
inference, the screening metrics and the synthetic CT world."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.science.gf_screen import (
    GRLConfig,
    ScreenConfig,
    aggregate,
    balanced_glance_ce,
    detection_reward,
    dice_reward,
    grl_loss,
    group_relative_advantages,
    make_focus,
    make_glance,
    screen,
    segment_all,
    select_prob,
    summarize,
    volume_metrics,
    window_outputs,
)
from iclr26.science.gf_screen.world import CTWorldConfig, make_ct_volume, window

torch.set_num_threads(1)


# ---------------------------------------------------------------- the group-relative objective


def test_advantages_hand_values_floor_and_clip():
    a = group_relative_advantages(torch.tensor([1.0, 0, 0, 0]))
    assert torch.allclose(a, torch.tensor([1.5, -0.5, -0.5, -0.5]))  # (r - 0.25) / 0.5 (unbiased std)
    for c in (0.0, 1.0):  # a constant binary reward → exactly 0 (std floored); another constant → 0 up to rounding
        assert torch.equal(group_relative_advantages(torch.full((16,), c)), torch.zeros(16))
    assert torch.allclose(group_relative_advantages(torch.full((16,), 0.7)), torch.zeros(16), atol=1e-4)
    a = group_relative_advantages(torch.tensor([1.0] + [0.0] * 99))  # (0.99) / 0.1 = 9.9 → clipped at 5
    assert a[0] == 5.0 and torch.allclose(a[1:], torch.full((99,), -0.01 / 0.1))
    with pytest.raises(ValueError, match="1-D group"):
        group_relative_advantages(torch.tensor([1.0]))


def _policy_and_inputs(n=8, seed=0):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    return net, torch.randn(n, 1, 4, 4, 4)


def _grad(net, x, rewards, cfg=None, ref=None):
    net.zero_grad()
    logits = net(x)
    old = (ref or net)(x).detach()
    loss, _ = grl_loss(logits, old, rewards, cfg or GRLConfig())
    loss.backward()
    return torch.cat([p.grad.flatten() for p in net.parameters()])


def test_constant_reward_gives_zero_policy_gradient():
    net, x = _policy_and_inputs()
    for c in (0.0, 1.0, 0.37):  # the reference equals the live policy (just after a refresh): clip and KL both flat
        assert torch.allclose(_grad(net, x, torch.full((8,), c)), torch.zeros(1), atol=1e-7)
    ref, _ = _policy_and_inputs(seed=1)  # a stale reference: the KL term pulls, the clipped surrogate does not
    g = _grad(net, x, torch.full((8,), 1.0), GRLConfig(beta=0.0), ref=ref)
    assert torch.allclose(g, torch.zeros(1), atol=1e-7)
    assert _grad(net, x, torch.full((8,), 1.0), GRLConfig(beta=0.5), ref=ref).abs().max() > 1e-4


def test_reward_independent_of_input_has_zero_gradient_in_expectation():
    """E over reward assignments (all cyclic shifts of a fixed non-constant reward vector) of the gradient is 0, since
    each crop's expected group-relative advantage is 0; a single assignment's gradient is not."""
    net, x = _policy_and_inputs()
    r = torch.tensor([1.0, 0, 0, 1, 0, 0, 0, 0])
    grads = torch.stack([_grad(net, x, torch.roll(r, k)) for k in range(8)])
    assert grads[0].abs().max() > 1e-3
    assert torch.allclose(grads.mean(0), torch.zeros(1), atol=1e-6)


def test_grl_follows_reward_not_labels():
    """One step raises p(select) of the rewarded crop and lowers it for crops the Focus missed, even though all crops
    hold lesions: the balanced CE (the supervised baseline) would raise all four."""
    net, x = _policy_and_inputs(n=4)
    has = torch.ones(4, dtype=torch.bool)
    r = torch.tensor([1.0, 0, 0, 0])
    p0 = select_prob(net(x)).detach()
    for objective in ("grl", "ce"):
        m = _policy_and_inputs(n=4)[0]
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        logits = m(x)
        loss = grl_loss(logits, logits.detach(), r)[0] if objective == "grl" else balanced_glance_ce(logits, has)
        loss.backward()
        opt.step()
        d = select_prob(m(x)).detach() - p0
        if objective == "grl":
            assert d[0] > 0 and (d[1:] < 0).all()
        else:
            assert (d > 0).all()


def test_rewards_and_balanced_ce_hand_values():
    lab = torch.zeros(3, 1, 4, 4, 4)
    lab[0, 0, 1, 1, 1] = lab[1, 0, 2, 2, 2] = 1
    seg = torch.zeros(3, 2, 4, 4, 4)
    seg[:, 0] = 1.0  # background everywhere ...
    seg[0, 1, 1, 1, 1] = seg[0, 1, 0, 0, 0] = 2.0  # ... crop 0: hit + one false voxel; crop 1: a miss; crop 2: a FP
    seg[1, 1, 0, 0, 0] = seg[2, 1, 3, 3, 3] = 2.0
    assert torch.equal(detection_reward(seg, lab), torch.tensor([1.0, 0.0, 0.0]))
    assert torch.allclose(dice_reward(seg, lab), torch.tensor([2 / 3, 0.0, 0.0]), atol=1e-5)
    logits = torch.log(torch.tensor([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]]))  # p(select) = 0.8, 0.5, 0.1
    ce = balanced_glance_ce(logits, torch.tensor([True, True, False]))
    want = -(np.log(0.8) + np.log(0.5)) / 2 - np.log(0.9)
    assert ce.item() == pytest.approx(want, abs=1e-4)


def test_grl_config_validation():
    with pytest.raises(ValueError, match="eps"):
        GRLConfig(eps=1.5)
    with pytest.raises(ValueError, match="reward"):
        GRLConfig(reward="iou")


# ---------------------------------------------------------------- inference


class _Counting(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net, self.windows = net, 0

    def forward(self, x):
        self.windows += x.shape[0]
        return self.net(x)


class _Fixed(nn.Module):
    """A Glance stand-in: select windows whose mean intensity exceeds a level."""

    def __init__(self, level):
        super().__init__()
        self.level = level

    def forward(self, x):
        s = (x.flatten(1).mean(1) > self.level).float() * 20 - 10
        return torch.stack([-s, s], 1)


def _volume(shape=(24, 24, 16), seed=0):
    return torch.rand((1, 1, *shape), generator=torch.Generator().manual_seed(seed))


def test_pointwise_network_sliding_window_equals_full_volume_everywhere():
    torch.manual_seed(0)
    net = nn.Conv3d(1, 2, 1)  # receptive field 1 voxel: every window sees all it needs
    v = _volume()
    cfg = ScreenConfig(roi=(8, 8, 8), overlap=0.5)
    full = torch.softmax(net(v), 1)[0, 1]
    assert torch.allclose(segment_all(v, net, cfg), full, atol=1e-6)
    assert torch.allclose(screen(v, net, None, cfg)[0], full, atol=1e-6)


def test_conv_network_equals_full_volume_where_receptive_field_fits():
    """Condition: a voxel's result equals full-volume inference when every window covering it holds the voxel's whole
    receptive field (radius r = 2 for two 3³ convolutions) or ends at the volume's own border (same zero padding)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.Tanh(), nn.Conv3d(4, 2, 3, padding=1))
    v = _volume()
    cfg = ScreenConfig(roi=(12, 12, 8), overlap=0.5)
    full = torch.softmax(net(v), 1)[0, 1].detach()
    sw = segment_all(v, net, cfg)
    cache = window_outputs(v, net, {}, cfg)
    ok = np.ones(v.shape[2:], bool)
    r = 2
    for sl in cache.slices:
        inside = np.zeros(v.shape[2:], bool)
        inside[sl] = True
        good = np.ones(v.shape[2:], bool)
        for ax, s in enumerate(sl):
            idx = np.arange(v.shape[2 + ax])
            fits = ((idx - s.start >= r) | (s.start == 0)) & ((s.stop - 1 - idx >= r) | (s.stop == v.shape[2 + ax]))
            good &= np.expand_dims(fits, [a for a in range(3) if a != ax])
        ok &= ~inside | good
    assert ok.sum() > 100 and (~ok).sum() > 100
    assert torch.allclose(sw[ok], full[ok], atol=1e-6)
    assert (sw[~ok] - full[~ok]).abs().max() > 1e-4  # the condition is needed: zero padding inside a window differs


def test_screen_with_every_window_equals_monai_sliding_window_and_cache():
    torch.manual_seed(0)
    focus = make_focus("unet", channels=(4, 8, 8)).eval()
    v = _volume((32, 32, 16))
    cfg = ScreenConfig(roi=(16, 16, 16), overlap=0.5, select_thresh=0.0)
    base = segment_all(v, focus, cfg)
    p, stats = screen(v, focus, _Fixed(-1.0), cfg)  # the stand-in selects every window
    assert stats["ratio"] == 1.0 and torch.allclose(p, base, atol=1e-6)
    cache = window_outputs(v, focus, {}, cfg)
    assert np.allclose(aggregate(cache, np.ones(len(cache.slices), bool)), base.numpy(), atol=1e-6)


def test_glance_gates_focus_calls_and_leaves_skipped_regions_background():
    torch.manual_seed(0)
    v = _volume((32, 32, 16))
    v[..., :16, :, :] *= 0.2  # a dark half: the stand-in Glance skips its windows
    focus = _Counting(make_focus("unet", channels=(4, 8, 8)).eval())
    glance = _Fixed(0.3)
    cfg = ScreenConfig(roi=(16, 16, 16), overlap=0.5)
    p, stats = screen(v, focus, glance, cfg)
    assert 0 < stats["selected"] < stats["windows"] and focus.windows == stats["selected"]
    cache = window_outputs(v, focus, {"g": glance}, cfg)
    sel = cache.scores["g"] > cfg.select_thresh
    assert sel.sum() == stats["selected"]
    assert np.allclose(p.numpy(), aggregate(cache, sel), atol=1e-6)
    assert (p[:8] == 0).all()  # voxels no selected window covers are background
    base = segment_all(v, focus, cfg)
    assert (base[:8] > 0).any() and not torch.allclose(p, base)  # the baseline segments everything
    focus.windows = 0
    p, stats = screen(v, focus, _Fixed(2.0), cfg)  # nothing selected: the Focus never runs
    assert stats["selected"] == 0 and focus.windows == 0 and (p == 0).all()


def test_models_shapes():
    g, f, fcn = make_glance(), make_focus(), make_focus("fcn")
    x = torch.zeros(2, 1, 16, 16, 16)
    assert g(x).shape == (2, 2) and f(x).shape == (2, 2, 16, 16, 16) and fcn(x).shape == (2, 2, 16, 16, 16)
    with pytest.raises(ValueError, match="kind"):
        make_focus("vnet")


# ---------------------------------------------------------------- metrics


def test_volume_metrics_and_summary_hand_values():
    lab = np.zeros((10, 10, 10), bool)
    lab[1:3, 1:3, 1:3] = True
    lab[6:8, 6:8, 6:8] = True
    pred = np.zeros_like(lab)
    pred[1:3, 1:3, 1:3] = True  # hits lesion 1 exactly
    pred[4, 0, 0] = True  # one false-positive component
    m = volume_metrics(pred, lab)
    assert m["detected"] == 1 and m["fp_components"] == 1 and m["lesions"] == 2 and m["lesions_hit"] == 1
    assert m["dice"] == pytest.approx(2 * 8 / (9 + 16))
    neg = volume_metrics(pred, np.zeros_like(lab))
    miss = volume_metrics(np.zeros_like(lab), lab)
    s = summarize([m, neg, miss, volume_metrics(np.zeros_like(lab), np.zeros_like(lab))])
    # scans: TP, FP (lesion-free with a prediction), FN, TN → F1 = 2/(2+1+1), FPR = 1/2
    assert s["f1"] == pytest.approx(0.5) and s["fpr"] == pytest.approx(0.5) and s["sensitivity"] == 0.5
    assert s["dice"] == pytest.approx((2 * 8 / 25 + 0) / 2) and s["lesion_recall"] == pytest.approx(0.25)


# ---------------------------------------------------------------- the world


def test_world_is_deterministic_under_a_seed_with_exact_masks():
    cfg = CTWorldConfig(size=(48, 48, 24))
    a, b = make_ct_volume(7, cfg), make_ct_volume(7, cfg)
    assert np.array_equal(a.hu, b.hu) and np.array_equal(a.label, b.label) and a.lesions == b.lesions
    c = make_ct_volume(8, cfg)
    assert not np.array_equal(a.hu, c.hu)
    vols = [make_ct_volume(s, cfg) for s in range(12)]
    assert 0 < np.mean([v.positive for v in vols]) < 1
    for v in vols:  # every distractor lies off the lesion mask; lesion-free volumes have empty labels
        assert v.positive == bool(v.lesions) and v.distractors
        for _, centre, _ in v.distractors:
            assert v.label[tuple(int(round(x)) for x in centre)] == 0
    w = window(np.array([-1000.0, -175.0, 37.5, 250.0, 900.0]))
    assert np.allclose(w, [0, 0, 0.5, 1, 1])
    with pytest.raises(ValueError, match="size"):
        CTWorldConfig(size=(8, 8, 8))


# ---------------------------------------------------------------- the Focus loss


def test_focus_loss_is_the_codes_dicece_by_default_and_weighted_ce_without_dice():
    from monai.losses import DiceCELoss

    from iclr26.science.gf_screen import TrainConfig, focus_loss

    torch.manual_seed(0)
    out = torch.randn(3, 2, 4, 4, 4)
    y = (torch.rand(3, 1, 4, 4, 4) < 0.1).float()
    y[0] = 0  # a lesion-free crop
    ref = DiceCELoss(to_onehot_y=True, softmax=True)(out, y)
    assert torch.allclose(focus_loss(TrainConfig())(out, y), ref)  # the official code's loss
    # weighted CE alone: −Σ w_y log p_y / Σ w_y over all voxels, w = (1, 20)
    logp = torch.log_softmax(out, 1)
    yl = y[:, 0].long()
    w = torch.where(yl == 1, 20.0, 1.0)
    hand = -(w * logp.gather(1, yl[:, None])[:, 0]).sum() / w.sum()
    got = focus_loss(TrainConfig(dice_weight=0.0, fg_class_weight=20.0))(out, y)
    assert torch.allclose(got, hand, atol=1e-6)
    # the failure mode it avoids: per-sample Dice on a lesion-free crop stays ~0.5 (foreground Dice 0) until p_fg is
    # essentially 0 everywhere, while the weighted CE of p_fg = 0.01 on that crop is already ~0.01
    empty = torch.zeros(1, 1, 4, 4, 4)
    small = torch.stack([torch.zeros(4, 4, 4), torch.full((4, 4, 4), float(np.log(0.01 / 0.99)))])[None]
    dice_only = DiceCELoss(to_onehot_y=True, softmax=True, lambda_ce=0.0)(small, empty)
    assert dice_only > 0.49
    assert focus_loss(TrainConfig(dice_weight=0.0, fg_class_weight=20.0))(small, empty) < 0.011
    with pytest.raises(ValueError, match="dice_weight"):
        TrainConfig(dice_weight=-1.0)


def test_focus_loss_anneals_the_class_weight_and_switches_dice_on_after_the_warm_up():
    """fg_weight_at: geometric 20 → 3 (hand values); the loss at progress p is the weighted CE with that weight; with
    dice_start the Dice term is absent before and present (exactly λ·Dice + CE) after."""
    from monai.losses import DiceLoss

    from iclr26.science.gf_screen import TrainConfig, focus_loss

    cfg = TrainConfig(dice_weight=0.0, fg_class_weight=20.0, fg_class_weight_final=3.0)
    assert cfg.fg_weight_at(0.0) == 20.0 and abs(cfg.fg_weight_at(1.0) - 3.0) < 1e-12
    assert abs(cfg.fg_weight_at(0.5) - 60**0.5) < 1e-12  # geometric mean, not (20 + 3) / 2
    assert TrainConfig(fg_class_weight=20.0).fg_weight_at(0.7) == 20.0  # no anneal: constant

    torch.manual_seed(1)
    out = torch.randn(2, 2, 4, 4, 4)
    y = (torch.rand(2, 1, 4, 4, 4) < 0.2).float()
    logp = torch.log_softmax(out, 1)
    yl = y[:, 0].long()

    def wce(wf):
        w = torch.where(yl == 1, wf, 1.0)
        return -(w * logp.gather(1, yl[:, None])[:, 0]).sum() / w.sum()

    for p in (0.0, 0.5, 1.0):
        assert torch.allclose(focus_loss(cfg, p)(out, y), wce(cfg.fg_weight_at(p)), atol=1e-6)
    assert not torch.allclose(focus_loss(cfg, 1.0)(out, y), focus_loss(cfg, 0.0)(out, y))
    warm = TrainConfig(dice_weight=1.0, batch_dice=True, fg_class_weight=20.0, dice_start=0.3)
    dice = DiceLoss(to_onehot_y=True, softmax=True, batch=True)(out, y)
    assert torch.allclose(focus_loss(warm, 0.29)(out, y), wce(20.0), atol=1e-6)  # CE warm-up: no Dice
    assert torch.allclose(focus_loss(warm, 0.3)(out, y), dice + wce(20.0), atol=1e-6)
    for bad in (dict(fg_class_weight_final=0.0), dict(dice_start=1.5), dict(hard_neg=2.0), dict(hard_quantile=1.0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainConfig(**bad)


def test_hard_negative_crops_are_centred_on_strong_edges_inside_the_body():
    """hard_background picks the border of a bright cube inside the body (not the skin, not flat tissue, not lesion
    voxels); with hard_neg = 1 every background crop holds that border, with hard_neg = 0 few do."""
    from iclr26.science.gf_screen import CropSampler, TrainConfig
    from iclr26.science.gf_screen.train import hard_background

    img = (0.5 + 0.01 * np.random.default_rng(0).standard_normal((1, 1, 40, 40, 40))).astype(np.float32)
    img[..., :2, :, :] = img[..., -2:, :, :] = 0.0  # air at two faces: the skin edge
    img[..., 28:32, 8:12, 18:22] = 1.0  # a bright 4³ "vessel"
    lab = np.zeros_like(img)
    lab[..., 10:13, 28:31, 10:13] = 1  # a lesion (no image contrast here)
    idx = np.unravel_index(hard_background(img[0], lab[0], 0.99), img.shape[2:])
    assert len(idx[0]) > 0
    assert (np.abs(np.stack(idx, 1) - [29.5, 9.5, 19.5]).max(1) <= 5).all()  # all near the cube
    assert (np.asarray(idx[0]) >= 5).all() and (np.asarray(idx[0]) <= 34).all()  # none at the skin
    assert not lab[0, 0][idx].any()

    def share_with_cube(hard_neg):
        cfg = TrainConfig(roi=(8, 8, 8), volumes_per_step=1, crops_per_volume=4, hard_neg=hard_neg, flip_p=0.0,
                          rot_p=0.0, shift_p=0.0, hard_quantile=0.99)  # fmt: skip
        s = CropSampler(np.concatenate([img, img]), np.zeros((2, *img.shape[1:]), np.float32), cfg, seed=0)
        crops = torch.cat([s.sample()[0] for _ in range(10)])
        return float((crops.flatten(1).amax(1) > 0.9).float().mean())

    assert share_with_cube(1.0) == 1.0
    assert share_with_cube(0.0) < 0.3


# ---------------------------------------------------------------- Focus training: early stopping, frozen Focus


def test_train_focus_keeps_the_best_validation_checkpoint(monkeypatch):
    """Early stopping restores the weights of the best validation score and stops after `patience` worse ones."""
    from iclr26.science.gf_screen import TrainConfig, train_focus
    from iclr26.science.gf_screen import train as tr

    img = np.random.default_rng(0).random((4, 1, 16, 16, 16)).astype(np.float32)
    lab = np.zeros_like(img)
    lab[:, :, 6:9, 6:9, 6:9] = 1
    scores = iter([0.1, 0.5, 0.3, 0.2, 0.9])  # best at the 2nd evaluation, then 2 worse: stop before the 0.9
    snaps = []

    def fake_score(focus, images, labels):
        snaps.append({k: v.clone() for k, v in focus.state_dict().items()})
        return next(scores), 0.5

    monkeypatch.setattr(tr, "focus_val_score", fake_score)
    focus = make_focus("fcn", channels=(2,))
    hist = train_focus(img, lab, focus, (img[:1], lab[:1]), TrainConfig(steps=10, lr=1e-2), eval_every=2, patience=2)
    assert hist["val_step"] == [2, 4, 6, 8] and hist["best_step"] == [4]
    assert len(hist["seg_loss"]) == 8  # stopped at step 8 (2 evaluations without improvement after step 4)
    for k, v in focus.state_dict().items():
        assert torch.equal(v, snaps[1][k])  # the step-4 weights, not the last ones
    assert not all(torch.equal(v, snaps[3][k]) for k, v in focus.state_dict().items())


def test_frozen_focus_is_not_updated_while_glance_learns():
    from iclr26.science.gf_screen import GlanceSpec, TrainConfig, train_glance_focus

    rng = np.random.default_rng(0)
    img = rng.random((4, 1, 16, 16, 16)).astype(np.float32)
    lab = np.zeros_like(img)
    lab[:2, :, 6:9, 6:9, 6:9] = 1
    cfg = TrainConfig(steps=3, roi=(8, 8, 8))
    for update in (False, True):
        torch.manual_seed(0)
        focus, glance = make_focus("fcn", channels=(2,)), make_glance((4, 4, 4, 4))
        f0 = {k: v.clone() for k, v in focus.state_dict().items()}
        g0 = {k: v.clone() for k, v in glance.state_dict().items()}
        train_glance_focus(img, lab, focus, {"gf": GlanceSpec(glance, GRLConfig())}, cfg, update_focus=update)
        same_f = all(torch.equal(v, f0[k]) for k, v in focus.state_dict().items())
        assert same_f is (not update)
        assert not all(torch.equal(v, g0[k]) for k, v in glance.state_dict().items())


def _grl_reference(logits, old_logits, rewards, eps, beta, floor=0.01, adv_clip=5.0, lo=0.01, hi=5.0):
    """The official GRL objective written out per element in plain Python floats: PPO's pessimistic min of the
    unclipped and the clipped surrogate, plus β · k3 estimate of KL(π_old ‖ π_θ) = E[r − log r − 1], r = π_old/π_θ."""
    import math

    def p1(row):
        a, b = float(row[0]), float(row[1])
        return math.exp(b) / (math.exp(a) + math.exp(b))

    p, q = [p1(r) for r in logits], [p1(r) for r in old_logits]
    rw = [float(r) for r in rewards]
    n, mean = len(rw), sum(rw) / len(rw)
    std = max(math.sqrt(sum((r - mean) ** 2 for r in rw) / (n - 1)), floor)
    surr, kl = [], []
    for pi, qi, ri in zip(p, q, rw):
        adv = min(max((ri - mean) / std, -adv_clip), adv_clip)
        ratio = min(max((pi + 1e-6) / (qi + 1e-6), lo), hi)
        surr.append(min(ratio * adv, min(max(ratio, 1 - eps), 1 + eps) * adv))
        k = min(max(qi / (pi + 1e-6), 1e-4), 1e4)
        kl.append(k - math.log(k + 1e-6) - 1)
    return -sum(surr) / n + beta * sum(kl) / n, (p, q)


@pytest.mark.parametrize("beta", [0.01, 0.5])
def test_grl_loss_equals_the_written_out_objective_where_clip_min_and_kl_direction_matter(beta):
    """On a group where the ratio leaves [1 − ε, 1 + ε] with either sign of the advantage and π_θ ≠ π_old, so that
    PPO's min changed to max, an unclipped surrogate or the KL direction flipped each change the loss."""
    import math

    from iclr26.science.gf_screen import GRLConfig, grl_loss

    g = torch.Generator().manual_seed(3)
    logits = torch.randn(16, 2, generator=g) * 1.5
    old = torch.randn(16, 2, generator=g) * 1.5
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    cfg = GRLConfig(beta=beta)
    got = float(grl_loss(logits, old, rewards, cfg)[0])
    want, (p, q) = _grl_reference(logits, old, rewards, cfg.eps, beta)
    assert abs(got - want) < 1e-5, (got, want)
    # the terms matter on this group: clipping binds with both signs of the advantage, and π_θ ≠ π_old
    mean = float(rewards.mean())
    ratios = [(pi + 1e-6) / (qi + 1e-6) for pi, qi in zip(p, q)]
    assert any(r > 1 + cfg.eps and float(a) > mean for r, a in zip(ratios, rewards))
    assert any(r < 1 - cfg.eps and float(a) < mean for r, a in zip(ratios, rewards))
    flipped_kl = beta * sum((pi / (qi + 1e-6)) - math.log(pi / (qi + 1e-6) + 1e-6) - 1 for pi, qi in zip(p, q)) / 16
    ref_kl = beta * sum(qi / (pi + 1e-6) - math.log(qi / (pi + 1e-6) + 1e-6) - 1 for pi, qi in zip(p, q)) / 16
    assert abs(flipped_kl - ref_kl) > 1e-4  # KL(π_θ ‖ π_old) would give another loss
    std = float(rewards.std())
    adv = [(float(r) - mean) / std for r in rewards]
    s_min = [min(r * a, min(max(r, 1 - cfg.eps), 1 + cfg.eps) * a) for r, a in zip(ratios, adv)]
    s_max = [max(r * a, min(max(r, 1 - cfg.eps), 1 + cfg.eps) * a) for r, a in zip(ratios, adv)]
    assert abs(sum(s_min) - sum(s_max)) / 16 > 1e-2  # PPO's max instead of min would give another loss


@pytest.mark.parametrize("fill", [500.0, -1000.0, float("nan")])
def test_raw_hu_or_nan_input_is_refused_by_screening(fill):
    """The models expect a CT windowed to [0, 1]; raw HU values (or NaN) are an error naming the fix, not a result."""
    from iclr26.science.gf_screen import ScreenConfig, make_focus, make_glance, screen, segment_all

    x = torch.full((1, 1, 16, 16, 16), 0.5)
    x[0, 0, 3, 3, 3] = fill
    focus, glance = make_focus("unet", (4, 8)), make_glance((2, 2, 4, 4))
    with pytest.raises(ValueError, match="windowed to \\[0, 1\\].*world.window"):
        segment_all(x, focus)
    with pytest.raises(ValueError, match="windowed to \\[0, 1\\]"):
        screen(x, focus, glance, ScreenConfig())
