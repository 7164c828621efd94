"""WinT3R: the window schedule and block-banded frame mask, the block-causal pool mask (through the mask and through
gradients), streaming = whole-sequence pass, the relative-pose and point losses' invariances, Umeyama / ATE against
evo, Chamfer, RRA/RTA, the ray-cast world by construction, and a smoke run of the reproduction."""

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from iclr26.vision.wint3r import (
    WinT3R,
    WinT3RConfig,
    ate,
    camera_loss,
    chamfer,
    enc_to_mat,
    frame_mask,
    mat_to_enc,
    merge_windows,
    point_loss,
    pool_mask,
    relative_encodings,
    rra_rta,
    umeyama,
    window_schedule,
)
from iclr26.vision.wint3r.geometry import mat_to_quat, quat_to_mat

TINY = dict(img_h=8, img_w=16, patch=4, dim=16, heads=2, enc_depth=1, dec_depth=1, state_size=4, cam_depth=1,
            cam_iters=2)  # fmt: skip


def _random_poses(n, rng, scale=1.0):
    out = np.tile(np.eye(4), (n, 1, 1))
    out[:, :3, :3] = Rotation.random(n, random_state=int(rng.integers(1 << 30))).as_matrix()
    out[:, :3, 3] = rng.normal(0, scale, (n, 3))
    return out


# ---------------------------------------------------------------- windows


def test_window_schedule_half_overlap_and_padding():
    assert window_schedule(8, 4, 2) == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7]]
    assert window_schedule(9, 4, 2)[-1] == [6, 7, 8, 8]  # padded by repeating the last frame (official code)
    assert window_schedule(8, 4, 4) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert window_schedule(3, 1, 1) == [[0], [1], [2]]
    assert window_schedule(2, 4, 2) == [[0, 1, 1, 1]]
    with pytest.raises(ValueError, match="stride"):
        window_schedule(8, 4, 5)


def test_frame_mask_is_exactly_block_banded_with_half_overlap():
    # stride 2, w 4: blocks of 2 frames; block a talks to blocks a-1, a, a+1 (hand-written for T = 8)
    band = np.kron(np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]), np.ones((2, 2)))
    assert frame_mask(8, 4, 2).numpy().astype(int).tolist() == band.astype(int).tolist()
    assert frame_mask(8, 4, 4).numpy().tolist() == np.kron(np.eye(2), np.ones((4, 4))).astype(bool).tolist()
    assert frame_mask(5, 1, 1).numpy().tolist() == np.eye(5, dtype=bool).tolist()  # no window: frames alone


def test_decoder_window_attention_through_gradients():
    """Within a window every frame's output depends on every frame of the window; nothing depends on a later window's
    frames (the state only carries the past). Without windows (w = 1) frame 0 sees no other frame."""
    torch.manual_seed(0)
    x = torch.rand(1, 6, 3, 8, 16, requires_grad=True)
    out = WinT3R(WinT3RConfig(**TINY)).eval()(x)  # windows [0-3], [2-5]
    g = torch.autograd.grad(out["pts"][0, 0].sum(), x)[0].abs().sum((0, 2, 3, 4))  # frame 0, first window
    assert (g[:4] > 0).all() and (g[4:] == 0).all()
    out1 = WinT3R(WinT3RConfig(**TINY, window=1, stride=1)).eval()(x)
    g1 = torch.autograd.grad(out1["pts"][0, 0].sum(), x, retain_graph=True)[0].abs().sum((0, 2, 3, 4))
    assert g1[0] > 0 and (g1[1:] == 0).all()
    g2 = torch.autograd.grad(out1["pts"][0, 3].sum(), x)[0].abs().sum((0, 2, 3, 4))  # frame 3: past via the state
    assert (g2[:4] > 0).all() and (g2[4:] == 0).all()


