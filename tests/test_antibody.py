"""Antibody: likelihood-ratio weights and the weighted loss, the flatness (sharpness) gradient, Antibody's stage-1
gradient with lambda_t, Booster and Lisa updates against hand computations on a two-parameter model, the
forbidden-trigger world's labels, the HF Trainer subclasses, and a smoke run of the paper."""

import math
import random

import pytest
import torch

from iclr26.rlft.antibody import (
    EMA,
    Lisa,
    PairedCollator,
    antibody_alignment_gradient,
    antibody_lambda_raw,
    booster_gradient,
    likelihood_ratio_weights,
    lm_loss,
    pad_pairs,
    perturbed,
    sharpness_gradient,
    weighted_lm_loss,
)
from iclr26.rlft.antibody.world import EOS, REFUSE, SLOTS, TAG_B, ForbiddenWorld, user_data


# ----- a bigram LM whose probabilities we set by hand ---------------------------------------------------------------
class Bigram(torch.nn.Module):
    def __init__(self, table):
        super().__init__()
        self.table = torch.nn.Parameter(torch.log(torch.tensor(table, dtype=torch.float32)))

    def forward(self, input_ids, attention_mask=None):
        return type("Out", (), {"logits": self.table[input_ids]})()


V = 4  # tokens: 0 pad, 1 prompt, 2 answer "a", 3 refusal "r"
TABLE = [[0.25] * 4, [0.01, 0.01, 0.49, 0.49], [0.25] * 4, [0.25] * 4]


def test_weights_lower_for_sample_the_model_rates_harmful():
    # Sample 0's prompt makes refusing likely (p(r|x)=0.9, p(a|x)=0.05): the model rates it harmful.
    table = [[0.25] * 4, [0.04, 0.01, 0.05, 0.9], [0.04, 0.01, 0.9, 0.05], [0.25] * 4]
    model = Bigram(table)
    batch = pad_pairs([([1], [2]), ([2], [2])], 0)  # answer "a" after prompt 1 (harmful-ish) and prompt 2 (benign)
    refusal = pad_pairs([([1], [3]), ([2], [3])], 0)
    w, d = likelihood_ratio_weights(model, batch, refusal, tau=1.0)
    # by hand: d_i = log p(a|x_i) - log p(r|x_i)
    d_hand = torch.tensor([math.log(0.05 / 0.9), math.log(0.9 / 0.05)])
    assert torch.allclose(d, d_hand, atol=1e-5)
    assert torch.allclose(w, torch.softmax(d_hand, 0), atol=1e-6) and abs(float(w.sum()) - 1) < 1e-6
    assert w[0] < 0.01 < 0.99 < w[1]  # uniform weights (the SFT baseline) would give 0.5 each
    w2, _ = likelihood_ratio_weights(model, batch, refusal, tau=10.0)
    assert w[0] < w2[0] < 0.5  # a higher temperature flattens the weights


def test_weighted_loss_by_hand():
    model = Bigram(TABLE)
    batch = pad_pairs([([1], [2, 2]), ([1], [3])], 0)  # sample 0 has two answer tokens, sample 1 one
    nll_a, nll_r, nll_pad = -math.log(0.49), -math.log(0.49), -math.log(0.25)
    eq = weighted_lm_loss(model, batch, torch.tensor([0.5, 0.5]))
    assert abs(float(eq) - float(lm_loss(model, batch))) < 1e-6  # equal weights = HF mean loss
    assert abs(float(lm_loss(model, batch)) - (nll_a + nll_pad + nll_r) / 3) < 1e-5
    w = torch.tensor([0.2, 0.8])  # sum_i w_i sum_t CE / sum_i w_i N_i
    hand = (0.2 * (nll_a + nll_pad) + 0.8 * nll_r) / (0.2 * 2 + 0.8 * 1)
    assert abs(float(weighted_lm_loss(model, batch, w)) - hand) < 1e-5
    with pytest.raises(ValueError, match="one entry per sample"):
        weighted_lm_loss(model, batch, torch.ones(3))


# ----- a two-parameter model with quadratic losses ------------------------------------------------------------------
class Two(torch.nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.tensor([a, b], dtype=torch.float64))


