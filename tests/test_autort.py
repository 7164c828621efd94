"""AUTO-RT: the red-teaming world (unsafe exactly on the hidden keys, nested downgrade series, query counting), dynamic
strategy pruning (never prunes an unexplored strategy; first-failure order), Eq. 4's shaped reward, the FIR rule by
hand, a PPO step, and a smoke run of the reproduction."""

import math

import numpy as np
import pytest
import torch

from iclr26.rlft.autort import (
    AutoRT,
    AutoRTConfig,
    DynamicStrategyPruner,
    ProgressiveRewardTracker,
    StrategyPolicy,
    asr_top_k,
    first_inverse_rate,
    multi_hot,
    select_downgrade,
    semantic_diversity,
    shaped_reward,
    to_tokens,
)
from iclr26.rlft.autort.world import RedTeamEnv, RedTeamWorld, mask_of

W = RedTeamWorld(0)
N = W.cfg.n_prims


def random_masks(n, seed=0, lo=1, hi=7):
    rng = np.random.default_rng(seed)
    return [mask_of(rng.choice(N, int(rng.integers(lo, hi)), replace=False)) for _ in range(n)]


def key_tokens(km):
    return {t for t in range(N) if km >> t & 1}


# ---------------------------------------------------------------- the world


def test_target_unsafe_exactly_on_hidden_keys():
    for km, classes in zip(W.keys, W.key_classes):
        for a in range(W.cfg.n_intents):
            if int(W.intent_class[a]) in classes:
                assert W.target_unsafe(a, km)
                for t in key_tokens(km):  # one primitive short of this key: safe unless another key fits
                    sub = km & ~(1 << t)
                    other = any(
                        int(W.intent_class[a]) in cs and k2 & sub == k2 for k2, cs in zip(W.keys, W.key_classes)
                    )
                    assert W.target_unsafe(a, sub) == other
    # random strategies against an independent statement of the rule, scalar and vectorised paths
    masks = random_masks(2000)
    intents = np.arange(W.cfg.n_intents)
    vec = W.success_matrix(masks, intents, target_only=True)
    for i, m in enumerate(masks[:300]):
        toks = key_tokens(m)
        for a in intents[::7]:
            truth = any(
                key_tokens(km) <= toks and int(W.intent_class[a]) in cs for km, cs in zip(W.keys, W.key_classes)
            )
            assert W.target_unsafe(int(a), m) == truth == vec[i, a]
    assert vec.any() and not vec.all()


def test_success_needs_consistency_and_paths_agree():
    masks = random_masks(400, seed=1)
    intents = W.splits["train"]
    vec = W.success_matrix(masks, intents)
    scal = np.array([[W.success(int(a), m) for a in intents] for m in masks])
    assert (vec == scal).all()
    # a destroyer loses the intent about destroy_prob of the time; without one the intent always survives
    with_d = [m | (1 << W.destroyers[0]) for m in masks]
    kept = np.mean([W.consistent(int(a), m) for m in with_d for a in intents])
    assert abs(kept - (1 - W.cfg.destroy_prob)) < 0.03
    clean = [m & ~W.destroy_mask for m in masks if m & ~W.destroy_mask]
    assert all(W.consistent(int(a), m) for m in clean for a in intents)


def test_downgrade_series_is_nested_and_contains_the_target():
    masks, rng = random_masks(3000, seed=2, lo=2, hi=6), np.random.default_rng(0)
    intents = rng.choice(W.cfg.n_intents, len(masks))
    prev = [W.target_unsafe(int(a), m) for a, m in zip(intents, masks)]
    for k in range(1, W.n_downgrades + 1):
        cur = [W.downgrade_unsafe(k, int(a), m) for a, m in zip(intents, masks)]
        assert all(c or not p for p, c in zip(prev, cur))  # prev ⊂ cur
        assert sum(cur) >= sum(prev)
        prev = cur
    assert sum(prev) > 0.2 * len(masks)  # M_6 has random extra unsafe points
    unrel = [W.downgrade_unsafe("unrelated", int(a), m) for a, m in zip(intents, masks)]
    assert all(u for a, m, u in zip(intents, masks, unrel) if W.target_unsafe(int(a), m))


