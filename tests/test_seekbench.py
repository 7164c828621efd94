"""SeekBench: schema, metrics on hand-written traces (hand-computed values), the clustered bootstrap, judges and kappa,
the JSONL format and `score_traces`, BM25, the search world, the simulated agents and a smoke run of the paper."""

import json
import math

import numpy as np
import pytest

from iclr26.agents.seekbench import metrics as M
from iclr26.agents.seekbench.judges import RuleJudge, agreement, relabel_copy
from iclr26.agents.seekbench.retriever import BM25Retriever, TfidfRetriever
from iclr26.agents.seekbench.schema import Annotation, Step, Trace, evidence_level, read_jsonl, write_jsonl
from iclr26.agents.seekbench.score import ScoreConfig, main, score_traces
from iclr26.agents.seekbench.simulate import AgentKnobs, run_agent
from iclr26.agents.seekbench.world import ATTRIBUTES, SearchWorld, SearchWorldConfig


def R(rtype, anchor, grounded, text="..."):
    g = "Grounded" if grounded else "Not Grounded"
    return Step("reasoning", content=text, annotation=Annotation(rtype, groundness=g, anchor_type=anchor))


def S(qtype, query="q"):
    return Step("search", query=query, annotation=Annotation(qtype))


def RES(quality, clarity):
    ann = Annotation("search_result", information_quality=quality, information_clarity=clarity)
    return Step("search_result", documents=[{"title": "t", "content": "c"}], annotation=ann)


def ANS(correct, text="x"):
    return Step("answer", content=text, annotation=Annotation("CorrectAnswer" if correct else "IncorrectAnswer"))


def trace_a(qid="q1"):
    """Three searches (E = 0, 1, 2), then a grounded synthesis and a correct answer."""
    steps = [
        R("PlanFormation", "QUESTION", True),  # 0
        S("InitialQuery"),  # 1
        RES("Insufficient", "Unclear"),  # 2  E=0
        R("StateAssessment", "EVIDENCE", True),  # 3
        S("RefinedQuery"),  # 4
        RES("Sufficient", "Unclear"),  # 5  E=1
        R("InformationSynthesis", "EVIDENCE", False),  # 6
        S("RepeatQuery"),  # 7
        RES("Sufficient", "Clear"),  # 8  E=2
        R("InformationSynthesis", "EVIDENCE", True),  # 9
        ANS(True),  # 10
    ]
    return Trace("Q?", steps, question_id=qid, model="a", is_correct=True)


def trace_b(qid="q2"):
    """One poor search, then an (incorrect) answer: premature."""
    return Trace("Q?", [S("InitialQuery"), RES("Insufficient", "Unclear"), ANS(False)], question_id=qid, model="b")


def point(name, traces, **kw):
    table, _ = M.cluster_table(traces, **{k: v for k, v in kw.items() if k != "ce_weights"})
    stat = M.metric_statistic(name, ce_weights=kw.get("ce_weights"))
    return float(stat(np.ones((1, len(table))), table)[0])


# ---------------------------------------------------------------- schema and per-trace metrics


def test_evidence_level_mapping():
    assert evidence_level("Sufficient", "Clear") == 2
    assert evidence_level("Sufficient", "Unclear") == 1
    assert evidence_level("Sufficient", None) == 1  # missing clarity counts as Unclear
    assert evidence_level("Insufficient", "Clear") == 0 and evidence_level("Insufficient", "Unclear") == 0


def test_schema_rejects_bad_labels():
    with pytest.raises(ValueError, match="information_quality"):
        Annotation("search_result", information_quality="Great")
    with pytest.raises(ValueError, match="step type"):
        Step("thinking")


def test_hand_trace_grounding_and_search_metrics():
    t = trace_a()
    assert M.rqi(t) == pytest.approx(2 / 3)  # steps 3 (G), 6 (NG), 9 (G) are evidence-anchored
    assert M.rqi(t, require_evidence_anchor=False) == pytest.approx(3 / 4)  # + the plan step (G)
    assert M.turns_to_first_sufficient(t) == 8 and M.turns_to_first_sufficient(t, require_clear=False) == 5
    assert M.query_rates(t) == pytest.approx({"refined_rate": 1 / 3, "followup_rate": 0.0, "repeat_rate": 1 / 3})
    assert M.evidence_states(t) == [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2]  # cumulative max, not the current result
    no_evidence_steps = Trace("Q?", [R("PlanFormation", "QUESTION", True), ANS(True)])
    assert math.isnan(M.rqi(no_evidence_steps))  # NaN (excluded from means), not 0
    assert math.isnan(point("rqi", [no_evidence_steps]))
    assert point("rqi", [trace_a("1"), no_evidence_steps]) == pytest.approx(2 / 3)


