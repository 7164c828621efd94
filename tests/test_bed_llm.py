import math
import os

import numpy as np
import pytest

from iclr26.agents.bed_llm import (
    BEDAgent,
    BEDConfig,
    CallableAnswerModel,
    FilteredBelief,
    InContextBelief,
    consistent,
    eig_mc,
    eig_rb,
    predictive_entropy,
)
from iclr26.agents.bed_llm.world_preferences import PreferenceWorld
from iclr26.agents.bed_llm.world_twenty_questions import TwentyQuestionsWorld


def _binary(p_yes):
    p = np.asarray(p_yes, dtype=float)
    return np.stack([1 - p, p], -1)


def test_eig_known_cases_and_differs_from_entropy():
    # 4 hypotheses, noiseless answerer. q0 splits them in half, q1 is answered "yes" by all, q2 is a coin flip for all.
    probs = _binary([[1, 1, 0.5], [1, 1, 0.5], [0, 1, 0.5], [0, 1, 0.5]])
    eig = eig_rb(probs)
    assert eig[0] == pytest.approx(math.log(2))
    assert eig[1] == pytest.approx(0.0, abs=1e-12)
    assert eig[2] == pytest.approx(0.0, abs=1e-9)  # uncertain answers carry no information about θ
    # the entropy-only score cannot tell the coin-flip question from the perfect split
    assert predictive_entropy(probs)[2] == pytest.approx(math.log(2))
    # weights: a 3:1 split of the belief gives H(0.75)
    w = np.array([0.375, 0.375, 0.125, 0.125])
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert eig_rb(probs, w)[0] == pytest.approx(h)
    # four answers, each hypothesis answers differently: log 4 (EIG ≤ log |Y|)
    assert eig_rb(np.eye(4)[:, None, :])[0] == pytest.approx(math.log(4))


def test_eig_rejects_bad_inputs():
    with pytest.raises(ValueError, match="sum to 1"):
        eig_rb(np.full((2, 1, 2), 0.7))
    with pytest.raises(ValueError, match="no hypotheses"):
        eig_rb(np.zeros((0, 1, 2)))
    with pytest.raises(ValueError, match="weights"):
        eig_rb(_binary([[0.2], [0.9]]), np.array([1.0]))


def test_rao_blackwellised_eig_matches_monte_carlo():
    rng = np.random.default_rng(0)
    probs = _binary(rng.random((6, 5)))
    w = rng.random(6)
    rb = eig_rb(probs, w)
    mc, se = eig_mc(probs, w, n_samples=20000, rng=1)
    assert np.all(np.abs(mc - rb) < 4 * se + 1e-9), (mc, rb, se)
    assert np.all(se > 0)
    # and the RB value is not the entropy-only score (which the MC estimate would reject)
    assert np.any(np.abs(mc - predictive_entropy(probs, w)) > 6 * se)


def _table_model():
    # hypotheses 0..5; question "q<k>" answered yes by hypotheses whose bit k is set; "vague" is 0.6 for all
    def p_yes(h, q):
        return 0.6 if q == "vague" else float((h >> int(q[1:])) & 1)

    return CallableAnswerModel(p_yes, eps=0.0)


def test_filter_removes_exactly_the_contradicting_hypotheses():
    am = _table_model()
    hyps = list(range(6))
    history = [("q0", 1), ("vague", 0)]  # bit 0 set (1, 3, 5); the vague "no" (p = 0.4) contradicts nobody at τ = 0.3
    mask = consistent(am, hyps, history, threshold=0.3)
    assert [h for h, k in zip(hyps, mask) if k] == [1, 3, 5]
    mask = consistent(am, hyps, history, threshold=0.5)  # at τ = 0.5 the vague answer (p = 0.4) removes everyone
    assert not mask.any()

    class FixedSampler:  # an in-context sampler that ignores the history entirely
        def sample(self, history, n, rng):
            return hyps[:n]

    rng = np.random.default_rng(0)
    fb = FilteredBelief(FixedSampler(), am, n=6, threshold=0.3)
    fb.update([], rng)
    assert fb.hypotheses == hyps
    fb.update([("q0", 1)], rng)
    assert sorted(fb.hypotheses) == [1, 3, 5]
    fb.update([("q0", 1), ("q1", 0)], rng)
    assert sorted(fb.hypotheses) == [1, 5]
    assert fb.weights == pytest.approx([0.5, 0.5])
    # the in-context belief (the baseline) keeps the contradicting samples
    ic = InContextBelief(FixedSampler(), n=6)
    ic.update([("q0", 1), ("q1", 0)], rng)
    assert sorted(ic.hypotheses) == hyps


