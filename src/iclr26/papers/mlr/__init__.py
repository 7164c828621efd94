"""Reproduction: MLR, *Enhancing Language Model Reasoning with Structured Multi-Level Modeling* (Xiong, Payani,
Fekri, ICLR 2026, https://openreview.net/forum?id=PlkzZhqBCd; code https://github.com/xiongsiheng/MLR).

Idea. Long chain-of-thought is recast as a two-level process on one backbone: a planner (a LoRA adapter) writes a
short step descriptor from a compressed history, the executor (the same model, adapter off) writes the step from the
raw history; they alternate. After SFT of both levels, iterative online Step-DPO trains each level on step pairs that
share a prefix, ranked by Twisted SMC incremental importance weights estimated from Monte-Carlo rollouts. With 10 % of
the SFT data and 5 % of the preference data of R1 distillation, MLR is reported to beat SFT distillation and
outcome-reward RL, and to degrade more slowly as the horizon grows.

Protocol (math benchmarks and 1.5B models are out of reach: the dossier's testbed). Per seed: the modular-arithmetic
program world (`iclr26.worlds.modprog`, p = 5; a program lists K labelled operations shuffled, planning = choosing
the next operation, execution = computing it); a micro llama "pretrained" on component skills only (arithmetic facts,
letter order, look-ups; no programs) and shared by every arm; teacher traces with slips (a swapped pair of
operations in 30 % of traces, an off-by-one result in 5 % of steps). Arms: single-policy SFT on all traces
(`sft_full`, the distillation analogue), `sft_full` + outcome-reward GRPO (TRL `GRPOTrainer`), MLR (two-level SFT on
10 % of the traces, then Step-DPO with TSMC pairs, as many pairs as 5 % of the traces), the ablations MLR without
Step-DPO (`mlr_sft`), with outcome-only pairs (`mlr_outcome`), without the planner split (`mlr_nosplit`), and the
control MLR with random preferences (`mlr_random`). Training horizons 3-8; test horizons 3-12; sampled decoding
(T = 0.6, top-p 0.95, the paper's) with the same plan/execute loop for every arm. Every SFT stage stops early on the
validation NLL of held-out teacher traces, every RL stage (GRPO, Step-DPO rounds) on validation accuracy (horizons
3-8; the same rule for every arm). The tuning rule for learning rates is
`benchmarks/mlr_lr.py` (`iclr26.probing.tuning.tune_on_grid` on validation, seed 100); docs/papers/mlr.md says which
values it has chosen so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim

ARMS = ("sft_full", "grpo", "mlr_sft", "mlr", "mlr_outcome", "mlr_nosplit", "mlr_random")


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = field(default=ARMS, metadata={"help": "arms run per seed (sft_full and mlr required)"})
    p: int = field(default=5, metadata={"help": "modulus (dossier: 97; ours, so a micro model learns the tables)"})
    train_horizons: tuple[int, ...] = field(default=(3, 4, 5, 6, 7, 8), metadata={"help": "K for training (<= 8)"})
    test_horizons: tuple[int, ...] = field(default=(3, 5, 8, 12), metadata={"help": "K for test (3-12)"})
    n_traces: int = field(default=1000, metadata={"help": "teacher traces of the full-data SFT arm (ours)"})
    sft_frac: float = field(default=0.1, metadata={"help": "MLR's share of the SFT traces (paper: 10 %)"})
    pair_frac: float = field(default=0.05, metadata={"help": "preference pairs as a share of traces (paper: 5 %)"})
    plan_slip: float = field(default=0.3, metadata={"help": "teacher traces with two operations swapped (ours)"})
    exec_slip: float = field(default=0.05, metadata={"help": "teacher steps with an off-by-one result (ours)"})
    n_val: int = field(default=64, metadata={"help": "validation problems (K 3-8) for early stopping"})
    n_test: int = field(default=40, metadata={"help": "test problems per horizon"})
    d_model: int = field(default=64, metadata={"help": "backbone width (dossier: 128)"})
    n_layers: int = field(default=2, metadata={"help": "backbone depth (dossier: 2-4)"})
    pretrain_lookups: int = field(default=3000, metadata={"help": "look-up examples in the pretraining (ours)"})
    pretrain_epochs: int = field(default=15, metadata={"help": "component-skill pretraining epochs (ours)"})
    sft_lr: float = field(
        default=6e-3, metadata={"help": "SFT lr of every arm and level (6e-3 beat 3e-3 on seed-0 validation, 9 epochs)"}
    )
    lora_r: int = field(default=8, metadata={"help": "planner LoRA rank (paper 16; dossier toy 8)"})
    max_epochs: int = field(default=20, metadata={"help": "SFT epoch cap (early stopping on val NLL decides)"})
    patience: int = field(default=3, metadata={"help": "evaluations without val improvement before stopping"})
    rounds: int = field(default=2, metadata={"help": "Step-DPO rounds (not stated; dossier 2-3)"})
    dpo_lr: float = field(default=5e-4, metadata={"help": "executor Step-DPO lr (repo 5e-6 on 1.5B; ours)"})
    dpo_lr_planner: float = field(
        default=5e-3,
        metadata={"help": "planner (LoRA) Step-DPO lr: 10x the executor's, the repo's ratio (5e-5 / 5e-6)"},
    )
    dpo_epochs: int = field(default=4, metadata={"help": "Step-DPO epochs per round (repo: 2)"})
    beta: float = field(default=0.1, metadata={"help": "DPO beta (repo: 0.1)"})
    n_rollouts: int = field(default=8, metadata={"help": "N, MC rollouts per twist (repo: 8)"})
    k_candidates: int = field(default=4, metadata={"help": "candidates per prefix (dossier: 4)"})
    prefix_batch: int = field(default=32, metadata={"help": "online prefixes per pair-collection batch (ours)"})
    max_prefix_batches: int = field(default=2, metadata={"help": "collection batches per round at most (ours)"})
    grpo_lr: float = field(default=1.25e-4, metadata={"help": "GRPO lr (remix's tuned value on a sibling micro llama)"})
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
        if min(self.n_traces, self.n_val, self.n_test, self.rounds, self.max_epochs, self.patience) < 1:
            raise ValueError("Cfg: counts (n_traces, n_val, n_test, rounds, max_epochs, patience) must be >= 1")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), arms=("sft_full", "mlr_sft", "mlr"), n_traces=200, n_val=8, n_test=6,
                 test_horizons=(3, 5), pretrain_lookups=200, pretrain_epochs=1, max_epochs=1, patience=1,
                 rounds=1, n_rollouts=2, dpo_epochs=1, prefix_batch=8, max_prefix_batches=1),
    "quick": Cfg(),
    "full": Cfg(seeds=(0, 1, 2, 3, 4), n_traces=8000, n_test=200, d_model=128, n_layers=3, rounds=3),
}  # fmt: skip
VERSION = 1
EXPECTED_SECONDS = {"smoke": 30, "quick": 450, "full": 7200}  # quick: cached (estimate); 777 s measured empty
ACCEPTS_MODEL = False
MODEL_NOTE = "run `iclr26.rlft.mlr` on your own model (MLRSystem(add_planner(model), tokenizer))"

PAPER = "paper: Qwen2.5-1.5B / Llama-3.1-8B / Qwen2.5-Math-7B on MATH500, AIME24, GPQA, BoardGameQA, concat10"

CLAIMS = [
    Claim(
        "testbed",
        "The full-data single-policy SFT model solves short programs (accuracy > 0.8 at K = 3)",
        checks=(Check("acc_sft_full_k3", ">", 0.8),),
        paper="(our testbed check)",
    ),
    Claim(
        "beats-single-policy",
        "MLR with 10 % of the SFT traces and 5 % as many preference pairs beats single-policy SFT on all traces and "
        "SFT + outcome-reward GRPO (mean accuracy over the test horizons <= 8)",
        checks=(Check("acc_mlr", ">", "acc_sft_full"), Check("acc_mlr", ">", "acc_grpo")),
        when="all_arms",
        paper=f"MLR beats R1-distillation SFT and GRPO/PPO/DPO baselines with 10 % SFT / 5 % preference data ({PAPER})",
    ),
    Claim(
        "horizon",
        "MLR degrades less with horizon: its relative accuracy loss from K = 3 to K = 12 is smaller than both "
        "single-policy arms'",
        checks=(Check("deg_mlr", "<", "deg_sft_full"), Check("deg_mlr", "<", "deg_grpo")),
        when="all_arms",
        paper="concat10: MLR's accuracy falls more slowly with the position in the sequence",
    ),
    Claim(
        "tsmc-step-dpo",
        "Step-DPO on TSMC pairs improves the two-level SFT model, more than the same number of random-preference "
        "pairs (control) and of outcome-only pairs (ablation)",
        checks=(
            Check("acc_mlr", ">", "acc_mlr_sft"),
            Check("acc_mlr", ">", "acc_mlr_random"),
            Check("acc_mlr", ">", "acc_mlr_outcome"),
        ),  # fmt: skip
        when="all_arms",
        paper="ablations: TSMC step rewards beat outcome-reward training (paper's analysis)",
    ),
    Claim(
        "planner-split",
        "The planner/executor split helps: MLR beats the same pipeline on one policy without the planner adapter",
        checks=(Check("acc_mlr", ">", "acc_mlr_nosplit"),),
        when="all_arms",
        paper="the two-level model beats single-level long-CoT training",
    ),
]

METRICS = {
    "acc_sft_full_k3": "sft_full: sampled accuracy (T 0.6, top-p 0.95) on the K = 3 test programs",
    **{f"acc_{a}": f"{a}: mean test accuracy over the test horizons <= 8" for a in ARMS},
    **{f"deg_{a}": f"{a}: 1 - acc(K = 12) / acc(K = 3) (relative loss with horizon)" for a in ARMS},
    "n_pairs_mlr": "Step-DPO pairs MLR used (budget: pair_frac x n_traces)",
}
