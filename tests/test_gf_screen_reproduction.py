"""GF-Screen: Glance training to convergence (early stopping per model, best weights restored), the validation
windows, and a smoke run of the reproduction card (every declared metric, the Focus models cached and reused)."""

import numpy as np
import pytest
import torch

from iclr26.science.gf_screen import (
    GlanceSpec,
    GRLConfig,
    ScreenConfig,
    TrainConfig,
    make_focus,
    make_glance,
    tile_windows,
    train_glance,
    window_auroc,
    window_outputs,
)

torch.set_num_threads(1)


def _tiny_data():
    rng = np.random.default_rng(0)
    img = rng.random((4, 1, 16, 16, 16)).astype(np.float32)
    lab = np.zeros_like(img)
    lab[:2, :, 6:9, 6:9, 6:9] = 1
    return img, lab


def test_train_glance_stops_each_model_on_its_own_and_restores_its_best_weights():
    img, lab = _tiny_data()
    torch.manual_seed(0)
    focus = make_focus("fcn", channels=(2,))
    specs = {"gf": GlanceSpec(make_glance((4, 4, 4, 4)), GRLConfig()), "sup": GlanceSpec(make_glance((4, 4, 4, 4)))}
    scripted = {
        id(specs["gf"].model): iter([0.5, 0.6, 0.9, 0.7, 0.8, 0.85]),  # best at step 4, then 3 worse
        id(specs["sup"].model): iter([0.5, 0.4, 0.3, 0.2]),
    }  # never better than the start: stop at step 6
    snaps = {id(s.model): [] for s in specs.values()}

    def score(model):
        snaps[id(model)].append({k: v.clone() for k, v in model.state_dict().items()})
        return next(scripted[id(model)])

    cfg = TrainConfig(steps=40, roi=(8, 8, 8), lr=1e-2)
    hist = train_glance(img, lab, focus, specs, (None, None), cfg, eval_every=2, patience=3, score_fn=score)
    assert hist["gf"]["val_step"] == [0, 2, 4, 6, 8, 10] and hist["gf"]["best_step"] == 4 and hist["gf"]["steps"] == 10
    assert hist["sup"]["val_step"] == [0, 2, 4, 6] and hist["sup"]["best_step"] == 0 and hist["sup"]["steps"] == 6
    g, s = specs["gf"].model.state_dict(), specs["sup"].model.state_dict()
    assert all(torch.equal(v, snaps[id(specs["gf"].model)][2][k]) for k, v in g.items())  # the step-4 weights
    assert not all(torch.equal(v, snaps[id(specs["gf"].model)][-1][k]) for k, v in g.items())
    assert all(torch.equal(v, snaps[id(specs["sup"].model)][0][k]) for k, v in s.items())  # the initial weights
    with pytest.raises(ValueError, match="patience"):
        train_glance(img, lab, focus, specs, (None, None), cfg, patience=0, score_fn=score)


def test_train_glance_does_not_stop_before_min_steps():
    """With ``min_steps`` a model whose score never beats its start trains on to ``min_steps`` (then stops at the
    next evaluation without improvement) and still gets its best, here initial, weights back."""
    img, lab = _tiny_data()
    torch.manual_seed(0)
    focus = make_focus("fcn", channels=(2,))
    specs = {"sup": GlanceSpec(make_glance((4, 4, 4, 4)))}
    start = {k: v.clone() for k, v in specs["sup"].model.state_dict().items()}
    scores = iter([0.5] + [0.4] * 20)
    cfg = TrainConfig(steps=40, roi=(8, 8, 8), lr=1e-2)
    hist = train_glance(img, lab, focus, specs, (None, None), cfg, eval_every=2, patience=3, min_steps=12,
                        score_fn=lambda m: next(scores))  # fmt: skip
    assert hist["sup"]["steps"] == 12 and hist["sup"]["val_step"][-1] == 12 and hist["sup"]["best_step"] == 0
    assert all(torch.equal(v, start[k]) for k, v in specs["sup"].model.state_dict().items())
    with pytest.raises(ValueError, match="min_steps"):
        train_glance(img, lab, focus, specs, (None, None), cfg, min_steps=-1, score_fn=lambda m: 0.0)


def test_tile_windows_are_the_inference_windows_with_their_lesion_flags():
    img, lab = np.zeros((2, 1, 32, 32, 16), np.float32), np.zeros((2, 1, 32, 32, 16), np.float32)
    img[:] = np.random.default_rng(1).random(img.shape)
    lab[1, 0, 20:23, 4:6, 10:12] = 1
    cfg = ScreenConfig(roi=(16, 16, 16), overlap=0.5)
    wins, has, vol = tile_windows(img, lab, cfg)
    focus = make_focus("fcn", channels=(2,)).eval()
    caches = [window_outputs(torch.from_numpy(x[None]), focus, {}, cfg, y) for x, y in zip(img, lab)]
    assert len(wins) == sum(len(c.slices) for c in caches) == 18  # 3 × 3 × 1 windows per volume
    assert np.array_equal(has, np.concatenate([c.has_lesion for c in caches])) and has[vol == 1].sum() >= 1
    k = 0
    for v, c in enumerate(caches):
        for sl in c.slices:  # the same windows in the same order as the cached inference
            assert torch.equal(wins[k, 0], torch.from_numpy(img[v, 0][sl]))
            k += 1


