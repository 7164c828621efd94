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
over questions. In this testbed the knobs write the labels the metrics count, so the agents' separation is a sanity
check of the instrument, not a finding: the paper's two findings (process metrics separate agents that accuracy does
not; repeated queries stall recovery) are decided on the official 190 expert-annotated traces of five Qwen2.5-7B
agents (`agents.seekbench.official`; read from the cache, not shipped), with randomisation controls (an agent split
into two random halves; query-type labels shuffled). The official step unit is the default; the paper's turn unit is
reported beside it. Judges: a rule-based text judge and a learned one (logistic regression on 190 "expert" traces
drawn from the test traces), agreement with gold by Cohen's kappa on the other traces; controls: the learned judge's
labels permuted across steps, and the learned judge trained on shuffled labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = tuple(range(10))  # 10: the repeat-control needed ~8 at VERSION 1's spread
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
    n_boot_official: int = field(default=2000, metadata={"help": "bootstrap resamples on the official traces (2000)"})

    def __post_init__(self):
        if self.n_val + self.n_test > 6 * self.n_entities:
            raise ValueError(f"Cfg: n_val + n_test = {self.n_val + self.n_test} > {6 * self.n_entities} questions")
        if self.n_expert < 10:
            raise ValueError(f"Cfg.n_expert must be ≥ 10, got {self.n_expert}")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), n_entities=40, n_val=80, n_test=80, n_expert=40, n_boot=200, n_boot_official=200),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), n_entities=196, n_val=400, n_test=700, n_boot=5000),  # 196: 14² names
}
VERSION = 3
EXPECTED_SECONDS = {"smoke": 30, "quick": 200, "full": 900}  # quick: wall with ICLR26_JOBS=2 on 2 cores
ACCEPTS_MODEL = False
MODEL_NOTE = (
    "the agents are simulated over a synthetic document world; score a real agent's traces with "
    "`iclr26 seekbench score traces.jsonl` instead"
)

PAPER = "paper: 28,493 traces of Qwen2.5-7B base / few-shot and RL search agents on 7 QA sets; GPT-4.1-mini judge"


def _det(metric: str, direction: str, bound: float) -> Check:
    """A check on a statistic of the fixed official traces (bootstrap seed 42: the same value on every seed)."""
    return Check(metric, direction, bound - 0.01 if direction == ">" else bound + 0.01, margin=0.01, deterministic=True)


