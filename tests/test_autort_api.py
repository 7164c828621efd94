"""AUTO-RT's public API on a real LM's terms: the query budget counts downgrade queries, the default learning rate
comes from the generator, a diverging update is a clear error, primitive words are chosen from the tokenizer, and
PPO's update equals an independent implementation of the clipped objective with the k3 KL penalty."""

import copy

import numpy as np
import pytest
import torch

from iclr26.rlft.autort import (
    AutoRT,
    AutoRTConfig,
    LMStrategyPolicy,
    PolicyDivergedError,
    StrategyPolicy,
    first_inverse_rate,
    to_tokens,
)
from iclr26.rlft.autort.world import RedTeamEnv, RedTeamWorld

W = RedTeamWorld(0)
N = W.cfg.n_prims


def test_downgrade_queries_count_toward_the_budget():
    torch.manual_seed(0)
    env = RedTeamEnv(W, "train", downgrade=4)
    tr = AutoRT(StrategyPolicy(N, W.cfg.max_len), env, AutoRTConfig(target_budget=200, seed=0))
    tr.train()
    assert env.downgrade_queries > 0 and tr.queries == env.target_queries + env.downgrade_queries
    assert 200 <= tr.queries <= 201  # a PRT strategy can spend its second query past the line
    free = RedTeamEnv(W, "train", downgrade=4)
    cfg = AutoRTConfig(target_budget=200, seed=0, count_downgrade_queries=False)
    AutoRT(StrategyPolicy(N, W.cfg.max_len), free, cfg).train()
    assert free.target_queries <= 200 < free.downgrade_queries  # the paper's accounting: downgrades are free


def test_default_lr_comes_from_the_generator_and_bad_values_are_rejected():
    from iclr26.lm.tiny import tiny_model

    assert AutoRT(StrategyPolicy(N, 6), RedTeamEnv(W, downgrade=4)).lr == StrategyPolicy.default_lr == 3e-3
    lm = LMStrategyPolicy(tiny_model("llama", vocab_size=40, seed=0), N, 6)
    assert AutoRT(lm, RedTeamEnv(W), AutoRTConfig(use_prt=False)).lr == LMStrategyPolicy.default_lr == 1e-6
    assert AutoRT(lm, RedTeamEnv(W), AutoRTConfig(use_prt=False, lr=2e-4)).lr == 2e-4
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="lr must be a finite number"):
            AutoRTConfig(lr=bad)
    with pytest.raises(ValueError, match="kl_coef"):
        AutoRTConfig(kl_coef=float("nan"))


def test_a_diverging_update_is_a_clear_error():
    torch.manual_seed(0)
    pol = StrategyPolicy(N, W.cfg.max_len)
    tr = AutoRT(pol, RedTeamEnv(W), AutoRTConfig(use_dsp=False, use_prt=False, lr=1e30))
    toks = to_tokens([(1, 2), (3,)], W.cfg.max_len, N)
    with pytest.raises(ValueError, match="rewards must be finite"):
        tr._update(toks, torch.tensor([float("nan"), 1.0]))
    with pytest.raises(PolicyDivergedError, match=r"diverged .* at lr 1e\+30: lower AutoRTConfig.lr"):
        tr._update(toks, torch.tensor([0.0, 1.0]))
    with torch.no_grad():
        pol.out.bias.fill_(float("nan"))
    with pytest.raises(PolicyDivergedError, match="probabilities are NaN"):
        pol.sample(4)


class WordTok:
    """A word-level tokenizer: one id per known word (leading spaces ignored), <unk> = 1 for anything else."""

    def __init__(self, words):
        self.vocab = {"<pad>": 0, "<unk>": 1, "<bos>": 2, "<eos>": 3, **{w: i + 4 for i, w in enumerate(words)}}
        self.inv = {i: w for w, i in self.vocab.items()}
        self.pad_token_id, self.unk_token_id, self.bos_token_id, self.eos_token_id = 0, 1, 2, 3

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [self.vocab.get(w, 1) for w in text.split()]}

    def decode(self, ids):
        return " ".join(self.inv[i] for i in ids)

    def __len__(self):
        return len(self.vocab)


def test_primitive_words_are_chosen_from_the_tokenizer():
    from iclr26.lm.tiny import tiny_model

    words = ["Strategy:", "end", "red", "green", "dog", "zz", "cat", "tree", "qq"]
    tok = WordTok(words)
    model = tiny_model("llama", vocab_size=len(tok), seed=0)
    pol = LMStrategyPolicy.from_tokenizer(model, tok, n_prims=6, max_len=3)
    assert pol.words[-1] == " end" and len(set(pol.words)) == 7
    assert pol.words[:5] == [" red", " green", " cat", " dog", " tree"]  # the built-in list first, in its order ...
    assert pol.words[5] == "zz"  # ... then the vocabulary, in id order
    assert pol.ids.tolist() == [tok.vocab[w.strip()] for w in pol.words] and 1 not in pol.ids.tolist()  # no <unk>
    with pytest.raises(ValueError, match="only 8 single-token words; 12 are needed"):
        LMStrategyPolicy.from_tokenizer(model, tok, n_prims=11, max_len=3)
    with pytest.raises(ValueError, match=r"'b c' is 2 tokens .* exactly one token .*from_tokenizer"):
        LMStrategyPolicy.from_words(model, WordTok(["a", "b", "c", "end"]), ["a", "b c"], "end", "Strategy:", 2)


