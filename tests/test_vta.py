"""Tests of VTA: CFG guidance, the alignment layer, Time-GRPO's rewards (by hand and inside TRL's GRPOTrainer), the
group-normalised advantage, the regime-switching market and a smoke run of the reproduction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.rlft.vta import (
    AlignmentLayer,
    ConditionalForecaster,
    ForecasterConfig,
    ReturnBins,
    TimeGRPOReward,
    annotate_window,
    group_advantages,
    indicators,
    parse_answer,
    path_stats,
    xml_count,
)
from iclr26.rlft.vta.world import REGIMES, MarketParams, make_market


# --- conditional forecaster and classifier-free guidance --------------------------------------------------------------
def _model_and_batch(seed=0):
    torch.manual_seed(seed)
    model = ConditionalForecaster(ForecasterConfig(hidden=16, align_hidden=8)).eval()
    for p in model.parameters():  # random, non-trivial weights (a fresh blender would be ~0.5 everywhere)
        torch.nn.init.normal_(p, std=0.5)
    x = torch.randn(6, 10)
    attrs = path_stats(torch.randn(6, 10) * 3)
    return model, x, attrs


def test_cfg_at_w0_is_exactly_the_unconditional_forecast():
    model, x, attrs = _model_and_batch()
    uncond = model.backbone(x)
    out0 = model.forecast(x, attrs, guidance=0.0)
    assert torch.equal(out0, uncond)
    other = model.forecast(x, attrs * -2 + 1, guidance=0.0)  # w = 0 ignores the reasoner entirely
    assert torch.equal(other, uncond)
    cond = model.pass_(x, attrs, torch.ones(6, dtype=torch.bool))
    assert not torch.allclose(cond, uncond)  # the conditioning does act (the test would not pass with a no-op layer)
    torch.testing.assert_close(model.forecast(x, attrs, guidance=1.0), cond)
    torch.testing.assert_close(model.forecast(x, attrs, guidance=2.0), uncond + 2 * (cond - uncond))


def test_rows_without_a_parsed_reasoner_output_get_the_unconditional_forecast():
    model, x, attrs = _model_and_batch(1)
    valid = torch.tensor([True, False, True, False, True, False])
    out = model.forecast(x, attrs, valid, guidance=1.5)
    uncond = model.backbone(x)
    assert torch.equal(out[~valid], uncond[~valid])
    assert not torch.allclose(out[valid], uncond[valid])


def test_alignment_corrects_only_when_needed():
    torch.manual_seed(0)
    layer = AlignmentLayer(horizon=4, hidden=8, dropout=0.0).eval()
    pred = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    on = torch.tensor([True])
    # reasoner's min below, max above and mean equal to the forecast's: no correction is needed
    assert torch.equal(layer(pred, torch.tensor([[0.5, 4.5, 2.5]]), on), pred)
    # the forecast dips below the reasoner's min: a correction is applied
    assert not torch.equal(layer(pred, torch.tensor([[1.5, 4.5, 2.5]]), on), pred)
    assert torch.equal(layer(pred, torch.tensor([[1.5, 4.5, 2.5]]), torch.tensor([False])), pred)


def test_training_drops_conditioning_with_probability_p_uncond():
    model, x, attrs = _model_and_batch(2)
    model.cfg.p_uncond = 1.0
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    assert torch.equal(model(x, attrs), model.backbone(x))
    model.cfg.p_uncond = 0.0
    assert not torch.allclose(model(x, attrs), model.backbone(x))


def test_forecast_runs_in_eval_mode_whatever_the_module_mode():
    """forecast() must not keep dropout on (VERSION 3 forecast in train mode: off by up to 1.14), and it restores the
    module's mode."""
    torch.manual_seed(0)
    model = ConditionalForecaster(ForecasterConfig(hidden=16, align_hidden=8, dropout=0.5))
    x, attrs = torch.randn(32, 10), path_stats(torch.randn(32, 10))
    model.eval()
    want = model.forecast(x, attrs, guidance=1.5)
    model.train()
    got = model.forecast(x, attrs, guidance=1.5)
    assert model.training and torch.equal(got, want)
    assert not torch.equal(model.backbone(x), model.backbone(x))  # dropout is really active in train mode


