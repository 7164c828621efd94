"""SeekBench on its official traces: the pairwise-separation and exit-hazard tests on hand-built traces (values known
by construction), their randomisation controls, both calibration units in `score_traces`, and finding the data."""

import math

import numpy as np
import pytest

from iclr26.agents.seekbench import metrics as M
from iclr26.agents.seekbench import official as off
from iclr26.agents.seekbench.schema import Annotation, Step, Trace
from iclr26.agents.seekbench.score import ScoreConfig, score_traces


def _trace(qid, model, qtypes, exits, correct):
    """A low-quality start, then one recovery query per entry of `qtypes`; after query i the result is Sufficient and
    Clear iff exits[i] (which ends the episode), else Insufficient."""
    steps = [Step("search", query="q0", annotation=Annotation("InitialQuery"))]
    steps.append(Step("search_result", annotation=Annotation("search_result", information_quality="Insufficient",
                                                               information_clarity="Unclear")))  # fmt: skip
    for qt, ok in zip(qtypes, exits):
        steps.append(Step("search", query=f"q-{qt}", annotation=Annotation(qt)))
        q, c = ("Sufficient", "Clear") if ok else ("Insufficient", "Unclear")
        steps.append(Step("search_result", annotation=Annotation("search_result", information_quality=q,
                                                                   information_clarity=c)))  # fmt: skip
        if ok:
            break
    steps.append(Step("answer", content="x", annotation=Annotation("CorrectAnswer" if correct else "IncorrectAnswer")))
    return Trace("Q?", steps, question_id=qid, model=model, dataset="d", is_correct=correct)