def test_turns_and_calibration_on_hand_traces():
    a, b = trace_a(), trace_b()
    # paper turns: a decides at E = 0, 0, 1 (no answer) and answers at the start of a turn with E = 2
    assert M.calibration_turns(a, "turn") == [(0, False), (0, False), (1, False), (2, True)]
    assert M.calibration_turns(b, "turn") == [(0, False), (0, True)]
    assert M.trajectory_label(a, unit="turn") == "TP" and M.trajectory_label(b, unit="turn") == "FP"
    assert M.first_hit(a, unit="turn") == 2 and M.first_hit(a, unit="step") == 8
    # a alone answers exactly when E >= 2: calibration error 0
    assert point("calibration_error", [a], unit="turn") == 0.0
    # a + b: pre-answer turns at E = 0/1/2: 4/1/1, answers 1/0/1 -> a = (1/4, 0, 1), w = (4/6, 1/6, 1/6)
    assert point("answer_rate_e0", [a, b], unit="turn") == pytest.approx(1 / 4)
    assert point("calibration_error", [a, b], unit="turn") == pytest.approx(4 / 6 * 1 / 4)
    assert point("balanced_ce", [a, b], unit="turn") == pytest.approx((1 / 4) / 3)
    assert point("premature_rate", [a, b], unit="turn") == 0.5 and point("success", [a, b]) == 0.5
    # the official step unit (the library default): a's steps at E = 0/1/2: 5/3/3, one answer at E = 2 -> CE = 3/11 *
    # |1/3 - 1|: a perfectly calibrated agent gets CE > 0
    assert M.DEFAULT_UNIT == "step" and point("calibration_error", [a]) == pytest.approx(3 / 11 * 2 / 3)
    assert point("calibration_error", [a], unit="step") == pytest.approx(3 / 11 * 2 / 3)
    # recovery CDF over t = 0..20 turns: E = 2 reached at turn 2 -> 19 of 21 points
    assert point("recovery_auc", [a], unit="turn") == pytest.approx(19 / 21)


def test_dossier_worked_example_of_the_calibration_error():
    table = np.zeros((1, len(M.FIELDS)))
    for k, (pre, ans) in enumerate([(50, 5), (20, 6), (30, 18)]):  # w = (.5, .2, .3), a = (.1, .3, .6)
        table[0, M.FIELDS.index(f"pre{k}")], table[0, M.FIELDS.index(f"ans{k}")] = pre, ans
    one = np.ones((1, 1))
    assert M.calibration_error(2)(one, table)[0] == pytest.approx(0.23)
    assert M.calibration_error(2, balanced=True)(one, table)[0] == pytest.approx(0.8 / 3)
    assert M.calibration_error(2, weights=[0, 0, 1])(one, table)[0] == pytest.approx(0.4)


def test_turns_after_the_first_answer_are_ignored():
    a = trace_a()
    longer = Trace("Q?", a.steps + [S("InitialQuery"), RES("Insufficient", "Unclear"), ANS(False)], is_correct=True)
    for name in ("calibration_error", "answer_rate_e0", "answer_rate_e2", "premature_rate", "recovery_auc"):
        assert point(name, [longer]) == pytest.approx(point(name, [a]))


def test_low_quality_episode_and_exit_hazards():
    (ep,) = M.low_quality_episodes(trace_a())
    assert (ep["start"], ep["end"], ep["censored"]) == (2, 8, False)
    assert ep["actions"] == [(3, "grounded"), (4, "refine"), (7, "repeat")]  # the ungrounded step 6 is no action
    st = M.trace_stats(trace_a())
    # one-turn hazard: only the repeat at 7 is followed directly by the exit (result 8)
    assert (st["occ_repeat"], st["ev_repeat"], st["occ_refine"], st["ev_refine"]) == (1, 1, 1, 0)
    (ep_b,) = M.low_quality_episodes(trace_b())
    assert ep_b["censored"]  # an incorrect answer does not end the episode


# ---------------------------------------------------------------- the clustered bootstrap


def test_bootstrap_resamples_clusters_not_steps():
    # 20 questions x 10 steps, all steps of a question share its value: step-level resampling is far too narrow
    vals = np.repeat(np.arange(20) % 2, 10).astype(float)
    rows, clusters = np.stack([vals, np.ones_like(vals)], 1), np.repeat(np.arange(20), 10)
    stat = M.ratio_of_sums(0, 1)
    ci_c = M.clustered_bootstrap(rows, list(clusters), stat, n_boot=2000, seed=0)
    ci_s = M.clustered_bootstrap(rows, None, stat, n_boot=2000, seed=0)
    assert ci_c.point == ci_s.point == pytest.approx(0.5)
    assert (ci_c.hi - ci_c.lo) > 2.2 * (ci_s.hi - ci_s.lo)  # design effect sqrt(10) ≈ 3.2
    # duplicating steps inside their clusters changes nothing; more clusters shrink the interval
    ci_dup = M.clustered_bootstrap(np.concatenate([rows, rows]), list(clusters) * 2, stat, n_boot=2000, seed=0)
    assert (ci_dup.lo, ci_dup.hi) == pytest.approx((ci_c.lo, ci_c.hi))
    more = M.clustered_bootstrap(np.concatenate([rows, rows]), list(clusters) + list(clusters + 20), stat, seed=0)
    assert (more.hi - more.lo) < 0.85 * (ci_c.hi - ci_c.lo)