def test_precomputed_rope_tables_give_the_same_attention_bit_for_bit():
    from iclr26.vision.wint3r.model import Attn, WinT3R, WinT3RConfig, grid_positions, rope2d, rope_table

    torch.manual_seed(0)
    attn = Attn(16, 2)
    x, mem = torch.randn(2, 6, 16), torch.randn(2, 5, 16)
    pq, pk = grid_positions(2, 3), grid_positions(1, 5, offset=1)
    per_call = attn(x, mem=mem, pos=pq, mem_pos=pk)
    tabled = attn(x, mem=mem, pos=rope_table(pq, 8), mem_pos=rope_table(pk, 8))
    assert torch.equal(per_call, tabled)
    # against CroCo's RoPE2D written out: each half of the channels rotated by its coordinate, pairs (i, i + D/4)
    t, pos = torch.randn(1, 2, 6, 8), grid_positions(2, 3)
    ref = []
    for k, half in enumerate(t.chunk(2, -1)):
        f = pos[:, k, None].float() * (1.0 / 100.0 ** (torch.arange(0, 4, 2).float() / 4))
        f = torch.cat([f, f], -1)
        x1, x2 = half.chunk(2, -1)
        ref.append(half * f.cos() + torch.cat([-x2, x1], -1) * f.sin())
    torch.testing.assert_close(rope2d(t, pos), torch.cat(ref, -1), rtol=0, atol=1e-6)
    model = WinT3R(WinT3RConfig())
    tab = model.rope_tables(torch.zeros(1), "frame", 3)  # the decoder's window positions, repeated per frame
    assert tab[0].shape == (3 * (1 + model.n_patch), model.cfg.dim // model.cfg.heads)
    assert model.rope_tables(torch.zeros(1), "frame", 3) is tab  # computed once, then reused
    with torch.inference_mode():
        model.rope_tables(torch.zeros(1), "state")
    model(torch.rand(1, 4, 3, 24, 32))["pts"].sum().backward()  # a table made under inference mode still trains


def test_rope2d_depends_only_on_relative_position_and_keeps_norms():
    from iclr26.vision.wint3r.model import grid_positions, rope2d

    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    pq, pk = torch.randint(0, 4, (5, 2)), torch.randint(0, 4, (5, 2))
    logits = rope2d(q, pq) @ rope2d(k, pk).transpose(-1, -2)
    shift = torch.tensor([3, 7])
    torch.testing.assert_close(rope2d(q, pq + shift) @ rope2d(k, pk + shift).transpose(-1, -2), logits)
    torch.testing.assert_close(rope2d(q, pq).norm(dim=-1), q.norm(dim=-1))
    moved = rope2d(q, pq) @ rope2d(k, pk + torch.tensor([0, 1])).transpose(-1, -2)  # another relative offset
    assert (moved - logits).abs().max() > 1e-2
    assert grid_positions(2, 3, offset=1).tolist() == [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3]]


def test_early_stopping_stops_on_patience_and_restores_the_best_weights():
    from iclr26.vision.wint3r import TrainConfig, train
    from iclr26.vision.wint3r.train import _tensors, validation_loss
    from iclr26.vision.wint3r.world import make_streams

    data = make_streams(3, 6, seed=0)
    data = {k: (v[..., :8, :16] if k in ("images", "depth") else v[..., :8, :16, :] if k == "pts_local" else v)
            for k, v in data.items()}  # fmt: skip
    torch.manual_seed(0)
    model = WinT3R(WinT3RConfig(**TINY))
    info = train(model, data, data, TrainConfig(lr=0.05, batch=2, max_steps=300, eval_every=1, patience=2))
    assert info["steps"] < 300  # patience, not the cap, ended it
    assert validation_loss(model, *_tensors(data)) == pytest.approx(info["best_val"], abs=1e-5)


# ---------------------------------------------------------------- the camera-token pool


def _official_window_mask(seq_len, w):  # the official layers/attention.py rule, re-typed
    m = torch.ones(seq_len, seq_len, dtype=torch.bool)
    for s in range(0, seq_len, w):
        m[s : s + w, s + w :] = False
    return m


@pytest.mark.parametrize("n,w", [(1, 4), (5, 4), (6, 1), (3, 2)])
def test_pool_mask_block_causal_equals_official_and_block_diagonal_without_pool(n, w):
    m = pool_mask(n, w)
    assert torch.equal(m, _official_window_mask(n * w, w))
    blk = np.arange(n * w) // w
    assert m.numpy().tolist() == (blk[None, :] <= blk[:, None]).tolist()  # all past windows and the own, only those
    assert pool_mask(n, w, pool=False).numpy().tolist() == (blk[None, :] == blk[:, None]).tolist()


@pytest.mark.parametrize("pool", [True, False])
def test_camera_head_reads_all_past_tokens_and_no_future_ones(pool):
    torch.manual_seed(0)
    model = WinT3R(WinT3RConfig(**TINY, pool=pool))
    n, w = 4, 4
    tok = torch.randn(1, n * w, 32, requires_grad=True)
    poses = model.cam_head(tok, pool_mask(n, w, pool), 2)[-1]
    k = 2  # window 2's poses
    g = torch.autograd.grad(poses[0, k * w : (k + 1) * w].sum(), tok)[0].abs().sum((0, 2)).view(n, w)
    assert (g[k + 1 :] == 0).all()  # future camera tokens: exactly zero gradient
    assert (g[k] > 0).all()
    assert (g[:k] > 0).all() if pool else (g[:k] == 0).all()  # the pool: every past token is read


