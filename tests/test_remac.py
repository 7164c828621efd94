"""REMAC: the exact async harness on a hand-built case, prefix-preserved sampling, masked and residual losses, LoRA
merging through peft, RTC's weights and vector-Jacobian guidance, the CatchBall environment, and a tiny paper run."""

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from iclr26.embodied.remac import (
    FlowChunkPolicy,
    MixerConfig,
    REMACConfig,
    masked_flow_loss,
    merge,
    prefix_mask,
    remac_loss,
    rtc_weights,
    run_episode,
    sample_flow,
    sample_prefix_preserved,
    sample_rtc,
    sigma_schedule,
    with_lora,
)
from iclr26.embodied.remac.world import BatchCatchBall, CatchBallEnv, demonstrations, expert_action

P, A, O = 8, 1, 7


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny networks: one thread (two threads spin-wait and collapse on a busy 2-core machine)."""
    from iclr26.core.threads import run_threads

    with run_threads(1):
        yield


class ClockEnv:
    """Observation = the current time; records the executed actions."""

    def __init__(self, horizon):
        self.t, self.horizon, self.executed = 0, horizon, []

    def obs(self):
        return np.array([[float(self.t)]])

    def step(self, a):
        self.executed.append(float(np.asarray(a).ravel()[0]))
        self.t += 1
        return np.zeros(1)

    @property
    def done(self):
        return self.t >= self.horizon


def stamp_chunker(obs, prev, d):
    """A chunk whose entry tau, requested at time t, is 100 t + tau (so each executed action names its origin)."""
    t = obs[0, 0]
    return (100 * t + np.arange(P, dtype=float))[None, :, None]


@pytest.mark.parametrize("d,h", [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4), (2, 3), (1, 1)])
def test_async_harness_executes_exactly_the_stale_actions(d, h):
    env = ClockEnv(24)
    _, tr = run_episode(env, stamp_chunker, d, h, P, A, "async", record=True)
    expected = []
    for t in range(24):
        k = t // h  # chunk k is requested at k h and usable from k h + d
        if k == 0:
            expected.append(t)  # the first chunk is ready at t = 0
        elif t - k * h < d:  # still computing: the previous chunk, position t - (k - 1) h
            expected.append(100 * (k - 1) * h + t - (k - 1) * h)
        else:
            expected.append(100 * k * h + t - k * h)
    assert env.executed == expected
    assert tr.requests == list(range(0, 24, h))


def test_sync_and_te_schedules():
    env = ClockEnv(14)
    run_episode(env, stamp_chunker, 2, 4, P, A, "sync")
    assert env.executed == [0, 0, 0, 1, 2, 3, 0, 0, 600, 601, 602, 603, 0, 0]  # idle d steps, then positions 0..h-1
    env = ClockEnv(6)
    run_episode(env, stamp_chunker, 2, 4, P, A, "te", te_k=0.0)  # chunks from t' <= t - d (and t' = 0), averaged
    want = [np.mean([100 * r + t - r for r in sorted({0, *range(1, t - 1)}) if t - r < P]) for t in range(6)]
    assert np.allclose(env.executed, want)


def test_harness_rejects_impossible_schedules():
    with pytest.raises(ValueError, match="d <= h <= P - d"):
        run_episode(ClockEnv(4), stamp_chunker, 5, 4, P, A, "async")
    with pytest.raises(ValueError, match="strategy"):
        run_episode(ClockEnv(4), stamp_chunker, 1, 4, P, A, "bid")


@pytest.fixture(scope="module")
def policy():
    torch.manual_seed(0)
    pol = FlowChunkPolicy(MixerConfig(O, A, P, channels=16, channel_hidden=32, token_hidden=8, n_blocks=2)).eval()
    with torch.no_grad():  # non-zero adaLN so that time matters
        for blk in pol.blocks:
            blk.adaln1.weight.normal_(0, 0.1), blk.adaln2.weight.normal_(0, 0.1)
    return pol


def test_prefix_preserved_sampling_returns_the_prefix(policy):
    obs, prev = torch.randn(5, O), torch.randn(5, P, A)
    for init in ("prefix_tail_zeros", "noise"):
        out = sample_prefix_preserved(policy, obs, prev, 3, n_steps=5, init=init, generator=torch.Generator())
        assert torch.equal(out[:, :3], prev[:, :3])  # bit-exact
        assert not torch.allclose(out[:, 3:], prev[:, 3:])
    plain = sample_flow(policy, obs, 5, torch.Generator().manual_seed(0))  # the baseline ignores the prefix
    assert not torch.allclose(plain[:, :3], prev[:, :3], atol=1e-2)


def test_base_is_mask_blind_and_lora_merge_is_exact(policy):
    obs, x, s = torch.randn(6, O), torch.randn(6, P, A), torch.rand(6)
    d = torch.tensor([0, 1, 2, 3, 4, 2])
    assert torch.equal(policy(obs, x, s, d), policy(obs, x, s))  # prefix-bit column is zero in the base
    model = with_lora(policy, REMACConfig(dropout=0.0))
    with torch.no_grad():
        for name, q in model.named_parameters():
            if "lora_B" in name:
                q.normal_(0, 0.5)  # as after training
    model.eval()
    lora_out = model(obs, x, s, d)
    assert (lora_out - policy(obs, x, s, d)).abs().max() > 1e-3  # LoRA changes the policy...
    assert not torch.allclose(model(obs, x, s, d), model(obs, x, s))  # ...and is mask-aware
    merged = merge(model)
    assert type(merged) is FlowChunkPolicy  # plain weights: the base's architecture
    assert (merged(obs, x, s, d) - lora_out).abs().max() < 1e-5


def test_masked_loss_ignores_prefix_and_l_delta_equals_l2_flow_error(policy):
    u_hat, u = torch.randn(16, P, A), torch.randn(16, P, A)
    d = torch.randint(0, 5, (16,))
    m = prefix_mask(d, P)
    u2 = u.clone()
    u2[torch.arange(P)[None] < d[:, None]] += 10.0  # change the target only on the committed prefix
    for pen in ("l2", "charbonnier"):
        assert torch.allclose(masked_flow_loss(u_hat, u, m, pen), masked_flow_loss(u_hat, u2, m, pen))
    ones = torch.ones_like(m)  # the baseline (unmasked flow loss) sees the change
    assert masked_flow_loss(u_hat, u2, ones) > masked_flow_loss(u_hat, u, ones) + 1
    assert torch.allclose(masked_flow_loss(u_hat, u, ones), ((u_hat - u) ** 2).sum((1, 2)).div(P).mean())
    obs, a = torch.randn(16, O), torch.randn(16, P, A)
    model = with_lora(policy, REMACConfig(dropout=0.0)).eval()
    cfg = REMACConfig(curriculum=False, penalty="l2", dropout=0.0)
    out = remac_loss(model, policy, obs, a, 0, cfg, torch.Generator().manual_seed(3))
    assert torch.allclose(out["l_delta"], out["l_m"], rtol=1e-5)  # (u - u~) - (u^ - u~) = u - u^


def _trained_like(model, std=0.5, seed=0):
    """Random LoRA B (as after training), so that the LoRA model differs from the base."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, q in model.named_parameters():
            if "lora_B" in name:
                q.copy_(torch.randn(q.shape, generator=g) * std)
    return model.eval()


