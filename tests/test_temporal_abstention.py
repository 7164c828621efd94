"""Tests of the abstention-aware reward, the temporal world, the reward inside TRL's GRPOTrainer, and a smoke run."""

from __future__ import annotations

import os
import random

import pytest
import torch
import transformers

from iclr26.rlft.abstention import (
    AbstentionReward,
    abstention_metrics,
    em_only_reward,
    exact_word_tokenizer,
    extract_answer,
)
from iclr26.rlft.abstention.world import NO_ANSWER, Tenure, answer_for, make_item, make_temporal_qa, vocabulary


def _c(answer, think="x"):
    return f"<think>\n{think}\n</think>\n\n<answer>\n{answer}\n</answer>"


# --- the reward: one value per case of the released script -------------------------------------------------------
CASES = [
    ("correct answer, exact layout", _c("Acme"), "Acme", 0.5 + 1.0 + 1.0),
    ("correct answer, other case", _c("acme"), "Acme", 0.5 + 1.0 + 1.0),
    ("wrong answer", _c("Boreal"), "Acme", 0.5),
    ("partial answer: ROUGE-L only", _c("Acme Corp"), "Acme", 0.5 + 2 / 3),
    ("correct abstention", _c("No Answer"), NO_ANSWER, 0.5 + 1.0),
    ("abstention, wrong case: exact string needed", _c("no answer"), NO_ANSWER, 0.5),
    ("answers an unanswerable", _c("Acme"), NO_ANSWER, 0.5),
    ("false abstention", _c("No Answer"), "Acme", 0.5),
    ("false abstention, lower case", _c("no answer"), "Acme", 0.5),
    ("no answer block", "<think>\nx\n</think>\n\nAcme", "Acme", 0.0),
    ("answer block without think: no format bonus", "<answer>\nAcme\n</answer>", "Acme", 2.0),
    ("extra text after the answer: no format bonus", _c("Acme") + " ok", "Acme", 2.0),
    ("single newlines: no format bonus, no answer block", "<think>x</think><answer>Acme</answer>", "Acme", 0.0),
]


@pytest.mark.parametrize("name,completion,gold,value", CASES, ids=[c[0] for c in CASES])
def test_reward_cases(name, completion, gold, value):
    r = AbstentionReward()
    assert r([completion], answer=[gold]) == [pytest.approx(value)]
    conv = [[{"role": "assistant", "content": completion}]]  # conversational completions give the same value
    assert r(conv, answer=[gold]) == [pytest.approx(value)]


def test_reward_funcs_sum_and_em_only_control():
    r = AbstentionReward()
    comps, golds = [_c("Acme"), _c("No Answer"), _c("No Answer")], ["Acme", NO_ANSWER, "Acme"]
    summed = [sum(v) for v in zip(*(f(comps, answer=golds) for f in r.reward_funcs))]
    assert summed == pytest.approx([2.5, 1.5, 0.5])
    # control: without the abstention bonus a correct abstention pays only the format bonus
    assert em_only_reward()(comps, answer=golds) == pytest.approx([1.5, 0.5, 0.5])


def test_reward_errors():
    with pytest.raises(KeyError, match="answer"):
        AbstentionReward().answer_reward([_c("Acme")], output=["Acme"])
    with pytest.raises(ValueError, match="abstain_bonus"):
        AbstentionReward(abstain_bonus=-1)
    with pytest.raises(ValueError, match="finite"):
        AbstentionReward(wrong_penalty=float("nan"))
    # 2 completions and 1 gold: an error, not one reward (zip truncation)
    with pytest.raises(ValueError, match="2 completions but 1 gold"):
        AbstentionReward()([_c("Acme"), _c("Acme")], answer=["Acme"])
    with pytest.raises(TypeError, match="strings"):
        AbstentionReward()([_c("Acme")], answer=[None])


