"""UniVLA: the FAST action tokeniser, the patch VQ, sequences and loss masks, constrained decoding, the encoder
baseline, the ToyTable world, and a smoke run of the reproduction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.embodied.univla import (
    FastActionTokenizer,
    FastConfig,
    PatchVQ,
    UnifiedVLA,
    UnifiedVocab,
    UniVLAPolicy,
    build_sequence,
    masked_next_token_loss,
)
from iclr26.embodied.univla.model import ModelConfig
from iclr26.embodied.univla.world import WORDS, ToyTableEnv, expert_episode

TINY = ModelConfig(d_model=32, n_layers=1, n_heads=2)


def _setup(n_codes=40):
    fast = FastActionTokenizer(FastConfig(chunk=4))
    vocab = UnifiedVocab(WORDS, n_codes, fast.n_tokens)
    return fast, vocab


# --- FAST action tokeniser --------------------------------------------------------------------------------------
def test_fast_round_trip_within_quantisation_error():
    fast = FastActionTokenizer(FastConfig(chunk=4, dims=3, scale=10))
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = rng.uniform(-1, 1, (4, 3))
        ids = fast.encode(a)
        assert ids.shape == (12,) and ids.min() >= 0 and ids.max() < fast.n_tokens
        err = np.linalg.norm(fast.decode(ids) - a)
        assert err <= fast.max_error() + 1e-9  # orthonormal DCT: coefficient rounding error carries over exactly
    # a finer scale gives a proportionally smaller bound and error, and constant chunks are (nearly) exact
    fine = FastActionTokenizer(FastConfig(chunk=4, dims=3, scale=100, clip=300))
    a = rng.uniform(-1, 1, (4, 3))
    assert np.abs(fine.decode(fine.encode(a)) - a).max() < np.abs(fast.decode(fast.encode(a)) - a).max() + 1e-12
    assert np.linalg.norm(fine.decode(fine.encode(a)) - a) <= fine.max_error()


def test_fast_is_a_dct_low_frequency_first():
    fast = FastActionTokenizer(FastConfig(chunk=4, dims=3, scale=10))
    const = np.tile([0.5, -1.0, 1.0], (4, 1))  # a constant chunk has only the DC coefficient: 2 * value
    q = fast.encode(const) - fast.cfg.clip
    assert list(q[:3]) == [10, -20, 20] and not q[3:].any()
    # a truncated stream (missing high frequencies) decodes as zero-padded coefficients: the DC part survives
    np.testing.assert_allclose(fast.decode(fast.encode(const)[:3]), const, atol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        fast.encode(np.zeros((3, 3)))


# --- vision tokeniser and vocabulary ------------------------------------------------------------------------------
def test_patch_vq_is_exact_on_toytable_frames():
    frames = np.concatenate([expert_episode(s, 3)["frames"] for s in range(6)])
    vq = PatchVQ(patch=4, codebook=128).fit(frames)
    codes = vq.encode(frames)
    assert codes.shape == (len(frames), 9)
    np.testing.assert_array_equal(vq.decode(codes, (3, 3)), frames)
    small = PatchVQ(patch=4, codebook=4).fit(frames)  # too few codes: lossy (k-means), still valid ids
    assert len(small.centres) == 4 and small.encode(frames).max() < 4
    assert not np.array_equal(small.decode(small.encode(frames), (3, 3)), frames)


def test_vocabulary_ranges_are_disjoint():
    fast, vocab = _setup()
    ids = np.arange(vocab.size)
    kinds = vocab.kind(ids)
    assert (kinds[: vocab.text0] == 0).all() and (kinds[vocab.text0 : vocab.vision0] == 1).all()
    assert (kinds[vocab.vision0 : vocab.action0] == 2).all() and (kinds[vocab.action0 :] == 3).all()
    assert vocab.size == 5 + len(WORDS) + 40 + fast.n_tokens
    assert vocab.text("put red on blue", 6)[:2] == [vocab.pad, vocab.pad]
    with pytest.raises(ValueError, match="vocabulary"):
        vocab.text("put purple on blue", 6)


# --- sequences and loss masks -------------------------------------------------------------------------------------
def _seq(task, with_actions=True):
    fast, vocab = _setup()
    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 40, 25) for _ in range(3)]
    acts = [fast.encode(rng.uniform(-1, 1, (4, 3))) for _ in range(3)] if with_actions else None
    ids, mask = build_sequence(vocab, vocab.text("put red in left zone", 17), frames, acts, task)
    return vocab, np.array(ids), np.array(mask)


def test_loss_masks_select_the_stage_tokens():
    vocab, ids, mask = _seq("world_model")
    k = vocab.kind(ids)
    assert mask.sum() == 2 * 25 and (k[mask == 1] == 2).all()  # vision tokens of frames 2..3 only
    assert not mask[(k == 3)].any() and not mask[: 17 + 27].any()  # no action, text or first-frame token
    vocab, ids, mask = _seq("policy")
    assert mask.sum() == 3 * 12 and (vocab.kind(ids)[mask == 1] == 3).all()
    vocab, ids, mask = _seq("video", with_actions=False)
    assert len(ids) == 3 * 27 and mask.sum() == 50  # no text at all
    vocab, ids, mask = _seq("t2i", with_actions=False)
    assert mask.sum() == 75 and ids[0] == vocab.pad


def test_vision_only_loss_ignores_action_tokens():
    vocab, ids, vmask = _seq("world_model")
    _, _, amask = _seq("policy")
    ids_t = torch.as_tensor(ids)[None]
    torch.manual_seed(0)
    logits = torch.randn(1, len(ids), vocab.size)
    pred_action = torch.zeros(len(ids), dtype=torch.bool)
    pred_action[:-1] = torch.as_tensor(vocab.kind(ids[1:]) == 3)  # logits at j-1 predict x_j
    changed = logits.clone()
    changed[0, pred_action] += 5 * torch.randn(int(pred_action.sum()), vocab.size)
    vm, am = torch.as_tensor(vmask)[None], torch.as_tensor(amask)[None]
    assert torch.allclose(masked_next_token_loss(logits, ids_t, vm), masked_next_token_loss(changed, ids_t, vm))
    # the baselines would notice: the action loss and a plain all-token LM loss both change
    assert not torch.allclose(masked_next_token_loss(logits, ids_t, am), masked_next_token_loss(changed, ids_t, am))
    full = torch.ones_like(vm)
    assert not torch.allclose(masked_next_token_loss(logits, ids_t, full), masked_next_token_loss(changed, ids_t, full))
    # and changing the logits that predict vision tokens does change the vision loss
    pred_vis = torch.zeros(len(ids), dtype=torch.bool)
    pred_vis[:-1] = torch.as_tensor(vmask[1:] == 1)
    changed_v = logits.clone()
    changed_v[0, pred_vis] += 5 * torch.randn(int(pred_vis.sum()), vocab.size)
    assert not torch.allclose(masked_next_token_loss(logits, ids_t, vm), masked_next_token_loss(changed_v, ids_t, vm))


def test_masked_loss_equals_transformers_shifted_loss_and_needs_the_shift():
    """Eq. 1 against an independent reference: transformers' own causal-LM loss (labels -100 where unsupervised),
    which shifts by one internally. Without the shift (position j predicting x_j) the value differs."""
    vocab, ids, mask = _seq("world_model")
    model = UnifiedVLA(vocab.size, (vocab.vision0, vocab.action0), TINY).eval()
    ids_t, mask_t = torch.as_tensor(ids)[None], torch.as_tensor(mask)[None]
    labels = torch.where(mask_t.bool(), ids_t, torch.full_like(ids_t, -100))
    with torch.no_grad():
        out = model.llm(input_ids=ids_t, labels=labels)
        ours = masked_next_token_loss(out.logits, ids_t, mask_t)
        unshifted = torch.nn.functional.cross_entropy(out.logits[0][mask_t[0].bool()], ids_t[0][mask_t[0].bool()])
    torch.testing.assert_close(ours, out.loss, rtol=1e-5, atol=1e-6)
    assert abs(float(unshifted) - float(ours)) > 1e-3
    with pytest.raises(ValueError, match="same B, T"):
        masked_next_token_loss(out.logits[:, :-1], ids_t, mask_t)


def test_bad_inputs_are_clear_errors():
    fast = FastActionTokenizer(FastConfig(chunk=2))
    bad = np.zeros((2, 3))
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fast.encode(bad)
    with pytest.raises(ValueError, match="action ids"):
        fast.decode(np.full(6, -9))
    frames = np.stack([expert_episode(0, 1)["frames"][0]] * 2)
    vq = PatchVQ().fit(frames)
    nan_frames = frames.astype(float)
    nan_frames[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        vq.encode(nan_frames)
    with pytest.raises(ValueError, match="RGB"):
        vq.encode(np.zeros((2, 12, 12)))


def test_controls_corrupt_codes_or_text_only():
    from iclr26.embodied.univla import EpisodeTokens, corrupted

    eps = [expert_episode(s, 3, "other") for s in range(8)]
    vq = PatchVQ().fit(np.concatenate([e["frames"] for e in eps]))
    fast = FastActionTokenizer(FastConfig(chunk=2))
    vocab = UnifiedVocab(WORDS, len(vq.centres), fast.n_tokens)
    data = EpisodeTokens(eps, vq, fast, vocab, 17)
    junk = corrupted(data, "random_codes", seed=0)
    assert junk.text == data.text and all(j.shape == c.shape for j, c in zip(junk.codes, data.codes))
    assert np.mean([np.mean(j != c) for j, c in zip(junk.codes, data.codes)]) > 0.5
    assert max(int(j.max()) for j in junk.codes) < len(vq.centres)
    shuf = corrupted(data, "shuffled_text", seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(shuf.codes, data.codes))
    assert sorted(map(tuple, shuf.text)) == sorted(map(tuple, data.text)) and shuf.text != data.text
    with pytest.raises(ValueError, match="kind"):
        corrupted(data, "noise")


# --- model, encoder baseline, constrained decoding ----------------------------------------------------------------
def test_encoder_baseline_reads_patches_not_vision_ids():
    vocab, ids, _ = _seq("policy")
    ids_t = torch.as_tensor(ids)[None]
    other = ids_t.clone()
    vis = (other >= vocab.vision0) & (other < vocab.action0)
    other[vis] = vocab.vision0 + (other[vis] - vocab.vision0 + 1) % 40
    patches = torch.rand(1, 3, 25, 48)
    vr = (vocab.vision0, vocab.action0)
    enc = UnifiedVLA(vocab.size, vr, TINY, patch_dim=48).eval()
    tokm = UnifiedVLA(vocab.size, vr, TINY).eval()
    with torch.no_grad():
        torch.testing.assert_close(enc(ids_t, patches).logits, enc(other, patches).logits)
        assert not torch.allclose(enc(ids_t, patches).logits, enc(ids_t, patches + 0.5).logits)
        assert not torch.allclose(tokm(ids_t).logits, tokm(other).logits)


def test_constrained_decoding_emits_only_action_tokens():
    frames = np.concatenate([expert_episode(s, 1)["frames"] for s in range(3)])
    vq = PatchVQ().fit(frames)
    fast = FastActionTokenizer()
    vocab = UnifiedVocab(WORDS, len(vq.centres), fast.n_tokens)
    model = UnifiedVLA(vocab.size, (vocab.vision0, vocab.action0), TINY).eval()
    head = torch.nn.Linear(TINY.d_model, vocab.size, bias=True)
    with torch.no_grad():  # make a text id the unconstrained favourite everywhere
        head.weight.zero_()
        head.bias.zero_()
        head.bias[vocab.word_id["red"]] = 10.0
        head.bias[vocab.action0 + fast.cfg.clip + 3] = 1.0  # the best action bin: coefficient +3 / scale
    model.llm.lm_head = head
    pol = UniVLAPolicy(model, vq, fast, vocab, 17, [0.0, 0.0, -1.0])
    chunk = pol.act("put red in left zone", frames[0], np.zeros((4, 3)), frames[1])
    np.testing.assert_allclose(chunk, fast.decode(np.full(12, fast.cfg.clip + 3)), atol=1e-12)


# --- the world ----------------------------------------------------------------------------------------------------
def test_toytable_is_deterministic_and_the_expert_solves_it():
    from gymnasium.utils.env_checker import check_env

    check_env(ToyTableEnv(3), skip_render_check=True)
    a, b = expert_episode(7, 3), expert_episode(7, 3)
    np.testing.assert_array_equal(a["frames"], b["frames"])
    np.testing.assert_array_equal(a["actions"], b["actions"])
    assert a["instruction"] == b["instruction"] and a["instruction"].count("then") == 2
    c = expert_episode(8, 3)
    assert c["instruction"] != a["instruction"] or not np.array_equal(c["frames"][0], a["frames"][0])
    assert all(expert_episode(s, n)["success"] for s in range(30) for n in (1, 3))
    # the other robot's expert, mapped through its action space, produces exactly the same video
    o = expert_episode(7, 3, "other")
    np.testing.assert_array_equal(o["frames"], a["frames"])
    assert not np.allclose(o["actions"], a["actions"])
    # a do-nothing policy never succeeds
    env = ToyTableEnv(1)
    env.reset(seed=3)
    for _ in range(env.max_steps):
        *_, term, trunc, info = env.step(np.array([0.0, 0.0, -1.0]))
    assert trunc and not info["success"]


def test_smoke_run():
    from iclr26.papers.univla import CONFIGS
    from iclr26.papers.univla.experiment import run

    class Ctx:
        quiet = True

        def log(self, msg):
            pass

    m = run(CONFIGS["smoke"], 0, Ctx())
    assert m["expert_short_success"] == 1.0 and m["expert_long_success"] == 1.0
    for k in (
        "none_few_long_success",
        "world_model_few_long_success",
        "gain_long_few",
        "wm_minus_none_few",
        "junk_few_avg_progress",
        "world_model_vision_loss",
        "wm_shuffled_vision_loss",
        "junk_vision_loss",
    ):
        assert np.isfinite(m[k]), k


# --- training to convergence ----------------------------------------------------------------------------------------
def test_train_stops_on_plateau_and_halves_the_lr():
    from iclr26.embodied.univla import TrainSpec, train

    fast, vocab = _setup()
    _, ids, mask = _seq("policy")
    data = (ids[None].repeat(4, 0), mask[None].repeat(4, 0), np.zeros((4, 3, 25, 48), np.float32))
    sampler = lambda rng, b: tuple(x[:b] for x in data)  # noqa: E731
    # an LR too small to move the loss: the first evaluation is the best, then `patience` bad ones stop the run,
    # cutting the LR after every `decay_patience` bad ones (at 2 and 4 of 5), long before the cap
    model = UnifiedVLA(vocab.size, (vocab.vision0, vocab.action0), TINY)
    spec = TrainSpec(steps=500, batch=2, lr=1e-12, warmup=1, eval_every=3, patience=5, decay_patience=2, decay=0.5)
    log = train(model, sampler, spec, val=data)
    assert log["steps"] == 3 * 6 and not log["capped"] and log["lr_scale"] == 0.25
    # a learnable loss keeps improving: the run reaches the cap and says so; the best weights are restored
    model = UnifiedVLA(vocab.size, (vocab.vision0, vocab.action0), TINY)
    log = train(model, sampler, TrainSpec(steps=12, batch=2, lr=1e-2, warmup=1, eval_every=3), val=data)
    assert log["capped"] and log["steps"] == 12
    from iclr26.embodied.univla import evaluate_loss

    assert evaluate_loss(model, data) == pytest.approx(log["best_val"], abs=1e-6)
    assert log["best_val"] == min(v for _, v in log["val"])