def test_l_delta_matches_its_formula_on_a_lora_that_differs_from_the_base(policy):
    """L_Delta = mean_b sum_tau ||m (u - u~) - m (u^ - u~)||^2 / max(1, sum m), recomputed by hand from the same draws,
    with a LoRA whose output differs from the base's (so a flipped sign or a dropped u~ would show)."""
    obs, a = torch.randn(16, O), torch.randn(16, P, A)
    model = _trained_like(with_lora(policy, REMACConfig(dropout=0.0)))
    cfg = REMACConfig(curriculum=False, dropout=0.0)  # Charbonnier L_m: L_Delta is a distinct term
    out = remac_loss(model, policy, obs, a, 0, cfg, torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)  # the same draws, in remac_loss's order
    d = torch.randint(0, cfg.d_max + 1, (16,), generator=g)
    s, eps = torch.rand(16, generator=g), torch.randn(a.shape, generator=g)
    x = (1 - s)[:, None, None] * eps + s[:, None, None] * a
    m, u = prefix_mask(d, P), a - eps
    with torch.no_grad():
        u_hat, u_base = model(obs, x, s, d), policy(obs, x, s)
    assert (u_hat - u_base).abs().max() > 1e-2  # the LoRA matters
    ref = ((m * (u - u_base) - m * (u_hat - u_base)) ** 2).sum((1, 2)).div(m.sum((1, 2)).clamp(min=1)).mean()
    torch.testing.assert_close(out["l_delta"].detach(), ref, rtol=1e-5, atol=1e-6)
    flipped = ((m * (u - u_base) + m * (u_hat - u_base)) ** 2).sum((1, 2)).div(m.sum((1, 2)).clamp(min=1)).mean()
    assert abs(float(flipped) - float(ref)) > 1e-3
    charb = (torch.sqrt((u_hat - u) ** 2 + 1e-6) * m).sum((1, 2)).div(m.sum((1, 2)).clamp(min=1)).mean()
    torch.testing.assert_close(out["l_m"].detach(), charb, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out["total"].detach(), 0.01 * charb + 0.01 * ref, rtol=1e-5, atol=1e-7)


