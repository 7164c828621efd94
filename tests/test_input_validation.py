"""Bad inputs of the lenses, theory, science and probing methods get clear errors (issue 12), never a raw tensor
error, a silent NaN or a silently wrong answer. Each case failed (or passed silently) before its fix."""

import sys

import numpy as np
import pytest
import torch

from iclr26.lm.tiny import tiny_model


# --- force fields -------------------------------------------------------------------------------------------------
def test_force_field_rejects_empty_batch_and_nan_positions():
    from iclr26.science.forcefields import UnconstrainedConfig, UnconstrainedForceField

    model = UnconstrainedForceField(UnconstrainedConfig(width=8))
    with pytest.raises(ValueError, match="empty batch"):
        model(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0, 4, 3))
    with pytest.raises(ValueError, match="empty batch"):
        model.energy_and_forces(torch.zeros(2, 0, dtype=torch.long), torch.zeros(2, 0, 3))
    pos = torch.randn(3, 4, 3)
    pos[1, 2, 0] = float("nan")
    with pytest.raises(ValueError, match=r"NaN or inf \(structures \[1\]\)"):
        model.energy_and_forces(torch.zeros(3, 4, dtype=torch.long), pos)


def test_equivariant_force_field_rejects_nan_positions():
    pytest.importorskip("e3nn")
    from iclr26.science.forcefields import EquivariantConfig, EquivariantForceField

    model = EquivariantForceField(EquivariantConfig(mul=2, lmax=1, n_layers=1))
    pos = torch.randn(2, 3, 3)
    pos[0, 0, 1] = float("inf")
    with pytest.raises(ValueError, match="NaN or inf"):
        model(torch.zeros(2, 3, dtype=torch.long), pos)


# --- FSL ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data,sizes,lr,match",
    [
        ([100.0, 100.0], [8.0, -4.0], 0.1, "batch_sizes"),
        ([100.0, 100.0], [8.0], 0.1, "same non-zero length"),
        ([], [], 0.1, "same non-zero length"),
        ([100.0, -5.0], [8.0, 8.0], 0.1, "data"),
        ([100.0], [8.0], -0.1, "lr"),
    ],
)
def test_fsl_final_risk_rejects_bad_schedules(data, sizes, lr, match):
    from iclr26.theory.bss_fsl import PowerLawTask

    with pytest.raises(ValueError, match=match):
        PowerLawTask(d=10).fsl_final_risk(np.array(data), np.array(sizes), lr, 0.1)


# --- probing ------------------------------------------------------------------------------------------------------
def test_probe_accuracy_on_empty_data_and_train_probe_on_nan():
    from iclr26.probing.efficient_probing import ProbeTrainConfig, make_probe, probe_accuracy, train_probe

    probe = make_probe("lp_cls", 8, 3)
    with pytest.raises(ValueError, match="non-empty"):
        probe_accuracy(probe, torch.zeros(0, 5, 8), torch.zeros(0, dtype=torch.long))
    x = torch.randn(6, 5, 8)
    x[2, 1, 3] = float("nan")
    with pytest.raises(ValueError, match=r"NaN or inf in 1 of 6"):
        train_probe(
            probe, x, torch.zeros(6, dtype=torch.long), ProbeTrainConfig(epochs=2, warmup_epochs=1, batch_size=4)
        )


# --- kernel surrogate ---------------------------------------------------------------------------------------------
def test_gradient_estimator_rejects_nan_inputs_and_bad_labels():
    from iclr26.theory.kernel_surrogate.gradient import GradientEstimator, GradientEstimatorConfig

    model = torch.nn.Linear(2, 1)
    X, y = [np.random.default_rng(0).normal(size=(5, 2))], [np.array([0, 1, 0, 1, 1])]
    Xt, yt = np.ones((3, 2)), np.array([0, 1, 1])
    cfg = GradientEstimatorConfig(proj_dim=None)
    bad = X[0].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="task 0: inputs contain NaN"):
        GradientEstimator(model, [bad], y, Xt, yt, cfg)
    with pytest.raises(ValueError, match="target task: labels must be 0 or 1"):
        GradientEstimator(model, X, y, Xt, np.array([0, 2, 1]), cfg)
    with pytest.raises(ValueError, match="one label per input"):
        GradientEstimator(model, X, [np.array([0, 1])], Xt, yt, cfg)
    with torch.no_grad():
        model.weight.fill_(float("nan"))
    with pytest.raises(ValueError, match="NaN/inf"):
        GradientEstimator(model, X, y, Xt, yt, cfg)