CLAIMS = [
    Claim(
        "process-separates",
        "On SeekBench's own expert-annotated traces, agents whose answer accuracy is not separated differ in a process "
        "metric beyond a Bonferroni bound over all (pair, metric) contrasts, while no pair's accuracy separates",
        checks=(_det("official_separation", ">", 1.0), _det("official_acc_z_max", "<", 1.96)),
        paper=f"process metrics reveal behavioural gaps answer-only metrics miss ({PAPER}; qualitative)",
        requires=("official-data", "control-split-agents", "process-control"),
        note="official step unit; the turn unit is reported (official_separation_turn)",
    ),
    Claim(
        "repeat-slowest",
        "On SeekBench's own expert-annotated traces, a repeated query is less often followed by an exit from a "
        "low-quality episode than a refined or a follow-up query (paired over questions, 95 % bootstrap)",
        checks=(_det("official_z_refine_vs_repeat", ">", 1.96), _det("official_z_followup_vs_repeat", ">", 1.96)),
        paper="refine / follow-up queries with grounded assessment speed recovery, repeated queries stall (KM curves)",
        requires=("official-data", "control-permuted-queries", "repeat-control"),
    ),
    Claim(
        "judge-kappa",
        "An automatic step judge agrees with gold step labels at Cohen's kappa >= 0.7 (evidence quality, clarity, "
        "groundedness, query type)",
        checks=(Check("kappa_learned_mean", ">", 0.7), Check("kappa_rule_mean", ">", 0.7)),
        paper="LLM judge vs 190 expert-annotated traces: kappa > 0.7 (experts among themselves > 0.8)",
        requires=("judge-control",),
        note="on the templated text of the synthetic world, where the rule judge alone reaches ~0.97",
    ),
    # ---- gates
    Claim(
        "official-data",
        "Testbed: the official expert-annotated traces are present (190 traces of five agents)",
        checks=(Check("official_n_traces", ">", 150, margin=1, deterministic=True),),
        role="testbed",
    ),
    Claim(
        "control-split-agents",
        "Negative control: one agent's questions split at random into two pseudo-agents are not separated by the same "
        "Bonferroni-scaled statistic (mean over seeds below 1)",
        checks=(fails(Check("official_split_separation", ">", 1.0)),),
        role="negative control",
    ),
    Claim(
        "control-permuted-queries",
        "Negative control: with the Refined / FollowUp / Repeat labels shuffled among the queries, neither hazard "
        "contrast reaches z = 1.96",
        checks=(
            fails(Check("official_perm_z_refine_vs_repeat", ">", 1.96)),
            fails(Check("official_perm_z_followup_vs_repeat", ">", 1.96)),
        ),  # fmt: skip
        role="negative control",
    ),
    Claim(
        "process-control",
        "Negative control (simulated): an agent with the reference's knobs (its own random draws) is not separated "
        "from it by the same bootstrap contrasts (mean |z| over 8 metrics below 1.96)",
        checks=(Check("twin_z_mean", "<", 1.96),),
        role="negative control",
    ),
    Claim(
        "repeat-control",
        "Negative control (simulated): with the repeat knob off (the twin), recovery is not separated from the "
        "reference's",
        checks=(Check("twin_recovery_absz", "<", 1.96),),
        role="negative control",
    ),
    Claim(
        "judge-control",
        "Negative control: the learned judge's labels assigned to the wrong steps (permuted within each family) do not "
        "reach the claim's kappa (< 0.2)",
        checks=(Check("kappa_permuted_mean", "<", 0.2),),
        role="negative control",
    ),
    Claim(
        "sim-process-separates",
        "Sanity (true by construction): in the simulated testbed the knob agents, at matched accuracy, are separated "
        "from the reference by the metric each knob writes, while accuracy is not",
        checks=(
            Check("process_z_min", ">", 1.96),
            Check("process_z_min", ">", "acc_z_max"),
            Check("acc_gap_max", "<", 0.05),
        ),  # fmt: skip
        role="sanity",
    ),
    Claim(
        "sim-repeat-slowest",
        "Sanity (true by construction): the simulated repeat agent's recovery CDF lies below the follow-up and refine "
        "agents', and a repeated query never exits a low-quality episode (the retriever is deterministic)",
        checks=(
            Check("recovery_auc_repeater", "<", "recovery_auc_grounded"),
            Check("recovery_auc_repeater", "<", "recovery_auc_refiner"),
            Check("exit_after_repeat_pooled", "<", "exit_after_refine_pooled"),
            Check("exit_after_repeat_pooled", "<", "exit_after_followup_pooled"),
        ),
        role="sanity",
    ),
]
TABLE_METRICS = ("official_separation_turn", "official_n_separated", "official_n_separated_turn",
                 "official_exit_after_repeat", "official_exit_after_refine", "official_exit_after_followup",
                 "kappa_shuffled_mean", "process_z_min_judged")  # fmt: skip

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
        f"recovery_auc_{a}": f"{a}: mean over t = 0..20 units (official steps) of the share of traces at E = 2 by t"
        for a in _AGENTS
    },
    **{f"success_{a}": f"{a}: test accuracy" for a in _AGENTS},
    **{f"rqi_{a}": f"{a}: RQI (grounded share of evidence-anchored reasoning steps)" for a in _AGENTS},
    **{f"calibration_error_{a}": f"{a}: CE, pooled prevalence (official step unit, thr = 2)" for a in _AGENTS},
    **{f"calibration_error_turn_{a}": f"{a}: CE in the paper's turn unit (thr = 2)" for a in _AGENTS},
    "official_n_traces": "official expert-annotated traces read (NaN: not found)",
    "official_separation": "official traces, step unit: max over agent pairs with unseparated accuracy and 9 process "
    "metrics of |z| / z_bonf (Bonferroni over 10 pairs × 9 metrics); > 1: a gap accuracy misses",
    "official_separation_turn": "the same in the paper's turn unit",
    "official_n_separated": "(pair, metric) contrasts beyond z_bonf among those pairs (step unit)",
    "official_n_separated_turn": "the same in the turn unit",
    "official_acc_z_max": "official traces: max over the 10 agent pairs of |z| of the accuracy difference",
    "official_exit_after_repeat": "official traces: one-turn exit hazard after a RepeatQuery in a low-quality episode",
    "official_exit_after_refine": "the same after a RefinedQuery",
    "official_exit_after_followup": "the same after a FollowUpQuery",
    "official_z_refine_vs_repeat": "official traces: z of exit_after_refine − exit_after_repeat (clustered bootstrap)",
    "official_z_followup_vs_repeat": "official traces: z of exit_after_followup − exit_after_repeat",
    "official_split_separation": "control: the separation statistic between random halves of each agent (this seed)",
    "official_perm_z_refine_vs_repeat": "control: z of refine − repeat with query-type labels shuffled (this seed)",
    "official_perm_z_followup_vs_repeat": "control: z of follow-up − repeat with query-type labels shuffled",
    **{f"premature_rate_{a}": f"{a}: share answering with E < 2 (H = 15 turns)" for a in _AGENTS},
    **{f"repeat_rate_{a}": f"{a}: RepeatQuery share of queries" for a in _AGENTS},
    **{f"p_prior_{a}": f"{a}: tuned prior-knowledge probability (accuracy matching)" for a in _AGENTS},
}
for _k in ("quality", "clarity", "groundness", "query_type"):
    METRICS[f"kappa_rule_{_k}"] = f"rule judge vs gold, Cohen's kappa on {_k}"
    METRICS[f"kappa_learned_{_k}"] = f"learned judge vs gold, Cohen's kappa on {_k}"