def test_metrics_hand_values():
    comps = [_c("Acme"), _c("No Answer"), _c("Acme"), _c("No Answer"), "garbage"]
    golds = ["Acme", NO_ANSWER, NO_ANSWER, "Boreal", "Boreal"]
    m = abstention_metrics(comps, golds, ["easy", "unanswerable", "unanswerable", "hard", "hard"])
    assert m["em"] == pytest.approx(2 / 5)
    assert m["tp_unanswerable"] == pytest.approx(1 / 2)
    assert m["over_abstention"] == pytest.approx(1 / 3)
    assert m["em_answerable"] == pytest.approx(1 / 3)
    assert m["em_hard"] == 0.0 and m["em_easy"] == 1.0
    assert m["format_rate"] == pytest.approx(4 / 5)
    assert extract_answer("garbage") is None


# --- the world: answers correct by construction -------------------------------------------------------------------
def _brute(tenures, lo, hi):
    """Independent check: the org that holds every year of [lo, hi], by enumerating the years."""
    orgs = {t.org for t in tenures if all(t.start <= y <= t.end for y in range(lo, hi + 1))}
    return orgs.pop() if orgs else NO_ANSWER


def test_world_answers_by_interval_checks():
    items = make_temporal_qa(300, unanswerable_frac=0.3, seed=5)
    for it in items:
        ts = sorted(it.tenures, key=lambda t: t.start)
        assert all(a.end < b.start - 1 for a, b in zip(ts, ts[1:]))  # non-overlapping, a gap year between tenures
        assert it.answer == _brute(it.tenures, it.lo, it.hi)
        assert (it.answer == NO_ANSWER) == (it.kind == "unanswerable")
        if it.qtype == "after":  # the asked year is N years after leaving the named org
            (org,) = [t for t in it.tenures if t.org == it.after_org]
            assert it.lo == org.end + it.after_n
        for t in it.tenures:  # the context states every tenure
            assert str(t.start) in it.context and str(t.end) in it.context and t.org in it.context
        assert it.rationale.endswith(f"<answer>\n{it.answer}\n</answer>")
        assert AbstentionReward()([it.rationale], answer=[it.answer]) == [2.5 if it.answer != NO_ANSWER else 1.5]
    assert sum(it.kind == "unanswerable" for it in items) == 90
    assert {it.qtype for it in items} == {"year", "between", "after"}
    assert make_temporal_qa(20, seed=1) == make_temporal_qa(20, seed=1)


def test_world_edge_cases_and_errors():
    ts = (Tenure("A", 1990, 1994), Tenure("B", 1996, 2000))
    assert answer_for(ts, 1994, 1994) == "A" and answer_for(ts, 1995, 1995) == NO_ANSWER
    assert answer_for(ts, 1993, 1996) == NO_ANSWER and answer_for(ts, 1996, 2000) == "B"
    with pytest.raises(ValueError, match="kind"):
        make_item(random.Random(0), "medium")
    with pytest.raises(ValueError, match="unanswerable_frac"):
        make_temporal_qa(10, unanswerable_frac=1.5)


def test_tokenizer_round_trip():
    tok = exact_word_tokenizer(vocabulary())
    for it in make_temporal_qa(50, seed=2):
        text = it.prompt + it.rationale
        ids = tok(text)["input_ids"]
        assert tok.unk_token_id not in ids
        assert tok.decode(ids) == text  # exact, newlines included: the format regex can be satisfied


# --- the reward inside TRL's GRPOTrainer: advantages, loss and gradient by hand on a fixed batch ---------------------
FIXED = [  # (gold, four completions) -> rewards (2.5, 0.5, 0.5, 0) and (1.5, 0.5, 1.5, 0.5)
    ("Acme", [_c("Acme"), _c("Boreal", "no . no"), _c("No Answer", "no"), "<think>\nAcme"]),
    (NO_ANSWER, [_c("No Answer"), _c("Acme", "yes . no . no"), _c("No Answer", "no . no"), _c("Boreal", "so")]),
]


