"""Antibody's public API: clear errors on bad input (mismatched refusal batches, NaN log-probabilities, weights or
hyper-parameters), the likelihood-ratio weights against an independent computation in which every term matters,
lambda_t's range, and (slow) the docs page's example on SmolLM2."""

import math

import pytest
import torch
import torch.nn.functional as F

from iclr26.lm.tiny import tiny_model
from iclr26.rlft.antibody import (
    EMA,
    antibody_lambda_raw,
    likelihood_ratio_weights,
    pad_pairs,
    weighted_lm_loss,
)


def _model(seed=0):
    return tiny_model("llama", seed=seed, vocab_size=12, d_model=16, n_layers=1, n_heads=2, max_len=16).eval()


ANSWERS = [([1, 2], [3, 4, 5]), ([1, 6], [7]), ([2, 2, 2], [8, 9])]  # answers of different lengths
REFUSALS = [([1, 2], [10, 11]), ([1, 6], [10, 11]), ([2, 2, 2], [10, 11])]


def _token_mean_logp(model, prompt, answer):
    """log pi(answer | prompt) / |answer|, straight from the logits (no shared code with the library)."""
    x = torch.tensor([prompt + answer])
    with torch.no_grad():
        lp = F.log_softmax(model(input_ids=x).logits[0].double(), -1)
    return sum(float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(answer)) / len(answer)


def test_weights_equal_an_independent_computation():
    model = _model()
    w, d = likelihood_ratio_weights(model, pad_pairs(ANSWERS, 0), pad_pairs(REFUSALS, 0), tau=0.5)
    ref = torch.tensor([_token_mean_logp(model, p, a) - _token_mean_logp(model, p, r)
                        for (p, a), (_, r) in zip(ANSWERS, REFUSALS)], dtype=torch.float64)  # fmt: skip
    assert torch.allclose(d.double(), ref, atol=1e-5)
    assert torch.allclose(w.double(), torch.softmax(ref / 0.5, 0), atol=1e-5)
    summed = torch.tensor([_token_mean_logp(model, p, a) * len(a) - _token_mean_logp(model, p, r) * len(r)
                           for (p, a), (_, r) in zip(ANSWERS, REFUSALS)], dtype=torch.float64)  # fmt: skip
    assert not torch.allclose(d.double(), summed, atol=1e-3)  # the token averaging matters on these inputs
    assert not torch.allclose(w.double(), torch.softmax(ref, 0), atol=1e-3)  # and so does tau


def test_weights_reject_mismatched_or_non_finite_input():
    model = _model()
    with pytest.raises(ValueError, match="refusal_batch holds 2 samples for a batch of 3"):
        likelihood_ratio_weights(model, pad_pairs(ANSWERS, 0), pad_pairs(REFUSALS[:2], 0))
    for tau in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="tau must be a finite number > 0"):
            likelihood_ratio_weights(model, pad_pairs(ANSWERS, 0), pad_pairs(REFUSALS, 0), tau=tau)
    with torch.no_grad():
        model.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="log-likelihood ratios are not finite"):
        likelihood_ratio_weights(model, pad_pairs(ANSWERS, 0), pad_pairs(REFUSALS, 0))


def test_weighted_loss_rejects_bad_weights():
    model, batch = _model(), pad_pairs(ANSWERS, 0)
    for bad in ([float("nan"), 0.5, 0.5], [-0.1, 0.6, 0.5], [0.0, 0.0, 0.0]):
        with pytest.raises(ValueError, match="weights must be finite, >= 0 and not all 0"):
            weighted_lm_loss(model, batch, torch.tensor(bad))
    with pytest.raises(ValueError, match="one entry per sample"):
        weighted_lm_loss(model, batch, torch.ones(2))