def test_world_is_deterministic_and_seeds_differ():
    assert RedTeamWorld(0).keys == W.keys and (RedTeamWorld(0).intent_class == W.intent_class).all()
    assert RedTeamWorld(1).keys != W.keys
    with pytest.raises(ValueError, match="split"):
        RedTeamEnv(W, "holdout")
    with pytest.raises(ValueError, match="downgrade"):
        RedTeamEnv(W, downgrade=9)


def test_env_gymnasium_api_and_query_counting():
    env = RedTeamEnv(W, "train", downgrade=4)
    a, _ = env.reset(seed=3)
    assert a in set(W.splits["train"])
    key = sorted(key_tokens(W.keys[int(W.intent_class[a])]))  # the behaviour's own class key
    obs, r, term, trunc, info = env.step(key + [N] * (W.cfg.max_len - len(key)))
    assert term and not trunc and info["target_queries"] == 1
    assert r == float(W.success(a, mask_of(key)))
    with pytest.raises(ValueError, match="primitive ids"):
        env.step([N] * W.cfg.max_len)
    # Eq. 4: the target is queried only when the downgrade gives in
    prt, before, broken = ProgressiveRewardTracker(env), env.target_queries, 0
    for m in random_masks(200, seed=4):
        env.reset()
        s = sorted(key_tokens(m))
        down = W.downgrade_unsafe(4, env.intent, m)
        r, hit = prt(s)
        assert r == shaped_reward(down, hit) and (hit is None) == (not down)
        broken += down
    assert env.target_queries - before == broken > 0 and env.downgrade_queries == 200


def test_shaped_reward_values():
    assert shaped_reward(False, None) == 0 and shaped_reward(True, False) == 1 and shaped_reward(True, True) == 2
    with pytest.raises(ValueError, match="queried"):
        shaped_reward(True, None)


# ---------------------------------------------------------------- dynamic strategy pruning


def test_pruning_never_removes_an_unexplored_strategy():
    embed = lambda s: multi_hot(s, N)  # noqa: E731
    pr = DynamicStrategyPruner(embed, sim_threshold=0.85)
    rng = np.random.default_rng(5)
    cands = [tuple(rng.choice(N, int(rng.integers(1, 7)), replace=False)) for _ in range(400)]
    assert all(pr.check(s, lambda: True) is None for s in cands)  # empty pool: nothing is redundant
    for s in cands[:10]:
        pr.add(s)
    for s in cands:
        v = embed(s) / np.linalg.norm(embed(s))
        sims = [float(v @ (embed(p) / np.linalg.norm(embed(p)))) for p in pr.pool]
        pen = pr.check(s, lambda: True)
        if max(sims) <= 0.85:  # unexplored (not within c_1 of anything found): never pruned
            assert pen is None
        else:
            assert pen == pr.div_penalty
    assert pr.check(cands[0], lambda: True) == pr.div_penalty  # a found strategy is redundant


def test_pruning_checks_diversity_before_consistency():
    pr = DynamicStrategyPruner(lambda s: multi_hot(s, N), 0.85, div_penalty=-1.0, cons_penalty=-0.5)
    pr.add((1, 2, 3))
    called = []
    assert pr.check((1, 2, 3), lambda: called.append(1) or True) == -1.0 and not called  # judge never run
    assert pr.check((7, 8), lambda: False) == -0.5
    assert pr.pruned == {"diversity": 1, "consistency": 1}
    with pytest.raises(ValueError, match="penalties"):
        DynamicStrategyPruner(lambda s: s, 0.85, div_penalty=0.0)


def test_dsp_pruned_strategies_cost_no_target_query():
    env = RedTeamEnv(W, "train")
    cfg = AutoRTConfig(use_dsp=True, use_prt=False, target_budget=300, seed=0)
    torch.manual_seed(0)
    tr = AutoRT(StrategyPolicy(N, W.cfg.max_len), env, cfg)
    tr.train()
    assert env.target_queries == 300
    assert tr.samples == env.target_queries + sum(tr.pruner.pruned.values())
    assert tr.pruner.pruned["consistency"] > 0
    with pytest.raises(ValueError, match="downgrade"):
        AutoRT(StrategyPolicy(N, W.cfg.max_len), RedTeamEnv(W), AutoRTConfig(use_prt=True))


# ---------------------------------------------------------------- FIR


