"""MLR's public API on a real LM's terms: step markers that span several tokens (or that the tokenizer cannot write),
ties in TSMC weights broken at random, iterative Step-DPO never falling back to its start, and clear errors on bad
input to the DPO loss."""

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
    iterative_step_dpo,
    step_dpo_loss,
    step_pairs,
    tsmc,
)
from iclr26.rlft.mlr import trainer as mlr_trainer
from iclr26.rlft.mlr.system import _first_stop, _SeqStop
from iclr26.rlft.mlr.world import ModProgWorld

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tok():
    return build_word_tokenizer([*ModProgWorld(0).vocabulary_texts(), "# ! @"])


def _model(tok, seed=0):
    return tiny_model("llama", seed=seed, vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=128)


def test_a_marker_the_tokenizer_cannot_write_is_named(tok):
    with pytest.raises(ValueError, match=r"step marker 'zebra' is not written by this tokenizer"):
        MLRSystem(_model(tok), tok, MLRConfig(), StepFormat(step_close="zebra"), split=False)
    with pytest.raises(ValueError, match="distinct"):
        MLRSystem(_model(tok), tok, MLRConfig(), StepFormat(step_close="plan"), split=False)


def test_stop_sequences_cut_where_a_multi_token_marker_starts():
    assert _first_stop([5, 1, 1, 7], [[1, 1]]) == 1 and _first_stop([5, 1, 7], [[1, 1]]) == 3
    assert _first_stop([5, 9, 1, 1], [[9], [1, 1]]) == 1
    crit = _SeqStop([[1, 1]], start=2)
    rows = torch.tensor([[1, 1, 5, 1, 1], [1, 1, 5, 1, 4], [0, 0, 1, 1, 4]])  # the prompt's 1 1 does not count
    assert crit(rows, None).tolist() == [True, False, True]


class _Scripted:
    """A stand-in for an HF model whose generate() writes a fixed continuation after every prompt."""

    def __init__(self, cont):
        self.cont, self.kwargs = cont, None

    def generate(self, input_ids, attention_mask=None, **kw):
        self.kwargs = kw
        tail = torch.tensor(self.cont).expand(input_ids.shape[0], -1)
        return torch.cat([input_ids, tail], 1)


def test_sampling_stops_at_a_marker_of_several_tokens(tok):
    fmt = StepFormat(plan_open="plan", exec_open="##", step_close="!!", final="done")  # '#' '#' and '!' '!'
    sys_ = MLRSystem(_model(tok), tok, MLRConfig(), fmt, split=False)
    assert len(sys_.marker_ids("##")) == 2
    ids = [tok.convert_tokens_to_ids(w) for w in ("a", "#", "#", "b")]
    sys_.model = _Scripted(ids)
    assert sys_.sample("planner", ["start 1 from a ops a go plan"]) == ["a"]  # cut before '# #'
    assert sys_.model.kwargs["stopping_criteria"] is not None  # generation ends once the marker is written
    sys_.model = _Scripted([tok.convert_tokens_to_ids(w) for w in ("a", "#", "b")])
    assert sys_.sample("planner", ["start 1 from a ops a go plan"]) == ["a # b"]  # half a marker is text


def test_ties_in_the_tsmc_weights_are_broken_at_random(tok, monkeypatch):
    """psi(h) = 0 puts every candidate with psi(h + c) >= 0.25 at the +5 clip: a tie. The chosen one must not be the
    first one sampled (VERSION 4's rule), but each tied candidate in turn over rng draws."""
    sys_ = MLRSystem(_model(tok), tok, MLRConfig(k_candidates=4, n_rollouts=8), StepFormat(), split=False)
    cands = ["a", "b", "c", "d"]
    sys_.sample = lambda level, prefixes, temperature=None: cands
    psi = {"a": 0.5, "b": 1.0, "c": 0.0, "d": 0.25}  # a, b and d tie at +5; c is the unique worst

    def twist(system, states, n, verifier):
        return [psi[s.steps[-1][1]] if s.steps else 0.0 for s in states]

    monkeypatch.setattr(tsmc, "mc_twist", twist)
    state = Traj("start 1 from a ops a go", pending="a")
    picks = [step_pairs(sys_, [(state, "executor")], None, random.Random(i))[0] for i in range(60)]
    assert {p["chosen"].split()[0] for p in picks} == {"a", "b", "d"}
    assert {p["rejected"].split()[0] for p in picks} == {"c"} and picks[0]["r_chosen"] == 5.0


def test_iterative_step_dpo_keeps_a_trained_round_even_when_the_start_scores_best(tok, monkeypatch):
    cfg = MLRConfig(rounds=2, dpo_epochs=1, dpo_lr_executor=1e-2, levels=("executor",))
    sys_ = MLRSystem(_model(tok), tok, cfg, StepFormat(), split=False)
    pair = {"prompt": "start 3 from a ops a go plan a exec", "chosen": "3 add2 = 0 end", "rejected": "3 mul2 = 1 end",
            "level": "executor"}  # fmt: skip
    monkeypatch.setattr(mlr_trainer, "collect_pairs", lambda *a, **k: ([pair] * 8, {"prefixes": 8, "batches": 1}))
    start = {n: p.detach().clone() for n, p in sys_.model.named_parameters()}
    scores = iter([0.9, 0.2, 0.4])  # round 0 (the start) is best on validation
    hist = iterative_step_dpo(sys_, ["p"], None, 8, evaluate=lambda: next(scores))
    assert hist["scores"] == [0.9, 0.2, 0.4] and hist["kept"] == 2
    moved = [not torch.equal(start[n], p) for n, p in sys_.model.named_parameters()]
    assert any(moved)  # the kept weights are a trained round's, not the start's