def test_forecaster_rejects_bad_input_and_ignores_attributes_of_unparsed_rows():
    model, x, attrs = _model_and_batch(3)
    with pytest.raises(ValueError, match="guidance"):
        model.forecast(x, attrs, guidance=-1.0)
    with pytest.raises(ValueError, match="guidance"):
        model.forecast(x, attrs, guidance=float("nan"))
    with pytest.raises(ValueError, match="guidance"):
        ForecasterConfig(guidance=-1.0)
    bad = attrs.clone()
    bad[2, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinite.*valid=False"):
        model.forecast(x, bad)
    valid = torch.ones(6, dtype=torch.bool)
    valid[2] = False  # unparsed: its NaN attributes are ignored, not spread to the output
    out = model.forecast(x, bad, valid, guidance=1.0)
    assert torch.isfinite(out).all() and torch.equal(out[2], model.backbone(x)[2])
    torch.testing.assert_close(out[valid], model.forecast(x, attrs, valid, guidance=1.0)[valid])
    with pytest.raises(ValueError, match="finite"):
        model.forecast(x * float("nan"), attrs)
    with pytest.raises(ValueError, match="attrs must be"):
        model.forecast(x, attrs[:, :2])
    model.train()
    with pytest.raises(ValueError, match="NaN"):  # training with NaN attributes on conditioned rows
        model.cfg.p_uncond = 0.0
        model(x, bad)


def test_text_windows_and_answer_layout():
    from iclr26.rlft.vta import answer_text, trend_rationale, window_rows

    m = make_market(1, 200, seed=2)
    rows = window_rows(m.frames[0], train_days=140, simplified=True)
    close = m.frames[0]["Close"].to_numpy()
    z = (close - close[:140].mean()) / close[:140].std()
    r = rows[0]
    assert r["day"] == 9 and r["closes"] == pytest.approx(z[:10]) and r["target"] == pytest.approx(z[10:20])
    assert len(rows) == 200 - 10 - 9 and "predict the closing prices for the next 10 days" in r["prompt"]
    text = answer_text(r["target"], trend_rationale(r["closes"]))
    rew = TimeGRPOReward()
    assert rew.forecast(text) == pytest.approx(r["target"], abs=0.005)  # 2 decimals
    assert rew.think_format(text) == 0.5 and rew.answer_format(text) == 1.0 and rew.xml(text) == 0.5
    full = window_rows(m.frames[0], train_days=140)
    assert full[0]["day"] >= 60 and "Relative Strength Index" in full[0]["prompt"]  # indicators defined from WARMUP
    with pytest.raises(ValueError, match="train_days"):
        window_rows(m.frames[0], train_days=5)


# --- Time-GRPO rewards by hand --------------------------------------------------------------------------------
def _answer(vals, think="a"):
    return f"<think>\n{think}\n</think>\n<answer>\n[{', '.join(str(v) for v in vals)}]\n</answer>"


def test_rewards_by_hand():
    r = TimeGRPOReward()
    true = [float(i) for i in range(10)]
    text = _answer([v + 0.1 for v in true])  # MSE = 0.01
    assert r.correctness(text, true) == pytest.approx(5 / (1 + 10 * 0.01))
    assert r.think_format(text) == 0.5
    assert r.answer_format(text) == 1.0
    assert xml_count(text) == 0.5 and r.xml(text) == 0.5
    assert r.total(text, true) == pytest.approx(5 / 1.1 + 0.5 + 1.0 + 0.5)
    short = _answer(true[:8])  # 8 numbers: no correctness, partial answer format 1 - 2/10
    assert r.correctness(short, true) == 0.0 and r.answer_format(short) == pytest.approx(0.8)
    bad = "<think>x</think> no answer here"
    assert r.total(bad, true) == 0.0 and parse_answer(bad) is None
    assert r.correctness(_answer(true), true) == 5.0  # perfect forecast: the reward saturates at a
    inline = "<think>x</think> <answer>[" + ", ".join(map(str, true)) + "]</answer>"
    assert r.think_format(inline) == 0.5 and r.xml(inline) == 0.0  # think regex allows any whitespace, xml needs \n


def test_quantised_return_answers_map_to_standardised_closes():
    b = ReturnBins()
    r = TimeGRPOReward(parse=b.parse, to_target=b.to_target, row_columns=("last", "mu", "sd"))
    text = "<think>\nTREND_UP\n</think>\n<answer>\n" + " ".join(["r+2"] * 10) + "\n</answer>"
    row = {"last": 100.0, "mu": 90.0, "sd": 5.0}
    assert r.forecast(text, row) == pytest.approx([(101.0 - 90.0) / 5.0] * 10)  # 100 * (1 + 2 * 0.005)
    true = [2.0] * 10  # standardised closes of 100: the forecast is off by 0.2 everywhere -> MSE 0.04
    assert r.correctness(text, true, row) == pytest.approx(5 / 1.4)
    assert b.parse("<answer>\nr+1 x3\n</answer>") is None and b.bin_of(0.0126) == 3 and b.bin_of(-1.0) == -20


# --- group-normalised advantage: by hand, and inside TRL's GRPOTrainer ----------------------------------------
def test_group_advantage_by_hand():
    adv = group_advantages([1.0, 2.0, 3.0, 6.0, 0.0, 0.0, 1.0, 1.0], group_size=4)
    sd = np.std([1, 2, 3, 6], ddof=1)
    assert adv[:4] == pytest.approx([(v - 3.0) / (sd + 1e-4) for v in (1, 2, 3, 6)])
    half = 0.5 / (np.sqrt(1 / 3) + 1e-4)  # mean 0.5, unbiased std sqrt(1/3)
    assert adv[4:] == pytest.approx([-half, -half, half, half])
    assert group_advantages([2.0] * 4, 4) == [0.0] * 4  # equal rewards: no signal


def test_time_grpo_advantages_in_trl_on_a_fixed_batch(tmp_path):
    from iclr26.lm.tiny import tiny_model
    from iclr26.papers.vta.data import vocabulary
    from iclr26.rlft.abstention import exact_word_tokenizer
    from iclr26.rlft.vta import grpo_config, grpo_dataset, time_grpo_trainer

    b = ReturnBins()
    reward = TimeGRPOReward(parse=b.parse, to_target=b.to_target, row_columns=("last", "mu", "sd"))
    tok = exact_word_tokenizer(vocabulary())
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=96)
    scale = {"last": 100.0, "mu": 100.0, "sd": 10.0}
    rows = [
        {"prompt": "ANALYSE RSI_HIGH PREDICT\n", "target": [0.1 * k for k in range(1, 11)], **scale},
        {"prompt": "ANALYSE RSI_LOW PREDICT\n", "target": [0.0] * 10, **scale},
    ]

    def comp(bins, think="TREND_UP"):
        return "<think>\n" + think + "\n</think>\n<answer>\n" + " ".join(b.word(k) for k in bins) + "\n</answer>"

    fixed = {rows[0]["prompt"]: [comp([20] * 10), comp(range(2, 22, 2)), comp([0] * 10), comp([0] * 4)],
             rows[1]["prompt"]: [comp([0] * 10), comp([1] * 10), comp([-5] * 10), "<think>\nTREND_UP"]}  # fmt: skip

    def rollout(prompts, trainer):
        seen: dict[str, int] = {}
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for p in prompts:
            k = seen[p] = seen.get(p, -1) + 1
            ids = tok(fixed[p][k] + "<eos>", add_special_tokens=False)["input_ids"]
            out["prompt_ids"].append(tok(p, add_special_tokens=False)["input_ids"])
            out["completion_ids"].append(ids)
            out["logprobs"].append([0.0] * len(ids))
        return out

    ds = grpo_dataset(rows, extra_columns=("last", "mu", "sd"))
    args = grpo_config(str(tmp_path), use_cpu=True, max_completion_length=32, per_device_train_batch_size=8,
                       gradient_accumulation_steps=1, beta=0.0)  # fmt: skip
    trainer = time_grpo_trainer(model, tok, ds, args, reward=reward, rollout_func=rollout)
    trainer.current_gradient_accumulation_steps = 1
    out = trainer._generate_and_score_completions([ds[0]] * 4 + [ds[1]] * 4)
    texts = [t for p in (rows[0]["prompt"], rows[1]["prompt"]) for t in fixed[p]]
    totals = [reward.total(t, r["target"], r) for r, t in zip([rows[0]] * 4 + [rows[1]] * 4, texts)]
    assert totals[0] > totals[2] > totals[3]  # 10 % return path closest to the rising target; 4 bins: no MSE term
    assert totals[4] == pytest.approx(5 + 0.5 + 1 + 0.5)  # exact flat forecast
    expected = torch.tensor(group_advantages(totals, 4), dtype=torch.float32)
    torch.testing.assert_close(out["advantages"].float(), expected, rtol=1e-4, atol=1e-4)