def test_bootstrap_weights_and_paired_difference():
    w = M.bootstrap_weights(7, 50, seed=1)
    assert w.shape == (50, 7) and np.all(w.sum(1) == 7)
    table, _ = M.cluster_table([trace_a(str(i)) for i in range(5)] + [trace_b(str(i + 5)) for i in range(5)])
    stat = M.metric_statistic("success")
    same = M.paired_difference(stat, table, stat, table, n_boot=100)
    assert (same.point, same.lo, same.hi) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="clusters"):
        M.clustered_bootstrap(np.ones((3, 2)), [0, 1], stat)


# ---------------------------------------------------------------- judges and kappa


def test_kappa_of_perfect_and_constant_judges():
    gold = [trace_a("1"), trace_b("2"), trace_a("3")]
    assert all(v == 1.0 for v in agreement(gold, [relabel_copy(t) for t in gold]).values())
    const = [relabel_copy(t) for t in gold]
    for t in const:
        for s in t.steps:
            s.annotation.information_quality = "Sufficient" if s.type == "search_result" else None
            s.annotation.groundness = "Grounded" if s.type == "reasoning" else None
            s.annotation.type = "InitialQuery" if s.type == "search" else s.annotation.type
    kap = agreement(gold, const)
    assert kap["quality"] == 0.0 and kap["groundness"] == 0.0 and kap["query_type"] == 0.0
    # hand value: gold S,S,I,I vs judged S,I,I,I: p_o = 3/4, p_e = 1/2 -> kappa = 1/2
    g = Trace(
        "Q?",
        [
            RES("Sufficient", "Clear"),
            RES("Sufficient", "Clear"),
            RES("Insufficient", "Unclear"),
            RES("Insufficient", "Unclear"),
        ],
    )
    j = relabel_copy(g)
    j.steps[1].annotation.information_quality = "Insufficient"
    assert agreement([g], [j], ["quality"])["quality"] == pytest.approx(0.5)


def test_rule_judge_reads_text_and_misses_paraphrases():
    judge = RuleJudge({a.keyword: {a.synonym} for a in ATTRIBUTES})
    doc = lambda c: {"title": "Nipa Zurola", "content": c}  # noqa: E731
    steps = [
        S("InitialQuery", "Nipa Zurola birthplace"),
        Step("search_result", documents=[doc("The birthplace of Nipa Zurola is Gokigo.")]),
        Step("search", query="Nipa Zurola birthplace"),
        Step(
            "search_result",
            documents=[
                doc("Nipa Zurola first saw daylight in Gokigo."),
                doc("Some say the birthplace of Nipa Zurola is Kapani."),
            ],
        ),
        Step("reasoning", content="According to the results, the birthplace of Nipa Zurola is Tarok."),
        Step("reasoning", content="According to the results, the birthplace of Nipa Zurola is Gokigo."),
    ]
    out = judge.annotate(Trace("What is the birthplace of Nipa Zurola?", steps))
    a = [s.annotation for s in out.steps]
    assert (a[1].information_quality, a[1].information_clarity) == ("Sufficient", "Clear")
    assert a[2].type == "RepeatQuery"
    # the paraphrase has no keyword: the judge sees only the rumour's value -> Sufficient and (wrongly) Clear
    assert (a[3].information_quality, a[3].information_clarity) == ("Sufficient", "Clear")
    assert a[4].groundness == "Not Grounded" and a[5].groundness == "Grounded"


# ---------------------------------------------------------------- trace format and scoring