def test_filter_falls_back_when_nothing_survives():
    am = _table_model()

    class FixedSampler:
        def sample(self, history, n, rng):
            return [0, 2]

    fb = FilteredBelief(FixedSampler(), am, n=2, threshold=0.5)
    fb.update([("q0", 1)], np.random.default_rng(0))  # both sampled hypotheses answer "no"
    assert fb.fallbacks == 1 and fb.hypotheses == [0, 2]


def test_agent_asks_the_max_eig_question_and_entropy_baseline_does_not():
    am = _table_model()

    class Sampler:
        def sample(self, history, n, rng):
            return list(range(4))

    class Proposer:
        def propose(self, history, hypotheses, weights, k, rng):
            return ["vague", "q0", "q2"]  # q2 is "no" for all of 0..3: zero EIG and zero entropy

    bed = BEDAgent(Sampler(), am, Proposer(), BEDConfig(filter_threshold=0.3), seed=0)
    ent = BEDAgent(Sampler(), am, Proposer(), BEDConfig(filter_threshold=0.3, selection="entropy"), seed=0)
    for a in (bed, ent):
        a.reset()
    assert bed.next_question() == "q0"
    assert bed.last_scores["q0"] == pytest.approx(math.log(2))
    # with an uneven q0 split the entropy-only baseline prefers the subjective question, EIG does not
    ent.belief.hypotheses = [0, 1, 3]  # q0: yes for 1, 3 → p̄ = 2/3; vague: p̄ = 0.6 (higher entropy)
    bed.belief.hypotheses = [0, 1, 3]
    assert ent.next_question() == "vague"
    assert bed.next_question() == "q0"


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="filter_threshold"):
        BEDConfig(filter_threshold=1.5)
    with pytest.raises(ValueError, match="selection"):
        BEDConfig(selection="greedy")
    with pytest.raises(ValueError, match="p_yes"):
        CallableAnswerModel(lambda h, q: 2.0).probs([0], ["x"])


def test_worlds_are_deterministic_under_a_seed():
    a, b, c = TwentyQuestionsWorld(seed=3), TwentyQuestionsWorld(seed=3), TwentyQuestionsWorld(seed=4)
    assert np.array_equal(a.p_yes, b.p_yes) and not np.array_equal(a.p_yes, c.p_yes)
    assert np.array_equal(a.sample_targets(20, 1), b.sample_targets(20, 1))
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    assert [a.answer(7, q, r1) for q in range(50)] == [b.answer(7, q, r2) for q in range(50)]
    # identity questions are exact; subjective attributes are uncertain for every entity
    assert a.p_yes[7, a.identity(7)] == 1.0 and a.p_yes[7, a.identity(8)] == 0.0
    assert np.all(np.abs(a.p_yes[:, a.vague] - 0.5) <= a.cfg.vague_shift + 1e-12)
    p, q = PreferenceWorld(seed=2), PreferenceWorld(seed=2)
    assert np.array_equal(p.pool_p_yes, q.pool_p_yes)
    u = p.sample_users(1, 0)[0]
    assert p.hit_rate(u, u) == 1.0


def test_hf_answer_model_renormalises_answer_tokens():
    torch = pytest.importorskip("torch")
    from iclr26.agents.bed_llm.hf import HFAnswerModel
    from iclr26.lm.tiny import tiny_model
    from iclr26.lm.tokenizer import build_word_tokenizer

    tok = build_word_tokenizer(["Yes No yes no The secret is a dog cat Question : Is it big ? Answer"])
    model = tiny_model("llama", vocab_size=len(tok), d_model=16, n_layers=1, n_heads=2, max_len=64)
    am = HFAnswerModel(model, tok, template="The secret is {hypothesis} Question : {question}", chat=False)
    p = am.probs(["dog", "cat"], ["Is it big ?"])
    assert p.shape == (2, 1, 2) and np.allclose(p.sum(-1), 1.0)
    ids = tok(am.prompt("dog", "Is it big ?"))["input_ids"]
    last = torch.softmax(model(input_ids=torch.tensor([ids])).logits[0, -1].float(), -1)
    yes, no = (last[a].sum().item() for a in (am.answer_ids[1], am.answer_ids[0]))
    assert p[0, 0, 1] == pytest.approx(yes / (yes + no), rel=1e-4)
    with pytest.raises(ValueError, match="template"):
        HFAnswerModel(model, tok, template="no slots")
    # a shared few-shot prefix, encoded once and continued from its KV cache, gives the same probabilities
    shot = "The secret is cat Question : Is it big ? Answer No "
    joined = HFAnswerModel(model, tok, chat=False, render=lambda h, q: f"{shot}The secret is {h} Question : {q}")
    cached = HFAnswerModel(model, tok, chat=False, prefix=shot, render=lambda h, q: f"The secret is {h} Question : {q}")
    assert np.allclose(
        joined.probs(["dog", "cat"], ["Is it big ?"]), cached.probs(["dog", "cat"], ["Is it big ?"]), atol=1e-5
    )