def test_first_inverse_rate_by_hand():
    # e = 1 0 1 1 0 0: positions 0, 2, 3 hold a 1 with a later 0 -> 3 / 6
    assert first_inverse_rate([1, 0, 1, 1, 0, 0]) == 0.5
    assert first_inverse_rate([0, 0, 1, 1]) == 0.0  # broken on the easy end only
    assert first_inverse_rate([1, 1, 1]) == 0.0 and first_inverse_rate([0, 0]) == 0.0
    assert first_inverse_rate([1, 0]) == 0.5
    # ordered by ease (ascending), ties resolved 0s first: ease 0 holds (1, 0) -> 0 1; then ease .5 holds 0
    assert first_inverse_rate([1, 0, 0, 1], ease=[0.0, 0.0, 0.5, 1.0]) == 0.25
    assert first_inverse_rate([1, 0, 1, 1], ease=[0.0, 0.0, 0.5, 1.0]) == 0.0
    with pytest.raises(ValueError, match="0/1"):
        first_inverse_rate([2, 0])


def test_select_downgrade_by_hand():
    assert select_downgrade([0.0, 0.0, 0.01, 0.2, 0.25]) == 3  # largest jump M_3 -> M_4: keep M_3
    assert select_downgrade([0.0, 0.3, 0.31]) == 1
    assert select_downgrade([0.2, 0.1, 0.1]) == 3  # never rises: the weakest model
    with pytest.raises(ValueError, match="at least two"):
        select_downgrade([0.1])


def test_fir_of_the_world_series_jumps_after_the_last_nested_model():
    from iclr26.papers.autort import CONFIGS
    from iclr26.papers.autort.experiment import _fir

    firs = _fir(W, CONFIGS["quick"], 0)
    assert firs[:4] == [0.0] * 4 and firs[4] > 0.05 and firs[5] > firs[4]
    assert select_downgrade(firs) == 4


# ---------------------------------------------------------------- PPO step and metrics


def test_ppo_step_raises_the_rewarded_strategy():
    torch.manual_seed(0)
    pol = StrategyPolicy(N, W.cfg.max_len)
    tr = AutoRT(pol, RedTeamEnv(W), AutoRTConfig(use_dsp=False, use_prt=False, kl_coef=0.0, lr=1e-2))
    toks = to_tokens([(1, 2), (3, 4, 5), (6,), (7, 8)], W.cfg.max_len, N)
    before = pol.log_prob(toks).detach()
    tr._update(toks, torch.tensor([1.0, 0.0, 0.0, 0.0]))
    after = pol.log_prob(toks).detach()
    assert after[0] > before[0] and (after[1:] - before[1:]).mean() < after[0] - before[0]
    # sampled sequences are valid strategies and their log-probs are normalised over all lengths-1 sequences
    s = pol.sample(64)
    assert ((s[:, 0] != N) & (s[:, -1] == N)).all()
    one = to_tokens([(t,) for t in range(N)], W.cfg.max_len, N)
    p_end = torch.exp(pol.log_prob(one)).sum()
    assert 0 < p_end < 1


def test_asr_top_k_and_sed():
    asr = {frozenset({1}): 0.5, frozenset({2}): 0.2, frozenset({3}): 0.9}
    val, top = asr_top_k(
        [(1,), (2,), (3,), (1,)], lambda c: np.array([asr[s] for s in c]), lambda c: np.array([asr[s] for s in c]), k=2
    )
    assert math.isclose(val, 0.7) and top == [frozenset({3}), frozenset({1})]
    val4, _ = asr_top_k([(1,)], lambda c: np.array([0.5]), lambda c: np.array([0.5]), k=4)
    assert math.isclose(val4, 0.125)  # missing slots count as 0
    assert semantic_diversity(np.eye(3)) == 0.0 and semantic_diversity(np.ones((3, 2))) == pytest.approx(1.0)


# ---------------------------------------------------------------- smoke run


def test_smoke_run():
    from iclr26.papers.autort import CLAIMS, CONFIGS, METRICS
    from iclr26.papers.autort.experiment import run

    class Ctx:
        def log(self, msg):
            pass

    m = run(CONFIGS["smoke"], 0, Ctx())
    for c in CLAIMS:
        for ch in c.checks:
            for name in (ch.lhs, ch.rhs):
                if isinstance(name, str):
                    assert name in m and name in METRICS and math.isfinite(m[name])
    assert m["oracle_asr"] > m["fs_asr"]
    assert m["fir_pick"] == 4


