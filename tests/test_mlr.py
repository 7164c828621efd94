"""MLR: Step-DPO's loss (direction, TRL equality, training moves the margin), TSMC weights against a known value
function, the planner adapter toggle, the modular-program world, and a smoke run of the paper."""

import math
import random

import pytest
import torch

from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer
from iclr26.rlft.mlr import (
    MLRConfig,
    MLRSystem,
    StepFormat,
    Traj,
    add_planner,
    completion_logps,
    mc_twist,
    set_trainable,
    step_dpo,
    step_dpo_loss,
    step_pairs,
    tsmc_log_weight,
)
from iclr26.rlft.mlr.world import LETTERS, ModProgWorld, apply, parse_answer, trace_text

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tok():
    return build_word_tokenizer(ModProgWorld(0).vocabulary_texts())


def _model(tok, seed=0):
    return tiny_model("llama", seed=seed, vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)


# ---------------------------------------------------------------- world


def test_world_answers_are_correct_by_construction():
    w = ModProgWorld(3, p=11, operations="listed")
    probs = w.problems(200, range(3, 13), "t")
    assert probs == ModProgWorld(3, 11, operations="listed").problems(200, range(3, 13), "t")  # deterministic
    for pr, steps in zip(probs, w.traces(probs), strict=True):
        words = pr.prompt.split()
        assert words[0] == "start" and words[2] == "from" and words[-1] == "go"
        listed = words[5:-1]
        ops = [
            (listed[i], listed[i + 1].rstrip("0123456789"), int(listed[i + 1].lstrip("admulrsb")))
            for i in range(0, len(listed), 2)
        ]
        labels = sorted(lab for lab, _, _ in ops)
        start = LETTERS.index(labels[0])
        assert labels == list(LETTERS[start : start + len(ops)]) and words[3] == labels[0]  # consecutive, hinted
        v = int(words[1])
        for lab in labels:  # independent evaluation of the program
            _, k, a = next(o for o in ops if o[0] == lab)
            v = {"add": (v + a) % 11, "rsub": (a - v) % 11, "mul": (v * a) % 11}[k]
        assert pr.answer == v
        assert parse_answer(trace_text(steps)) == v  # the clean teacher's trace ends at the answer
        assert [d.split()[0] for d, _, _ in steps[:-1]] == labels  # planning = the next label each time


def test_library_world_lists_labels_only_and_each_label_keeps_its_operation():
    w = ModProgWorld(2, p=7)
    probs = w.problems(300, range(3, 13), "t")
    assert ModProgWorld(5, p=7).library == w.library != ModProgWorld(2, p=7, library_seed=1).library  # world knowledge
    for pr, steps in zip(probs, w.traces(probs), strict=True):
        words = pr.prompt.split()
        labels = words[5:-1]  # `start v from x ops <labels> go`: no operation in the prompt
        assert sorted(labels) == [lab for lab, _, _ in pr.ordered] and all(lab in LETTERS for lab in labels)
        v = int(words[1])
        for lab in sorted(labels):  # independent evaluation with the world's library
            k, a = w.library[lab]
            v = {"add": (v + a) % 7, "rsub": (a - v) % 7, "mul": (v * a) % 7}[k]
        assert pr.answer == v and parse_answer(trace_text(steps)) == v
        assert [d for d, _, _ in steps[:-1]] == sorted(labels)  # the descriptor is the next label alone