def _grpo_fixed_batch(reward, out_dir):
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.abstention import abstention_grpo_trainer, grpo_config, grpo_dataset

    tok = exact_word_tokenizer(vocabulary())
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)
    ds = grpo_dataset(
        [
            {"prompt": f"Question: Where did Alice work in {y} ?\n", "answer": g}
            for y, (g, _) in zip((1990, 1999), FIXED)
        ]
    )
    comp = {
        p: [tok(c + "<eos>", add_special_tokens=False)["input_ids"] for c in cs]
        for p, (_, cs) in zip(ds["prompt"], FIXED)
    }

    def rollout(prompts, trainer):  # TRL's rollout hook: fixed completions instead of sampling (same per prompt order)
        seen: dict[str, int] = {}
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for p in prompts:
            k = seen[p] = seen.get(p, -1) + 1
            ids = comp[p][k]
            out["prompt_ids"].append(tok(p, add_special_tokens=False)["input_ids"])
            out["completion_ids"].append(ids)
            out["logprobs"].append([0.0] * len(ids))
        return out

    args = grpo_config(str(out_dir), use_cpu=True, max_completion_length=24, beta=0.0, per_device_train_batch_size=8)
    trainer = abstention_grpo_trainer(model, tok, ds, args, reward=reward, rollout_func=rollout)
    batch = [ds[0]] * 4 + [ds[1]] * 4
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); one accumulation step here
    model.train()
    out = trainer._generate_and_score_completions(batch)
    return trainer, model, out, tok


@pytest.mark.parametrize("reward", [AbstentionReward(), em_only_reward()], ids=["abstention", "em-only"])
def test_grpo_trainer_loss_by_hand(reward, tmp_path):
    trainer, model, out, tok = _grpo_fixed_batch(reward, tmp_path)
    golds = [g for g, cs in FIXED for _ in cs]
    texts = [c for _, cs in FIXED for c in cs]
    r = torch.tensor(reward(texts, answer=golds)).view(2, 4)
    adv = (r - r.mean(1, keepdim=True)).view(-1)  # Dr.GRPO: A_i = R_i - mean_j R_j, no std scaling
    torch.testing.assert_close(out["advantages"].float(), adv)

    model.zero_grad()
    loss = trainer.compute_loss(model, out)
    loss.backward()
    g_trl = model.lm_head.weight.grad.clone()

    # by hand: ratio = 1 on the first inner step, so L = -(1 / (N * L_max)) sum_i A_i sum_t log pi(o_it) (value: the
    # ratio is exp(logp - logp.detach()) = 1, hence L = -sum_i A_i |o_i| / (N * L_max))
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    mask = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=mask).logits[:, out["prompt_ids"].shape[1] - 1 : -1]
    logp = torch.log_softmax(logits.float(), -1).gather(-1, out["completion_ids"].unsqueeze(-1)).squeeze(-1)
    cm = out["completion_mask"].float()
    n_max = trainer.max_completion_length
    surrogate = -(adv[:, None] * logp * cm).sum() / (len(adv) * n_max)
    surrogate.backward()
    value = -(adv * cm.sum(1)).sum() / (len(adv) * n_max)
    torch.testing.assert_close(loss.detach(), value, rtol=1e-5, atol=1e-6)
    # TRL's fused lm-head log-probs differ from a plain log-softmax by ~1e-3 per token: compare gradients by norm
    g_hand = model.lm_head.weight.grad
    assert (g_trl - g_hand).norm() < 0.02 * g_hand.norm()
    assert g_hand.norm() > 0  # the reward moves the policy


def test_abstention_bonus_changes_the_update(tmp_path):
    """Control: the same batch under the EM-only reward gives other advantages."""
    _, _, a, _ = _grpo_fixed_batch(AbstentionReward(), tmp_path / "a")
    _, _, b, _ = _grpo_fixed_batch(em_only_reward(), tmp_path / "b")
    assert not torch.allclose(a["advantages"], b["advantages"])