def test_window_auroc_hand_values():
    assert window_auroc(np.array([0.9, 0.8, 0.1, 0.2]), np.array([1, 1, 0, 0])) == 1.0
    assert window_auroc(np.array([0.1, 0.9, 0.5, 0.5]), np.array([1, 0, 1, 0])) == 0.125  # 1 tie, 0 wins of 4 pairs
    assert np.isnan(window_auroc(np.array([0.1, 0.2]), np.array([0, 0])))


def test_smoke_run_reports_every_metric_and_reuses_the_cached_focus(tmp_path, monkeypatch):
    from iclr26.core.runs import run_paper
    from iclr26.core.threads import torch_threads
    from iclr26.papers import gf_screen as card
    from iclr26.papers.gf_screen import experiment as ex

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(ex, "_SHARED", {})
    res = run_paper("gf-screen", scale="smoke", out=tmp_path / "runs", quiet=True)
    assert set(res.per_seed) == set(card.CONFIGS["smoke"].seeds)
    for seed_metrics in res.per_seed.values():
        missing = set(card.METRICS) - set(seed_metrics)
        assert not missing, missing
        assert seed_metrics["screen_matches_cache"] == 1.0  # the timed gated inference is the evaluated one
        assert seed_metrics["ratio_all"] == 1.0 and seed_metrics["ratio_random"] == seed_metrics["ratio_gf"]
    cfg = card.CONFIGS["smoke"]
    assert len(list((tmp_path / "cache").glob("threads-*/gf_screen/focus-*.pt"))) == 2  # the Focus and its control
    first = ex._SHARED[next(iter(ex._SHARED))]["focus"].state_dict()
    with torch_threads():  # the run's thread count (ICLR26_THREADS): the cache keeps a folder per count
        again, _ = ex._trained_focus(cfg, "real", None, print)  # from the disk cache: no data needed, same weights
    assert all(torch.equal(v, first[k]) for k, v in again.state_dict().items())


def test_uniform_negative_crops_reach_the_air_around_the_body():
    """With centres inside the body (the code's rule) every crop holds body voxels; with uniform_neg=1 some background
    crops are pure air, the windows a Glance must also score at inference."""
    from iclr26.science.gf_screen import CropSampler

    img = np.zeros((2, 1, 32, 32, 32), np.float32)
    img[:, :, 12:20, 12:20, 12:20] = 0.5  # the "body": a small cube in air
    lab = np.zeros_like(img)
    lab[0, :, 15:17, 15:17, 15:17] = 1
    air = {}
    for uni in (0.0, 1.0):
        cfg = TrainConfig(roi=(8, 8, 8), volumes_per_step=2, crops_per_volume=4, flip_p=0, rot_p=0, shift_p=0,
                          uniform_neg=uni)  # fmt: skip
        s = CropSampler(img, lab, cfg, seed=0)
        crops = torch.cat([s.sample()[0] for _ in range(20)])
        air[uni] = float((crops.flatten(1).amax(1) == 0).float().mean())
    assert air[0.0] == 0.0 and air[1.0] > 0.2
    with pytest.raises(ValueError, match="uniform_neg"):
        TrainConfig(uniform_neg=1.5)


def test_the_operating_point_is_the_lowest_threshold_reaching_the_target_fpr(monkeypatch):
    """The baseline's second operating point (VERSION 6): the lowest voxel threshold of the odds grid whose validation
    FPR is at most the target; when none reaches it, the threshold with the lowest FPR (ties: the lower one)."""
    from iclr26.papers.gf_screen import experiment as ex

    fprs = {}

    def fake(maps, labels, t):
        fprs[t] = {0.25: 1.0, 0.5: 0.8, 0.75: 0.5, 0.9: 0.25, 27 / 28: 0.1}.get(t, 0.3 if t < 0.99 else 0.2)
        return {"fpr": fprs[t]}

    monkeypatch.setattr(ex, "_summ", fake)
    assert ex._fpr_threshold(None, None, 0.3) == (0.9, 0.25)
    assert ex._fpr_threshold(None, None, 0.5) == (0.75, 0.5)
    t, fpr = ex._fpr_threshold(None, None, 0.05)  # never reached: the lowest FPR, the lowest threshold with it
    assert fpr == 0.1 and t == 27 / 28