def test_a_random_valid_plan_fails_where_the_gold_plan_succeeds():
    """The planning control: an exact executor (the world's library) given the gold order of the labels is always
    right; given a random order of the same labels (a planner that picks a random valid label) it mostly is not."""
    from iclr26.papers.mlr import Cfg
    from iclr26.papers.mlr.bench import Bench

    bench = Bench(Cfg(n_traces=10, n_val=2, n_test=60, test_horizons=(3, 8)), 0)

    class Exact:  # executes every pending label exactly
        def execute(self, trajs):
            for t in trajs:
                if t.done or t.pending is None:
                    continue
                if t.pending == "done":
                    v = int(t.steps[-1][1].split()[-1]) if t.steps else int(t.prompt.split()[1])
                    t.steps.append(("done", f"result {v}"))
                    t.done = True
                else:
                    v = int(t.steps[-1][1].split()[-1]) if t.steps else int(t.prompt.split()[1])
                    k, a = bench.world.library[t.pending]
                    t.steps.append((t.pending, f"{v} {k}{a} = {apply(k, v, a, 5)}"))
                t.pending = None

    for k, ps in bench.test.items():
        assert bench.planned_accuracy(Exact(), ps, "gold") == 1.0
        assert bench.planned_accuracy(Exact(), ps, "random") < (0.6 if k == 3 else 0.35)


def test_teacher_slips_break_answers_at_the_stated_rates():
    w = ModProgWorld(0)
    probs = w.problems(2000, (6,), "t")
    wrong = sum(parse_answer(trace_text(s)) != p.answer for p, s in zip(probs, w.traces(probs, 0.3, 0.0)))
    assert 0.17 < wrong / 2000 < 0.3  # a swap changes the answer unless the two operations commute (add/add, mul/mul)
    assert apply("rsub", 2, 5, 11) == 3 and apply("mul", 4, 3, 11) == 1 and apply("add", 9, 5, 11) == 3


def test_ordered_listing_and_pretraining_use_only_known_tokens(tok):
    w = ModProgWorld(1, listing="ordered")
    for pr in w.problems(100, (3, 8, 12), "t"):
        assert list(pr.ops) == pr.ordered  # the prompt lists the operations in execution order
    unk = tok.unk_token_id
    for q, a in ModProgWorld(0).pretrain_examples(50):  # every skill is written in the trace's tokens (no <unk>)
        assert unk not in tok(f"{q} {a}")["input_ids"], (q, a)
    held = ModProgWorld(0).pretrain_examples(50, salt="pretrain-val")
    looks = lambda ex: {q for q, _ in ex if q.startswith("ops")}  # noqa: E731
    assert not looks(held) & looks(ModProgWorld(0).pretrain_examples(50))  # held-out look-ups are new
    with pytest.raises(ValueError, match="listing"):
        ModProgWorld(0, listing="sorted")


def test_skill_accuracy_reads_the_answer_position(tok):
    from iclr26.papers.mlr.base import skill_accuracy

    class Oracle(torch.nn.Module):  # predicts, at every position, the token that follows it in `truth`
        def __init__(self, truth):
            super().__init__()
            self.next = {tuple(t[: i + 1]): t[i + 1] for t in truth for i in range(len(t) - 1)}

        def forward(self, input_ids, attention_mask):
            out = torch.zeros(*input_ids.shape, len(tok))
            for b, row in enumerate(input_ids.tolist()):
                for i in range(len(row)):
                    out[b, i, self.next.get(tuple(row[: i + 1]), 0)] = 1.0
            return type("O", (), {"logits": out})

    exs = [("0 add2 =", "2"), ("from a next", "b"), ("ops a add1 b mul2 next b", "mul2")]
    ids = lambda q, a: [tok.bos_token_id] + tok(f"{q} {a}", add_special_tokens=False)["input_ids"]  # noqa: E731
    assert skill_accuracy(Oracle([ids(q, a) for q, a in exs]), tok, exs) == 1.0
    wrong = [exs[0], ("from a next", "c"), exs[2]]  # the oracle knows b, the answer key says c
    assert skill_accuracy(Oracle([ids(q, a) for q, a in exs]), tok, wrong) == pytest.approx(2 / 3)