def test_gated_lora_is_the_official_layer_and_cannot_be_merged(policy):
    from iclr26.embodied.remac import GatedLoRAPolicy, MaskGatedLoRALinear, merge

    torch.manual_seed(1)
    lin = torch.nn.Linear(5, 3)
    layer = MaskGatedLoRALinear(lin, r=2, alpha=4.0, dropout=0.0)
    with torch.no_grad():
        layer.lora_B.weight.normal_(), layer.mask_proj.weight.normal_(), layer.mask_proj.bias.normal_()
    x = torch.randn(2, 4, 5)
    m = torch.tensor([0.0, 0.0, 1.0, 1.0])[None, :, None].expand(2, 4, 1)
    layer.mask = m
    y = layer(x)
    # official: y = W0 x + m * (alpha / r) B A (x + W_m m + b_m)
    want = lin(x) + m * 2.0 * layer.lora_B(layer.lora_A(x + layer.mask_proj(m)))
    torch.testing.assert_close(y, want)
    torch.testing.assert_close(y[:, :2], lin(x)[:, :2])  # the gate: no LoRA on the committed prefix
    gated = _trained_like(GatedLoRAPolicy(policy, r=4, alpha=8.0, dropout=0.0))
    obs, xx, s = torch.randn(3, O), torch.randn(3, P, A), torch.rand(3)
    d = torch.tensor([0, 2, 4])
    assert not torch.allclose(gated(obs, xx, s, d), policy(obs, xx, s, d), atol=1e-3)
    assert all(layer.mask is None for layer in gated.layers)  # the mask does not leak into later calls
    assert sum(q.numel() for q in gated.parameters() if q.requires_grad) < sum(q.numel() for q in policy.parameters())
    with pytest.raises(TypeError, match="cannot be merged"):
        merge(gated)


def test_flop_counts_match_a_hand_count_and_order_the_samplers(policy):
    from iclr26.embodied.remac import GatedLoRAPolicy, chunk_flops

    lin = torch.nn.Linear(7, 5)
    assert chunk_flops(lambda: lin(torch.randn(3, 7))) == 2 * 3 * 7 * 5  # a matmul: 2 * batch * in * out
    o, prev = torch.zeros(1, O), torch.zeros(1, P, A)
    base = chunk_flops(lambda: sample_flow(policy, o, 5))
    assert base == chunk_flops(lambda: sample_flow(policy, o, 5))  # deterministic
    merged = merge(_trained_like(with_lora(policy, REMACConfig(dropout=0.0))))
    assert chunk_flops(lambda: sample_prefix_preserved(merged, o, prev, 2, 5)) == base  # merged: the base's cost
    gated = GatedLoRAPolicy(policy).eval()
    assert chunk_flops(lambda: sample_prefix_preserved(gated, o, prev, 2, 5)) > 1.1 * base
    rtc = chunk_flops(lambda: sample_rtc(policy, o, prev, 2, 4, 5))
    assert rtc > 1.5 * base  # a vector-Jacobian product per step (about one more forward of matrix products)


def test_bad_inputs_are_clear_errors(policy):
    obs, prev = torch.randn(2, O), torch.randn(2, P, A)
    bad = obs.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        sample_flow(policy, bad)
    with pytest.raises(ValueError, match="NaN"):
        sample_prefix_preserved(policy, bad, prev, 2)
    for d in (-1, P + 1):
        with pytest.raises(ValueError, match="delay d"):
            sample_prefix_preserved(policy, obs, prev, d)
    with pytest.raises(ValueError, match="d <= h"):
        sample_rtc(policy, obs, prev, 5, 4)
    with pytest.raises(ValueError, match="d <= h"):
        rtc_weights(-1, 4, 8)
    with pytest.raises(ValueError, match="prev must be"):
        sample_prefix_preserved(policy, obs, prev[:, :4], 2)
    with pytest.raises(ValueError, match="prefix lengths"):
        prefix_mask(torch.tensor([-1, 2]), P)
    with pytest.raises(ValueError, match="lora"):
        REMACConfig(lora="merged")


def test_expert_planner_gains_from_the_prefix_at_large_delay():
    from iclr26.embodied.remac.world import expert_chunker

    def caught(prefix_aware, d):
        env = BatchCatchBall(100, 3)
        run_episode(env, expert_chunker(prefix_aware), d, 4, P, A, "async")
        return env.caught.sum() / (env.landed * env.n)

    assert caught(True, 0) == caught(False, 0)  # nothing committed: the same plans
    assert caught(True, 4) > caught(False, 4) + 0.2  # planning from where the committed prefix leads