def test_jsonl_round_trip_and_score_traces(tmp_path, capsys):
    path = write_jsonl([trace_a("1"), trace_b("2"), trace_a("3")], tmp_path / "t.jsonl")
    back = read_jsonl(path)
    assert [t.to_dict() for t in back] == [t.to_dict() for t in [trace_a("1"), trace_b("2"), trace_a("3")]]
    # the official data writes answers as step types without an annotation: read as answers
    rec = {"question": "Q?", "id": 7, "model": "m", "trace": [{"type": "CorrectAnswer", "content": "x"}]}
    (t,) = read_jsonl(_write(tmp_path / "o.jsonl", [rec]))
    assert t.steps[0].is_answer and t.steps[0].answer_correct and t.question_id == "7" and t.success
    table = score_traces(path, ScoreConfig(n_boot=50))
    assert set(table.models) == {"a", "b"}
    assert table.get("a", "rqi").point == pytest.approx(2 / 3) and table.get("b", "premature_rate").point == 1.0
    assert main(["score", str(path), "--json", "--n-boot", "20"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["metric"] for r in rows} >= {"rqi", "calibration_error", "recovery_auc"}
    assert main(["score", str(tmp_path / "missing.jsonl")]) == 2
    bad = _write(tmp_path / "bad.jsonl", [{"question": "Q?"}])
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_jsonl(bad)


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ---------------------------------------------------------------- retriever, world, agents, smoke run


def test_bm25_and_tfidf_rank_the_gold_document_first():
    docs = [
        {"title": "Paris", "content": "Paris is the capital of France."},
        {"title": "Berlin", "content": "Berlin is the capital of Germany."},
        {"title": "Rome", "content": "Rome is the capital of Italy and has many churches."},
    ]
    for cls in (BM25Retriever, TfidfRetriever):
        r = cls(docs)
        assert r.search("capital of Germany")[0] == 1 and r.search("Italy churches")[0] == 2


def test_world_is_deterministic_and_labels_are_exact():
    cfg = SearchWorldConfig(n_entities=30)
    w1, w2, w3 = SearchWorld(cfg, seed=3), SearchWorld(cfg, seed=3), SearchWorld(cfg, seed=4)
    assert w1.docs == w2.docs and w1.questions == w2.questions and w1.docs != w3.docs
    q = w1.questions[0]
    own = [i for i, d in enumerate(w1.docs) if d["entity"] == q.entity and d["attribute"] == q.attribute]
    archive = [i for i in own if w1.docs[i]["kind"] == "archive"]
    assert w1.label_result(archive, q.entity, q.attribute) == ("Sufficient", "Clear")
    assert w1.label_result([], q.entity, q.attribute) == ("Insufficient", "Unclear")
    r = BM25Retriever(w1.docs)
    assert archive[0] in r.search(f"archive record {q.record}")


def test_agent_that_answers_iff_sufficient_is_calibrated():
    world = SearchWorld(SearchWorldConfig(n_entities=30), seed=0)
    r = BM25Retriever(world.docs)
    knobs = AgentKnobs("careful", max_searches=12)
    traces = [run_agent(world, r, q, knobs) for q in world.questions[:60]]
    assert all(M.first_hit(t) == M.first_hit(t) for t in traces)  # every trace reaches E = 2
    assert (
        point("calibration_error", traces, unit="turn") == 0.0 and point("premature_rate", traces, unit="turn") == 0.0
    )
    # the official step unit counts the synthesis step between the decisive result and the answer as "not answering
    # at E = 2": the same perfectly calibrated agent gets CE > 0 (why both units are reported)
    assert point("calibration_error", traces, unit="step") > 0.2
    eager = [run_agent(world, r, q, AgentKnobs("eager", answer_threshold=0)) for q in world.questions[:60]]
    assert point("calibration_error", eager) > 0.05 and point("premature_rate", eager) > 0.1


def test_smoke_run_of_the_paper():
    from iclr26.papers import seekbench as card
    from iclr26.papers.seekbench import experiment

    class Ctx:
        def log(self, msg):
            pass

    cfg = card.Cfg(seeds=(0,), n_entities=20, n_val=30, n_test=30, n_expert=20, n_boot=50)
    m = experiment.run(cfg, 0, Ctx())
    for claim in card.CLAIMS:
        for name in claim.metrics():
            assert name in card.METRICS and name in m, name
    assert 0.0 <= m["kappa_rule_mean"] <= 1.0 and m["bm25_recall_archive"] == 1.0


def test_llm_judge_parses_replies_and_chooses_options():
    from iclr26.agents.seekbench.judges import LLMJudge

    t = trace_a()
    replies = {"Does the": "It is insufficient.", "Is the n": "Clear", "Evidence": "Not Grounded, I think"}
    replies["Previous"] = "RefinedQuery"
    judge = LLMJudge(complete=lambda p: next(v for k, v in replies.items() if k in p))
    out = judge.annotate(t)
    res = [s.annotation for s in out.steps if s.type == "search_result"]
    assert {(a.information_quality, a.information_clarity) for a in res} == {("Insufficient", "Clear")}
    assert {s.annotation.groundness for s in out.steps if s.type == "reasoning"} == {"Not Grounded"}
    first = LLMJudge(choose=lambda prompt, options: options[0]).annotate(t)
    assert [s.annotation.type for s in first.steps if s.type == "search"] == ["InitialQuery"] * 3
    with pytest.raises(ValueError, match="exactly one"):
        LLMJudge()
