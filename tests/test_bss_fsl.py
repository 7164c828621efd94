"""Tests of the FSL / batch-size-scheduling mathematics and a smoke run of the bss-fsl reproduction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gamma

from iclr26.theory.bss_fsl import FSLCurve, PowerLawTask, PowerLawTaskConfig, fit_fsl, intrinsic_time
from iclr26.theory.bss_fsl.schedule import (
    BatchScheduleConfig,
    BatchSizeSchedule,
    accumulation_plan,
    optimal_schedule,
    train_with_batch_schedule,
)


# --- closed forms ----------------------------------------------------------------------------------------------------
def test_signal_term_follows_t_to_the_minus_s():
    task = PowerLawTask(d=4000, beta=2.0, s=1.0, sigma2=0.0)
    t = np.array([10.0, 100.0, 1000.0])
    np.testing.assert_allclose(task.signal(t), task.signal_powerlaw(t), rtol=0.02)
    # log-log slope is −s
    slope = np.diff(np.log(task.signal(t))) / np.diff(np.log(t))
    np.testing.assert_allclose(slope, -1.0, atol=0.02)


def test_kernel_decays_as_power_two_minus_one_over_beta():
    beta = 2.0
    task = PowerLawTask(d=4000, beta=beta, s=1.0)
    delta = np.array([50.0, 500.0])
    q = 2 - 1 / beta
    asym = gamma(q) / beta * (2 * delta) ** (-q)
    np.testing.assert_allclose(task.kernel(delta), asym, rtol=0.03)


def test_exact_recursion_reaches_closed_form_stationary_risk():
    task = PowerLawTask(d=20, beta=2.0, s=1.0, sigma2=0.3)
    lr, b = 0.5, 3
    risk = task.exact_risk(np.full(30000, b), lr)
    assert risk[-1] == pytest.approx(task.stationary_risk(lr, b), rel=1e-6)
    # more noise with a smaller batch
    assert task.stationary_risk(lr, 1) > 2 * task.stationary_risk(lr, 4)


def test_exact_recursion_without_noise_is_gradient_flow_for_small_lr():
    task = PowerLawTask(d=300, beta=2.0, s=1.0, sigma2=0.0)
    lr = 0.01
    steps = np.full(5000, 10**9)  # huge batch: no gradient noise
    risk = task.exact_risk(steps, lr)
    t = intrinsic_time(np.full(5000, lr))
    np.testing.assert_allclose(risk[::500], task.signal(t[::500]), rtol=0.02)


def test_monte_carlo_sgd_matches_exact_expected_risk():
    task = PowerLawTask(d=15, beta=1.5, s=0.5, sigma2=0.2)
    steps = BatchSizeSchedule.two_stage(2, 8, 0.5).steps(400)
    lr = 0.4
    exact = task.exact_risk(steps, lr)[-1]
    rng = np.random.default_rng(0)
    finals = np.array([task.sgd_risk(steps, lr, rng, record_every=steps.size)[-1] for _ in range(300)])
    se = finals.std(ddof=1) / math.sqrt(finals.size)
    assert abs(finals.mean() - exact) < 4 * se


def test_fsl_prediction_matches_exact_curve_of_switched_schedule():
    task = PowerLawTask(d=500, beta=2.0, s=0.5, sigma2=0.5)
    lr = 0.3 / task.lam.sum()
    steps = BatchSizeSchedule.two_stage(2, 32, 0.7).steps(2**13)
    exact, fsl = task.exact_risk(steps, lr), task.fsl_risk(steps, lr)
    idx = np.unique(np.geomspace(1, steps.size, 50).astype(int))
    assert np.max(np.abs(fsl[idx] / exact[idx] - 1)) < 0.05
    # the noise term matters: the signal alone misses the end of the curve
    t = intrinsic_time(np.full(steps.size, lr))
    assert task.signal(t[-1])[0] < 0.8 * exact[-1]


def test_continuous_fsl_integral_agrees_with_stepwise_fsl():
    task = PowerLawTask(d=300, beta=2.0, s=0.5, sigma2=0.1)
    lr, data = 0.02, 2**12
    sched = BatchSizeSchedule.piecewise([2, 2, 8, 32])
    steps = sched.steps(data)
    stepwise = task.fsl_risk(steps, lr, noise="const")[-1]
    closed = task.fsl_final_risk(sched.segment_data(data), np.array(sched.sizes), lr, task.sigma2)
    assert closed == pytest.approx(stepwise, rel=0.02)


# --- schedules -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [1, 7, 1000, 65536, 99991])
def test_schedules_consume_exactly_the_data_budget(data):
    rng = np.random.default_rng(data)
    schedules = [
        BatchSizeSchedule.constant(4),
        BatchSizeSchedule.constant(1000),
        BatchSizeSchedule.two_stage(4, 64, 0.8),
        BatchSizeSchedule.two_stage(3, 50, 0.0),
        BatchSizeSchedule.linear_ramp(2, 300, 7),
        BatchSizeSchedule.piecewise(rng.uniform(1, 100, size=5)),
    ]
    for s in schedules:
        steps = s.steps(data)
        assert steps.sum() == data
        assert steps.min() >= 1


def test_two_stage_switches_at_the_requested_fraction():
    steps = BatchSizeSchedule.from_config(BatchScheduleConfig(b_small=4, b_large=64, switch_fraction=0.8)).steps(10000)
    small = steps[: np.argmax(steps > 10)]
    assert small.sum() == 8000
    assert set(np.unique(steps)) <= {4, 64, 63, 65, 5, 3}
    assert BatchSizeSchedule.two_stage(4, 64, 0.8).batch_size_at(0.79) == 4
    assert BatchSizeSchedule.two_stage(4, 64, 0.8).batch_size_at(0.8) == 64


def test_accumulation_plan_and_training_match_full_batch_gradient():
    import torch

    plan = accumulation_plan([5, 16, 3], micro_batch=4)
    assert [sum(p) for p in plan] == [5, 16, 3] and max(max(p) for p in plan) <= 4
    torch.manual_seed(0)
    x, y = torch.randn(24, 3), torch.randn(24)

    def make():
        torch.manual_seed(1)
        return torch.nn.Linear(3, 1)

    m1, m2 = make(), make()
    o1, o2 = torch.optim.SGD(m1.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)
    seen = train_with_batch_schedule(
        m1, o1, lambda a, b: ((m1(x[a : a + b]).squeeze(1) - y[a : a + b]) ** 2).mean(), [8, 16], micro_batch=3
    )
    assert seen == 24
    for a, b in ((0, 8), (8, 16)):
        o2.zero_grad()
        ((m2(x[a : a + b]).squeeze(1) - y[a : a + b]) ** 2).mean().backward()
        o2.step()
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        torch.testing.assert_close(p1, p2)


def test_optimal_schedule_shape_easy_vs_hard_and_optimality():
    data = 2**14
    shapes = {}
    for s in (1.0, 0.25):
        task = PowerLawTask(d=400, beta=2.0, s=s, sigma2=0.1)
        lr = 0.5 / task.lam.sum()
        opt = optimal_schedule(task, data, lr, 1, 256, n_segments=8)
        sizes = np.array(opt.schedule.sizes)
        shapes[s] = sizes
        # no worse (under the same FSL) than constant or two-stage schedules
        for other in ([1] * 8, [256] * 8, [1] * 6 + [256] * 2, [1] * 2 + [256] * 6):
            seg = np.full(8, data / 8)
            assert opt.predicted_risk <= task.fsl_final_risk(seg, np.array(other, float), lr, opt.noise_level) + 1e-12
    easy, hard = shapes[1.0], shapes[0.25]
    assert np.all(np.diff(easy) > 0) and easy[0] > 1.2  # easy: increases from the start
    assert np.all(hard[:6] < 1.01) and hard[-1] > 10  # hard: small for most of training, switch late


def test_fit_fsl_recovers_a_synthetic_law():
    truth = FSLCurve(l_inf=0.5, c_s=2.0, s=0.4, t0=1.0, c_n=0.3, beta=2.0)
    lr = 0.1
    curves = []
    for b in (2, 32):
        steps = np.full(3000, b)
        at = np.unique(np.geomspace(1, 3000, 40).astype(int))
        curves.append((steps, lr, at, truth.predict(steps, lr, at=at)))
    fitted = fit_fsl(curves, beta=2.0)
    held_out = BatchSizeSchedule.two_stage(2, 32, 0.8).steps(3000 * 8)
    assert fitted.predict(held_out, lr, at=[held_out.size])[0] == pytest.approx(
        truth.predict(held_out, lr, at=[held_out.size])[0], rel=0.01
    )


# --- bad arguments ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: PowerLawTaskConfig(beta=1.0), "beta"),
        (lambda: PowerLawTaskConfig(s=0.0), "s must be > 0"),
        (lambda: PowerLawTaskConfig(d=1), "d must be"),
        (lambda: PowerLawTaskConfig(sigma2=-1), "sigma2"),
        (lambda: BatchScheduleConfig(b_small=8, b_large=4), "b_large"),
        (lambda: BatchScheduleConfig(switch_fraction=1.5), "switch_fraction"),
        (lambda: BatchSizeSchedule((0.0,)), "≥ 1"),
        (lambda: BatchSizeSchedule((4.0, 8.0), (0.5, 0.7)), "len\\(boundaries\\)"),
        (lambda: BatchSizeSchedule((4.0, 8.0, 16.0), (0.7, 0.5)), "non-decreasing"),
        (lambda: BatchSizeSchedule.two_stage(4, 64, 1.5), "switch_fraction"),
        (lambda: BatchSizeSchedule.constant(4).steps(0), "data_budget"),
        (lambda: BatchSizeSchedule.constant(4).steps(10.5), "data_budget"),
        (lambda: PowerLawTask(d=10).exact_risk([4, -1], 0.1), "batch sizes"),
        (lambda: PowerLawTask(d=10).exact_risk([], 0.1), "empty"),
        (lambda: PowerLawTask(d=10).fsl_risk([4], 0.1, noise="loud"), "noise"),
        (lambda: PowerLawTask(d=10).sgd_risk([2.5], 0.1, np.random.default_rng(0)), "integer"),
        (lambda: PowerLawTask(d=10).stationary_risk(5.0, 1), "unstable"),
        (lambda: optimal_schedule(PowerLawTask(d=10), 100, 0.1, 8, 4), "b_min"),
        (lambda: fit_fsl([]), "at least one"),
    ],
)
def test_bad_arguments_raise_clear_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# --- smoke run of the reproduction -----------------------------------------------------------------------------------
def test_smoke_run_through_harness(tmp_path):
    from iclr26.core.runs import run_paper

    res = run_paper("bss-fsl", scale="smoke", out=tmp_path, quiet=True)
    assert res.verdicts and all(
        v["verdict"] in ("reproduced", "not reproduced", "inconclusive", "not testable", "not run")
        for v in res.verdicts
    )
    for metrics in res.per_seed.values():
        assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert (res.run_dir / "plots").exists()