def test_tuning_rule_extends_past_edges_and_is_cached(tmp_path, monkeypatch):
    import dataclasses

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    from iclr26.papers.mlr import CONFIGS
    from iclr26.papers.mlr.tuning import cache_path, tuned_lrs, with_lrs

    best = {
        "sft_lr": 6e-3,
        "small_lr": 3e-3,
        "planner_lr": 6e-3,
        "dpo_lr": 3.125e-5,
        "grpo_lr": 1.25e-4,
    }  # sft, dpo: edges
    calls, seen = [], {}

    def stage(name):
        def f(cfg, prev):
            calls.append(name)
            seen[name] = (dict(prev), {k: getattr(cfg, k) for k in best})
            lr = getattr(cfg, name)
            return -abs(math.log(lr / best[name])), f"{name}@{lr:g}"

        return f

    class Ctx:
        quiet = True

        def log(self, msg):
            pass

    cfg = CONFIGS["quick"]
    lrs = tuned_lrs(cfg, Ctx(), {k: stage(k) for k in best})
    assert {k: lrs[k] for k in best} == pytest.approx(best)
    assert not any(lrs[f"{k}_at_edge"] for k in best)
    assert set(lrs["sft_lr_scores"]) == {"0.000375", "0.00075", "0.0015", "0.003", "0.006", "0.012"}
    assert set(lrs["dpo_lr_scores"]) == {"1.5625e-05", "3.125e-05", "6.25e-05", "0.000125", "0.00025", "0.0005"}
    assert seen["dpo_lr"][0] == {
        "sft_lr": "sft_lr@0.006",
        "small_lr": "small_lr@0.003",
        "planner_lr": "planner_lr@0.006",
    }
    assert seen["planner_lr"][1]["small_lr"] == pytest.approx(3e-3)  # each stage starts from the tuned earlier ones
    assert seen["grpo_lr"][1]["sft_lr"] == pytest.approx(6e-3)
    n = len(calls)
    assert tuned_lrs(dataclasses.replace(cfg, seeds=(7,)), Ctx(), {k: stage(k) for k in best})["sft_lr"] == 6e-3
    assert len(calls) == n  # read from the cache: seeds do not enter the key
    assert cache_path(dataclasses.replace(cfg, n_traces=999), 4) != cache_path(cfg, 4)
    assert with_lrs(cfg, best).dpo_lr_planner == pytest.approx(cfg.dpo_planner_ratio * best["dpo_lr"])


# ---------------------------------------------------------------- Step-DPO


def _pair_ids(tok, prefix, c):
    from iclr26.rlft.mlr import encode_parts

    return encode_parts(tok, [(prefix, False), (" " + c, True)], eos=False)


def test_step_dpo_loss_is_lower_when_the_chosen_step_is_already_preferred(tok):
    ref = _model(tok)
    pol = _model(tok)
    prefix, good, bad = "start 3 from a ops a add2 go plan", "a add2 exec", "a mul2 exec"
    # make the policy prefer `good` relative to the reference: a few likelihood steps on it
    opt = torch.optim.SGD(pol.parameters(), lr=0.5)
    ids, mask = _pair_ids(tok, prefix, good)
    for _ in range(5):
        loss = pol(
            input_ids=torch.tensor([ids]), labels=torch.tensor([[i if m else -100 for i, m in zip(ids, mask)]])
        ).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    lp = {n: completion_logps(m, tok, [prefix] * 2, [good, bad]) for n, m in (("pol", pol), ("ref", ref))}
    right, *_ = step_dpo_loss(lp["pol"][:1], lp["pol"][1:], lp["ref"][:1], lp["ref"][1:], beta=0.1)
    wrong, *_ = step_dpo_loss(lp["pol"][1:], lp["pol"][:1], lp["ref"][1:], lp["ref"][:1], beta=0.1)
    assert right < math.log(2) < wrong
    assert float(right + wrong) > 2 * math.log(2) - 1e-6  # -log s(x) - log s(-x) >= 2 log 2