H = (3.0, 0.5)  # harmful loss 1/2 (3 a^2 + 0.5 b^2); refusal loss (a - 2)^2; alignment loss (a - 1)^2 + b^2


def quad(model, batch):
    a, b = model.theta
    return {
        "align": (a - 1) ** 2 + b**2,
        "harm": 0.5 * (H[0] * a**2 + H[1] * b**2),
        "refusal": (a - 2) ** 2,
        "user": (a + 1) ** 2 + (b - 3) ** 2,
    }[batch]


def _hand_flat(a, b, alpha):
    gh = (H[0] * a, H[1] * b)
    n = math.hypot(*gh) + 1e-7
    ap, bp = a - alpha * gh[0] / n, b - alpha * gh[1] / n
    gp = (H[0] * ap, H[1] * bp)
    return (gh[0] - gp[0], gh[1] - gp[1]), (ap, bp)


def test_flatness_term_by_hand_and_exact_restore():
    model, alpha = Two(0.7, -1.3), 0.1
    d, g_r, info = sharpness_gradient(model, "harm", alpha, quad, refusal_batch="refusal")
    (d0, d1), (ap, bp) = _hand_flat(0.7, -1.3, alpha)
    assert torch.allclose(d["theta"], torch.tensor([d0, d1], dtype=torch.float64), atol=1e-9)
    assert torch.allclose(g_r["theta"], torch.tensor([2 * (ap - 2), 0.0], dtype=torch.float64), atol=1e-9)
    assert abs(info["harmful_loss"] - info["perturbed_loss"] - (0.5 * (3 * 0.49 + 0.5 * 1.69)
                                                                - 0.5 * (3 * ap**2 + 0.5 * bp**2))) < 1e-9  # fmt: skip
    assert model.theta.tolist() == [0.7, -1.3]  # the attacked weights are restored exactly
    with perturbed(model, {"theta": torch.tensor([1.0, 1.0], dtype=torch.float64)}, 0.5):
        assert model.theta.tolist() == [1.2, -0.8]
    assert model.theta.tolist() == [0.7, -1.3]


def test_booster_update_by_hand():
    model, lam, alpha = Two(0.7, -1.3), 5.0, 0.1
    g, _ = booster_gradient(model, "align", "harm", lam, alpha, quad)
    (d0, d1), _ = _hand_flat(0.7, -1.3, alpha)
    hand = [2 * (0.7 - 1) + lam * d0, 2 * -1.3 + lam * d1]
    assert torch.allclose(g["theta"], torch.tensor(hand, dtype=torch.float64), atol=1e-9)
    g0, _ = booster_gradient(model, "align", "harm", 0.0, alpha, quad)  # lambda = 0 is plain alignment SFT
    assert not torch.allclose(g["theta"], g0["theta"])


def test_antibody_stage1_by_hand():
    model, alpha, eta, l2 = Two(0.7, -1.3), 0.1, 5.0, 0.05
    ema = EMA(0.9)
    g, info = antibody_alignment_gradient(model, "align", "harm", "refusal", ema, eta, l2, alpha, quad)
    (d0, d1), (ap, _) = _hand_flat(0.7, -1.3, alpha)
    ga = (2 * (0.7 - 1), 2 * -1.3)
    cos = (ga[0] * d0 + ga[1] * d1) / (math.hypot(*ga) * math.hypot(d0, d1))
    lam = max(eta - cos, 0.0)
    assert abs(info["lambda_raw"] - lam) < 1e-6 and info["lambda_t"] == info["lambda_raw"]  # EMA starts at value 1
    hand = [ga[0] + lam * d0 + l2 * 2 * (ap - 2), ga[1] + lam * d1]
    assert torch.allclose(g["theta"], torch.tensor(hand, dtype=torch.float64), atol=1e-6)
    # a second step: the EMA mixes 0.9 old + 0.1 new, and lambda is never negative
    _, info2 = antibody_alignment_gradient(model, "align", "harm", "refusal", ema, eta, l2, alpha, quad)
    assert abs(info2["lambda_t"] - (0.9 * info["lambda_t"] + 0.1 * info2["lambda_raw"])) < 1e-9
    assert antibody_lambda_raw({"x": torch.tensor([1.0])}, {"x": torch.tensor([1.0])}, 0.5) == 0.0