# --- the market world -------------------------------------------------------------------------------------------------
def test_market_regimes_are_what_generated_the_returns():
    p = MarketParams(sigma=1e-9)  # noise off: each day's log return is the regime's drift exactly
    m = make_market(n_stocks=3, n_days=600, seed=4, params=p)
    x = np.log(np.stack([f["Close"].to_numpy() for f in m.frames]))
    ret, s, a = np.diff(x, axis=1), m.regimes[:, 1:], m.anchors[:, 1:]
    np.testing.assert_allclose(ret[s == 0], p.mu, atol=1e-7)
    np.testing.assert_allclose(ret[s == 1], -p.mu, atol=1e-7)
    np.testing.assert_allclose(ret[s == 2], -p.kappa * (x[:, :-1] - a)[s == 2], atol=1e-7)
    np.testing.assert_allclose(ret[s == 3], 0.0, atol=1e-7)
    assert set(np.unique(m.regimes)) == set(range(len(REGIMES)))


def test_market_is_deterministic_has_mean_duration_and_chronological_split():
    a, b = make_market(4, 800, seed=3), make_market(4, 800, seed=3)
    assert all(f.equals(g) for f, g in zip(a.frames, b.frames)) and np.array_equal(a.regimes, b.regimes)
    assert not make_market(4, 800, seed=5).frames[0].equals(a.frames[0])
    big = make_market(20, 2000, seed=0)
    switches = (np.diff(big.regimes, axis=1) != 0).sum()
    assert 30 < big.regimes[:, 1:].size / switches < 55  # mean duration 40 days
    f = a.frames[0]
    assert (f["High"] >= f[["Open", "Close"]].max(1)).all() and (f["Low"] <= f[["Open", "Close"]].min(1)).all()
    bounds = a.bounds()
    assert bounds == {"train": (0, 560), "val": (560, 640), "test": (640, 800)}
    with pytest.raises(ValueError, match="ratios"):
        a.bounds((0.5, 0.5, 0.5))