def test_step_dpo_loss_matches_trls_dpo_trainer_on_a_fixed_batch(tok, tmp_path):
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    pol, ref = _model(tok, 1), _model(tok, 2)
    rows = [{"prompt": "start 3 from a ops a add2 go plan", "chosen": " a add2 exec", "rejected": " a rsub2 exec"},
            {"prompt": "start 5 from b ops b mul3 go plan b mul3 exec", "chosen": " 5 mul3 = 4 end",
             "rejected": " 5 mul3 = 7 end"}]  # fmt: skip
    args = DPOConfig(output_dir=str(tmp_path), beta=0.1, per_device_train_batch_size=2, report_to="none",
                     use_cpu=True, save_strategy="no", max_length=None)  # fmt: skip
    tr = DPOTrainer(model=pol, ref_model=ref, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    batch = next(iter(tr.get_train_dataloader()))
    pol.eval()
    with torch.no_grad():
        trl_loss = float(tr.compute_loss(pol, batch))
    pre = [r["prompt"] for r in rows]
    lp = {(m, k): completion_logps(net, tok, pre, [r[k][1:] + " <eos>" for r in rows])  # TRL appends EOS
          for m, net in (("pol", pol), ("ref", ref)) for k in ("chosen", "rejected")}  # fmt: skip
    ours, *_ = step_dpo_loss(
        lp["pol", "chosen"], lp["pol", "rejected"], lp["ref", "chosen"], lp["ref", "rejected"], 0.1
    )
    assert abs(float(ours) - trl_loss) < 1e-5


def test_step_dpo_training_raises_the_chosen_margin(tok):
    model = _model(tok)
    pairs = [{"prompt": "start 3 from a ops a add2 go plan", "chosen": "a add2 exec", "rejected": "a mul2 exec"}] * 8
    before = completion_logps(model, tok, [pairs[0]["prompt"]] * 2, ["a add2 exec", "a mul2 exec"])
    step_dpo(model, tok, pairs, beta=0.1, lr=1e-2, epochs=3, batch_size=4)
    after = completion_logps(model, tok, [pairs[0]["prompt"]] * 2, ["a add2 exec", "a mul2 exec"])
    assert (after[0] - after[1]) > (before[0] - before[1]) + 1.0


# ---------------------------------------------------------------- TSMC


class _Stub(MLRSystem):
    """A system whose rollouts succeed with a known probability V(h) (a value function known in closed form): V is
    read from the last descriptor of the rollout prefix."""

    def __init__(self, tok, value, cands):
        super().__init__(_model(tok), tok, MLRConfig(k_candidates=len(cands), n_rollouts=4000), StepFormat(), False)
        self.value, self.cands, self.rng = value, cands, random.Random(0)

    def sample(self, level, prefixes, temperature=None):
        return [self.cands[i % len(self.cands)] for i in range(len(prefixes))]

    def complete(self, prefixes):
        return [f"{p} plan done exec result {int(self.rng.random() < self.value(p))} end" for p in prefixes]


def _ok(prompt, text):
    return parse_answer(text) == 1


def test_tsmc_weights_match_the_analytic_ratio_of_a_known_value_function(tok):
    v = {"a add1": 0.6, "a rsub1": 0.15, "a mul1": 0.3}  # V(h + candidate); V(h) = 0.3

    def value(prefix):
        return next((x for d, x in v.items() if prefix.endswith(f"plan {d} exec")), 0.3)

    stub = _Stub(tok, value, list(v))
    psi = mc_twist(stub, [Traj("p 1"), Traj("p 1", pending="a add1")], 4000, _ok)
    assert abs(psi[0] - 0.3) < 0.03 and abs(psi[1] - 0.6) < 0.03
    assert tsmc_log_weight(0.3, 0.6) == pytest.approx(math.log(0.601 / 0.301))  # eps = 1e-3
    assert tsmc_log_weight(0.0, 1.0) == 5.0 and tsmc_log_weight(0.5, 0.5, p_before=0.5, p_after=1.0) < 0  # clip; p
    (pair,) = step_pairs(stub, [(Traj("p 1"), "planner")], _ok, random.Random(0))
    assert pair["chosen"] == "a add1 exec" and pair["rejected"] == "a rsub1 exec"
    assert pair["prompt"] == "p 1 plan"  # the shared prefix
    assert pair["r_chosen"] == pytest.approx(math.log(0.601 / 0.301), abs=0.12)
    assert pair["r_rejected"] == pytest.approx(math.log(0.151 / 0.301), abs=0.2)
    stub.cfg.pair_rule = "random"  # the control ignores the value function: over many draws it flips the order
    picks = {step_pairs(stub, [(Traj("p 1"), "planner")], None, random.Random(s))[0]["chosen"] for s in range(30)}
    assert len(picks) > 1


# ---------------------------------------------------------------- adapter toggle


def test_planner_adapter_changes_only_planner_steps(tok):
    base = _model(tok)
    x = torch.tensor([tok("start 3 from a ops a add2 go plan a add2 exec")["input_ids"]])
    with torch.no_grad():
        ref_logits = base(input_ids=x).logits.clone()
    cfg = MLRConfig(lora_r=4, lora_alpha=8, lora_dropout=0.0, max_plan_tokens=4, max_exec_tokens=6)
    sys_ = MLRSystem(add_planner(base, cfg), tok, cfg, StepFormat(), split=True)
    set_trainable(sys_, "planner")
    assert all("lora_" in n for n, p in sys_.model.named_parameters() if p.requires_grad)
    with torch.no_grad():
        for n, p in sys_.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)  # a non-trivial planner
        with sys_.executor():
            ex = sys_.model(input_ids=x).logits
        pl = sys_.model(input_ids=x).logits
    assert torch.equal(ex, ref_logits) and not torch.allclose(pl, ref_logits, atol=1e-3)
    t = Traj("start 3 from a ops a add2 go", [("a add2", "3 add2 = 5")], pending="b mul2")
    zero = MLRSystem(add_planner(_model(tok), cfg), tok, cfg, StepFormat(), split=True)  # LoRA B = 0 at init

    def draw(s, level):
        torch.manual_seed(7)
        pre = [s.exec_prefix(t)] * 16 if level == "executor" else [s.plan_prefix(t)] * 16
        return s.sample(level, pre, temperature=1.0)

    assert draw(sys_, "executor") == draw(zero, "executor")  # executor steps: same with any planner
    assert draw(sys_, "planner") != draw(zero, "planner")  # planner steps change
    assert sys_.planner_view(Traj("q", [("a add2", "3 add2 = 5")])) == "q plan a add2 exec 3 add2 = 5 end"
    comp = MLRSystem(sys_.model, tok, cfg, StepFormat(summarize=lambda d, c: c.split("=")[-1].strip()), True)
    assert comp.planner_view(Traj("q", [("a add2", "3 add2 = 5")])) == "q plan a add2 exec 5 end"


# ---------------------------------------------------------------- smoke


def test_smoke_run_of_the_paper(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    from iclr26.papers import mlr as card
    from iclr26.papers.mlr import experiment

    class Ctx:
        quiet = True

        def log(self, msg):
            pass

    cfg = card.CONFIGS["smoke"]
    m = experiment.run(cfg, 0, Ctx())
    for claim in card.CLAIMS:
        if claim.applies(cfg):
            for name in claim.metrics():
                assert name in card.METRICS and name in m, name
    assert 0 <= m["acc_mlr"] <= 1 and m["n_pairs_mlr"] <= round(cfg.pair_frac * cfg.n_traces)
    # a rerun loads the SFT stages from the cache; every stage is seeded on its own, so the later (sampling) stages
    # and the evaluation give the same numbers as when the SFT stages were trained (VERSION 3 did not)
    again = experiment.run(cfg, 0, Ctx())

    def same(a, b):
        return a == b or (math.isnan(a) and math.isnan(b))

    assert again.keys() == m.keys()
    assert all(same(again[k], m[k]) for k in m if not k.startswith("cpu_s_")), {
        k: (m[k], again[k]) for k in m if not same(again[k], m[k])
    }