def test_stream_equals_whole_sequence_pass():
    torch.manual_seed(1)
    x = torch.rand(9, 3, 8, 16)
    for kw in ({}, {"pool": False}, {"stride": 4}):
        model = WinT3R(WinT3RConfig(**TINY, **kw)).eval()
        with torch.no_grad():
            full = model(x[None])
        steps = list(model.stream(x))
        assert [i for s in steps for i in s["frame_idx"]] == full["frame_idx"].tolist()
        torch.testing.assert_close(torch.cat([s["pose"] for s in steps]), full["poses"][-1][0], atol=1e-5, rtol=0)
        torch.testing.assert_close(torch.cat([s["pts"] for s in steps]), full["pts"][0], atol=1e-5, rtol=0)


def test_merge_windows_keeps_max_confidence_points_and_latest_pose():
    idx = [0, 1, 1, 2]
    pts = torch.arange(4.0).view(4, 1, 1, 1).expand(4, 2, 2, 3)
    conf = torch.tensor([1.0, 5.0, 2.0, 1.0]).view(4, 1, 1).expand(4, 2, 2)
    poses = torch.arange(4.0)[:, None].expand(4, 7)
    p, c, q = merge_windows(idx, pts, conf, poses, 3)
    assert p[:, 0, 0, 0].tolist() == [0, 1, 3] and q[:, 0].tolist() == [0, 2, 3]


# ---------------------------------------------------------------- losses


def test_relative_pose_loss_zero_under_global_rigid_transform_positive_otherwise():
    rng = np.random.default_rng(0)
    gt = torch.as_tensor(_random_poses(6, rng), dtype=torch.float64)[None]
    g = torch.as_tensor(_random_poses(1, rng), dtype=torch.float64)
    moved = g @ gt  # same cameras, another world frame
    enc_gt, enc_moved = mat_to_enc(gt), mat_to_enc(moved)
    enc_moved[..., 3:] *= -1  # the quaternion sign must not matter
    assert camera_loss([enc_moved], enc_gt, 1.0, 1.0).item() < 1e-9
    assert camera_loss([2.5 * torch.cat([enc_moved[..., :3], enc_moved[..., 3:] / 2.5], -1)], enc_gt, 2.5, 1.0) < 1e-9
    bad = enc_moved.clone()
    bad[0, 3, :3] += 0.1  # one camera moved
    assert camera_loss([bad], enc_gt, 1.0, 1.0).item() > 1e-3
    bad = mat_to_enc(moved.clone())
    bad[0, 2, 3:] = mat_to_quat(torch.as_tensor(Rotation.random(random_state=3).as_matrix()))  # one camera turned
    assert camera_loss([bad], enc_gt, 1.0, 1.0).item() > 1e-3
    # iteration weights gamma^(K-k): the last iteration weighs 1
    l1, l2 = camera_loss([bad], enc_gt, 1.0, 1.0), camera_loss([bad, enc_moved], enc_gt, 1.0, 1.0, gamma=0.6)
    torch.testing.assert_close(l2, 0.6 * l1)


def test_relative_encodings_match_matrix_relative_poses():
    rng = np.random.default_rng(1)
    t = torch.as_tensor(_random_poses(4, rng), dtype=torch.float64)
    rel = relative_encodings(mat_to_enc(t)[None])[0]
    for i in range(4):
        for j in range(4):
            torch.testing.assert_close(enc_to_mat(rel[i, j]), torch.linalg.inv(t[i]) @ t[j], atol=1e-9, rtol=0)


def test_point_loss_is_scale_invariant_and_weights_confidence():
    torch.manual_seed(0)
    gt = torch.rand(2, 3, 4, 5, 3) + 0.5
    conf = torch.full((2, 3, 4, 5), 2.0)
    loss, zp, zg = point_loss(3.0 * gt, conf, gt, alpha=1.0)
    torch.testing.assert_close(loss, -torch.log(torch.tensor(2.0)))  # ||P̂/ẑ - P/z|| = 0, leaves -α log C
    torch.testing.assert_close(zp, 3 * zg)
    noisy = gt + 0.1 * torch.randn_like(gt)
    lo, hi = point_loss(noisy, conf, gt)[0], point_loss(noisy, 2 * conf, gt)[0]
    err = point_loss(noisy, conf, gt, alpha=0.0)[0] / 2  # mean normalised error
    torch.testing.assert_close(hi - lo, 2 * err - torch.log(torch.tensor(2.0)), atol=1e-5, rtol=0)


