"""Cross-check `iclr26.agents.seekbench` against the official SeekBench analysis code on the official annotated data.

    git clone https://github.com/SHAO-Jiaqi757/SeekBench
    python benchmarks/seekbench_official_crosscheck.py SeekBench/analysis SeekBench/data/seekbench_data.jsonl

Needs pandas (the official scripts); seaborn is stubbed (only used for plot styling). The official calibration code
reads answers from ``annotation.type``, while the bundled data writes them as step types; the script copies the step
type into the annotation first. Our metrics run with ``unit="step"`` (the official code's unit). Prints every value
side by side and the number of differences (measured: 0 of 65 on the 190 bundled traces).
"""

import json
import math
import sys
import types

import numpy as np

from iclr26.agents.seekbench import ScoreConfig, score_traces


def main(analysis_dir: str, data_path: str) -> int:
    sys.modules.setdefault("seaborn", types.SimpleNamespace(set_theme=lambda **k: None))
    sys.path.insert(0, analysis_dir)
    import calibration as cal  # the official scripts
    import grounded_reason as gr
    import recovery as rec

    with open(data_path) as f:
        rows = [json.loads(line) for line in f]
    for r in rows:
        for s in r["trace"]:
            if s["type"] in ("CorrectAnswer", "IncorrectAnswer"):
                s["annotation"] = {"type": s["type"]}
    ours = score_traces(rows, ScoreConfig(unit="step", n_boot=200))
    name = {m: gr.clean_and_categorize_model(m)[0] for m in {r["model"] for r in rows}}
    out = []
    df = gr.build_trajectory_df(rows, require_clear_sufficient=True, exclude_pre_suff_answers=False)
    for met in ("success", "refined_rate", "repeat_rate", "turns_to_first_sufficient", "rqi"):
        off = gr.cluster_bootstrap_ci_by_model(df, met, n_boot=200)
        out += [(met, clean, off[clean][0], ours.get(raw, met).point) for raw, clean in name.items()]
    turn_df = cal.build_turn_level_df(rows)
    conf = cal.compute_confusion_data(cal.build_trajectory_level_df(rows, horizon=15), "high", group_by="model")
    res = cal.compute_A4_calibration(turn_df, conf, "high", n_boot=50, group_by="model", ce_prevalence="global")
    for raw, clean in name.items():
        r = res[res["model"] == clean].iloc[0]
        pairs = [("calibration_error", "CE_point"), ("premature_rate", "premature_point")]
        pairs += [("overcautious_rate", "over_cautious_point")] + [(f"answer_rate_e{k}", f"a{k}") for k in range(3)]
        out += [(ours_name, clean, r[off_name], ours.get(raw, ours_name).point) for ours_name, off_name in pairs]
    tl = rec.build_turn_level_records(rows)
    episodes = rec.detect_low_quality_episodes(rows)
    for raw, clean in name.items():
        hits = [
            (g.sort_values("step_index")["E"].values >= 2).any()
            for _, g in tl[tl["model"] == clean].groupby(["dataset", "question_id"])
        ]
        out.append(("reach_e2", clean, float(np.mean(hits)), ours.get(raw, "reach_e2").point))
        eps = [e for e in episodes if e["model"] == clean]
        out.append(
            (
                "lqe_exit_rate",
                clean,
                float(np.mean([1 - e["censored"] for e in eps])),
                ours.get(raw, "lqe_exit_rate").point,
            )
        )
    bad = 0
    for met, model, a, b in out:
        same = (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-9
        bad += not same
        print(f"{met:26s} {model:16s} official={a:.4f} ours={b:.4f}{'' if same else '  <-- differs'}")
    print(f"differences: {bad} of {len(out)}")
    return int(bad > 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