def test_smoke_reproduction_through_cli(tmp_path, monkeypatch):
    import json
    from dataclasses import replace

    # the real-model part uses a fixed table instead of SmolLM2 (its own slow path); everything else runs
    from iclr26.agents.bed_llm.world_twenty_questions_real import truth
    from iclr26.cli import main
    from iclr26.papers import bed_llm as card
    from iclr26.papers.bed_llm import experiment

    t = truth()
    monkeypatch.setitem(experiment._REAL_CACHE, "smollm2-135m", (np.clip(t * 0.8 + 0.1, 0, 1), t, 0.0))
    monkeypatch.setitem(card.CONFIGS, "smoke", replace(card.CONFIGS["smoke"], n_games=6, pref_users=4))
    assert main(["run", "bed-llm", "--scale", "smoke", "--runs", str(tmp_path / "runs")]) == 0
    run = next((tmp_path / "runs" / "bed-llm").iterdir())
    v = json.loads((run / "verdicts.json").read_text())
    assert {c["id"] for c in v["claims"]} == {c.id for c in card.CLAIMS}
    agg = json.loads((run / "metrics.json").read_text())["aggregate"]
    for k in ("success_bed", "success_naive", "hit_bed", "real_auc", "real_success_bed"):
        assert math.isfinite(agg[k]["mean"])
    assert agg["real_auc"]["mean"] == pytest.approx(1.0)  # the planted table agrees with the truth exactly
    assert list((run / "plots").glob("*.png"))


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_real_model_games_run_on_a_local_model(tmp_path, arch):
    """`--model PATH` replaces SmolLM2: the real-model half runs on a saved tiny random model and yields its metrics."""
    from iclr26.agents.bed_llm.hf import FEW_SHOT_PREFIX, few_shot_prompt
    from iclr26.agents.bed_llm.world_twenty_questions_real import ANIMALS, QUESTIONS
    from iclr26.lm.tiny import tiny_model
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.papers import bed_llm as card
    from iclr26.papers.bed_llm import experiment

    texts = [FEW_SHOT_PREFIX] + [few_shot_prompt(a, q) + " Yes No" for a in ANIMALS for q in QUESTIONS]
    tok = build_word_tokenizer(texts)
    tiny_model(arch, vocab_size=len(tok), d_model=16, n_layers=1, n_heads=2, max_len=128).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)

    class Ctx:
        model, quiet, seed = str(tmp_path), True, 0

        def log(self, msg):
            pass

    m = {"knob_tau_bed": 0.2, "knob_g_bed": 0.5, "knob_tau_entropy": 0.2, "knob_g_entropy": 0.5, "knob_c_naive": 0.5,
         "knob_tau_random": 0.2, "knob_g_random": 0.5, "knob_g_noflt": 0.5}  # fmt: skip
    cfg = card.CONFIGS["smoke"]
    experiment._real(cfg, 0, Ctx(), m)
    assert str(tmp_path) in experiment._REAL_CACHE  # scored with the given model, not SmolLM2
    p_raw = experiment._REAL_CACHE[str(tmp_path)][0]
    assert p_raw.shape == (len(ANIMALS), len(QUESTIONS)) and np.isfinite(p_raw).all()
    needed = {x for c in card.CLAIMS for k in c.checks for x in k.metrics() if x.startswith("real_")}
    for k in needed | {"real_auc_calibrated"}:
        assert math.isfinite(m[k]), k
    experiment._REAL_CACHE.pop(str(tmp_path))


def _brute_force_mi(probs, w):
    """I(θ; y) from the joint table p(θ, y) = w_θ p(y | θ), per question: an independent reference for `eig_rb`."""
    out = []
    for k in range(probs.shape[1]):
        joint = w[:, None] * probs[:, k, :]
        py, pt = joint.sum(0), joint.sum(1)
        mi = sum(joint[i, j] * math.log(joint[i, j] / (pt[i] * py[j]))
                 for i in range(joint.shape[0]) for j in range(joint.shape[1]) if joint[i, j] > 0)  # fmt: skip
        out.append(mi)
    return np.array(out)