# ---------------------------------------------------------------- geometry and metrics


def test_quaternions_match_scipy():
    r = Rotation.random(20, random_state=0)
    q = torch.as_tensor(r.as_quat(scalar_first=True))
    torch.testing.assert_close(quat_to_mat(q), torch.as_tensor(r.as_matrix()), atol=1e-9, rtol=0)
    back = mat_to_quat(torch.as_tensor(r.as_matrix()))
    torch.testing.assert_close(back, q * torch.sign(q[:, :1]), atol=1e-7, rtol=0)


def test_umeyama_recovers_similarity_and_equals_evo():
    from evo.core.geometry import umeyama_alignment

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    r, t, s = Rotation.random(random_state=1).as_matrix(), rng.normal(size=3), 2.7
    y = s * x @ r.T + t
    rr, tt, ss = umeyama(torch.as_tensor(x), torch.as_tensor(y))
    np.testing.assert_allclose(rr.numpy(), r, atol=1e-9)
    np.testing.assert_allclose(tt.numpy(), t, atol=1e-9)
    assert abs(ss - s) < 1e-9
    y2 = y + 0.3 * rng.normal(size=y.shape)
    re, te, se = umeyama_alignment(x.T, y2.T, with_scale=True)
    rr, tt, ss = umeyama(torch.as_tensor(x), torch.as_tensor(y2))
    np.testing.assert_allclose(rr.numpy(), re, atol=1e-9)
    np.testing.assert_allclose(tt.numpy(), te, atol=1e-9)
    assert abs(ss - se) < 1e-9


def test_ate_equals_torch_umeyama_rmse_and_vanishes_under_similarity():
    rng = np.random.default_rng(2)
    gt = _random_poses(30, rng)
    est = _random_poses(30, rng)
    x, y = torch.as_tensor(est[:, :3, 3]), torch.as_tensor(gt[:, :3, 3])
    r, t, s = umeyama(x, y)
    mine = float(((s * x @ r.T + t - y) ** 2).sum(1).mean().sqrt())
    assert abs(ate(est, gt) - mine) < 1e-9
    sim = np.tile(np.eye(4), (1, 1))
    sim[:3, :3], sim[:3, 3] = Rotation.random(random_state=5).as_matrix(), [1, 2, 3]
    moved = sim @ gt
    moved[:, :3, 3] *= 0.4
    assert ate(moved, gt) < 1e-9


def test_chamfer_and_pose_accuracy_by_construction():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(300, 3))
    r = Rotation.random(random_state=2).as_matrix()
    assert chamfer(1.7 * pts @ r.T + 4.0, pts)["overall"] < 1e-9  # a similarity is aligned away
    c = chamfer(pts + np.array([0.5, 0, 0]), pts, align=False)
    assert c["overall"] > 0.05
    gt = _random_poses(8, rng)
    assert rra_rta(gt, gt) == {"rra15": 1.0, "rta15": 1.0, "rra30": 1.0, "rta30": 1.0, "auc30": 1.0}
    pert = gt.copy()
    pert[0, :3, :3] = pert[0, :3, :3] @ Rotation.from_euler("z", 40, degrees=True).as_matrix()
    m = rra_rta(pert, gt)
    assert m["rra30"] == pytest.approx(1 - 7 / 28)  # the 7 pairs with frame 0 are off by 40 degrees
    from iclr26.vision.wint3r.train import video_depth

    depth = rng.uniform(0.5, 3, (4, 6, 8))
    assert video_depth(3 * depth, depth) == {"absrel": pytest.approx(0), "delta1": 1.0}  # scale aligned away
    off = np.full((4, 6, 8), 1.5)
    depth = off.copy()
    off[0] *= 2  # one frame twice too far: after median scaling a quarter of the pixels are off by 2x
    v = video_depth(off, depth)
    assert v["delta1"] == pytest.approx(0.75) and v["absrel"] == pytest.approx(0.25)


# ---------------------------------------------------------------- the world