def test_dpo_loss_rejects_bad_input():
    x = torch.tensor([-1.0, -2.0])
    with pytest.raises(ValueError, match="beta must be a finite number > 0"):
        step_dpo_loss(x, x, x, x, beta=-1.0)
    with pytest.raises(ValueError, match="beta must be a finite number > 0"):
        step_dpo_loss(x, x, x, x, beta=float("nan"))
    with pytest.raises(ValueError, match="non-finite log-probabilities in pi_l"):
        step_dpo_loss(x, torch.tensor([-1.0, float("nan")]), x, x, beta=0.1)
    with pytest.raises(ValueError, match="one shape"):
        step_dpo_loss(x, x, x[:1], x, beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        MLRConfig(beta=float("nan"))


def test_dpo_loss_equals_the_formula_and_every_term_matters():
    pw, pl, rw, rl = (torch.tensor([v]) for v in (-1.0, -3.0, -1.5, -2.0))
    loss, cw, cl = step_dpo_loss(pw, pl, rw, rl, beta=0.5)
    delta = (-1.0 + 1.5) - (-3.0 + 2.0)  # 1.5
    assert float(loss) == pytest.approx(math.log1p(math.exp(-0.5 * delta)))
    assert float(cw) == pytest.approx(0.25) and float(cl) == pytest.approx(-0.5)
    for i in range(4):  # changing any one of the four terms changes the loss
        args = [pw, pl, rw, rl]
        args[i] = args[i] + 0.3
        assert abs(float(step_dpo_loss(*args, beta=0.5)[0]) - float(loss)) > 1e-3


def test_add_marker_tokens_adds_only_what_the_tokenizer_cannot_write():
    from iclr26.rlft.mlr import add_marker_tokens

    tok = build_word_tokenizer(["plan exec end words"])
    model = _model(tok)
    added = add_marker_tokens(model, tok, StepFormat(), extra=["result"])
    assert added == ["done", "result"] and model.get_input_embeddings().num_embeddings == len(tok)
    MLRSystem(model, tok, MLRConfig(), StepFormat(), split=False)  # every marker is now a word of the tokenizer
    assert add_marker_tokens(model, tok, StepFormat()) == []


@pytest.mark.slow
@pytest.mark.skipif(__import__("os").environ.get("ICLR26_SLOW") != "1", reason="loads SmolLM2-135M; set ICLR26_SLOW=1")
def test_use_it_on_smollm2():
    """The docs page's 'Use it on your model' example on SmolLM2-135M itself: SmolLM2 writes every marker in one token
    (nothing added), SFT of the two levels lowers the held-out NLL of both, and the two-level loop runs to the end."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "papers" / "mlr.md").read_text(encoding="utf-8")
    section = page.split("### Use it on your model", 1)[1].split("\n## ", 1)[0]
    ns: dict = {"__name__": "__docs__"}
    for code in re.findall(r"```python\n(.*?)```", section, re.S):
        exec(compile(code, "mlr.md", "exec"), ns)
    system, nll = ns["system"], ns["nll"]
    assert system.model.base_model.model.config.num_hidden_layers == 30  # SmolLM2-135M, not a micro model
    assert ns["added"] == []  # its tokenizer writes every marker
    assert nll(system, "executor") < ns["before"] - 1.0  # the executor learns the step format (≈ 3.6 → 0.4 nats)
    assert nll(system, "planner") < ns["plan_before"] / 2  # the planner starts low (≈ 0.06: plans are short words)
    assert all(t.done for t in ns["solved"]) and ns["n_correct"] >= 1


def test_label_chains_apply_the_library_in_the_step_format(tok):
    from iclr26.rlft.mlr.world import LETTERS, apply

    w = ModProgWorld(0)
    chains = w.label_chains(50)
    assert chains != w.label_chains(50, "label-chains-val") and len(chains) == 50
    for parts in chains:
        v = int(parts[0][0].split()[1])
        labels = [t.split()[1] for t, trained in parts[1:] if not trained]
        assert "".join(labels) in "".join(LETTERS)  # consecutive letters, in order: nothing to plan
        for (lab_text, given), (step, trained) in zip(parts[1::2], parts[2::2], strict=True):
            kind, a = w.library[lab_text.split()[1]]
            assert not given and trained and lab_text.split()[::2] == ["plan", "exec"]
            assert step.split() == [str(v), f"{kind}{a}", "=", str(apply(kind, v, a, w.p)), "end"]
            v = apply(kind, v, a, w.p)
        assert tok.unk_token_id not in tok("".join(t for t, _ in parts))["input_ids"]
    with pytest.raises(ValueError, match="library world"):
        ModProgWorld(0, operations="listed").label_chains(1)