@pytest.mark.parametrize("n_answers", [2, 3, 5])
def test_eig_equals_brute_force_mutual_information_with_uneven_weights(n_answers):
    """Every term matters here: uneven weights (the marginal), noisy answers (the conditional entropy), 3+ answers."""
    rng = np.random.default_rng(n_answers)
    probs = rng.dirichlet(np.full(n_answers, 0.7), size=(7, 6))
    w = rng.random(7) ** 2
    ref = _brute_force_mi(probs, w / w.sum())
    assert np.allclose(eig_rb(probs, w), ref, atol=1e-12)
    # dropping either term (entropy-only, or the unweighted marginal) is far from the reference
    assert np.abs(predictive_entropy(probs, w) - ref).max() > 0.05
    assert np.abs(eig_rb(probs) - ref).max() > 1e-3


def test_eig_rejects_non_finite_inputs_with_a_named_error():
    probs = _binary([[0.2, 0.9], [0.7, 0.1]])
    for w in (np.array([np.nan, 1.0]), np.array([np.inf, 1.0])):
        with pytest.raises(ValueError, match="weights hold NaN or inf"):
            eig_rb(probs, w)
    with pytest.raises(ValueError, match="weights must have shape"):
        eig_rb(probs, np.ones(3))
    with pytest.raises(ValueError, match="weights must be non-negative"):
        predictive_entropy(probs, np.array([-1.0, 2.0]))
    bad = probs.copy()
    bad[1, 0, :] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(first at .*\[1, 0, 0\]"):
        eig_rb(bad)
    with pytest.raises(ValueError, match="NaN or inf"):
        eig_mc(bad)


def test_calibration_centres_each_question_over_the_reference_set():
    from iclr26.agents.bed_llm.hf import CalibratedAnswerModel, ask_about, centre_logits

    table = {("dog", "q"): 0.2, ("cat", "q"): 0.05, ("eagle", "q"): 0.01, ("dog", "r"): 0.5, ("cat", "r"): 0.5,
             ("eagle", "r"): 0.9}  # fmt: skip
    base = CallableAnswerModel(lambda h, q: table[(h, q)], eps=1e-9)
    cal = CalibratedAnswerModel(base, ["dog", "cat", "eagle"])
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    shift = np.mean([logit(0.2), logit(0.05), logit(0.01)])
    assert cal.probs(["dog"], ["q"])[0, 0, 1] == pytest.approx(1 / (1 + math.exp(-(logit(0.2) - shift))))
    p = cal.probs(["dog", "cat", "eagle"], ["q", "r"])
    assert np.allclose(p.sum(-1), 1)
    assert np.allclose(p[..., 1], centre_logits(np.array([[0.2, 0.5], [0.05, 0.5], [0.01, 0.9]]), eps=1e-9))
    # the shift comes from the reference set, not from the hypotheses asked about in a call
    assert cal.probs(["eagle"], ["q"])[0, 0, 1] == pytest.approx(p[2, 0, 1])
    assert eig_rb(p)[0] > eig_rb(base.probs(["dog", "cat", "eagle"], ["q"]))[0]  # the bias no longer hides the split
    with pytest.raises(ValueError, match="at least 2 distinct"):
        CalibratedAnswerModel(base, ["dog", "dog"])
    with pytest.raises(ValueError, match="finite probabilities"):
        centre_logits(np.array([[0.2, np.nan]]))
    assert ask_about("eagle", "Can it fly?") == "Can an eagle fly?"
    assert ask_about("dog", "Is it a mammal?") == "Is a dog a mammal?"
    assert ask_about("owl", "Nocturnal?") == "About an owl: Nocturnal?"


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ICLR26_SLOW") != "1", reason="loads smollm2-135m; set ICLR26_SLOW=1")
def test_documented_smollm2_usage_is_informative():
    """The docs' "Use it on your model" example on SmolLM2 itself: a question that splits the candidates gets an
    EIG clearly above zero, far above the chat prompt's (0.001-0.002 nats before the prompt became the default)."""
    from iclr26.agents.bed_llm.hf import ANSWER_PROMPT, CalibratedAnswerModel, HFAnswerModel
    from iclr26.core.threads import torch_threads
    from iclr26.lm import zoo

    model, tok = zoo.load("smollm2-135m")
    animals = ["dog", "cat", "eagle", "shark", "frog", "bee"]
    questions = ["Is it a mammal?", "Can it fly?", "Is it an insect?"]
    with torch_threads():
        llm = CalibratedAnswerModel(HFAnswerModel(model, tok), reference=animals)
        eig = eig_rb(llm.probs(animals, questions))
        chat = eig_rb(HFAnswerModel(model, tok, template=ANSWER_PROMPT).probs(animals, questions))
    assert eig.max() > 0.02 and eig.min() > 0.01, eig
    assert eig.max() > 10 * chat.max(), (eig, chat)