# --- smoke run of the reproduction ------------------------------------------------------------------------------------
def test_smoke_run(tmp_path, monkeypatch):
    from iclr26.core.runs import run_paper

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))  # the smoke base policy is trained here, not cached
    res = run_paper("temporal-abstention", scale="smoke", out=tmp_path, quiet=True)
    m = res.per_seed[0]
    assert m["teacher_em"] == 1.0 and m["teacher_format"] == 1.0
    for arm in ("sft", "grpo", "emonly", "u80"):
        assert 0.0 <= m[f"{arm}_em"] <= 1.0
    from iclr26.papers import temporal_abstention as card

    assert {c["id"] for c in res.verdicts} == {c.id for c in card.CLAIMS}
    assert {c["id"]: c["verdict"] for c in res.verdicts}["smollm2-reward-rises"] == "not run"  # opt-in (real_steps)
    assert m["grpo_steps"] == m["emonly_steps"] == m["u80_steps"] == 2 and m["steps_spread"] == 0.0
    assert all(0.0 <= m[f"{a}_changed"] <= 1.0 for a in ("grpo", "emonly", "u80"))
    # every seed's SFT policy and GRPO arms are cached units; a rerun loads them and gives the same metrics
    names = sorted(p.name.rsplit("-", 1)[0] for p in (tmp_path / "cache").glob("threads-*/abstention/*.pt"))
    assert names == sorted(f"s{s}-{n}" for s in (0, 1) for n in ("sft", "grpo", "emonly", "u80"))
    again = run_paper("temporal-abstention", scale="smoke", out=tmp_path / "again", quiet=True)
    for s in (0, 1):
        assert {k: v for k, v in again.per_seed[s].items() if "seconds" not in k} == {
            k: v for k, v in res.per_seed[s].items() if "seconds" not in k
        }


def test_units_are_the_stages_and_an_idle_worker_trains_a_later_seeds(tmp_path, monkeypatch):
    """A cached SFT policy is exactly `cot_sft` and a cached arm exactly `grpo` on the seed's data, whatever the
    caller's random state; `prepare` trains a later seed's units only (never earlier ones) and skips an arm whose lock
    another process holds."""
    from filelock import FileLock

    from iclr26.papers.temporal_abstention import CONFIGS, units
    from iclr26.papers.temporal_abstention.policy import base_policy, start_policy, tokenizer
    from iclr26.papers.temporal_abstention.stages import cot_sft, grpo

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    cfg, tok, lrs = CONFIGS["smoke"], tokenizer(), {"sft_lr": 1e-3, "grpo_lr": 2e-4}
    base, _ = base_policy(cfg, tok, progress=False)  # no base at this VERSION: each seed's SFT starts from its init
    held = FileLock(str(units.arm_path(cfg, 2, "emonly", lrs).with_suffix(".lock")))
    held.acquire()  # "another process" is training seed 2's EM-only arm
    try:
        assert units.arm_unit(cfg, 2, "emonly", base, tok, lrs, wait=False) is None
        units.prepare(cfg, 1, (0, 1, 2), base, tok, lrs)
    finally:
        held.release()
    paths = {(s, n): units.sft_path(cfg, s, lrs) if n == "sft" else units.arm_path(cfg, s, n, lrs)
             for s in (0, 1, 2) for n in ("sft", *units.ARMS)}  # fmt: skip
    assert {k for k, p in paths.items() if p.exists()} == {(2, "sft"), (2, "grpo"), (2, "u80")}
    torch.manual_seed(999)
    d = units.seed_data(cfg, 2)
    sft, _, _ = cot_sft(start_policy(cfg, tok, base, 2), tok, d["sft"], d["val"], cfg, 2, None, lr=lrs["sft_lr"])
    for k, v in sft.state_dict().items():
        assert torch.equal(units.sft_unit(cfg, 2, base, tok, lrs)["state"][k], v), k
    torch.manual_seed(998)
    items, reward = units.arm_setup(cfg, 2, "u80")
    arm, first, last, info = grpo(sft, tok, items, reward, cfg, 2, None, lr=lrs["grpo_lr"])
    unit = units.arm_unit(cfg, 2, "u80", base, tok, lrs)
    for k, v in arm.state_dict().items():
        assert torch.equal(unit["state"][k], v), k
    assert (unit["reward_first"], unit["reward_last"]) == (first, last)
    assert unit["steps"] == cfg.grpo_steps and sum(it.kind == "unanswerable" for it in items) > len(items) / 2