# --- the cubic sub-problem ----------------------------------------------------------------------------------------
def test_cubic_solver_rejects_gradient_outside_the_gram_range():
    from iclr26.theory.policy_newton.cubic import cubic_subproblem

    N = np.diag([1.0, 2.0, 0.0])  # the third direction has zero norm
    Q = -np.eye(3) * np.array([1.0, 1.0, 0.0])
    # b in the range of N: solved, and the zero-norm direction gets no step
    sol = cubic_subproblem(np.array([1.0, -1.0, 0.0]), Q, 1.0, N)
    assert abs(sol.beta[2]) < 1e-12 and sol.value > 0
    # b with a component along the null direction: the model is unbounded (m(t e₃) = t·b₃ → ∞); no silent drop
    with pytest.raises(ValueError, match="outside the range of the norm matrix"):
        cubic_subproblem(np.array([1.0, -1.0, 0.5]), Q, 1.0, N)
    with pytest.raises(ValueError, match="outside the range"):
        cubic_subproblem(np.array([1.0, -1.0, 0.0]), Q + np.diag([0.0, 0.0, 1.0]), 1.0, N)


# --- logit lens and ADL -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    return tiny_model("llama", vocab_size=40, d_model=16, n_layers=2, n_heads=2, max_len=16)


def test_logit_lens_checks_layers_positions_and_ids_before_running(lm, monkeypatch):
    from iclr26.lenses import logit_lens

    lens_module = sys.modules["iclr26.lenses.logit_lens"]  # the package re-exports a function of the same name

    ids = torch.randint(4, 40, (1, 6))
    calls = []
    real = lens_module.residuals
    monkeypatch.setattr(lens_module, "residuals", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.raises(ValueError, match=r"2 blocks.*-2\.\.1"):
        logit_lens(lm, ids, layers=[2])
    with pytest.raises(ValueError, match="outside a sequence of 6 tokens"):
        logit_lens(lm, ids, positions=[6])
    with pytest.raises(ValueError, match="empty"):
        logit_lens(lm, torch.zeros(1, 0, dtype=torch.long))
    assert calls == []  # no forward pass was spent before the error
    out = logit_lens(lm, ids, layers=[-1], positions=[-1])
    assert out.shape == (1, 1, 1, 40)


def test_language_probs_decodes_only_the_requested_positions(lm, monkeypatch):
    """Same answer as reading the full lens, and the lens never sees more rows than the requested positions."""
    from iclr26.lenses import language_probs_by_layer, logit_lens

    lens_module = sys.modules["iclr26.lenses.logit_lens"]  # the package re-exports a function of the same name

    ids = torch.randint(4, 40, (3, 7), generator=torch.Generator().manual_seed(1))
    positions = [[2, 5], [], [6]]
    lang = lambda t: "a" if t % 2 else "b"  # noqa: E731
    full = logit_lens(lm, ids).argmax(-1)  # [L, B, T]
    expect = {k: np.zeros(2) for k in "ab"}
    for b, pos in enumerate(positions):
        for t in pos:
            for layer in range(2):
                expect[lang(int(full[layer, b, t]))][layer] += 1 / 3
    seen = []
    real = lens_module.lens_logits
    monkeypatch.setattr(lens_module, "lens_logits", lambda m, h: seen.append(tuple(h.shape)) or real(m, h))
    got = language_probs_by_layer(lm, ids, positions, lang, ["a", "b"])
    for k in "ab":
        np.testing.assert_allclose(got[k], expect[k])
    assert seen and all(s[0] == 3 and len(s) == 2 for s in seen)  # [M=3, d] per layer, never [B, T, d]
    with pytest.raises(ValueError, match="outside a sequence"):
        language_probs_by_layer(lm, ids, [[7], [], []], lang, ["a"])


def test_adl_rejects_models_of_different_shapes(lm):
    from iclr26.lenses.adl import activation_difference

    torch.manual_seed(1)
    wide = tiny_model("llama", vocab_size=40, d_model=32, n_layers=2, n_heads=2, max_len=16)
    deep = tiny_model("llama", vocab_size=40, d_model=16, n_layers=3, n_heads=2, max_len=16)
    ids = torch.randint(4, 40, (2, 8))
    with pytest.raises(ValueError, match="residual width"):
        activation_difference(lm, wide, ids, 1)
    with pytest.raises(ValueError, match="blocks"):
        activation_difference(lm, deep, ids, 1)
    with pytest.raises(ValueError, match="layer 5"):
        activation_difference(lm, lm, ids, 5)
