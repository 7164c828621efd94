"""SeekBench: process-level evaluation of information-seeking agents (Shao et al., ICLR 2026).

Paper: https://arxiv.org/abs/2509.22391 · official toolkit: https://github.com/SHAO-Jiaqi757/SeekBench.
Final-answer accuracy hides *how* an agent used its evidence. SeekBench annotates every step of a search agent's trace
(evidence quality and clarity of each result, groundedness of each reasoning step, the relation of each query to the
earlier ones) and measures three competences: grounding (RQI), recovery from poor results (time to sufficient evidence,
exit hazards after refine / follow-up / repeat queries) and calibration (answer iff the evidence suffices: CE,
premature and over-cautious rates), each with confidence intervals from a bootstrap clustered by question.

Modules: ``schema`` (steps, annotations, the JSONL trace format), ``metrics`` (the metrics), ``bootstrap`` (the
bootstrap clustered by question),
``judges`` (rule-based, learned and LLM step annotators; Cohen's kappa), ``retriever`` (BM25 / TF-IDF), ``simulate``
(scripted agents with process knobs, for the reproduction), ``score`` (``score_traces`` and the command line).
"""

from .metrics import CI, bootstrap_ci, cluster_table, clustered_bootstrap, metric_statistic, paired_difference
from .schema import Annotation, Step, Trace, evidence_level, read_jsonl, write_jsonl
from .score import MetricsTable, ScoreConfig, main, score_traces

__all__ = [
    "CI",
    "Annotation",
    "MetricsTable",
    "ScoreConfig",
    "Step",
    "Trace",
    "bootstrap_ci",
    "cluster_table",
    "clustered_bootstrap",
    "evidence_level",
    "main",
    "metric_statistic",
    "paired_difference",
    "read_jsonl",
    "score_traces",
    "write_jsonl",
]