def test_raycast_world_geometry_is_exact():
    from iclr26.vision.wint3r.world import ROOM, make_streams

    d = make_streams(2, 6, seed=3)
    d2 = make_streams(2, 6, seed=3)
    assert np.array_equal(d["images"], d2["images"]) and d["images"].shape == (2, 6, 3, 24, 32)
    p, poses = d["pts_local"], d["poses"]
    assert (d["depth"] > 0).all()
    world = np.einsum("ntij,nthwj->nthwi", poses[..., :3, :3], p) + poses[:, :, None, None, :3, 3]
    assert (np.abs(world) <= ROOM + 1e-4).all()  # every hit lies inside the closed room
    on_wall = (np.abs(np.abs(world) - ROOM) < 1e-4).any(-1)
    assert 0.3 < on_wall.mean() < 1.0  # mostly walls, some furniture
    steps = np.linalg.norm(np.diff(poses[:, :, :3, 3], axis=1), axis=-1)
    assert (steps < 0.12).all() and np.median(steps) > 0.03  # smooth walk, 0.04-0.1 units per frame
    fwd = np.einsum("ntij,j->nti", poses[:, :-1, :3, :3], [0, 0, 1.0])  # mostly along the viewing direction
    assert np.median((fwd * np.diff(poses[:, :, :3, 3], axis=1)).sum(-1) / np.maximum(steps, 1e-9)) > 0.8
    np.testing.assert_allclose(p[..., 2], d["depth"], atol=1e-6)


# ---------------------------------------------------------------- smoke run of the reproduction


def test_smoke_run(tmp_path, monkeypatch):
    """...and a rerun that loads the cached arm units returns the same metrics (only the measured speeds differ)."""
    from iclr26.core.runs import RunContext
    from iclr26.papers.wint3r import CLAIMS, CONFIGS, METRICS
    from iclr26.papers.wint3r.experiment import run

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    cfg = CONFIGS["smoke"]
    m = run(cfg, 0, RunContext("wint3r", "smoke", 0, tmp_path, quiet=True))
    for c in CLAIMS:
        if c.applies(cfg):
            assert set(c.metrics()) <= set(m) and set(c.metrics()) <= set(METRICS)
    assert all(np.isfinite(v) for v in m.values()) and set(m) <= set(METRICS)
    assert m["fps_full"] > 0 and 0 <= m["rra15_full"] <= 1
    assert len(list((tmp_path / "cache").glob("threads-*/wint3r/s0-*.pt"))) == 4
    again = run(cfg, 0, RunContext("wint3r", "smoke", 0, tmp_path, quiet=True))
    assert {k: v for k, v in again.items() if "fps" not in k} == {k: v for k, v in m.items() if "fps" not in k}


def test_arm_units_are_the_training_and_an_idle_worker_trains_a_later_seeds(tmp_path, monkeypatch):
    """A cached arm is exactly `train` from the seed's initialisation on the seed's data; `prepare` trains the arms of
    later seeds only (never earlier ones) and skips an arm whose lock another process holds."""
    from filelock import FileLock

    from iclr26.papers.wint3r import CONFIGS, units
    from iclr26.vision.wint3r import TrainConfig, train

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    cfg = CONFIGS["smoke"]
    held = FileLock(str(units.arm_path(cfg, 2, "nopool").with_suffix(".lock")))
    held.acquire()  # "another process" is training seed 2's no-pool arm
    try:
        assert units.arm_unit(cfg, 2, "nopool", wait=False) is None
        units.prepare(cfg, 1, (0, 1, 2))
    finally:
        held.release()
    built = {(s, a) for s in (0, 1, 2) for a in units.ARMS if units.arm_path(cfg, s, a).exists()}
    assert built == {(2, "full"), (2, "nooverlap"), (2, "nowindow")}
    torch.manual_seed(123)  # the caller's random state must not matter
    data, val = units.train_val(cfg, 2)
    direct = units.new_model(cfg, 2, "nowindow")
    tcfg = TrainConfig(lr=cfg.lr, batch=cfg.batch, max_steps=cfg.max_steps, eval_every=cfg.eval_every,
                       patience=cfg.patience)  # fmt: skip
    info = train(direct, data, val, tcfg, seed=2)
    unit = units.arm_unit(cfg, 2, "nowindow")
    assert unit["steps"] == info["steps"] and unit["best_step"] == info["best_step"]
    for k, v in direct.state_dict().items():
        assert torch.equal(unit["state"][k], v), k
    fresh = units.new_model(cfg, 2, "nowindow").state_dict()
    assert any(not torch.equal(unit["state"][k], fresh[k]) for k in fresh)  # training moved it
    assert direct.cfg.window == 1 and units.new_model(cfg, 2, "nooverlap").cfg.stride == 4  # the arms' switches