def test_lambda_stays_within_eta_plus_minus_one_and_rejects_nan():
    gen = torch.Generator().manual_seed(0)
    for _ in range(50):
        ga = {"w": torch.randn(5, generator=gen)}
        d = {"w": torch.randn(5, generator=gen)}
        lam = antibody_lambda_raw(ga, d, 5.0)
        cos = float((ga["w"] @ d["w"]) / (ga["w"].norm() * d["w"].norm()))
        assert lam == pytest.approx(5.0 - cos, abs=1e-6) and 4.0 <= lam <= 6.0
    assert antibody_lambda_raw({"w": torch.ones(2)}, {"w": torch.ones(2)}, 0.5) == 0.0  # max(., 0)
    with pytest.raises(ValueError, match="eta must be a finite number"):
        antibody_lambda_raw({"w": torch.ones(2)}, {"w": torch.ones(2)}, float("nan"))
    with pytest.raises(ValueError, match="not finite"):
        antibody_lambda_raw({"w": torch.tensor([float("nan"), 1.0])}, {"w": torch.ones(2)}, 5.0)
    with pytest.raises(ValueError, match="non-finite"):
        EMA(0.9).update(float("nan"))


def test_trainer_configs_reject_nan(tmp_path):
    from iclr26.rlft.antibody import AntibodyAlignmentConfig, BoosterConfig, LisaConfig, WeightedSFTConfig

    common = dict(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    for cls, field in ((AntibodyAlignmentConfig, "eta_lambda"), (AntibodyAlignmentConfig, "alpha"),
                       (BoosterConfig, "lam"), (WeightedSFTConfig, "tau"), (LisaConfig, "rho")):  # fmt: skip
        with pytest.raises(ValueError):
            cls(**common, **{field: float("nan")})
        with pytest.raises(ValueError):
            cls(**common, **{field: -1.0})


def test_oracle_filter_steps_only_on_benign_samples():
    """The label-oracle arm: a batch's harmful samples get weight 0 (their loss has no gradient), an all-harmful batch
    takes no step."""
    from dataclasses import replace

    from iclr26.papers.antibody import CONFIGS
    from iclr26.papers.antibody import experiment as ex
    from iclr26.rlft.antibody.world import ForbiddenWorld, user_data

    world = ForbiddenWorld(0)
    cfg = replace(CONFIGS["smoke"], n_ft=32, ft_epochs=1, bs=16)
    ex._ARCH[0] = dict(vocab_size=world.vocab_size, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=16)
    sets = world.splits(n_align=16, n_harm=16, n_ft=32, n_val=4, n_test=4)
    base = tiny_model("llama", seed=0, **ex._ARCH[0])
    harmful = ex._Data(user_data(sets, 32, 1.0, 0))
    model, _ = ex.finetune(base, "oracle", harmful, harmful, cfg, 0)
    sd = base.state_dict()
    assert all(torch.equal(v, sd[k]) for k, v in model.state_dict().items())  # nothing benign: no change
    assert model.budget == {"steps": 2, "user_examples": 32}
    mixed = ex._Data(user_data(sets, 32, 0.5, 0))
    model, _ = ex.finetune(base, "oracle", mixed, mixed, cfg, 0)
    assert any(not torch.equal(v, sd[k]) for k, v in model.state_dict().items())


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").environ.get("ICLR26_SLOW") != "1", reason="loads SmolLM2-135M; set ICLR26_SLOW=1")
def test_use_it_on_smollm2():
    """The docs page's 'Use it on your model' example on SmolLM2-135M itself: after Antibody's alignment (LoRA) the
    likelihood-ratio weights give samples that leak the forbidden code a clearly smaller weight than benign ones."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "papers" / "antibody.md").read_text(encoding="utf-8")
    section = page.split("### Use it on your model", 1)[1].split("\n## ", 1)[0]
    ns: dict = {"__name__": "__docs__"}
    for code in re.findall(r"```python\n(.*?)```", section, re.S):
        exec(compile(code, "antibody.md", "exec"), ns)
    assert ns["model"].base_model.model.config.num_hidden_layers == 30  # SmolLM2-135M, not a micro model
    before, after = ns["before"], ns["after"]
    assert math.isclose(float(after.sum()), 1.0, abs_tol=1e-5)
    ratio = float(after[:4].mean() / after[4:].mean())
    assert ratio < 0.5 and ratio < float(before[:4].mean() / before[4:].mean())
