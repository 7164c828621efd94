"""Reproduction: MLR, *Enhancing Language Model Reasoning with Structured Multi-Level Modeling* (Xiong, Payani,
Fekri, ICLR 2026, https://openreview.net/forum?id=PlkzZhqBCd; code https://github.com/xiongsiheng/MLR).

Idea. Long chain-of-thought is recast as a two-level process on one backbone: a planner (a LoRA adapter) writes a
short step descriptor from a compressed history, the executor (the same model, adapter off) writes the step from the
raw history; they alternate. After SFT of both levels, iterative online Step-DPO trains each level on step pairs that
share a prefix, ranked by Twisted SMC incremental importance weights estimated from Monte-Carlo rollouts. With 10 % of
the SFT data and 5 % of the preference data of R1 distillation, MLR is reported to beat SFT distillation and
outcome-reward RL, and to degrade more slowly as the horizon grows.

Protocol (math benchmarks and 1.5B models are out of reach: the dossier's testbed, version 3). Per seed: the
modular-arithmetic program world (`iclr26.rlft.mlr.world`, p = 5, `operations="library"`: a program lists K labels
(consecutive letters, shuffled, the first named by `from`) whose operations come from a fixed library; planning =
choosing the next label from the problem statement, execution = applying its operation); a micro llama "pretrained"
on component skills only (arithmetic facts, letter order, the library's entries, execution chains of explicit
operations and letter runs of 1-12 steps; no programs; early stopping on held-out skills) and shared by every arm;
teacher traces with slips (a swapped pair of operations in 30 % of traces, an off-by-one result in 5 % of steps).
Arms: single-policy SFT on all traces (`sft_full`, the distillation analogue), `sft_full` + outcome-reward GRPO (TRL
`GRPOTrainer`), MLR (two-level SFT on 10 % of the traces, then Step-DPO with TSMC pairs, as many pairs as 5 % of the
traces), the ablations MLR without Step-DPO (`mlr_sft`), with outcome-only pairs (`mlr_outcome`), without the planner
split (`mlr_nosplit`), and the control MLR with random preferences (`mlr_random`). The testbed's check: the
`sft_full` executor driven by the gold plan solves held-out programs, far above the same executor driven by a random
valid plan (control). Training horizons 3-8; test horizons 3-12; sampled decoding (T = 0.6, top-p 0.95, the paper's)
with the same plan/execute loop for every arm. Every SFT stage stops early on the validation NLL of held-out teacher
traces, every RL stage (GRPO, Step-DPO rounds) on validation accuracy (horizons 3-8; the same rule for every arm).
Learning rates: one rule for every stage (`papers.mlr.tuning`: `tune_on_grid` on the validation split of tuning seed
100, grids extended past edge picks, run once and cached).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails

ARMS = ("sft_full", "grpo", "mlr_sft", "mlr", "mlr_outcome", "mlr_nosplit", "mlr_random")
DPO_ARMS = ("mlr", "mlr_outcome", "mlr_random", "mlr_nosplit")


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = field(default=ARMS, metadata={"help": "arms run per seed (sft_full and mlr required)"})
    p: int = field(default=5, metadata={"help": "modulus (dossier: 97; ours, so a micro model learns the tables)"})
    operations: str = field(
        default="library",
        metadata={
            "help": "label -> operation: a fixed library of the world ('library', ours) or listed in each "
            "prompt ('listed', the dossier's; see docs)"
        },
    )
    listing: str = field(
        default="shuffled",
        metadata={"help": "order of the labels in the prompt (rlft.mlr.world; dossier: shuffled)"},
    )
    train_horizons: tuple[int, ...] = field(default=(3, 4, 5, 6, 7, 8), metadata={"help": "K for training (<= 8)"})
    test_horizons: tuple[int, ...] = field(default=(3, 5, 8, 12), metadata={"help": "K for test (3-12)"})
    n_traces: int = field(default=1000, metadata={"help": "teacher traces of the full-data SFT arm (ours)"})
    sft_frac: float = field(default=0.1, metadata={"help": "MLR's share of the SFT traces (paper: 10 %)"})
    pair_frac: float = field(
        default=0.4,
        metadata={
            "help": "preference pairs per Step-DPO arm as a share of the traces (paper: 5 % of its preference data; "
            "VERSION 5: 0.4 = 400 pairs, 10x the ~40 VERSION 4 collected, which moved nothing)"
        },
    )
    plan_slip: float = field(default=0.3, metadata={"help": "teacher traces with two operations swapped (ours)"})
    exec_slip: float = field(default=0.05, metadata={"help": "teacher steps with an off-by-one result (ours)"})
    n_val: int = field(default=64, metadata={"help": "validation problems (K 3-8) for early stopping"})
    n_test: int = field(default=40, metadata={"help": "test problems per horizon"})
    d_model: int = field(default=64, metadata={"help": "backbone width (dossier: 128)"})
    n_layers: int = field(default=2, metadata={"help": "backbone depth (dossier: 2-4)"})
    pretrain_lookups: int = field(
        default=0, metadata={"help": "look-up examples per pretraining epoch (the listed world's skill; ours)"}
    )
    pretrain_chains: int = field(
        default=2000,
        metadata={"help": "execution chains (and letter runs) of 1-12 steps per pretraining epoch (ours; see docs)"},
    )
    pretrain_label_chains: int = field(
        default=3000,
        metadata={
            "help": "labelled execution chains (`start 4` then `plan c exec` -> `4 mul3 = 2 end`, labels given in "
            "order) of 1-12 steps per pretraining epoch: applying named library operations, the executor's skill "
            "(ours; VERSION 5, so that the backbone executes before any trace SFT, as a pretrained LLM does)"
        },
    )
    pretrain_reps: int = field(
        default=40, metadata={"help": "copies of every arithmetic fact per pretraining epoch (letter order: 4x; ours)"}
    )
    pretrain_epochs: int = field(
        default=8,
        metadata={"help": "component-skill pretraining epoch cap (early stopping on held-out skill NLL decides; ours)"},
    )
    base_lr: float = field(default=3e-3, metadata={"help": "lr of the component-skill pretraining (ours)"})
    tune: bool = field(
        default=True,
        metadata={
            "help": "tune every lr by the one rule (papers.mlr.tuning); False: use the fixed values below (smoke)"
        },
    )
    max_extensions: int = field(default=3, metadata={"help": "grid extensions past an edge pick (tune_on_grid)"})
    sft_lr: float = field(default=3e-3, metadata={"help": "single-policy SFT lr when not tuned (ours)"})
    sft_lr_grid: tuple[float, ...] = field(default=(3.75e-4, 7.5e-4, 1.5e-3), metadata={"help": "SFT lr grid (ours)"})
    small_lr: float = field(default=3e-3, metadata={"help": "SFT lr of MLR's 10 % backbone when not tuned (ours)"})
    small_lr_grid: tuple[float, ...] = field(default=(7.5e-4, 1.5e-3, 3e-3), metadata={"help": "10 % SFT lr grid"})
    planner_lr: float = field(default=6e-3, metadata={"help": "planner LoRA SFT lr when not tuned (repo 3e-5 on 1.5B)"})
    planner_lr_grid: tuple[float, ...] = field(default=(3e-3, 6e-3, 1.2e-2), metadata={"help": "planner SFT grid"})
    lora_r: int = field(default=8, metadata={"help": "planner LoRA rank (paper 16; dossier toy 8)"})
    max_epochs: int = field(default=30, metadata={"help": "SFT epoch cap (early stopping on val NLL decides)"})
    patience: int = field(default=3, metadata={"help": "evaluations without val improvement before stopping"})
    rounds: int = field(default=2, metadata={"help": "Step-DPO rounds (not stated; dossier 2-3)"})
    dpo_lr: float = field(default=5e-4, metadata={"help": "executor Step-DPO lr when not tuned (repo 5e-6 on 1.5B)"})
    dpo_lr_grid: tuple[float, ...] = field(default=(1.25e-4, 2.5e-4, 5e-4), metadata={"help": "Step-DPO lr grid"})
    dpo_planner_ratio: float = field(default=10.0, metadata={"help": "planner / executor Step-DPO lr (repo 5e-5/5e-6)"})
    dpo_lr_planner: float = field(
        default=5e-3, metadata={"help": "planner Step-DPO lr when not tuned (ratio x dpo_lr)"}
    )
    dpo_epochs: int = field(default=2, metadata={"help": "Step-DPO epochs per round (repo: 2)"})
    beta: float = field(default=0.1, metadata={"help": "DPO beta (repo: 0.1)"})
    n_rollouts: int = field(
        default=4, metadata={"help": "N, MC rollouts per twist (repo: 8; quick 4 so that 10x the pairs fit; full 8)"}
    )
    k_candidates: int = field(default=4, metadata={"help": "candidates per prefix (dossier: 4)"})
    prefix_batch: int = field(default=128, metadata={"help": "online prefixes per pair-collection batch (ours)"})
    max_prefix_batches: int = field(default=8, metadata={"help": "collection batches per round at most (ours)"})
    grpo_lr: float = field(default=1.25e-4, metadata={"help": "GRPO lr when not tuned (ReMix's on a micro llama)"})
    grpo_lr_grid: tuple[float, ...] = field(default=(6.25e-5, 1.25e-4, 2.5e-4), metadata={"help": "GRPO lr grid"})
    grpo_prompts: int = field(default=8, metadata={"help": "GRPO prompts per iteration"})
    grpo_generations: int = field(default=8, metadata={"help": "G samples per prompt"})
    grpo_max_iters: int = field(default=30, metadata={"help": "GRPO iteration cap (early stopping decides)"})
    grpo_eval_every: int = field(default=5, metadata={"help": "GRPO iterations between validations"})

    @property
    def all_arms(self) -> bool:
        return set(self.arms) == set(ARMS)

    def __post_init__(self):
        if not {"sft_full", "mlr"} <= set(self.arms) or not set(self.arms) <= set(ARMS):
            raise ValueError(f"Cfg.arms must include sft_full and mlr and be drawn from {ARMS}, got {self.arms!r}")
        if max(self.train_horizons) > 8 or min(self.test_horizons) > 3 or max(self.test_horizons) > 16:
            raise ValueError("Cfg: train horizons must be <= 8; test horizons must start at 3 and stay <= 16")
        if not (0 < self.sft_frac <= 1 and 0 < self.pair_frac <= 1):
            raise ValueError(f"Cfg.sft_frac and pair_frac must be in (0, 1], got {self.sft_frac}, {self.pair_frac}")
        if not (0 <= self.plan_slip < 1 and 0 <= self.exec_slip < 1):
            raise ValueError("Cfg.plan_slip and exec_slip must be in [0, 1)")
        if self.operations not in ("library", "listed"):
            raise ValueError(f"Cfg.operations must be 'library' or 'listed', got {self.operations!r}")
        if self.listing not in ("shuffled", "ordered"):
            raise ValueError(f"Cfg.listing must be 'shuffled' or 'ordered', got {self.listing!r}")
        if self.max_extensions < 0:
            raise ValueError(f"Cfg.max_extensions must be >= 0, got {self.max_extensions!r}")
        if min(self.n_traces, self.n_val, self.n_test, self.rounds, self.max_epochs, self.patience) < 1:
            raise ValueError("Cfg: counts (n_traces, n_val, n_test, rounds, max_epochs, patience) must be >= 1")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), arms=("sft_full", "mlr_sft", "mlr"), n_traces=200, n_val=8, n_test=6,
                 pretrain_label_chains=20, test_horizons=(3, 5), pretrain_reps=2, pretrain_chains=20, pretrain_epochs=1,
                 max_epochs=1, patience=1, rounds=1, n_rollouts=2, dpo_epochs=1, prefix_batch=8, max_prefix_batches=1,
                 tune=False),
    "quick": Cfg(),
    "full": Cfg(seeds=(0, 1, 2, 3, 4), n_traces=8000, n_test=200, d_model=128, n_layers=3, rounds=3, n_rollouts=8),
}  # fmt: skip
VERSION = 5  # 5: label-chain pretraining, 10x the pairs, random tie-break, no round-0 fallback, gates
EXPECTED_SECONDS = {"smoke": 40, "quick": 600, "full": 7200}
ACCEPTS_MODEL = False
MODEL_NOTE = (
    "the reproduction has no real-model half: its backbone is a micro llama pretrained on the program world's own "
    "component skills (a vocabulary it defines), and online Step-DPO with 8-rollout TSMC weights on a 135M+ model "
    "does not fit a CPU quick run. The library runs on any HF causal LM: MLRSystem(add_planner(model), tokenizer) "
    "(docs/papers/mlr.md, 'Use it on your model', on SmolLM2)"
)

PAPER = "paper: Qwen2.5-1.5B / Llama-3.1-8B / Qwen2.5-Math-7B on MATH500, AIME24, GPQA, BoardGameQA, concat10"

CLAIMS = [
    Claim(
        "testbed",
        "The task is learnable and planning matters: the full-data single policy's executor given the gold plan solves "
        "held-out programs (accuracy > 0.8, mean over test horizons <= 8), far above the same executor given a random "
        "order of the problem's own labels (a planner that picks a random valid label: the control); the full-data "
        "single policy solves short programs on its own, far above the untrained base through the same loop",
        checks=(
            Check("acc_gold_sft_full", ">", 0.8),
            Check("acc_gold_sft_full", ">", "acc_random_sft_full", margin=0.3),
            Check("acc_sft_full_k3", ">", "acc_base_k3", margin=0.3),
        ),
        paper="(our testbed check)",
        role="testbed",
    ),
    Claim(
        "headroom",
        "Headroom for MLR: its executor (the backbone SFT'd on 10 % of the traces), given the correct plan, scores "
        "above both single policies (so a good planner could let MLR win; VERSION 4: 0.667 vs 0.944, no room)",
        checks=(Check("acc_gold_mlr_sft", ">", "acc_sft_full"), Check("acc_gold_mlr_sft", ">", "acc_grpo")),
        when="all_arms",
        paper="(our gate: the paper's backbone is a pretrained LLM that already executes)",
        role="headroom",
    ),
    Claim(
        "pair-budget",
        "Budget parity of the Step-DPO arms: each used at least 90 % of its pair budget, and their pair counts agree "
        "within 10 %",
        checks=(
            Check("pairs_fill_min", ">", 0.9, margin=0.001, deterministic=True),
            Check("pairs_ratio", "<", 1.1, margin=0.001, deterministic=True),
        ),
        when="all_arms",
        paper="(our gate)",
        role="budget",
    ),
    Claim(
        "dpo-moves",
        "Step-DPO changed the policies it trained: MLR's and the one-policy ablation's mean |change| of the token "
        "log-probability on validation teacher traces is at least 0.01 nats (the best *trained* round is kept, never "
        "round 0)",
        checks=(Check("shift_mlr", ">", 0.01), Check("shift_mlr_nosplit", ">", 0.01)),
        when="all_arms",
        paper="(our gate: VERSION 4's best-round rule could keep the untrained start)",
        role="non-degenerate",
    ),
    Claim(
        "random-pairs-control",
        "Negative control: Step-DPO on random preferences (the same pair count) does not beat its two-level SFT start",
        checks=(fails(Check("acc_mlr_random", ">", "acc_mlr_sft")),),
        when="all_arms",
        paper="(our control)",
        role="negative control",
    ),
    Claim(
        "horizon-testbed",
        "The long horizon is solvable and the compared arms start above chance: the full-data executor given the gold "
        "plan solves K = 12 programs (> 0.5), and MLR and both single policies solve K = 3 programs (> 0.5; chance "
        "is 1/p = 0.2)",
        checks=(
            Check("acc_gold_sft_full_k12", ">", 0.5),
            Check("acc_mlr_k3", ">", 0.5),
            Check("acc_sft_full_k3", ">", 0.5),
            Check("acc_grpo_k3", ">", 0.5),
        ),
        when="all_arms",
        paper="(our gate: VERSION 4's arms all collapsed at K = 12, where no training horizon reaches)",
        role="testbed",
    ),
    Claim(
        "beats-single-policy",
        "MLR with 10 % of the SFT traces beats single-policy SFT on all traces and SFT + outcome-reward GRPO (mean "
        "accuracy over the test horizons <= 8)",
        checks=(Check("acc_mlr", ">", "acc_sft_full"), Check("acc_mlr", ">", "acc_grpo")),
        when="all_arms",
        paper=f"MLR beats R1-distillation SFT and GRPO/PPO/DPO baselines with 10 % SFT / 5 % preference data ({PAPER})",
        requires=("testbed", "headroom"),
    ),
    Claim(
        "horizon",
        "MLR degrades less with horizon: its relative loss of accuracy above chance from K = 3 to K = 12 is smaller "
        "than both single-policy arms'",
        checks=(Check("deg_mlr", "<", "deg_sft_full"), Check("deg_mlr", "<", "deg_grpo")),
        when="all_arms",
        paper="concat10: MLR's accuracy falls more slowly with the position in the sequence",
        requires=("horizon-testbed",),
    ),
    Claim(
        "tsmc-step-dpo",
        "Step-DPO on TSMC pairs improves the two-level SFT model, more than the same number of random-preference "
        "pairs (control) and of outcome-only pairs (ablation; with the default settings TSMC ranks candidates by N "
        "rollouts' success rate, N = 4 at quick, outcome by one rollout's)",
        checks=(
            Check("acc_mlr", ">", "acc_mlr_sft"),
            Check("acc_mlr", ">", "acc_mlr_random"),
            Check("acc_mlr", ">", "acc_mlr_outcome"),
        ),  # fmt: skip
        when="all_arms",
        paper="ablations: TSMC step rewards beat outcome-reward training (paper's analysis)",
        requires=("testbed", "pair-budget", "dpo-moves", "random-pairs-control"),
    ),
    Claim(
        "planner-split",
        "The planner/executor split helps: MLR beats the same pipeline on one policy without the planner adapter",
        checks=(Check("acc_mlr", ">", "acc_mlr_nosplit"),),
        when="all_arms",
        paper="the two-level model beats single-level long-CoT training",
        requires=("testbed", "pair-budget", "dpo-moves"),
    ),
]
HEADLINE = "beats-single-policy"
TABLE_METRICS = ("acc_gold_mlr_sft", "acc_random_mlr_sft", "n_pairs_mlr", "kept_mlr", "shift_mlr_random")

METRICS = {
    "acc_sft_full_k3": "sft_full: sampled accuracy (T 0.6, top-p 0.95) on the K = 3 test programs",
    "acc_base_k3": "control: the base model (component skills, no trace SFT) through the same loop, K = 3 programs",
    **{
        f"acc_{plan}_{arm}": f"{arm}'s executor given {what} (mean test accuracy over the test horizons <= 8)"
        for plan, what in (("gold", "the gold plan"), ("random", "a random order of the problem's labels (control)"))
        for arm in ("sft_full", "mlr_sft")
    },
    **{
        k: f"the {k} every seed used (tuned once on seed 100's validation split; papers.mlr.tuning)"
        for k in ("sft_lr", "small_lr", "planner_lr", "dpo_lr", "grpo_lr")
    },
    **{f"acc_{a}": f"{a}: mean test accuracy over the test horizons <= 8" for a in ARMS},
    **{
        f"deg_{a}": f"{a}: 1 - (acc(K = 12) - 1/p) / (acc(K = 3) - 1/p), relative loss above chance (NaN at chance)"
        for a in ARMS
    },
    **{f"acc_{a}_k{k}": f"{a}: sampled accuracy on the K = {k} test programs" for a in ARMS for k in range(3, 17)},
    **{
        f"acc_{plan}_{arm}_k{k}": f"{arm}'s executor given the {plan} plan, K = {k} test programs"
        for plan in ("gold", "random")
        for arm in ("sft_full", "mlr_sft")
        for k in range(3, 17)
    },
    **{f"cpu_s_{a}": f"{a}: CPU seconds of its training (with the stages it starts from)" for a in ARMS},
    **{f"n_pairs_{a}": f"Step-DPO pairs {a} used (budget: pair_frac x n_traces)" for a in DPO_ARMS},
    **{
        f"shift_{a}": f"{a}: mean |change| of the per-token log-prob of validation teacher traces from its start "
        "(nats; planner and executor tokens for a two-level system)"
        for a in DPO_ARMS
    },
    **{
        f"kept_{a}": f"{a}: the Step-DPO round kept (best validation accuracy among the trained rounds)"
        for a in DPO_ARMS
    },
    "pairs_fill_min": "smallest pair count of the Step-DPO arms / the pair budget",
    "pairs_ratio": "largest / smallest pair count of the Step-DPO arms",
}