def test_a_bad_set_is_one_line_naming_the_field_and_writes_no_run_folder(tmp_path, capsys):
    """The card's `checks.check_config` runs in the driver: one line, exit 2, no run folder."""
    from iclr26.cli import main
    from iclr26.papers.wint3r import CONFIGS
    from iclr26.papers.wint3r.checks import check_config

    for cfg in CONFIGS.values():
        check_config(cfg)  # every shipped scale passes
    code = main(["run", "wint3r", "--scale", "smoke", "--set", "dim=18", "--runs", str(tmp_path)])
    err = capsys.readouterr().err
    assert (
        code == 2 and err.startswith("iclr26: error: --set dim=18:") and "dim (18) must be divisible by heads" in err
    ), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_every_paper_claim_waits_for_the_pose_gate():
    """The gates as wired in the card: with Chamfer and ATE beating the trivial predictor but AUC@30 at its level (the
    recorded situation), window, pool and speed are not testable, their own checks still computed."""
    from iclr26.core.claims import NOT_TESTABLE, REPRODUCED
    from iclr26.core.gates import evaluate
    from iclr26.papers.wint3r import CLAIMS, CONFIGS

    base = {"chamfer_gain_trivial": 0.37, "ate_trivial": 0.35, "auc30_trivial": 0.13, "fps_ratio_window": 1.6,
            "fps_ratio_pool": 0.93}  # fmt: skip
    for arm, worse in (("full", 0.0), ("nooverlap", 0.05), ("nowindow", 0.05), ("nopool", 0.05)):
        base.update({f"chamfer_{arm}": 0.44 + worse, f"ate_{arm}": 0.23 + worse, f"rra15_{arm}": 0.25 - worse,
                     f"auc30_{arm}": 0.124 - worse})  # fmt: skip
    rng = np.random.default_rng(0)

    def verdicts(values):
        per_seed = [{k: v + 0.002 * rng.standard_normal() for k, v in values.items()} for _ in range(3)]
        return {x.id: x for x in evaluate(CLAIMS, per_seed, CONFIGS["quick"])}

    v = verdicts(base)
    assert v["testbed"].verdict == REPRODUCED and v["pose-learned"].verdict != REPRODUCED
    for cid in ("window", "pool", "speed"):
        assert v[cid].verdict == NOT_TESTABLE and v[cid].measured == REPRODUCED, cid
    v = verdicts({**base, "auc30_full": 0.4})
    assert all(v[c].verdict == REPRODUCED for c in ("window", "pool", "speed"))


def test_umeyama_returns_a_rotation_for_a_mirrored_point_set_and_the_best_one():
    """A reflected target: the result must stay a proper rotation (det +1, the sign fix of Umeyama's S matrix) and be
    optimal among rotations (checked against a brute force over many random rotations); without the fix the SVD gives
    a reflection (det −1)."""
    from scipy.spatial.transform import Rotation

    from iclr26.vision.wint3r.geometry import umeyama

    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 3, generator=g, dtype=torch.float64) * torch.tensor([3.0, 1.0, 0.3], dtype=torch.float64)
    y = x * torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)  # a mirror image: no rotation maps x onto y exactly
    r, t, s = umeyama(x, y)
    assert torch.linalg.det(r).item() == pytest.approx(1.0, abs=1e-9)
    torch.testing.assert_close(r @ r.T, torch.eye(3, dtype=torch.float64), atol=1e-9, rtol=0)

    def cost(rot, scale, shift):
        return float(((y - (scale * x @ rot.T + shift)) ** 2).sum(1).mean())

    best = cost(r, s, t)
    for q in Rotation.random(2000, random_state=1).as_matrix():
        q = torch.as_tensor(q)
        xc, yc = x - x.mean(0), y - y.mean(0)
        sc = max(0.0, float((yc * (xc @ q.T)).sum() / (xc**2).sum()))  # the best scale ≥ 0 and shift for q
        assert best <= cost(q, sc, y.mean(0) - sc * (q @ x.mean(0))) + 1e-9
    u, _, vt = torch.linalg.svd((y - y.mean(0)).T @ (x - x.mean(0)))
    assert torch.linalg.det(u @ vt).item() < 0  # the unfixed SVD solution is the reflection