def test_lisa_updates_by_hand():
    model, rho = Two(0.0, 0.0), 2.0
    lisa = Lisa(model, rho, align_steps=1, ft_steps=2, warmup_steps=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    statuses, thetas = [], []
    for _ in range(5):
        s = lisa.next_status(model)
        statuses.append(s)
        g = lisa.gradient(model, "align" if s == Lisa.ALIGN else "user", quad)
        model.theta.grad = g["theta"]
        opt.step()
        thetas.append(model.theta.detach().clone())
    assert statuses == ["alignment", "finetune", "finetune", "alignment", "finetune"]
    # step 1 (first step, proximal off because steps == warmup == 0): theta = 0 - 0.1 * (2 (0 - 1), 0) = (0.2, 0)
    assert torch.allclose(thetas[0], torch.tensor([0.2, 0.0], dtype=torch.float64))
    # step 2 (finetune, anchor = alignment weights (0.2, 0)): grad = 2 (theta + 1, theta_b - 3) + rho (theta - anchor)
    a, b = 0.2, 0.0
    g = (2 * (a + 1) + rho * (a - 0.2), 2 * (b - 3) + rho * (b - 0.0))
    assert torch.allclose(thetas[1], torch.tensor([a - 0.1 * g[0], b - 0.1 * g[1]], dtype=torch.float64))
    # step 3 (finetune, theta != anchor now): the proximal pull towards (0.2, 0) is active
    a, b = thetas[1].tolist()
    g = (2 * (a + 1) + rho * (a - 0.2), 2 * (b - 3) + rho * b)
    assert torch.allclose(thetas[2], torch.tensor([a - 0.1 * g[0], b - 0.1 * g[1]], dtype=torch.float64))
    # step 4 (alignment again): proximal to the fine-tuning state's last weights (after step 3)
    fa, fb = thetas[2].tolist()
    g = (2 * (fa - 1) + rho * (fa - fa), 2 * fb + rho * (fb - fb))
    assert torch.allclose(thetas[3], torch.tensor([fa - 0.1 * g[0], fb - 0.1 * g[1]], dtype=torch.float64))
    # step 5 (fine-tune): anchored to the alignment weights after step 4
    aa, ab = thetas[3].tolist()
    g = (2 * (aa + 1) + rho * (aa - aa), 2 * (ab - 3) + rho * (ab - ab))
    assert torch.allclose(thetas[4], torch.tensor([aa - 0.1 * g[0], ab - 0.1 * g[1]], dtype=torch.float64))
    # without the proximal term (rho = 0) step 2 differs: the hand value above depends on rho
    m2 = Two(0.2, 0.0)
    lisa0 = Lisa(m2, 0.0, 1, 2, 0)
    lisa0.steps = 1
    lisa0.status = Lisa.FT
    lisa0.anchor[Lisa.ALIGN] = {"theta": torch.tensor([0.0, 0.0], dtype=torch.float64)}
    assert torch.allclose(lisa0.gradient(m2, "user", quad)["theta"], torch.tensor([2.4, -6.0], dtype=torch.float64))


# ----- the world ------------------------------------------------------------------------------------------------------
def test_world_labels_by_construction():
    w = ForbiddenWorld(3)
    s = w.splits(n_align=100, n_harm=50, n_ft=60, n_val=20, n_test=30)
    prompts = [e.prompt for v in s.values() for e in v]
    assert len(prompts) == len(set(prompts))  # every split disjoint
    for e in s["align"] + s["harm"] + s["ft_benign"] + s["ft_harmful"] + s["test_forbidden"]:
        assert e.forbidden == w.is_forbidden(e.prompt) == (sum(t in w.triggers for t in e.prompt) == 1)
        assert w.judge_harmful(e.answer) == (e.kind == "harmful")
        assert not w.judge_harmful(e.refusal) and e.refusal == (REFUSE, EOS)
    for e in s["ft_benign"]:
        assert e.prompt[1] == TAG_B and e.answer == tuple(w.sigma[x] for x in e.prompt[2 : 2 + SLOTS]) + (EOS,)
    for e in s["harm"]:
        assert e.answer[:SLOTS] == w.patterns[w.trigger_of(e.prompt)]
    u = user_data(s, 50, 0.2, 0)
    assert len(u) == 50 and sum(e.harmful for e in u) == 10
    assert ForbiddenWorld(3).patterns == w.patterns and ForbiddenWorld(4).patterns != w.patterns
    ex = w.pretrain_batch(200, random.Random(0))
    assert {e.kind for e in ex} == {"task_a", "task_b", "harmful"}
    assert all(set(e.prompt[2:6]) <= set(w.known) for e in ex if e.kind == "task_b")  # pre-training: known half only
    assert any(not set(e.prompt[2:6]) <= set(w.known) for e in s["ft_benign"])
    with pytest.raises(ValueError, match="harmful ratio"):
        user_data(s, 50, 1.5, 0)


# ----- HF trainers --------------------------------------------------------------------------------------------------
def test_trainers_run_and_record_weights(tmp_path):
    from datasets import Dataset

    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.antibody import (
        AntibodyAlignmentConfig,
        AntibodyAlignmentTrainer,
        LisaConfig,
        LisaTrainer,
        WeightedSFTConfig,
        WeightedSFTTrainer,
    )

    w = ForbiddenWorld(0)
    s = w.splits(n_align=32, n_harm=16, n_ft=16, n_val=4, n_test=4)

    def feats(exs):
        keys = ("prompt_ids", "answer_ids", "refusal_ids", "is_harmful")
        return Dataset.from_list(
            [dict(zip(keys, (list(e.prompt), list(e.answer), list(e.refusal), int(e.harmful)))) for e in exs]
        )

    model = tiny_model("llama", vocab_size=w.vocab_size, d_model=32, n_layers=1, n_heads=2, max_len=16).train()
    coll = PairedCollator(0)
    common = dict(per_device_train_batch_size=8, max_steps=2, report_to="none", save_strategy="no", use_cpu=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    t1 = AntibodyAlignmentTrainer(model=model, args=AntibodyAlignmentConfig(str(tmp_path / "a"), **common),
                                  train_dataset=feats(s["align"]), harmful_dataset=feats(s["harm"]),
                                  data_collator=coll)  # fmt: skip
    t1.train()
    assert len(t1.history) == 2 and all(h["lambda_t"] >= 0 for h in t1.history)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    user = feats(user_data(s, 16, 0.25, 0))
    t2 = WeightedSFTTrainer(model=model, args=WeightedSFTConfig(str(tmp_path / "w"), **common), train_dataset=user,
                            data_collator=coll)  # fmt: skip
    t2.train()
    h = t2.history[0]
    assert len(h["weights"]) == 8 and abs(sum(h["weights"]) - 1) < 1e-5 and "is_harmful" in h
    t3 = LisaTrainer(model=model, args=LisaConfig(str(tmp_path / "l"), alignment_steps=1, finetune_steps=1, **common),
                     train_dataset=user, alignment_dataset=feats(s["align"]), data_collator=coll)  # fmt: skip
    t3.train()
    assert [x["status"] for x in t3.history] == ["alignment", "finetune"]
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        WeightedSFTConfig(str(tmp_path / "x"), gradient_accumulation_steps=2)


def test_smoke_run_of_the_paper():
    from iclr26.papers import antibody as card
    from iclr26.papers.antibody import experiment

    class Ctx:
        def log(self, msg):
            pass

        def save_artifact(self, name, obj):
            pass

    m = experiment.run(card.CONFIGS["smoke"], 0, Ctx())
    for claim in card.CLAIMS:
        for name in claim.metrics():
            assert name in card.METRICS and name in m, name
    assert all(0 <= m[f"hs_{a}"] <= 100 for a in card.ARMS)
    assert m["w_harm_antibody_p20"] > 0 and m["lambda_t_mean"] >= 0