def test_indicators_are_causal_and_annotation_has_the_official_fields():
    m = make_market(1, 300, seed=1)
    full = indicators(m.frames[0])
    cut = indicators(m.frames[0].iloc[:200])
    pd_cols = ["sma", "rsi", "macd", "adx", "stoch_k", "bb_upper"]
    np.testing.assert_allclose(full[pd_cols].iloc[150:200].to_numpy(), cut[pd_cols].iloc[150:200].to_numpy())
    text = annotate_window(np.arange(10.0), full.iloc[190:200])
    for field in ("Minimum price: 0 on day 0", "Relative Strength Index", "Stochastic %D", "Bollinger Bands Lower"):
        assert field in text
    assert "Technical" not in annotate_window(np.arange(10.0), simplified=True)


# --- smoke run of the reproduction ------------------------------------------------------------------------------------
def test_smoke_run(tmp_path, monkeypatch):
    from iclr26.core.runs import run_paper

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))  # the smoke base reasoner is trained here, not cached
    res = run_paper("vta", scale="smoke", out=tmp_path, quiet=True)
    m = res.per_seed[0]
    for arm in ("naive", "oracle", "dlinear", "backbone", "reasoner_sft", "reasoner", "vta_sft", "vta"):
        assert np.isfinite(m[f"{arm}_mse"]) and m[f"{arm}_mse"] >= 0
    from iclr26.papers import vta

    assert {c["id"] for c in res.verdicts} == {c.id for c in vta.CLAIMS}
    assert m["grpo_steps"] == 2 and m["grpo_weight_change"] >= 0  # the fixed steps ran (no selection)
    for k in ("reasoner_reward", "reasoner_sft_reward", "oracle_reward", "reasoner_changed", "vta_shuffled_mse"):
        assert np.isfinite(m[k]), k
    assert m["vta_shuffled_lr"] == m["vta_lr"]  # the control gets the method's own lr (and w)


def test_report_figure_shows_the_generated_rationales(tmp_path):
    import json

    from iclr26.papers.vta import CONFIGS
    from iclr26.papers.vta.experiment import _parts, plots

    assert _parts("<think>\nTREND_UP CALM\n</think>\n<answer>\nr+1 r0\n</answer>") == ("TREND_UP CALM", "r+1 r0")
    assert _parts("no tags") == ("?", "?")
    item = {
        "prompt": "ANALYSE",
        "sft": "<think>A</think><answer>r0</answer>",
        "grpo": "<think>B</think><answer>r+1</answer>",
        "truth": "<think>A</think><answer>r+2</answer>",
    }
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "rationales-seed0.json").write_text(json.dumps({"up": [item]}))
    from iclr26.papers.vta.data import REGIMES

    per_seed = {"0": {f"{a}_mse_{r}": 0.1 for a in ("backbone", "vta") for r in REGIMES}}
    figs = dict(plots(tmp_path, per_seed, CONFIGS["smoke"]))
    text = figs["rationales"].texts[0].get_text()
    assert "regime up" in text and "grpo: B" in text and "| r+2" in text