def test_kl_reference_is_the_policy_as_passed(tmp_path):
    """TRL reloads the reference from the config path; after in-memory fine-tuning it must still equal the policy."""
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.abstention import abstention_grpo_trainer, grpo_config, grpo_dataset

    tok = exact_word_tokenizer(vocabulary())
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)
    model.save_pretrained(tmp_path / "before")
    model.config._name_or_path = str(tmp_path / "before")  # as if loaded from there ...
    with torch.no_grad():
        model.lm_head.weight.add_(1.0)  # ... then fine-tuned in memory (stage 1)
    ds = grpo_dataset([{"prompt": "Question: Where did Alice work in 1990 ?\n", "answer": "Acme"}])
    args = grpo_config(str(tmp_path / "out"), use_cpu=True, max_completion_length=8, per_device_train_batch_size=4)
    trainer = abstention_grpo_trainer(model, tok, ds, args)
    assert trainer.beta == 0.01
    torch.testing.assert_close(trainer.ref_model.lm_head.weight, model.lm_head.weight)


def test_clone_runs_its_own_weights_after_trl_patched_the_original(tmp_path):
    """The reproduction's policy copy (`stages.clone`): after a TRL trainer was built on a policy, a copy whose
    weights change must compute with *its* weights (a `copy.deepcopy` kept the original's bound `forward`)."""
    import copy

    from iclr26.lm.tiny import tiny_model
    from iclr26.papers.temporal_abstention.stages import clone
    from iclr26.rlft.abstention import abstention_grpo_trainer, grpo_config, grpo_dataset

    tok = exact_word_tokenizer(vocabulary())
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)
    ds = grpo_dataset([{"prompt": "Question: Where did Alice work in 1990 ?\n", "answer": "Acme"}])
    args = grpo_config(str(tmp_path / "out"), use_cpu=True, max_completion_length=8, per_device_train_batch_size=4)
    trainer = abstention_grpo_trainer(model, tok, ds, args)  # patches the instance, as in stage 2
    # an in-memory model without a checkpoint path gets its KL reference from its own weights (Path("") is no path)
    torch.testing.assert_close(trainer.ref_model.lm_head.weight, model.lm_head.weight)
    ids = torch.tensor([[tok.bos_token_id, 5, 6, 7]])
    with torch.no_grad():
        before = model(input_ids=ids).logits
        c = clone(model)
        torch.testing.assert_close(c(input_ids=ids).logits, before)  # a faithful copy ...
        c.lm_head.weight.add_(1.0)
        assert not torch.allclose(c(input_ids=ids).logits, before)  # ... that runs its own weights
        d = copy.deepcopy(model)
        d.lm_head.weight.add_(1.0)
        stale = torch.allclose(d(input_ids=ids).logits, before)
    # documents the pitfall where TRL patches `forward` (the reason for `clone`); not asserted across TRL versions
    print("deepcopy keeps the original forward:", stale)