# ---------------------------------------------------------------- the generator on an HF causal LM


@pytest.fixture(params=["gpt2", "llama", "qwen2"])
def lm_policy(request):
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.autort import LMStrategyPolicy

    model = tiny_model(request.param, vocab_size=64, seed=1)
    return LMStrategyPolicy(model, n_prims=3, max_len=2, token_ids=[10, 11, 12, 13])


def every_strategy(n, max_len):
    out = [(a,) for a in range(n)]
    if max_len >= 2:
        out += [(a, b) for a in range(n) for b in range(n)]
    return out


def test_lm_policy_is_a_distribution_over_strategies(lm_policy):
    """exp(log_prob) sums to 1 over every valid strategy, and sampling draws them at those probabilities."""
    toks = to_tokens(every_strategy(3, 2), 2, 3)
    p = torch.exp(lm_policy.log_prob(toks))
    assert p.sum().item() == pytest.approx(1.0, abs=1e-5)
    s = lm_policy.sample(4000, generator=torch.Generator().manual_seed(0))
    assert ((s[:, 0] != 3) & (s[:, -1] == 3)).all()
    rows = [tuple(r) for r in toks.tolist()]
    freq = torch.tensor([sum(tuple(r) == row for r in s.tolist()) for row in rows], dtype=torch.float32) / 4000
    assert 0.5 * (freq - p.detach()).abs().sum() < 0.05  # total variation: sample() and log_prob() agree
    # the LM's own logits decide it: a different model gives other probabilities
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.autort import LMStrategyPolicy

    other = LMStrategyPolicy(tiny_model("llama", vocab_size=64, seed=7), 3, 2, token_ids=[10, 11, 12, 13])
    assert not torch.allclose(torch.exp(other.log_prob(toks)), p, atol=1e-3)


def test_ppo_step_on_an_lm_generator_raises_the_rewarded_strategy(lm_policy):
    tr = AutoRT(lm_policy, RedTeamEnv(W), AutoRTConfig(use_dsp=False, use_prt=False, kl_coef=0.0, lr=3e-3))
    toks = to_tokens([(0, 1), (2,), (1,), (2, 2)], 2, 3)
    before = lm_policy.log_prob(toks).detach()
    tr._update(toks, torch.tensor([1.0, 0.0, 0.0, 0.0]))
    after = lm_policy.log_prob(toks).detach()
    assert after[0] > before[0] and (after[1:] - before[1:]).mean() < after[0] - before[0]


def test_autort_trains_an_lm_generator_on_the_world():
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.autort import LMStrategyPolicy

    model = tiny_model("llama", vocab_size=64, seed=0)
    pol = LMStrategyPolicy(model, N, W.cfg.max_len)
    w0 = [p.detach().clone() for p in model.parameters()]
    env = RedTeamEnv(W, "train", downgrade=4)
    hist = AutoRT(pol, env, AutoRTConfig(target_budget=40, batch_size=16, seed=0)).train()
    assert hist and env.target_queries <= 40
    assert any(not torch.equal(a, b) for a, b in zip(w0, model.parameters()))


def test_lm_policy_from_words_and_errors():
    from iclr26.rlft.autort import LMStrategyPolicy

    class Tok:  # one token per known word, two for anything else
        vocab = {" a": 5, " b": 6, " end": 7, "Go:": 9}

        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": [self.vocab[text]] if text in self.vocab else [1, 2]}

    from iclr26.lm.tiny import tiny_model

    model = tiny_model("gpt2", vocab_size=16)
    pol = LMStrategyPolicy.from_words(model, Tok(), [" a", " b"], " end", "Go:", max_len=2)
    assert pol.ids.tolist() == [5, 6, 7] and pol.prompt.tolist() == [9] and pol.end == 2
    with pytest.raises(ValueError, match="exactly one token"):
        LMStrategyPolicy.from_words(model, Tok(), [" a", " zebra"], " end", "Go:", max_len=2)
    with pytest.raises(ValueError, match="distinct"):
        LMStrategyPolicy(model, 2, 2, token_ids=[1, 1, 2])
    with pytest.raises(ValueError, match="vocabulary"):
        LMStrategyPolicy(model, 2, 2, token_ids=[1, 2, 99])
