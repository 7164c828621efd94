"""Reproduction: Uni-Walker, *Lifelong Embodied Navigation Learning* (Wang et al., ICLR 2026,
https://arxiv.org/abs/2603.06073; code https://github.com/WangXudongSIA/Uni-Walker).

Idea. An LLM navigation agent learns a sequence of tasks, each one new scene with one instruction style (VLN routes,
OLN object goals, DUN dialogues), and must serve all of them at test without a task id. DE-LoRA shares LoRA's
down-projection A across tasks and gives each task its own up-projection expert B_t; new experts inherit from
same-style experts (KIS), train together with the most similar old expert (ECAS), A is consolidated with a Fisher
penalty (SSC), new experts are kept orthogonal to old ones (ESOC), a style-specific chain of thought is supervised
before the action (NSCoT), and test episodes retrieve their expert from instruction and observation (TAKA).

Protocol (Matterport3D and a 7B LLM are out of reach: minigrid houses, `iclr26.embodied.uniwalker.world`; a small MLP
policy, `iclr26.embodied.uniwalker`). Per seed: pre-training scenes (all styles) train the frozen base W0; then a
sequence of lifelong tasks (one new scene each, styles cycling VLN, OLN, DUN) and three unseen scenes (one per
style). Imitation of the BFS expert's shortest paths; every learner trains each task to early stopping on the task's
validation NLL (same Adam learning rate, same step cap). After each task its test episodes are rolled out (SR, SPL,
OSR right after learning); after the last task every task and the unseen scenes are rolled out. Forgetting = mean
over tasks j < T of (metric right after learning j) - (metric after the last task). The task is never given at test.
Controls: the scripted expert (SR 1), the frozen base W0 (no adaptation), Uni-Walker with a random seen expert
instead of TAKA, and each Uni-Walker part switched off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim

ABLATIONS = ("kis", "ecas", "ssc", "esoc", "nscot")
BASELINES = ("seqft", "olora", "sdlora", "hydra")
CLAIM_ARMS = (*BASELINES, "uw", *(f"uw_no_{a}" for a in ABLATIONS), "indep")  # the arms the claims compare
ARMS = (*CLAIM_ARMS, "joint", "uw_code")  # + references in no claim (full scale): joint multi-task, code-form UW


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    arms: tuple[str, ...] = field(default=CLAIM_ARMS, metadata={"help": "learners to run, in this order"})
    n_tasks: int = field(default=9, metadata={"help": "lifelong tasks (paper: 15 + 3 unseen)"})
    n_pretrain_scenes: int = field(default=6, metadata={"help": "scenes (x 3 styles) that train W0 (dossier: 6)"})
    n_train: int = field(default=300, metadata={"help": "training episodes per task (dossier: 300)"})
    n_val: int = field(default=30, metadata={"help": "validation episodes per task (ours)"})
    n_test: int = field(default=30, metadata={"help": "test episodes per task (dossier: 100)"})
    shared_palette: bool = field(
        default=True, metadata={"help": "every scene has the same wall / floor colours (harder retrieval; ours)"}
    )
    hidden: int = field(default=128, metadata={"help": "policy MLP width (ours)"})
    r: int = field(default=8, metadata={"help": "LoRA rank of every learner (paper: 16; dossier: 8)"})
    hydra_heads: int = field(default=4, metadata={"help": "HydraLoRA B heads (dossier: 4)"})
    lr: float = field(default=3e-3, metadata={"help": "Adam lr of every learner (dossier: 1e-3; ours 3e-3)"})
    max_steps: int = field(default=300, metadata={"help": "steps per task, every learner (paper: 2,000)"})
    early_stop: bool = field(
        default=False,
        metadata={"help": "False: every learner runs max_steps per task (equal budgets), best validation checkpoint"},
    )
    lambda_ssc: float = field(default=0.1, metadata={"help": "SSC weight when not tuned (paper: 0.1)"})
    lambda_orth: float = field(default=0.5, metadata={"help": "O-LoRA orthogonality weight when not tuned (O-LoRA)"})
    ssc_grid: tuple[float, ...] = field(
        default=(0.1, 1.0, 10.0),
        metadata={"help": "Uni-Walker lambda_ssc grid, tuned on validation NLL after the last task (core.tuning)"},
    )
    orth_grid: tuple[float, ...] = field(
        default=(0.05, 0.5, 5.0), metadata={"help": "O-LoRA lambda grid, tuned by the same rule (the same care)"}
    )
    tune_extensions: int = field(default=1, metadata={"help": "grid extensions past a chosen edge (core.tuning)"})
    joint_rank_factor: int = field(
        default=0,
        metadata={"help": "joint LoRA rank = r x this (0: x n_tasks, the adapter size of all experts together; ours)"},
    )
    joint_lrs: tuple[float, ...] = field(
        default=(1e-3, 3e-3),
        metadata={
            "help": "lr grid of the joint reference, chosen on validation NLL, extended down while its edge wins (ours)"
        },
    )
    pretrain_steps: int = field(default=3000, metadata={"help": "step cap of W0 pre-training (ours)"})

    @property
    def compare(self) -> bool:
        """Whether every arm the comparative claims need runs."""
        return set(CLAIM_ARMS) <= set(self.arms)

    @property
    def tune(self) -> dict[str, tuple[float, ...]]:
        """The arms whose regulariser weight is tuned, with their grids (an empty grid: not tuned)."""
        return {a: g for a, g in (("uw", self.ssc_grid), ("olora", self.orth_grid)) if g}

    def __post_init__(self):
        bad = [a for a in self.arms if a not in ARMS]
        if bad:
            raise ValueError(f"Cfg.arms: unknown {bad}; expected a subset of {ARMS}")
        if self.n_tasks < 3 or min(self.n_train, self.n_val, self.n_test, self.n_pretrain_scenes) < 1:
            raise ValueError("Cfg: n_tasks >= 3 and n_train, n_val, n_test, n_pretrain_scenes >= 1")
        if self.r < 1 or self.lr <= 0 or self.max_steps < 25:
            raise ValueError("Cfg: r >= 1, lr > 0, max_steps >= 25")
        if any(g <= 0 for g in (*self.ssc_grid, *self.orth_grid)) or self.tune_extensions < 0:
            raise ValueError("Cfg: ssc_grid / orth_grid values must be > 0 and tune_extensions >= 0")
        abl = [a for a in self.arms if a.startswith("uw_no_")]
        if abl and "uw" in self.arms and self.arms.index("uw") > min(self.arms.index(a) for a in abl):
            raise ValueError("Cfg.arms: 'uw' must come before its ablations (they reuse its tuned lambda_ssc)")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        arms=("seqft", "uw", "indep"),
        n_tasks=3,
        n_pretrain_scenes=2,
        n_train=30,
        n_val=10,
        n_test=8,
        max_steps=50,
        pretrain_steps=300,
        hidden=64,
        ssc_grid=(0.1, 1.0),
        orth_grid=(),
        tune_extensions=0,
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), arms=ARMS, n_tasks=15, n_train=300, n_test=100, max_steps=2000),
}
VERSION = 3  # 3: baselines as their papers (no routing), shared palettes, fixed steps, tuned weights, ceiling, gates
EXPECTED_SECONDS = {"smoke": 40, "quick": 600, "full": 9000}  # quick: see the docs' Timings
ACCEPTS_MODEL = False
MODEL_NOTE = "wrap your own model's linear layers with `iclr26.embodied.uniwalker.DELoRALinear` / `UniWalker`"

PAPER = "paper: 18 Matterport3D tasks (15 lifelong + 3 unseen), NaviLLM (Vicuna-7B + EVA-CLIP)"

HEADLINE = "highest-success"

CLAIMS = [
    Claim(
        "testbed",
        "The testbed is solvable and needs adaptation: the BFS expert succeeds always, and the ceiling (a fresh LoRA "
        "per task, routed by the true task id) is far above the frozen base W0",
        checks=(
            Check("expert_sr", ">", 0.999, margin=0.0005, deterministic=True),
            Check("indep_avg_sr", ">", "base_avg_sr", margin=0.2),
        ),
        paper="multi-task generalist SAME: SR 55 (their benchmark)",
        role="testbed",
        when="compare",
    ),
    Claim(
        "forgetting-testbed",
        "Forgetting exists here: plain sequential fine-tuning (one shared LoRA) forgets measurably (SR-F > 0.1)",
        checks=(Check("seqft_sr_f", ">", 0.1),),
        paper="Seq-FT SR-F 85",
        role="testbed",
        when="compare",
    ),
    Claim(
        "budget",
        "Budget parity: every lifelong learner trains the same number of steps per task (spread of the mean steps "
        "below 10 %)",
        checks=(Check("steps_spread", "<", 0.1, margin=0.001, deterministic=True),),
        role="budget",
        when="compare",
    ),
    Claim(
        "headroom",
        "Headroom: the ceiling (isolated per-task LoRAs, oracle routing) beats the best baseline's average SR, so a "
        "better lifelong method has room to show",
        checks=(Check("indep_avg_sr", ">", "best_baseline_avg_sr"),),
        role="headroom",
        when="compare",
    ),
    Claim(
        "highest-success",
        "Uni-Walker has the highest average success rate and SPL after the last task among the lifelong methods",
        checks=(
            *(Check("uw_avg_sr", ">", f"{b}_avg_sr") for b in BASELINES),
            Check("uw_avg_spl", ">", "best_baseline_avg_spl"),
        ),
        paper=f"Avg SR 66 vs SD-LoRA+TAKA 59, O-LoRA+TAKA 58, HydraLoRA 27, Seq-FT 12; SPL 61 vs 38 ({PAPER})",
        when="compare",
        requires=("testbed", "headroom", "budget"),
    ),
    Claim(
        "low-forgetting",
        "Uni-Walker forgets much less: its SR forgetting is below every baseline's (Seq-FT forgets most)",
        checks=(
            *(Check("uw_sr_f", "<", f"{b}_sr_f") for b in BASELINES),
            Check("seqft_sr_f", ">", "uw_sr_f", margin=0.1),
        ),
        paper="SR-F 5 vs SD-LoRA+TAKA 16, O-LoRA+TAKA 17, HydraLoRA 63, Seq-FT 85",
        when="compare",
        requires=("testbed", "forgetting-testbed", "budget"),
    ),
    Claim(
        "unseen-scenes",
        "On unseen scenes Uni-Walker succeeds more often than SD-LoRA, O-LoRA and HydraLoRA",
        checks=tuple(Check("uw_unseen_sr", ">", f"{b}_unseen_sr") for b in ("olora", "sdlora", "hydra")),
        paper="unseen SR avg 62.0 vs SD-LoRA+TAKA 57.0, O-LoRA+TAKA 51.3, HydraLoRA 16.0",
        when="compare",
        requires=("testbed", "budget"),
    ),
    Claim(
        "nscot-ecas-matter-most",
        "Removing NSCoT or ECAS hurts most: both drops in average SR are positive and larger than the drops from "
        "removing KIS, SSC or ESOC",
        checks=(
            Check("drop_nscot", ">", 0.0),
            Check("drop_ecas", ">", 0.0),
            Check("drop_nscot_ecas_min", ">", "drop_other_max"),
        ),
        paper="full 67.3; w/o NSCoT 51.1, w/o ECAS 58.1, w/o SSC 59.7, w/o KIS 60.3, w/o ESOC 63.5 (Avg SR)",
        when="compare",
        requires=("testbed", "budget"),
    ),
    Claim(
        "retrieval-headroom",
        "Headroom of retrieval: Uni-Walker routed by the true task id (the ceiling of TAKA) beats the same model with "
        "a random seen expert by more than 0.1",
        checks=(Check("uw_oracle_avg_sr", ">", "uw_random_avg_sr", margin=0.1),),
        role="headroom",
    ),
    Claim(
        "retrieval",
        "TAKA matters: Uni-Walker with TAKA beats the same model with a random seen expert by 0.1",
        checks=(Check("uw_avg_sr", ">", "uw_random_avg_sr", margin=0.1),),
        paper="hybrid TAKA vs observation-only matching: SR-F 4.3 vs 9.6",
        requires=("retrieval-headroom",),
    ),
]
TABLE_METRICS = ("uw_taka_acc", "uw_oracle_avg_sr", "uw_weight", "olora_weight", "indep_avg_sr", "base_avg_sr",
                 "uw_random_avg_sr", "indep_sr_f")  # fmt: skip

METRICS = {
    "expert_sr": "BFS expert's success rate on all test episodes (testbed check)",
    "indep_avg_sr": "ceiling: a fresh LoRA per task (nothing shared), routed by the true task id: SR after the last "
    "task",
    "base_avg_sr": "frozen base W0, no adaptation: SR over the lifelong tasks (control)",
    "base_unseen_sr": "frozen base W0: SR on the unseen scenes",
    "uw_random_avg_sr": "Uni-Walker after the last task with a random seen expert per episode, not TAKA (control)",
    "best_baseline_avg_sr": "max avg SR over Seq-FT, O-LoRA+TAKA, SD-LoRA+TAKA, HydraLoRA",
    "best_baseline_avg_spl": "max avg SPL over the same baselines",
    "min_baseline_sr_f": "min SR forgetting over the same baselines",
    "drop_nscot_ecas_min": "min(drop_nscot, drop_ecas)",
    "joint_lr": "learning rate of the joint multi-task reference chosen on the validation NLL (full scale)",
    "uw_oracle_avg_sr": "Uni-Walker after the last task, each episode routed by its true task id (ceiling of TAKA)",
    "uw_weight": "Uni-Walker's lambda_ssc chosen on validation (mean NLL after the last task; core.tuning)",
    "olora_weight": "O-LoRA's orthogonality weight chosen by the same rule",
    "uw_tuning_fits": "lifelong runs of Uni-Walker in its lambda_ssc tuning",
    "olora_tuning_fits": "lifelong runs of O-LoRA in its weight tuning",
    "steps_spread": "max / min - 1 of the mean training steps per task over the lifelong arms (budget parity)",
    "seconds": "wall seconds of the seed",
    "drop_other_max": "max(drop_kis, drop_ssc, drop_esoc)",
}
for _f in ABLATIONS:
    METRICS[f"drop_{_f}"] = f"uw_avg_sr - uw_no_{_f}_avg_sr (Avg SR lost when {_f.upper()} is removed)"
for _a in ARMS:
    METRICS[f"{_a}_steps"] = f"{_a}: mean training steps per task (equal for every learner: budget parity)"
    for _k, _n in (("sr", "success rate"), ("spl", "SPL"), ("osr", "oracle success rate")):
        METRICS[f"{_a}_avg_{_k}"] = f"{_a}: {_n} over the lifelong tasks after the last task, no task id"
        METRICS[f"{_a}_unseen_{_k}"] = f"{_a}: {_n} on the three unseen scenes after the last task"
        for _s in ("vln", "oln", "dun"):
            METRICS[f"{_a}_{_k}_{_s}"] = f"{_a}: {_n} on the {_s.upper()} lifelong tasks after the last task"
        if _a != "joint":
            METRICS[f"{_a}_{_k}_f"] = f"{_a}: {_n} forgetting, mean over j < T of (after task j) - (after task T)"
    if _a.startswith("uw") or _a in ("olora", "sdlora"):
        METRICS[f"{_a}_taka_acc"] = f"{_a}: share of lifelong test episodes whose retrieved task is their own"
        METRICS[f"{_a}_unseen_style_acc"] = f"{_a}: share of unseen-scene episodes routed to a task of their style"
