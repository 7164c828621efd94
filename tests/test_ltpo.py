"""LTPO: the confidence reward by hand, σ→0 & η=0 ≡ CoT-Unk exactly, REINFORCE is gradient-free and leaves the model
bit-identical, cached-prefix ≡ uncached forward, the update equals Eq. 9, best-reward tracking, batching, the
baselines' budgets, the world, the tuning rule, and a smoke run of the paper."""

import dataclasses
import math

import pytest
import torch

from iclr26.latent import LTPO, LTPOConfig
from iclr26.latent.ltpo import LatentProblem, LatentScorer, confidence_reward, gold_oracle, random_search
from iclr26.lm import tiny_model


@pytest.fixture(scope="module")
def micro():
    return tiny_model("llama", vocab_size=40, d_model=32, n_layers=2, n_heads=4, max_len=64)


def problems(n=3, prefix=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [LatentProblem(torch.randint(4, 40, (prefix,), generator=g), torch.tensor([5, 6]), 4, 1) for _ in range(n)]


def cfg(**kw):
    return LTPOConfig(**{"num_thoughts": 4, "steps": 6, "sigma": 0.5, "lr": 0.05, **kw})


# ------------------------------------------------------------------------------------------------------ the reward
def test_confidence_reward_matches_hand_computation():
    p = torch.tensor([[0.7, 0.2, 0.1], [0.5, 0.25, 0.25]])
    logits = p.log()
    # C_i = −(1/k) Σ_{j≤k} log p_i^(j), R = mean_i C_i
    c1, c2 = -(math.log(0.7) + math.log(0.2)) / 2, -(math.log(0.5) + math.log(0.25)) / 2
    assert confidence_reward(logits, None, k=2).item() == pytest.approx((c1 + c2) / 2, rel=1e-6)
    assert confidence_reward(logits, [1], k=3).item() == pytest.approx(-(math.log(0.5) + 2 * math.log(0.25)) / 3)
    # peaked beats flat (the reward prefers a committed distribution)
    peaked, flat = torch.tensor([[10.0, 0, 0, 0]]), torch.zeros(1, 4)
    assert confidence_reward(peaked, k=2) > confidence_reward(flat, k=2)
    with pytest.raises(ValueError, match="top-k"):
        confidence_reward(flat, k=5)


# ------------------------------------------------------------------------------------------------------ the method
def test_sigma_to_zero_and_eta_zero_is_cot_unk_exactly(micro):
    ps = problems()
    ltpo = LTPO(micro, None, cfg(sigma=1e-30, lr=0.0))
    sc = ltpo.scorer(ps)
    tr = ltpo.optimize(ps, [1, 2, 3], scorer=sc)
    assert torch.equal(tr.h_best, sc.h0) and torch.equal(tr.h_last, sc.h0)
    # the same logits and the same generation as CoT-Unk, which feeds the placeholder token ids themselves
    ids = torch.stack([p.input_ids for p in ps])
    ref = micro(input_ids=ids).logits[:, -1]
    assert torch.allclose(sc.answer_logits(tr.h_best), ref, atol=1e-5)
    gen = ltpo.generate(sc, tr.h_best, 4)
    ref_gen = micro.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False,
                             pad_token_id=0)[:, ids.shape[1]:]  # fmt: skip
    assert torch.equal(gen, ref_gen)
    # ... while a real step size does move the thoughts (the test would fail for a no-op or for CoT-Unk itself)
    moved = LTPO(micro, None, cfg()).optimize(ps, [1, 2, 3])
    assert not torch.equal(moved.h_last, sc.h0)


def test_reinforce_update_is_eq9(micro):
    ps = problems(1)
    c = cfg(steps=1, sigma=0.3, lr=0.02)
    ltpo = LTPO(micro, None, c)
    sc = ltpo.scorer(ps)
    tr = ltpo.optimize(ps, [7], scorer=sc)
    eps = torch.randn(sc.h0.shape[1:], generator=torch.Generator().manual_seed(7))[None] * 0.3
    r = sc.reward(sc.h0 + eps, c.top_k)
    expected = sc.h0 + 0.02 * r[:, None, None] * eps / 0.3**2  # H ← H + η R(H+ε) ε / σ²
    assert torch.allclose(tr.h_last, expected, atol=1e-6)
    assert torch.allclose(tr.rewards[0], r)


