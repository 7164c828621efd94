"""Reproduction: SeekBench, *Do LLM Agents Know How to Ground, Recover, and Assess? Evaluating Epistemic Competence
in Information-Seeking Agents* (Shao et al., ICLR 2026, https://arxiv.org/abs/2509.22391).

Idea. Final-answer accuracy hides how a search agent used its evidence. SeekBench annotates each step (evidence
quality and clarity of results, groundedness of reasoning, the kind of each query) and measures grounding (RQI),
recovery from poor results and calibration (answer iff the evidence suffices), with CIs from a bootstrap clustered by
question; an LLM judge, validated on 190 expert traces (kappa > 0.7), scales the annotation.

Protocol (the dossier's testbed; the paper's 7B agents, Wikipedia index and GPT judge are out of reach here). A
`SearchWorld` (entities × 6 attributes in short documents, with missing values, conflicting rumours and archive
records; exact labels for every retrieved list) is searched with real BM25 (`rank-bm25`, top 3). Six scripted agents:
*grounded* (the reference: answer at E = 2, follow-up queries, grounding 0.95), *refiner* (refined instead of
follow-up queries), *repeater* (repeats the last query with probability 0.8), *premature* (answers after its first
search), *ungrounded* (grounding 0.3) and *twin* (the reference's knobs, its own random draws: the control).
Accuracy is equalised by one stated rule: each non-reference agent's prior-knowledge probability ``p_prior`` (not a
process knob) is set by bisection on a validation question set to the reference's validation accuracy. On disjoint
test questions every agent answers every question; each pair (agent vs reference) is compared by a paired bootstrap
over questions. Judges: a rule-based text judge and a learned one (logistic regression on 190 "expert" traces drawn
from the test traces), agreement with gold by Cohen's kappa on the other traces; controls: the learned judge's labels
permuted across steps, and the learned judge trained on shuffled labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    n_entities: int = field(default=120, metadata={"help": "world size: 6 questions per entity (ours)"})
    n_val: int = field(default=300, metadata={"help": "validation questions for the accuracy matching (ours)"})
    n_test: int = field(default=300, metadata={"help": "test questions, each answered by every agent (ours)"})
    p_missing: float = field(default=0.3, metadata={"help": "primary document lacks the value (ours)"})
    p_conflict: float = field(default=0.2, metadata={"help": "a rumour gives a wrong value (ours)"})
    p_paraphrase: float = field(default=0.25, metadata={"help": "statements without the attribute keyword (ours)"})
    top_k: int = field(default=3, metadata={"help": "documents per search (Search-R1 retriever: 3)"})
    max_searches: int = field(default=5, metadata={"help": "agents' search budget (ours)"})
    n_expert: int = field(
        default=190, metadata={"help": "gold-annotated traces to train the learned judge (paper: 190)"}
    )
    n_boot: int = field(default=1000, metadata={"help": "bootstrap resamples (official 2000-5000)"})
    level: float = field(default=0.95, metadata={"help": "CI level for 'separated' (official 95%)"})

    def __post_init__(self):
        if self.n_val + self.n_test > 6 * self.n_entities:
            raise ValueError(f"Cfg: n_val + n_test = {self.n_val + self.n_test} > {6 * self.n_entities} questions")
        if self.n_expert < 10:
            raise ValueError(f"Cfg.n_expert must be ≥ 10, got {self.n_expert}")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), n_entities=40, n_val=80, n_test=80, n_expert=40, n_boot=200),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), n_entities=300, n_val=600, n_test=1000, n_boot=5000),
}
VERSION = 1
EXPECTED_SECONDS = {"smoke": 20, "quick": 100, "full": 600}  # wall, measured on the busy 2-core machine (quick: 96 s)
ACCEPTS_MODEL = False
MODEL_NOTE = (
    "the agents are simulated over a synthetic document world; score a real agent's traces with "
    "`iclr26 seekbench score traces.jsonl` instead"
)

PAPER = "paper: 28,493 traces of Qwen2.5-7B base / few-shot and RL search agents on 7 QA sets; GPT-4.1-mini judge"

CLAIMS = [
    Claim(
        "process-separates",
        "Agents with (nearly) equal answer accuracy differ significantly in process metrics (RQI, calibration error, "
        "premature rate, repeat rate, recovery), in the direction set by their knobs, while accuracy does not "
        "separate them",
        checks=(
            Check("process_z_min", ">", 1.96),
            Check("process_z_min", ">", "acc_z_max"),
            Check("acc_gap_max", "<", 0.05),
        ),
        paper=f"process metrics reveal behavioural gaps answer-only metrics miss ({PAPER}; qualitative)",
    ),
    Claim(
        "process-control",
        "Control: an agent with the reference's knobs (its own random draws) is not separated from it by the same "
        "process metrics",
        checks=(Check("twin_z_mean", "<", 1.96), Check("process_z_min", ">", "twin_z_mean")),
        paper="(our control; not in the paper)",
    ),
    Claim(
        "judge-kappa",
        "An automatic step judge agrees with gold step labels at Cohen's kappa >= 0.7 (evidence quality, clarity, "
        "groundedness, query type)",
        checks=(Check("kappa_learned_mean", ">", 0.7), Check("kappa_rule_mean", ">", 0.7)),
        paper="LLM judge vs 190 expert-annotated traces: kappa > 0.7 (experts among themselves > 0.8)",
    ),
    Claim(
        "judge-control",
        "Control: the learned judge's labels assigned to the wrong steps (permuted within each family) do not agree "
        "with gold (kappa < 0.2); nor does the learned judge trained on shuffled labels (reported)",
        checks=(Check("kappa_permuted_mean", "<", 0.2), Check("kappa_learned_mean", ">", "kappa_permuted_mean")),
        paper="(our control; not in the paper)",
    ),
    Claim(
        "repeat-slowest",
        "The repeat-query agent recovers slowest: its CDF of reaching sufficient-and-clear evidence lies below the "
        "follow-up and refine agents', and a repeated query is less often followed by an exit from a low-quality "
        "episode than a refined or follow-up query",
        checks=(
            Check("recovery_auc_repeater", "<", "recovery_auc_grounded"),
            Check("recovery_auc_repeater", "<", "recovery_auc_refiner"),
            Check("exit_after_repeat_pooled", "<", "exit_after_refine_pooled"),
            Check("exit_after_repeat_pooled", "<", "exit_after_followup_pooled"),
        ),
        paper="refine / follow-up queries with grounded assessment speed recovery, repeated queries stall (KM curves)",
    ),
    Claim(
        "repeat-control",
        "Control: with the repeat knob off (the twin), recovery is not separated from the reference's",
        checks=(Check("twin_recovery_absz", "<", 1.96), Check("repeater_recovery_z", ">", "twin_recovery_absz")),
        paper="(our control; not in the paper)",
    ),
]

_AGENTS = ("grounded", "refiner", "repeater", "premature", "ungrounded", "twin")
METRICS = {
    "process_sep_frac": "share of the 6 designated (agent, metric) contrasts vs the reference whose paired question-"
    "clustered 95% bootstrap CI excludes 0 in the knob's direction: refiner refined_rate >, repeater repeat_rate >, "
    "repeater recovery_auc <, premature calibration_error >, premature premature_rate >, ungrounded rqi <",
    "process_z_min": "min over those 6 contrasts of z = (agent − reference) / bootstrap sd, signed so that the knob's "
    "direction is positive (z > 1.96: the 95% CI excludes 0)",
    "acc_sep_frac": "share of the 4 knob agents whose paired 95% CI of accuracy − reference accuracy excludes 0",
    "acc_z_max": "max over the 4 knob agents of |z| of accuracy − reference accuracy",
    "acc_gap_max": "max over the 4 knob agents of |test accuracy − reference test accuracy|",
    "twin_sep_frac": "share of 8 metrics (success, rqi, calibration_error, premature_rate, recovery_auc, repeat_rate, "
    "refined_rate, lqe_exit_rate) whose paired 95% CI twin − reference excludes 0",
    "twin_z_mean": "mean over those 8 metrics of |z| of twin − reference (≈ 0.8 when nothing differs)",
    "twin_recovery_absz": "|z| of recovery_auc twin − reference",
    "repeater_recovery_z": "z of recovery_auc reference − repeater (positive: the repeater is slower)",
    "process_sep_frac_judged": "process_sep_frac computed from the learned judge's labels instead of gold",
    "process_z_min_judged": "process_z_min computed from the learned judge's labels instead of gold",
    "kappa_rule_mean": "Cohen's kappa (sklearn) of the rule judge vs gold, mean over 4 families (quality, clarity, "
    "groundness, query_type), on test traces outside the expert set",
    "kappa_learned_mean": "same for the learned judge (logistic regression per family, C by 3-fold CV, trained on "
    "n_expert gold traces)",
    "kappa_shuffled_mean": "same for the learned judge trained on per-family shuffled labels (control; it predicts "
    "one class, kappa 0)",
    "kappa_permuted_mean": "same for the learned judge's labels permuted across the steps of each family (control)",
    "recovery_auc_pooled_gap": "mean recovery AUC of the other searching agents − repeater's",
    "exit_after_repeat_pooled": "one-turn exit hazard after RepeatQuery inside low-quality episodes, pooled over all "
    "agents' test traces",
    "exit_after_refine_pooled": "same after RefinedQuery",
    "exit_after_followup_pooled": "same after FollowUpQuery",
    "acc_ref_val": "reference agent's validation accuracy (the matching target)",
    "bm25_recall_primary": "share of test questions whose basic query 'NAME KEYWORD' retrieves the fact's primary "
    "document in the top k (the testbed works)",
    "bm25_recall_archive": "share whose follow-up query 'archive record CODE' retrieves the archive document",
    **{
        f"recovery_auc_{a}": f"{a}: mean over t = 0..20 turns of the share of traces at E = 2 by turn t"
        for a in _AGENTS
    },
    **{f"success_{a}": f"{a}: test accuracy" for a in _AGENTS},
    **{f"rqi_{a}": f"{a}: RQI (grounded share of evidence-anchored reasoning steps)" for a in _AGENTS},
    **{f"calibration_error_{a}": f"{a}: CE with pooled evidence prevalence (turn unit, thr = 2)" for a in _AGENTS},
    **{f"premature_rate_{a}": f"{a}: share answering with E < 2 (H = 15 turns)" for a in _AGENTS},
    **{f"repeat_rate_{a}": f"{a}: RepeatQuery share of queries" for a in _AGENTS},
    **{f"p_prior_{a}": f"{a}: tuned prior-knowledge probability (accuracy matching)" for a in _AGENTS},
}
for _k in ("quality", "clarity", "groundness", "query_type"):
    METRICS[f"kappa_rule_{_k}"] = f"rule judge vs gold, Cohen's kappa on {_k}"
    METRICS[f"kappa_learned_{_k}"] = f"learned judge vs gold, Cohen's kappa on {_k}"