# --- the SmolLM2 check (opt-in `real_steps`): its scoring and metric wiring, on a micro model ----------------------
def test_real_check_scores_by_hand(monkeypatch):
    """`real.score`: format rate, EM, TP, over-abstention and reward of fixed completions, by hand."""
    from iclr26.papers.temporal_abstention import real

    items = [it for it in make_temporal_qa(40, unanswerable_frac=0.5, seed=3)]
    ans = [it for it in items if it.kind != "unanswerable"][:2]
    una = [it for it in items if it.kind == "unanswerable"][:2]
    batch = ans + una
    comps = [ans[0].rationale, _c(NO_ANSWER), una[0].rationale, ans[0].rationale[: -len("</answer>")]]
    seen = {}

    def fake_generate(model, tok, prompts, max_new_tokens, batch_size):
        seen["prompts"], seen["cap"] = prompts, max_new_tokens
        return comps

    monkeypatch.setattr(real, "generate", fake_generate)
    chat_tok = type("Tok", (), {"chat_template": "{{ messages }}"})()
    m, outs = real.score(None, chat_tok, batch)
    assert outs == comps and seen["cap"] == real.MAX_COMPLETION
    assert seen["prompts"][0][0]["role"] == "system" and seen["prompts"][0][1]["content"] == batch[0].prompt
    assert m["format"] == pytest.approx(3 / 4)  # the last one is cut before </answer>
    assert m["em"] == pytest.approx(2 / 4)  # a correct answer and a correct abstention (the last is unanswerable)
    assert m["tp"] == pytest.approx(1 / 2) and m["over_abstention"] == pytest.approx(1 / 2)
    assert m["reward"] == pytest.approx((2.5 + 0.5 + 1.5 + 0.0) / 4)


def _chat_micro(tmp_path):
    """A micro llama and the world's exact tokenizer with a plain chat template (the check's path needs one)."""
    from iclr26.lm.tiny import tiny_model

    tok = exact_word_tokenizer(vocabulary())
    tok.chat_template = (
        "{% for m in messages %}{{ m['content'] }}{% if m['role'] != 'assistant' %}\n{% endif %}{% endfor %}"
    )
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=512)
    model.config.pad_token_id = model.generation_config.pad_token_id = tok.pad_token_id
    model.config.eos_token_id = model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.bos_token_id = None
    return model, tok


def test_real_check_metric_wiring(monkeypatch, tmp_path):
    """`real_model_check` end to end on a micro model: every metric the SmolLM2 claims name is produced and
    finite, the training curve has one reward per GRPO step, and the claims compute a verdict from it."""
    import math

    from iclr26.core.claims import verdict
    from iclr26.lm import zoo
    from iclr26.papers import temporal_abstention as card
    from iclr26.papers.temporal_abstention import real

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))  # the micro SFT adapter is cached here
    monkeypatch.setattr(zoo, "load", lambda name, *a, **k: _chat_micro(tmp_path))
    for name, value in {"N_EVAL": 4, "N_VAL": 2, "MAX_COMPLETION": 24, "SFT_MAX_STEPS": 2, "EVAL_EVERY": 1}.items():
        monkeypatch.setattr(real, name, value)

    class Ctx:
        lines: list = []

        def log(self, msg):
            self.lines.append(msg)

    ctx = Ctx()
    out = real.real_model_check(2, seed=0, ctx=ctx)
    claims = [c for c in card.CLAIMS if c.when == "real_steps"]
    assert {c.id for c in claims} == {"smollm2-testbed", "smollm2-moved", "smollm2-reward-rises"}
    for name in {m for c in claims for m in c.metrics()}:
        assert math.isfinite(out[name]), name
    for k in ("real_reward_first", "real_reward_last", "real_format_first", "real_format_last", "real_target_fit"):
        assert math.isfinite(out[k]) and k in card.METRICS, k
    assert all(k in card.METRICS for k in out)
    assert out["real_reward_gain"] == pytest.approx(out["real_grpo_reward"] - out["real_sft_reward"])
    per_step = [ln for ln in ctx.lines if "rewards per step" in ln]
    assert per_step and per_step[0].count(",") >= 1  # two steps logged
    assert out["real_sft_steps"] in (1.0, 2.0)  # stopped by the format rule or at the cap
    assert any("LoRA SFT step 1" in ln for ln in ctx.lines)  # the stopping rule was evaluated
    for c in claims:  # computes (one seed: inconclusive), never a missing-metric error
        assert verdict(c, [out]).verdict in ("inconclusive", "reproduced", "not reproduced")