def test_reinforce_never_calls_backward_and_leaves_the_model_bit_identical(micro, monkeypatch):
    before = {k: v.clone() for k, v in micro.state_dict().items()}
    calls = []
    real_grad, real_backward = torch.autograd.grad, torch.Tensor.backward
    monkeypatch.setattr(torch.autograd, "grad", lambda *a, **k: calls.append("grad") or real_grad(*a, **k))
    monkeypatch.setattr(torch.Tensor, "backward", lambda *a, **k: calls.append("backward") or real_backward(*a, **k))
    tr = LTPO(micro, None, cfg()).optimize(problems(), [1, 2, 3])
    assert calls == [] and tr.n_forward == 6
    assert all(torch.equal(before[k], v) for k, v in micro.state_dict().items())
    assert all(p.grad is None for p in micro.parameters())
    # the autograd variant does differentiate (so the spy works), and still touches no parameter
    LTPO(micro, None, cfg(estimator="autograd")).optimize(problems(), [1, 2, 3])
    assert calls.count("grad") == 6
    assert all(torch.equal(before[k], v) for k, v in micro.state_dict().items())
    assert all(p.grad is None for p in micro.parameters())


@pytest.mark.parametrize("arch", ["llama", "gpt2", "qwen2"])
def test_cached_prefix_and_uncached_forward_give_the_same_reward(arch):
    model = tiny_model(arch, vocab_size=40, d_model=32, n_layers=2, n_heads=4, max_len=64)
    ps = problems(2, prefix=11)
    h = LatentScorer(model, ps).h0 + 0.3 * torch.randn(2, 4, 32, generator=torch.Generator().manual_seed(0))
    cached, naive = LatentScorer(model, ps, use_cache=True), LatentScorer(model, ps, use_cache=False)
    assert cached.cache is not None and naive.cache is None
    assert torch.allclose(cached.reward(h), naive.reward(h), atol=1e-5)
    assert torch.allclose(cached.logits(h), naive.logits(h), atol=1e-4)
    # the cache is copied, not extended: a second call sees the same prefix
    assert torch.allclose(cached.reward(h), cached.reward(h), atol=0)
    t1 = LTPO(model, None, cfg()).optimize(ps, [4, 5])
    t2 = LTPO(model, None, cfg(use_cache=False)).optimize(ps, [4, 5])
    assert torch.allclose(t1.rewards, t2.rewards, atol=1e-5)


def test_best_reward_tracking_keeps_the_updated_state_of_the_best_step(micro):
    ps = problems(2)
    c = cfg(steps=8, sigma=1.0, lr=0.2)
    tr = LTPO(micro, None, c).optimize(ps, [3, 9])
    for b in range(2):
        best = int(tr.rewards[:, b].argmax())
        assert int(tr.best_step[b]) == best and tr.best_reward[b] == tr.rewards[best, b]
        # re-running only best+1 steps ends exactly in the stored latent (the updated H, as in the official loop)
        short = LTPO(micro, None, dataclasses.replace(c, steps=best + 1)).optimize(ps, [3, 9])
        assert torch.allclose(short.h_last[b], tr.h_best[b], atol=1e-6)


def test_batch_equals_one_by_one(micro):
    ps = problems(3)
    batched = LTPO(micro, None, cfg()).optimize(ps, [1, 2, 3])
    single = LTPO(micro, None, cfg()).optimize(ps[2:], [3])
    assert torch.allclose(batched.h_best[2], single.h_best[0], atol=1e-5)


@pytest.mark.parametrize("use_cache", [True, False])
def test_left_padded_batch_of_different_prompt_lengths_equals_one_by_one(micro, use_cache):
    ps = problems(1, prefix=6, seed=1) + problems(1, prefix=10, seed=2)
    batched = LTPO(micro, None, cfg(use_cache=use_cache)).optimize(ps, [1, 2])
    assert LatentScorer(micro, ps).prefix_mask is not None
    for b in range(2):
        single = LTPO(micro, None, cfg(use_cache=use_cache)).optimize(ps[b : b + 1], [b + 1])
        assert torch.allclose(batched.rewards[:, b], single.rewards[:, 0], atol=1e-4)


def test_random_search_and_oracle_budgets(micro):
    ps = problems(2)
    sc = LatentScorer(micro, ps)
    rs = random_search(sc, cfg(steps=7), 0.5, [1, 2])
    assert rs.n_forward == 7 and torch.equal(rs.best_reward, rs.rewards.max(0).values)
    gold = torch.tensor([[9], [11]])
    orc = gold_oracle(sc, gold, steps=15, lr=0.1)
    assert orc.n_forward == 16 and (orc.best_reward > orc.rewards[0] + 0.1).all()  # it raises log p(gold)
    assert torch.allclose(sc.gold_logprob(orc.h_best, gold), orc.best_reward, atol=1e-5)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="sigma_decay"):
        LTPOConfig(sigma_decay=1.5)
    with pytest.raises(ValueError, match="estimator"):
        LTPOConfig(estimator="adam")
    odd = LatentProblem(torch.tensor([4, 5]), torch.tensor([5]), 4, 1)
    with pytest.raises(ValueError, match="equal suffix"):
        LatentScorer(tiny_model("llama", vocab_size=40, d_model=32, n_layers=1, n_heads=4), problems(1) + [odd])


