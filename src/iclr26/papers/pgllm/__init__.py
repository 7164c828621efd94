"""Reproduction: PGLLM, *Test-Time Optimization of 3D Point Cloud LLM via Manifold-Aware In-Context Guidance and
Refinement* (ICLR 2026, https://openreview.net/forum?id=qsra0EsUpe; code https://github.com/handsome999KK/PGLLM).

Idea. In a two-stage 3D LLM pipeline (a 3D MLLM captions each point cloud, a text LLM answers from the caption),
build a kNN graph over frozen point-encoder features of an unlabelled support set; (i) add the captions of a query's
graph neighbours to the stage-2 prompt (in-context guidance) and (ii) smooth the LLM's class scores over the graph by
label propagation. Training-free; the paper reports higher recognition accuracy and OOD AUROC (FPR95 no longer stuck
at 100 with GPT-4's near-binary scores), both parts complementary, at near-zero extra cost.

Protocol (PointLLM / Point-BERT / GPT-4 and ModelNet40 are out of reach: PGLLM's own parts exact, the foundation
models replaced, `iclr26.vision.pgllm`). Per seed: procedural trimesh shapes of 18 classes
(`iclr26.vision.pgllm.world`),
a labelled pre-training world (shift 0) and two unlabelled evaluation sets with a shifted shape prior (validation and
test, transductive PGLLM_T). A PointNet encoder pre-trained with early stopping; a captioner stand-in (sampled class
word from a partial view + geometric attributes + out-of-vocabulary synonyms); stage 2 = a TF-IDF + logistic-regression
reader trained on single captions of the pre-training world, with GPT-4-like hard {0, 100} scores (main arm), and the
real SmolLM2-135M-Instruct choosing a class by answer likelihood on a class-balanced subset. Arms: isolated, direct-NN
guidance, graph guidance, propagation only, both; controls: the same arms on a random graph with the same out-degree
and weights. K and α of every arm tuned on the validation set by `tune_on_grid` (recognition: accuracy; OOD: AUROC).
OOD: three ID/OOD class splits (one third ID), AUROC and FPR95 averaged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    n_pre: int = field(default=60, metadata={"help": "pre-training shapes per class (dossier: 150)"})
    n_test: int = field(default=40, metadata={"help": "test support shapes per class (dossier: 100)"})
    n_val: int = field(default=25, metadata={"help": "validation support shapes per class, for tuning (ours)"})
    n_points: int = field(default=256, metadata={"help": "points per cloud (dossier: 1,024; PointLLM: 8,192)"})
    shift: float = field(default=1.0, metadata={"help": "shape-prior shift of the evaluation sets (ours)"})
    k_grid: tuple[int, ...] = field(default=(1, 2, 3, 5, 8), metadata={"help": "K grid (paper 3; code 3 and 10)"})
    ratio_grid: tuple[float, ...] = field(
        default=(0.25, 0.5, 1.0, 2.0, 4.0),
        metadata={"help": "grid of α/(1-α) (α 0.2..0.8; paper α = 0.5), extended past an edge pick"},
    )
    steps: int = field(default=5, metadata={"help": "propagation iterations T (paper: 5)"})
    n_sparse: int = field(default=8, metadata={"help": "shapes per class of the sparse-support variant (ours)"})
    smollm: bool = field(default=True, metadata={"help": "run the SmolLM2-135M stage-2 arm"})
    n_slm: int = field(default=4, metadata={"help": "shapes per class read by SmolLM2 (time budget; ours)"})

    def __post_init__(self):
        if min(self.n_pre, self.n_test, self.n_val, self.n_sparse, self.n_slm) < 2:
            raise ValueError("Cfg: n_pre, n_test, n_val, n_sparse and n_slm must be >= 2")
        if self.n_sparse > self.n_test or self.n_slm > self.n_test:
            raise ValueError(f"Cfg: n_sparse and n_slm must be <= n_test = {self.n_test}")
        if not 0 <= self.shift <= 2:
            raise ValueError(f"Cfg.shift must lie in [0, 2], got {self.shift!r}")
        if min(self.k_grid) < 1 or min(self.ratio_grid) <= 0 or self.steps < 1:
            raise ValueError("Cfg: k_grid >= 1, ratio_grid > 0 and steps >= 1 are required")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_pre=12,
        n_test=8,
        n_val=6,
        n_points=128,
        k_grid=(1, 3),
        ratio_grid=(0.5, 2.0),
        n_sparse=3,
        smollm=False,
        n_slm=2,
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), n_pre=150, n_test=100, n_val=50, n_points=1024, n_slm=20),
}
VERSION = 2  # 2: baselines the testbed supplies (the encoder's argmax and a kNN vote of it, K tuned on validation)
EXPECTED_SECONDS = {"smoke": 20, "quick": 480, "full": 3600}  # quick: estimate (busy 2-core CPU); full: estimate
ACCEPTS_MODEL = False
MODEL_NOTE = "pass your own causal LM to `iclr26.vision.pgllm.LikelihoodReader` (or a chat LLM to GenerativeReader)"

PAPER_ABL = "PointLLM-7B + GPT-4 ablation, ModelNet40"

CLAIMS = [
    Claim(
        "testbed",
        "The testbed can do the task: the pre-trained encoder is accurate on held-out pre-training shapes, and its "
        "kNN graph links same-class shapes far more often than a random graph of the same degree",
        checks=(Check("enc_val_acc", ">", 0.8), Check("graph_purity", ">", "rand_purity", margin=0.3)),
        paper="(our check; the paper uses Point-BERT features of PointLLM)",
        role="testbed",
    ),
    Claim(
        "beyond-encoder",
        "The testbed can tell guidance from what it injected: the stand-in captioner draws its class word from the "
        "same encoder, so guidance must beat the encoder's own argmax and a kNN vote of it (K tuned on validation) "
        "to show more than averaging away the captioner's noise",
        checks=(
            Check("acc_guide", ">", "enc_test_acc", margin=0.01),
            Check("acc_guide", ">", "acc_enc_knn", margin=0.01),
        ),
        role="testbed",
    ),
    Claim(
        "control-guidance",
        "Random neighbours of the same degree do not pass the guidance check: guidance over a random graph does not "
        "raise accuracy over the isolated pipeline by the claim's margin",
        checks=(fails(Check("acc_rand_guide", ">", "acc_iso", margin=0.01)),),
        role="negative control",
    ),
    Claim(
        "control-propagation",
        "Propagation over a random graph of the same degree and weights does not pass the AUROC check",
        checks=(fails(Check("auroc_rand_lp", ">", "auroc_iso", margin=0.01)),),
        role="negative control",
    ),
    Claim(
        "control-fpr95",
        "Propagation over a random graph does not pass the FPR95 check: with hard 0/100 scores FPR95 is 1.0 by "
        "construction, and any smoothing that breaks the ties lowers it, graph or not",
        checks=(fails(Check("fpr95_rand_lp", "<", "fpr95_iso", margin=0.05)),),
        role="negative control",
    ),
    Claim(
        "full-gain",
        "There is a gain to shrink: guidance + propagation beat the isolated pipeline by more than 0.01 accuracy on "
        "the full support",
        checks=(Check("gain_full", ">", 0.01),),
        role="headroom",
    ),
    Claim(
        "slm-does-task",
        "SmolLM2 does the task at all: its isolated accuracy is above 0.1 (chance is 1/18 = 0.056)",
        checks=(Check("slm_acc_iso", ">", 0.1),),
        when="smollm",
        role="testbed",
    ),
    Claim(
        "slm-control",
        "Random neighbours do not pass SmolLM2's guidance check: guidance over a random graph does not raise SmolLM2's "
        "accuracy over isolated prompts by the claim's margin",
        checks=(fails(Check("slm_acc_rand_guide", ">", "slm_acc_iso", margin=0.02)),),
        when="smollm",
        role="negative control",
    ),
    Claim(
        "guidance",
        "In-context guidance (neighbours' captions in the prompt) raises recognition accuracy over the isolated "
        "pipeline",
        checks=(Check("acc_guide", ">", "acc_iso", margin=0.01), Check("acc_guide", ">", "acc_rand_guide")),
        paper=f"accuracy 52.5 -> 60.2 (graph retrieval), 59.7 (direct NN) ({PAPER_ABL})",
        requires=("testbed", "beyond-encoder", "control-guidance"),
    ),
    Claim(
        "propagation",
        "Label propagation raises OOD AUROC with near-binary scores over the isolated pipeline, and more than "
        "propagation over a random graph",
        checks=(Check("auroc_lp", ">", "auroc_iso", margin=0.01), Check("auroc_lp", ">", "auroc_rand_lp")),
        paper=f"AUROC 80.4 -> 83.5; accuracy 52.5 -> 56.7 ({PAPER_ABL})",
        requires=("testbed", "control-propagation"),
    ),
    Claim(
        "propagation-fpr95",
        "Label propagation fixes FPR95 with near-binary scores: FPR95 down versus isolated",
        checks=(Check("fpr95_lp", "<", "fpr95_iso", margin=0.05), Check("fpr95_lp", "<", "fpr95_rand_lp")),
        paper=f"FPR95 100 -> 62.0 ({PAPER_ABL})",
        requires=("testbed", "control-fpr95"),
    ),
    Claim(
        "together-best",
        "Guidance and propagation are complementary: together they beat each alone in accuracy and in AUROC",
        checks=(
            Check("acc_both", ">", "acc_guide"),
            Check("acc_both", ">", "acc_lp"),
            Check("auroc_both", ">", "auroc_guide"),
            Check("auroc_both", ">", "auroc_lp"),
        ),
        paper=f"both: accuracy 63.1, AUROC 85.9, FPR95 52.1 (best row of the {PAPER_ABL})",
        requires=("testbed", "beyond-encoder", "control-guidance", "control-propagation"),
    ),
    Claim(
        "real-lm",
        "With a real LM as stage 2 (SmolLM2-135M, answer likelihood), guidance and guidance + propagation raise "
        "accuracy and propagation raises AUROC over the isolated pipeline",
        checks=(
            Check("slm_acc_guide", ">", "slm_acc_iso", margin=0.02),
            Check("slm_acc_both", ">", "slm_acc_iso", margin=0.02),
            Check("slm_auroc_lp", ">", "slm_auroc_iso", margin=0.01),
        ),
        paper="GPT-4 / DeepSeek-V3 / Qwen3-VL-8B as stage 2 all gain; weaker with Llama-3.1-8B",
        when="smollm",
        requires=("testbed", "slm-does-task", "slm-control"),
    ),
    Claim(
        "cost-graph",
        "The graph and label propagation cost near nothing: their measured seconds and peak memory are under 5 % "
        "of the stage-2 LM's (SmolLM2, isolated prompts) on the same samples",
        checks=(Check("graph_time_frac", "<", 0.05), Check("graph_mem_frac", "<", 0.05)),
        paper="'near-zero extra cost' (training-free, a K = 3 graph and T = 5 sparse products)",
        when="smollm",
        requires=("slm-does-task",),
    ),
    Claim(
        "cost-prompt",
        "The longer guided prompt costs little: stage-2 LM time with guidance at most 1.25x the isolated prompts' time",
        checks=(Check("slm_prompt_time_ratio", "<", 1.25),),
        paper="'near-zero extra cost' (the paper does not separate the longer prompt's tokens)",
        when="smollm",
        requires=("slm-does-task",),
    ),
    Claim(
        "sparse-support",
        "Gains shrink when the support set is sparse (the paper's stated limitation): the accuracy gain of guidance + "
        "propagation over isolated is larger with the full support than with n_sparse shapes per class",
        checks=(Check("gain_full", ">", "gain_sparse"),),
        paper="(stated limitation; no numbers recovered)",
        requires=("testbed", "full-gain"),
    ),
]
HEADLINE = "guidance"

ARMS = ("iso", "dnn", "guide", "lp", "both", "rand_guide", "rand_lp", "rand_both")
METRICS = {
    "enc_val_acc": "encoder accuracy on the held-out 20 % of the pre-training world (early-stopping split)",
    "enc_test_acc": "encoder classification accuracy on the shifted test set (full view)",
    "caption_acc": "share of test captions whose class word (or its synonym) is the true class",
    "graph_purity": "share of the test kNN graph's edges (K = 3, cosine) joining same-class shapes",
    "rand_purity": "same for the random graph with the same out-degree (control)",
    "acc_enc_knn": "kNN vote of the encoder's argmax over the test graph (self + K neighbours; K on validation)",
    "k_enc_knn": "K chosen for the encoder's kNN vote on validation accuracy",
    "msp_auroc": "reference OOD baseline: max softmax over ID classes of the encoder's logits, AUROC (mean of splits)",
    "gain_full": "acc_both - acc_iso on the full test support (hard scores)",
    "gain_sparse": "acc_both - acc_iso on a support of n_sparse shapes per class (same K, α)",
    "k_guide": "K chosen for graph guidance on validation accuracy",
    "k_both": "K chosen for guidance + propagation on validation accuracy",
    "alpha_lp": "α chosen for propagation only on validation accuracy",
    "alpha_both": "α chosen for guidance + propagation on validation accuracy",
    "acc_iso_soft": "isolated accuracy with soft (probability) scores",
    "acc_both_soft": "guidance + propagation accuracy with soft scores (K = 3, α = 0.5, paper defaults)",
    "auroc_iso_soft": "isolated AUROC with soft scores",
    "auroc_both_soft": "guidance + propagation AUROC with soft scores (K = 3, α = 0.5)",
    "slm_acc_iso": "SmolLM2 stage 2: accuracy, isolated prompts (n_slm per class)",
    "slm_acc_guide": "SmolLM2: accuracy with graph guidance",
    "slm_acc_lp": "SmolLM2: accuracy, isolated + propagation",
    "slm_acc_both": "SmolLM2: accuracy, guidance + propagation",
    "slm_acc_rand_guide": "SmolLM2: accuracy with random-graph neighbours (control)",
    "slm_auroc_iso": "SmolLM2: AUROC (100 Σ_ID p), isolated",
    "slm_auroc_lp": "SmolLM2: AUROC, isolated + propagation",
    "slm_auroc_guide": "SmolLM2: AUROC, guidance",
    "slm_auroc_both": "SmolLM2: AUROC, guidance + propagation",
    "slm_seconds_iso": "SmolLM2 seconds for the isolated prompts (measured)",
    "slm_seconds_guide": "SmolLM2 seconds for the guided prompts (measured)",
    "slm_prompt_time_ratio": "slm_seconds_guide / slm_seconds_iso",
    "graph_seconds": "measured seconds of graph building + retrieval + propagation on the SmolLM2 subset",
    "graph_time_frac": "graph_seconds / slm_seconds_iso",
    "graph_mem_frac": "peak memory of graph + propagation (tracemalloc) / SmolLM2's parameter bytes",
}
for _a in ARMS:
    METRICS[f"acc_{_a}"] = f"recognition accuracy, arm {_a} (hard scores, test support)"
    METRICS[f"auroc_{_a}"] = f"OOD AUROC, arm {_a} (hard scores; mean of three ID/OOD splits)"
    METRICS[f"fpr95_{_a}"] = f"OOD FPR95, arm {_a} (hard scores; mean of three splits)"