def test_short_rationale_keeps_layout_and_answer():
    from iclr26.papers.temporal_abstention.real import short_rationale

    for it in make_temporal_qa(100, unanswerable_frac=0.3, seed=4):
        short = short_rationale(it.rationale)
        assert AbstentionReward()([short], answer=[it.answer]) == AbstentionReward()([it.rationale], answer=[it.answer])
        assert " no ." not in short and len(short) < len(it.rationale)
        assert short.count(" yes ") == (it.answer != NO_ANSWER)  # the tenure that holds the target, if any


def test_real_targets_fit_the_completion_cap_under_smollm2s_tokenizer():
    """Every SFT target of the check (short rationale + end of turn) fits `MAX_COMPLETION` tokens of SmolLM2's
    tokenizer (a truncated rollout has no </answer>, so no reward: the first version's cap of 96 cut 30 % of the
    full rationales)."""
    from transformers import AutoTokenizer

    from iclr26.core.paths import cache_dir
    from iclr26.papers.temporal_abstention import real

    folder = cache_dir() / "models" / "smollm2-135m"
    if (folder / "tokenizer.json").exists():
        tok = AutoTokenizer.from_pretrained(folder)
    elif os.environ.get("ICLR26_SLOW") == "1":  # from the GGUF file: ~13 s CPU
        from iclr26.lm.loading import SMOLLM2_GGUF, smollm2_gguf_folder

        tok = AutoTokenizer.from_pretrained(smollm2_gguf_folder(), gguf_file=SMOLLM2_GGUF)
    else:
        pytest.skip("SmolLM2 not converted yet (run it once, or set ICLR26_SLOW=1 to read the GGUF tokenizer)")
    items = make_temporal_qa(500, unanswerable_frac=0.25, seed=11)
    assert max(real.target_lengths(tok, items)) <= real.MAX_COMPLETION
    full = [len(tok(it.rationale + "<|im_end|>", add_special_tokens=False)["input_ids"]) for it in items]
    assert max(full) > 96  # why the first version (full rationales, cap 96) never earned a reward


def test_cfg_real_only_switch():
    from iclr26.papers.temporal_abstention import CLAIMS, Cfg

    with pytest.raises(ValueError, match="nothing to run"):
        Cfg(micro=False, real_steps=0)
    with pytest.raises(ValueError, match="real_steps"):
        Cfg(real_steps=-1)
    real_only = Cfg(micro=False, real_steps=6)
    want = {"smollm2-testbed", "smollm2-moved", "smollm2-reward-rises"}
    assert {c.id for c in CLAIMS if c.applies(real_only)} == want
    assert not any(c.id.startswith("smollm2") for c in CLAIMS if c.applies(Cfg()))  # quick: opt-in, off


def test_real_lora_grpo_trains_the_adapter_only(monkeypatch, tmp_path):
    """`real.lora_grpo` continues the passed LoRA adapter: after one GRPO step with rewards that differ inside a
    group, the adapter's weights moved and the base weights did not (a no-op stage would leave both unchanged)."""
    from peft import get_peft_model

    from iclr26.papers.temporal_abstention import real
    from iclr26.rlft.abstention import AbstentionReward
    from iclr26.rlft.abstention.world import make_temporal_qa

    class LengthReward(AbstentionReward):  # rewards that vary inside every group: a non-zero advantage
        @property
        def reward_funcs(self):
            return [lambda completions, **kw: [float(len(str(c))) for c in completions]]

    base, tok = _chat_micro(tmp_path)
    model = get_peft_model(base, real.lora_config())
    torch.manual_seed(0)
    for n, p in model.named_parameters():  # LoRA B starts at zero; give it a value so that A gets a gradient
        if "lora_B" in n:
            p.data.normal_(0, 0.02)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    orig = real.abstention_grpo_trainer
    monkeypatch.setattr(real, "abstention_grpo_trainer", lambda *a, **k: orig(*a, reward=LengthReward(), **k))
    monkeypatch.setattr(real, "MAX_COMPLETION", 8)
    trained, log = real.lora_grpo(model, tok, make_temporal_qa(2, seed=3), steps=1, seed=0, lr=1e-2)
    after = dict(trained.named_parameters())
    moved = [n for n in before if "lora_" in n and not torch.equal(before[n], after[n].detach())]
    frozen_moved = [n for n in before if "lora_" not in n and not torch.equal(before[n], after[n].detach())]
    assert moved and not frozen_moved
    assert len(log) == 1