# ------------------------------------------------------------------------------------------------------ the world
def test_modular_world_is_exact_and_split():
    from iclr26.latent.ltpo.world import ModArithWorld, Question, check_answer

    w = ModArithWorld(23)
    assert w.solve(7, ["add3", "mul2", "sub5"]) == ((7 + 3) * 2 - 5) % 23 == 15
    with pytest.raises(ValueError, match="unknown operation"):
        w.solve(7, ["add4"])
    test = w.sample(3, 200, 0, "test")
    train = w.sample(3, 200, 0, "train")
    assert all(w.held_out(p.start, p.ops) for p in test) and not any(w.held_out(p.start, p.ops) for p in train)
    assert all(p.answer == w.solve(p.start, p.ops) for p in test) and w.sample(3, 5, 1) == w.sample(3, 5, 1)
    assert check_answer(Question("add", "", "91"), " 91.") and not check_answer(Question("add", "", "91"), " 19")
    assert check_answer(Question("weekday", "", "Sunday"), " Sunday.")


def test_tuning_rule_extends_edges_and_picks_interior():
    from iclr26.papers.ltpo.tuning import tune

    pick, scores = tune(lambda a: -((math.log10(a) - 2) ** 2), {"a": (0.1, 1.0)}, max_extend=5)
    assert pick == {"a": 100.0} and len(scores) == 5  # 0.1, 1, 10, 100, 1000
    pick, _ = tune(lambda a: 1.0, {"a": (0.1, 1.0, 10.0)})
    assert pick == {"a": 1.0}  # flat: the centre, no walk to an edge


def test_smoke_run_of_the_paper():
    from iclr26.papers import ltpo as card
    from iclr26.papers.ltpo import experiment

    class Ctx:
        quiet = True

        def log(self, msg):
            pass

    cfg_ = dataclasses.replace(card.CONFIGS["smoke"], smol=False, n_test=8, n_val=4, steps=3, train_steps=60,
                               d_model=16, n_layers=1)  # fmt: skip
    m = experiment.run(cfg_, 0, Ctx())
    for claim in card.CLAIMS:
        if claim.when != "smol":
            for name in claim.metrics():
                assert name in card.METRICS and name in m, name
    assert all(k in card.METRICS for k in m)
    assert 0 <= m["acc_ood_ltpo"] <= 1 and m["speedup_cache_world"] > 0
    if m["moved_ood_ltpo"] == 0:  # no answer changed: the same accuracy as CoT-Unk, exactly
        assert m["acc_ood_ltpo"] == m["acc_ood_cotunk"]
    assert 0 <= m["moved_ood_ltpo_centre"] <= 1 and 0 <= m["acc_ood_ltpo_centre"] <= 1
    assert [name for name, _ in experiment.plots(None, {0: m}, cfg_)] == ["accuracy_by_method"]


def test_solve_on_a_plain_lm_without_chat_template():
    from iclr26.lm.tokenizer import build_word_tokenizer

    tok = build_word_tokenizer(["what is one plus two ? the answer is three"])
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=4, max_len=64)
    ltpo = LTPO(model, tok, LTPOConfig(num_thoughts=3, steps=4, top_k=5, note="", answer_prefix="the answer is",
                                       max_new_tokens=2))  # fmt: skip
    problem = ltpo.problem("what is one plus two ?")
    assert problem.placeholder_id == tok.unk_token_id and len(problem.suffix_ids) == 3
    text, trace = ltpo.solve("what is one plus two ?")
    assert isinstance(text, str) and trace.rewards.shape == (4, 1) and trace.n_forward == 4


def test_a_no_op_ltpo_does_not_reproduce_beating_random_search():
    """The audit's vacuous pass: the tuned LTPO changes no answer (= CoT-Unk) and random search hurts a little, so
    LTPO 'beats' random search. 'ood-beats-random' also needs LTPO's gain over CoT-Unk, so it is not reproduced
    then; an LTPO that helps and beats random search reproduces it."""
    from iclr26.core.claims import REPRODUCED, verdict
    from iclr26.papers import ltpo as card

    claim = next(c for c in card.CLAIMS if c.id == "ood-beats-random")
    cot = [0.06, 0.05, 0.07, 0.06, 0.055]
    no_op = [{"acc_ood_ltpo": c, "acc_ood_cotunk": c, "acc_ood_rs": c - 0.01 - 0.002 * i} for i, c in enumerate(cot)]
    assert verdict(claim, no_op).verdict != REPRODUCED
    helps = [dict(s, acc_ood_ltpo=s["acc_ood_cotunk"] + 0.05 + 0.01 * i) for i, s in enumerate(no_op)]
    assert verdict(claim, helps).verdict == REPRODUCED