def ppo_reference_step(policy, ref, tokens, rewards, lr, clip, kl_coef, epochs):
    """An independent PPO step: advantages standardised with the unbiased std, ratio to the policy before the step,
    min(r A, clip(r) A), k3 KL estimate exp(ref - lp) - 1 - (ref - lp); torch's Adam."""
    adv = (rewards - rewards.mean()) / (rewards.std(unbiased=True) + 1e-8)
    with torch.no_grad():
        old, lp_ref = policy.log_prob(tokens), ref.log_prob(tokens)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    for _ in range(epochs):
        lp = policy.log_prob(tokens)
        ratio = (lp - old).exp()
        surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
        kl = ((lp_ref - lp).exp() - 1 - (lp_ref - lp)).mean()
        loss = -surrogate.mean() + kl_coef * kl
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("term", ["all", "no-clip", "no-kl"])
def test_ppo_update_equals_an_independent_implementation(term):
    torch.manual_seed(0)
    pol = StrategyPolicy(N, W.cfg.max_len)
    torch.manual_seed(1)
    ref = StrategyPolicy(N, W.cfg.max_len)  # a KL reference unlike the policy, so the KL term matters
    toks = to_tokens([(1, 2), (3, 4, 5), (6,), (7, 8), (9,), (2, 3)], W.cfg.max_len, N)
    rewards = torch.tensor([1.0, 0.0, 2.0, -1.0, 0.0, 1.0])
    cfg = AutoRTConfig(use_dsp=False, use_prt=False, lr=0.05, clip=0.2, kl_coef=0.5, ppo_epochs=3)
    tr = AutoRT(copy.deepcopy(pol), RedTeamEnv(W), cfg)
    tr.ref = copy.deepcopy(ref).requires_grad_(False)
    tr._update(toks, rewards)
    mine = copy.deepcopy(pol)
    clip, kl = {"all": (0.2, 0.5), "no-clip": (1e9, 0.5), "no-kl": (0.2, 0.0)}[term]
    ppo_reference_step(mine, ref, toks, rewards, 0.05, clip, kl, 3)
    got = torch.cat([p.flatten() for p in tr.policy.parameters()])
    want = torch.cat([p.flatten() for p in mine.parameters()])
    if term == "all":
        assert torch.allclose(got, want, atol=1e-6)
    else:  # removing a term changes the step: the comparison above can fail
        assert not torch.allclose(got, want, atol=1e-4)


def test_first_inverse_rate_equals_the_definition_by_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(200):
        e = rng.integers(0, 2, int(rng.integers(1, 12)))
        brute = sum(any(e[j] < e[i] for j in range(i + 1, len(e))) for i in range(len(e))) / len(e)
        assert first_inverse_rate(e) == pytest.approx(brute)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_model_option_runs_the_lm_arm_on_a_local_model(tmp_path, arch):
    """`iclr26 run autort --model PATH`: the AUTO-RT arm whose generator is an HF causal LM runs on that model, its
    primitive words chosen from the model's tokenizer (a tiny random model saved to disk, smoke scale)."""
    from dataclasses import replace

    from iclr26.lm.tiny import tiny_model
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers.autort import CLAIMS, CONFIGS
    from iclr26.papers.autort import experiment as ex
    from iclr26.rlft.autort.lm_policy import WORDS

    tok = build_word_tokenizer([" ".join(WORDS) + " end Strategy:"])
    tiny_model(arch, seed=0, vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)

    class Ctx:
        model, quiet = str(tmp_path), True

        def log(self, msg):
            pass

    cfg = replace(CONFIGS["smoke"], budget=96, div_budget=0, max_samples_factor=2.0, final_samples=16)
    m = ex.run(cfg, 0, Ctx())
    model, _ = ex._MODELS[str(tmp_path)]
    assert model.config.model_type == arch and model.config.hidden_size == 32  # ran on the given model
    lm_claim = next(c for c in CLAIMS if c.id == "autort-lm")
    for name in lm_claim.metrics():
        assert np.isfinite(m[name]), name
    assert 0.9 <= m["autort_lm_queries"] / cfg.budget <= 1.1 and m["autort_lm_hp"] == cfg.model_lr_grid[0]


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").environ.get("ICLR26_SLOW") != "1", reason="loads SmolLM2-135M; set ICLR26_SLOW=1")
def test_use_it_on_smollm2():
    """The docs page's examples on SmolLM2-135M itself: the default learning rate trains the 135M generator without
    diverging (every update moves it, finitely), within the budget, on words chosen from its tokenizer."""
    import math
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "papers" / "autort.md"
    ns: dict = {"__name__": "__docs__"}
    for code in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
        exec(compile(code, "autort.md", "exec"), ns)
    trainer, policy, tok = ns["trainer"], ns["policy"], ns["tok"]
    assert trainer.policy.model.config.num_hidden_layers == 30  # SmolLM2-135M, not a micro model
    assert trainer.lr == 1e-6 and len(ns["history"]) >= 2
    assert all(0 < h["kl"] < 1 and math.isfinite(h["reward"]) for h in ns["history"])
    assert trainer.queries <= 97 and trainer.samples >= 96
    ids = [tok(w, add_special_tokens=False)["input_ids"] for w in policy.words]
    assert all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == len(ids) == 33