def test_held_out_reward_stopping_stops_restores_and_scores(tmp_path):
    """GRPO trained by `HeldOutRewardStopping`: TRL stops at the first evaluation after `patience` scores without
    gain (not before `min_steps`), `restore` loads the weights of the best step (step 0 = the policy as passed is
    scored too), and a score is the mean reward of the greedy completions."""
    from iclr26.lm.tiny import tiny_model
    from iclr26.rlft.abstention import (
        HeldOutRewardStopping,
        abstention_grpo_trainer,
        generate,
        grpo_config,
        grpo_dataset,
    )

    tok = exact_word_tokenizer(vocabulary())
    prompts, golds = (
        ["Question: Where did Alice work in 1990 ?\n", "Question: Where did Alice work in 1999 ?\n"],
        ["Acme", NO_ANSWER],
    )

    def trained(scores, patience, min_steps):
        torch.manual_seed(0)
        model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)
        ds = grpo_dataset([{"prompt": p, "answer": g} for p, g in zip(prompts, golds)])
        script, seen = iter(scores), {0: {k: v.clone() for k, v in model.state_dict().items()}}
        stop = HeldOutRewardStopping(model, tok, prompts, golds, AbstentionReward(), eval_every=1,
                                     patience=patience, min_steps=min_steps, max_new_tokens=8)  # fmt: skip
        stop.score = lambda: next(script)

        class Snap(transformers.TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                seen[state.global_step] = {k: v.clone() for k, v in model.state_dict().items()}

        args = grpo_config(str(tmp_path / f"o{patience}{min_steps}"), use_cpu=True, max_completion_length=8,
                           per_device_train_batch_size=4, learning_rate=5e-2, max_steps=12, beta=0.0,
                           disable_tqdm=True)  # fmt: skip
        trainer = abstention_grpo_trainer(model, tok, ds, args, callbacks=[Snap(), stop])
        trainer.train()
        moved = any(not torch.equal(v, seen[1][k]) for k, v in model.state_dict().items())
        return trainer.state.global_step, stop.restore(), model, seen, moved

    steps, best, model, seen, moved = trained([0.1, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], 2, 0)
    assert (steps, best) == (3, 1) and moved  # scores at steps 0..3: best at 1, two without gain -> stop at step 3
    assert all(torch.equal(v, seen[1][k]) for k, v in model.state_dict().items())
    steps, best, *_ = trained([0.1, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], 2, 6)
    assert (steps, best) == (6, 1)  # min_steps holds the stop back
    steps, best, model, seen, _ = trained([0.9] + [0.1] * 12, 2, 0)
    assert (steps, best) == (2, 0)  # nothing beat the policy as passed: its own weights come back
    assert all(torch.equal(v, seen[0][k]) for k, v in model.state_dict().items())

    torch.manual_seed(1)
    model = tiny_model("llama", vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)
    stop = HeldOutRewardStopping(model, tok, prompts, golds, AbstentionReward(), eval_every=1, patience=1,
                                 max_new_tokens=8)  # fmt: skip
    outs = generate(model, tok, prompts, max_new_tokens=8)
    assert stop.score() == pytest.approx(sum(AbstentionReward()(outs, answer=golds)) / 2)
    with pytest.raises(ValueError, match="as many golds"):
        HeldOutRewardStopping(model, tok, prompts, golds[:1], AbstentionReward(), eval_every=1, patience=1)