def _agents(n=60, seed=0):
    """Two agents with the same accuracy (every other question right); "stuck" repeats its query and never exits,
    "agile" refines or follows up (alternating) and exits at once 90 % of the time."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ok = bool(i % 2)
        out.append(_trace(f"q{i}", "stuck", ["RepeatQuery"] * 3, [False] * 3, ok))
        first = ["RefinedQuery", "FollowUpQuery"][i % 2]
        out.append(_trace(f"q{i}", "agile", [first, "RefinedQuery"], [bool(rng.random() < 0.9), True], ok))
    return out


def test_pairwise_separation_finds_a_process_gap_that_accuracy_misses():
    traces = _agents()
    r = off.pairwise_separation(traces, n_boot=300)
    assert r["acc_z_max"] == 0.0  # identical accuracy on every question
    assert (
        r["separation"] > 1
        and r["n_separated"] >= 2
        and r["best"][2] in ("repeat_rate", "refined_rate", "lqe_exit_rate", "followup_rate")
    )
    from scipy.stats import norm

    assert r["z_bonf"] == pytest.approx(norm.ppf(1 - 0.05 / 2 / 9))  # 1 pair × 9 metrics
    # a pair whose accuracy already differs is not a gap accuracy misses: no contrast counted
    worse = [Trace(t.question, t.steps, question_id=t.question_id, model=t.model, dataset="d",
                   is_correct=t.model == "agile") for t in traces]  # fmt: skip
    r2 = off.pairwise_separation(worse, n_boot=300)
    assert r2["acc_z_max"] > 1.96 and math.isnan(r2["separation"]) and r2["n_separated"] == 0


def test_split_control_and_permuted_query_types_remove_the_effects():
    traces = _agents()
    # halves of one agent: the same process, no separation
    assert off.split_separation([t for t in traces if t.model == "agile"], seed=1, n_boot=300) < 1
    split = off.split_agents(traces, seed=1)
    assert sorted({t.model for t in split}) == ["agile/A", "agile/B", "stuck/A", "stuck/B"]
    assert sorted((t.model.split("/")[0], t.question_id) for t in split) == sorted(
        (t.model, t.question_id) for t in traces
    )
    side = {}
    for t in split:  # each question of an agent lies in one half only
        side.setdefault((t.model.split("/")[0], t.question_id), set()).add(t.model[-1])
    assert all(len(v) == 1 for v in side.values())
    # exit hazards: repeat never exits, refine / follow-up exit 90 % of the time
    e = off.exit_contrasts(traces, n_boot=300)
    assert e["exit_after_repeat"] == 0.0 and e["exit_after_refine"] > 0.8
    assert e["z_refine_vs_repeat"] > 5 and e["z_followup_vs_repeat"] > 1.96
    perm = off.permute_query_types(traces, seed=0)
    count = lambda ts, q: sum(s.annotation.type == q for t in ts for s in t.steps)  # noqa: E731
    assert all(count(perm, q) == count(traces, q) for q in off.RECOVERY_TYPES)  # same label counts
    assert count(traces, "RepeatQuery") == 180 and traces[0].steps[2].annotation.type == "RepeatQuery"  # originals kept
    p = off.exit_contrasts(perm, n_boot=300)
    assert abs(p["z_refine_vs_repeat"]) < 1.96 and p["exit_after_repeat"] > 0


def test_score_traces_gives_both_units_and_the_step_unit_is_the_default():
    traces = _agents(20)
    table = score_traces(traces, ScoreConfig(n_boot=50))
    names = {r["metric"] for r in table.rows}
    assert {"calibration_error", "calibration_error@turn", "premature_rate@turn"} <= names
    assert "repeat_rate@turn" not in names  # the unit changes only the calibration and recovery metrics
    one = [t for t in traces if t.model == "agile"]
    step, _ = M.cluster_table(one)
    turn, _ = M.cluster_table(one, unit="turn")
    got = table.get("agile", "recovery_auc@turn").point
    assert got == pytest.approx(float(M.metric_statistic("recovery_auc")(np.ones((1, len(turn))), turn)[0]))
    assert table.get("agile", "recovery_auc").point == pytest.approx(
        float(M.metric_statistic("recovery_auc")(np.ones((1, len(step))), step)[0])
    )
    assert {r["metric"] for r in score_traces(traces, ScoreConfig(n_boot=20, both_units=False)).rows} == {
        m for m in names if "@" not in m
    }


def test_finding_the_official_traces(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    monkeypatch.delenv("ICLR26_SEEKBENCH_DATA", raising=False)
    assert off.find_official() is None
    with pytest.raises(FileNotFoundError, match="git clone https://github.com/SHAO-Jiaqi757/SeekBench"):
        off.load_official()
    monkeypatch.setenv("ICLR26_SEEKBENCH_DATA", str(tmp_path / "nope.jsonl"))
    with pytest.raises(FileNotFoundError, match="is not a file"):
        off.find_official()
    from iclr26.agents.seekbench.schema import write_jsonl

    (tmp_path / "seekbench").mkdir()
    path = write_jsonl(_agents(4), tmp_path / "seekbench" / "seekbench_data.jsonl")
    monkeypatch.delenv("ICLR26_SEEKBENCH_DATA")
    assert off.find_official() == path and len(off.load_official()) == 8


def test_the_card_reports_not_testable_without_the_official_traces(tmp_path, monkeypatch):
    """Without the data the official metrics are NaN (failed seeds), so the data gate fails and both official claims
    are not testable, never reproduced or not reproduced."""
    from iclr26.core.claims import NOT_TESTABLE
    from iclr26.core.gates import evaluate
    from iclr26.papers import seekbench as card
    from iclr26.papers.seekbench import experiment as ex

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    monkeypatch.delenv("ICLR26_SEEKBENCH_DATA", raising=False)

    class Ctx:
        def log(self, msg):
            self.msg = msg

    m = ex._official(card.CONFIGS["smoke"], 0, Ctx())
    assert set(m) == set(ex.OFFICIAL_METRICS) and all(math.isnan(v) for v in m.values())
    per_seed = [{**m, **{k: 0.5 for c in card.CLAIMS for chk in c.checks for k in chk.metrics() if k not in m}}] * 3
    v = {c.id: c for c in evaluate(card.CLAIMS, per_seed)}
    assert v["process-separates"].verdict == NOT_TESTABLE and v["repeat-slowest"].verdict == NOT_TESTABLE
    assert "official-data" in v["process-separates"].note