def test_sigma_schedule_holds_then_decays():
    cfg = REMACConfig(sigma_start=1.0, sigma_end=0.0, hold=0.2, steps=100)
    assert sigma_schedule(0, 100, cfg) == 1.0 and sigma_schedule(20, 100, cfg) == 1.0
    assert sigma_schedule(60, 100, cfg) == pytest.approx(0.5) and sigma_schedule(100, 100, cfg) == 0.0


def test_rtc_weights_and_vjp_guidance(policy):
    w = rtc_weights(2, 4, 10, "linear")  # official docstring: 1 1 4/5 3/5 2/5 1/5 0 0 0 0
    assert torch.allclose(w, torch.tensor([1, 1, 0.8, 0.6, 0.4, 0.2, 0, 0, 0, 0]))
    assert rtc_weights(2, 4, 8, "exp")[3] < rtc_weights(2, 4, 8, "linear")[3]
    obs, prev = torch.randn(2, O), torch.randn(2, P, A)
    guided = sample_rtc(policy, obs, prev, 2, 4, 5, max_guidance=5.0, generator=torch.Generator().manual_seed(1))
    free = sample_rtc(policy, obs, prev, 2, 4, 5, max_guidance=0.0, generator=torch.Generator().manual_seed(1))
    plain = sample_flow(policy, obs, 5, torch.Generator().manual_seed(1))
    assert torch.allclose(free, plain, atol=1e-6)  # beta = 0 is plain sampling
    assert (guided - prev)[:, :2].abs().mean() < (free - prev)[:, :2].abs().mean()  # pulled towards the prefix
    # the VJP is e^T dA1/dx, checked against the full Jacobian
    x, s = torch.randn(1, P, A), 0.4
    f = lambda z: z + (1 - s) * policy(obs[:1], z, torch.full((1,), s))  # noqa: E731
    e = torch.randn(1, P, A)
    xg = x.clone().requires_grad_(True)
    (vjp,) = torch.autograd.grad(f(xg), xg, e)
    jac = torch.autograd.functional.jacobian(f, x).reshape(P * A, P * A)
    assert torch.allclose(vjp.reshape(-1), e.reshape(-1) @ jac, atol=1e-5)


def test_env_is_deterministic_and_the_expert_solves_it():
    def trace(seed):
        env = BatchCatchBall(4, seed)
        out = []
        while not env.done:
            o = env.obs()
            out.append(o)
            env.step(expert_action(o))
        return np.stack(out), env.caught

    (o1, c1), (o2, c2), (o3, _) = trace(5), trace(5), trace(6)
    assert np.array_equal(o1, o2) and np.array_equal(c1, c2) and not np.array_equal(o1, o3)
    env = BatchCatchBall(200, 0)
    while not env.done:
        env.step(expert_action(env.obs()))
    still = BatchCatchBall(200, 0)
    while not still.done:
        still.step(np.zeros(200))
    assert env.caught.mean() / env.landed > 0.9 > 0.3 > still.caught.mean() / still.landed
    check_env(CatchBallEnv(), skip_render_check=True)  # gymnasium's API checker (seeding, spaces, step contract)
    g = CatchBallEnv()
    a, b = g.reset(seed=3)[0], CatchBallEnv().reset(seed=3)[0]
    assert np.array_equal(a, b) and g.observation_space.contains(a)
    obs, r, term, trunc, info = g.step(np.array([0.5], dtype=np.float32))
    assert obs.shape == (7,) and not term and info["landed"] == 0
    o, c, _ = demonstrations(3, 0, P)
    assert o.shape == (3 * 72, 7) and c.shape == (3 * 72, P, 1) and np.abs(c).max() <= 1


def test_tiny_paper_run(tmp_path):
    from iclr26.core.runs import RunContext
    from iclr26.papers.remac import CLAIMS, TABLE_METRICS, Cfg
    from iclr26.papers.remac.experiment import run

    cfg = Cfg(seeds=(0,), delays=(0, 2), train_episodes=8, val_episodes=2, eval_episodes=3, tune_episodes=2,
              base_steps=10, lora_steps=3, rtc_betas=(5.0,), te_ks=(0.01,), timing_reps=2)  # fmt: skip
    m = run(cfg, 0, RunContext("remac", "smoke", 0, tmp_path, quiet=True))
    names = {c.lhs for cl in CLAIMS for c in cl.checks} | {c.rhs for cl in CLAIMS for c in cl.checks}
    names = {n for n in names if isinstance(n, str)} - {f"{a}_d4" for a in ("naive", "remac", "expert_naive",
                                                                             "expert_prefix")}  # fmt: skip
    names |= {n for n in TABLE_METRICS if not n.endswith("_d4")}
    assert names <= set(m), names - set(m)
    assert m["merge_max_abs_diff"] < 1e-5 and all(np.isfinite(v) for v in m.values())
