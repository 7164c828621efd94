"""Reproduction: AUTO-RT, *Automatic Jailbreak Strategy Exploration for Red-Teaming Large Language Models* (Liu et
al., ICLR 2026, https://arxiv.org/abs/2501.01830; official code not located).

Idea. Red-teaming as RL over attack *strategies* rather than prompts: a strategy generator is trained by PPO; dynamic
strategy pruning (DSP, Eq. 3) ends an episode early with a penalty when a strategy repeats one already found or its
rephrased query loses the intent, before the target is queried; progressive reward tracking (PRT, Eq. 4) gives
partial credit when a downgraded (weakened) copy of the target gives in and queries the target only then; the
downgrade model is picked from a progressively weakened series by the First Inverse Rate (FIR) rule.

Protocol (no language models, no text: the dossier's abstract world `iclr26.rlft.autort.world`). Per seed a world with
hidden keys, a downgrade series M_1..M_6 and an unrelated downgrade (control). Arms at the same query budget (target
*and* downgrade-model queries count, VERSION 3): FS (samples of the untrained generator), IL (generator fitted to 20
near-miss seed strategies), RL (PPO, Eq. 2 reward), RL+DSP, RL+PRT, AUTO-RT (both), and AUTO-RT with an HF causal-LM
generator (a tiny random llama, or ``--model``). Each arm's learning rate (IL: sampling temperature) is tuned by
`tune_on_grid` on ASR over validation behaviours; ASR_tst (Eq. 6) is the mean test ASR of the top-k discovered
strategies ranked by training ASR. Gates: headroom (an oracle that knows the keys, against every baseline), budget
parity (every arm's measured queries within 10 % of the budget), a negative control (PRT with a downgrade unrelated
to the target must not beat RL), and for diversity, that the compared arms succeed (their top-k are strategies that
broke the target, not untested samples); diversity against RL is measured at a 5x budget, where RL succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = tuple(range(20))  # sized from the 5-seed spreads of AUTO-RT vs RL, IL (~7-12 seeds)
    budget: int = field(
        default=1500, metadata={"help": "model queries per arm, target + downgrade (paper: ~10k samples per stage)"}
    )
    count_downgrade: bool = field(
        default=True,
        metadata={"help": "downgrade-model queries count toward the budget (VERSION 3; 1-2: free, as in the paper)"},
    )
    div_budget: int = field(
        default=7500, metadata={"help": "budget of the diversity runs (RL, RL+PRT, AUTO-RT at tuned lrs; 0: none)"}
    )
    max_samples_factor: float = field(default=8.0, metadata={"help": "generated strategies <= factor x budget"})
    top_k: int = field(default=20, metadata={"help": "strategies in ASR_tst (paper: top-100)"})
    final_samples: int = field(default=256, metadata={"help": "final-policy samples added to the candidates (ours)"})
    lr_grid: tuple[float, ...] = field(default=(1e-3, 3e-3, 1e-2), metadata={"help": "PPO lr grid, extended at edges"})
    temp_grid: tuple[float, ...] = field(default=(0.5, 1.0, 2.0), metadata={"help": "IL sampling temperatures"})
    n_seed_strategies: int = field(default=20, metadata={"help": "near-miss seed strategies for IL (dossier: 20)"})
    n_probes: int = field(default=1000, metadata={"help": "probes for FIR (ours)"})
    fir_sweep: bool = field(default=False, metadata={"help": "run RL+PRT with every M_k (reported; in no claim)"})
    max_extensions: int = field(default=2, metadata={"help": "grid extensions past an edge pick"})
    lm_generator: bool = field(
        default=True,
        metadata={"help": "also run AUTO-RT with a tiny llama generator (LMStrategyPolicy; reported, in no claim)"},
    )
    lm_width: int = field(default=64, metadata={"help": "d_model of the tiny llama generator (2 layers; ours)"})
    model_lr_grid: tuple[float, ...] = field(
        default=(1e-6, 3e-6, 1e-5), metadata={"help": "lr grid of the LM arm on a --model LM (pretrained; ours)"}
    )

    def __post_init__(self):
        if self.budget < 64:
            raise ValueError(f"Cfg.budget must be >= 64 target queries, got {self.budget!r}")
        if self.div_budget and self.div_budget < self.budget:
            raise ValueError(f"Cfg.div_budget must be 0 or >= budget={self.budget}, got {self.div_budget!r}")
        if self.top_k < 1 or self.final_samples < 0 or self.n_probes < 10:
            raise ValueError("Cfg: top_k >= 1, final_samples >= 0 and n_probes >= 10 required")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        budget=200,
        max_samples_factor=3.0,
        lr_grid=(3e-3,),
        temp_grid=(1.0,),
        n_probes=1000,
        max_extensions=0,
        final_samples=64,
        div_budget=400,
        model_lr_grid=(1e-6,),
    ),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), budget=5000),
}
VERSION = 3  # 3: downgrade queries count toward the budget, gates, diversity at a 5x budget, no FIR claim, --model
EXPECTED_SECONDS = {"smoke": 15, "quick": 300, "full": 1500}  # measured (busy 2-core CPU, one thread); full: estimate
ACCEPTS_MODEL = True  # --model: the LM-generator arm's generator (metrics autort_lm_*), words from its tokenizer
MODEL_NOTE = "--model replaces the tiny llama of the AUTO-RT arm whose generator is an HF causal LM (autort_lm)"

PAPER = "paper v1 Table 1, ASR_tst on 16 white-box targets (Vicuna-7B generator)"
ARMS = ("fs", "il", "rl", "rl_dsp", "rl_prt", "autort")

BUDGET_ARMS = ("fs", "il", "rl", "rl_dsp", "rl_prt", "autort", "autort_lm")

CLAIMS = [
    Claim(
        "testbed",
        "Headroom: an oracle that knows the hidden keys reaches an ASR_tst far above every baseline (FS, IL, RL), and "
        "the untrained generator (FS, random strategies) stays low",
        checks=(
            Check("oracle_asr", ">", "fs_asr", margin=0.15),
            Check("oracle_asr", ">", "rl_asr", margin=0.05),
            Check("oracle_asr", ">", "il_asr", margin=0.05),
            Check("fs_asr", "<", 0.1),
        ),
        paper="(our testbed check; not in the paper)",
        role="headroom",
    ),
    Claim(
        "budget",
        "Budget parity: every compared arm spent the same queries, target and downgrade-model queries counted (each "
        "within 10 % of the budget); the diversity runs likewise at their 5x budget",
        checks=(
            Check("budget_use_min", ">", 0.9, margin=0.001, deterministic=True),
            Check("budget_use_max", "<", 1.1, margin=0.001, deterministic=True),
            Check("budget_use_big_min", ">", 0.9, margin=0.001, deterministic=True),
            Check("budget_use_big_max", "<", 1.1, margin=0.001, deterministic=True),
        ),
        paper="(the paper compares at equal target queries; a downgrade copy costs a query too)",
        role="budget",
    ),
    Claim(
        "prt-control",
        "Negative control: PRT with a downgrade model unrelated to the target (near misses of another world's keys) "
        "does not beat plain RL, so a PRT gain is not just denser reward or extra strategies",
        checks=(fails(Check("prt_unrelated_asr", ">", "rl_asr")),),
        paper="(our control; the paper notes that a bad downgrade can change the optimum, since Eq. 4 is not "
        "potential-based)",
        role="negative control",
    ),
    Claim(
        "rl-succeeds",
        "At the diversity budget plain RL and AUTO-RT succeed: at least 90 % of each one's top-k broke the target "
        "during its run (else SeD compares untested random samples with working strategies)",
        checks=(
            Check("rl_topk_working_big", ">", 0.9, margin=0.001, deterministic=True),
            Check("autort_topk_working_big", ">", 0.9, margin=0.001, deterministic=True),
        ),
        paper="(our gate: the paper's comparison is with AutoDAN, whose strategies all work)",
        note="a share that saturates at 1 on every seed is decided on its value (declared deterministic)",
        role="non-degenerate",
    ),
    Claim(
        "prt-succeeds",
        "At the main budget RL+PRT and AUTO-RT succeed: at least 90 % of each one's top-k broke the target",
        checks=(
            Check("rl_prt_topk_working", ">", 0.9, margin=0.001, deterministic=True),
            Check("autort_topk_working", ">", 0.9, margin=0.001, deterministic=True),
        ),
        paper="(our gate)",
        role="non-degenerate",
    ),
    Claim(
        "autort-beats-baselines",
        "AUTO-RT reaches a higher test attack success (ASR_tst, Eq. 6) than RL, FS and IL at the same query budget",
        checks=(
            Check("autort_asr", ">", "rl_asr"),
            Check("autort_asr", ">", "fs_asr"),
            Check("autort_asr", ">", "il_asr"),
        ),
        paper=f"best on 13-14 of 16 targets, e.g. Vicuna-7B 56.40 vs IL 36.90, Gemma-2-2B 48.15 vs 7.49 ({PAPER})",
        requires=("testbed", "budget"),
    ),
    Claim(
        "components",
        "Each component helps: RL < RL+DSP, RL < RL+PRT, and both together beat either alone",
        checks=(
            Check("rl_dsp_asr", ">", "rl_asr"),
            Check("rl_prt_asr", ">", "rl_asr"),
            Check("autort_asr", ">", "rl_dsp_asr"),
            Check("autort_asr", ">", "rl_prt_asr"),
        ),
        paper="ablation RL -> +ETE -> +PRT -> both: Vicuna-7B 31.95/36.54/40.50/56.40, "
        "Gemma-2-2B 6.15/7.38/25.30/48.15",
        requires=("testbed", "budget", "prt-control"),
    ),
    Claim(
        "diversity",
        "AUTO-RT finds more diverse strategies than RL: lower SeD of its top-k (the paper's measure) and more distinct "
        "hidden keys among the strategies that broke the target (at the 5x diversity budget)",
        checks=(Check("autort_sed_big", "<", "rl_sed_big"), Check("autort_keys_big", ">", "rl_keys_big")),
        paper="SeD averaged over 16 models: AUTO-RT 0.52 vs AutoDAN 0.86 (lower = more diverse)",
        requires=("budget", "rl-succeeds"),
    ),
    Claim(
        "pruning-diversity",
        "Dynamic strategy pruning diversifies: AUTO-RT's top-k and pool are less self-similar (SeD) than those of the "
        "same method without pruning (RL+PRT)",
        checks=(Check("autort_sed", "<", "rl_prt_sed"), Check("autort_pool_sed", "<", "rl_prt_pool_sed")),
        paper="DSP's diversity constraint (Eq. 2-3); SeD AUTO-RT 0.52 vs AutoDAN 0.86",
        requires=("budget", "prt-succeeds"),
    ),
    Claim(
        "autort-lm",
        "With an HF causal LM as its generator (a tiny random llama; --model: yours), AUTO-RT still beats RL and FS "
        "at the same query budget",
        checks=(Check("autort_lm_asr", ">", "rl_asr"), Check("autort_lm_asr", ">", "fs_asr")),
        paper="the paper's generator is an LLM (Vicuna-7B)",
        when="lm_generator",
        requires=("testbed", "budget"),
    ),
]

_ARM_NAMES = {
    "fs": "FS",
    "il": "IL",
    "rl": "RL",
    "rl_dsp": "RL+DSP",
    "rl_prt": "RL+PRT (FIR pick)",
    "autort": "AUTO-RT",
    "autort_lm": "AUTO-RT, generator an HF causal LM (a tiny random llama, or --model)",
}
METRICS = {"oracle_asr": "oracle: ASR_tst of the top-k of all keys and key pairs that fit (knows the keys)"}
for _a, _n in _ARM_NAMES.items():
    METRICS[f"{_a}_asr"] = f"{_n}: ASR_tst, mean test-behaviour ASR of the top-k strategies ranked by training ASR"
    METRICS[f"{_a}_val"] = f"{_n}: the same on validation behaviours (the tuning score)"
    METRICS[f"{_a}_sed"] = f"{_n}: SeD, mean pairwise cosine of the top-k strategies' multi-hot embeddings"
    METRICS[f"{_a}_keys"] = f"{_n}: distinct hidden keys held by the pool (strategies that broke the target)"
    METRICS[f"{_a}_pool_sed"] = f"{_n}: SeD of the pool's distinct strategies (1 if fewer than two)"
    METRICS[f"{_a}_hp"] = f"{_n}: chosen learning rate (IL: temperature; FS: none, 0)"
    METRICS[f"{_a}_samples"] = f"{_n}: strategies generated within the budget"
    METRICS[f"{_a}_pool"] = f"{_n}: distinct strategies that broke the target during the run"
    METRICS[f"{_a}_topk_working"] = f"{_n}: share of the top-k that broke the target during the run (pool strategies)"
    METRICS[f"{_a}_queries"] = f"{_n}: queries spent, target + downgrade model (the budget)"
    METRICS[f"{_a}_target_queries"] = f"{_n}: target-model queries spent"
for _a in ("rl", "rl_prt", "autort"):
    for _k, _h in (("asr", "ASR_tst"), ("sed", "SeD of the top-k"), ("keys", "distinct hidden keys of the pool"),
                   ("pool_sed", "SeD of the pool"), ("topk_working", "share of the top-k that broke the target"),
                   ("queries", "queries spent"), ("target_queries", "target queries spent"),
                   ("samples", "strategies generated"), ("pool", "distinct strategies that broke the target"),
                   ("pruned_div", "strategies pruned as redundant"),
                   ("pruned_cons", "strategies pruned as off-intent")):  # fmt: skip
        METRICS[f"{_a}_{_k}_big"] = f"{_ARM_NAMES[_a]} at the diversity budget (div_budget, tuned lr): {_h}"
for _k in range(1, 7):
    METRICS[f"fir_M{_k}"] = f"FIR of downgrade model M_{_k} on the probes ordered by the target's ease"
    METRICS[f"prt_M{_k}_asr"] = f"RL+PRT with downgrade M_{_k}: ASR_tst"
METRICS.update(
    {
        "fir_pick": "downgrade index chosen by the FIR rule (last model before the largest FIR increase)",
        "best_k": "downgrade index with the best RL+PRT ASR_tst",
        "prt_kmean_asr": "RL+PRT ASR_tst averaged over M_1..M_6",
        "fir_regret": "best RL+PRT ASR_tst over M_k minus that of the FIR pick",
        "prt_unrelated_asr": "control: RL+PRT with the unrelated downgrade model, ASR_tst",
        "prt_unrelated_queries": "control: queries it spent (target + downgrade)",
        "budget_use_min": f"smallest queries / budget over the compared arms {', '.join(BUDGET_ARMS)}",
        "budget_use_max": "largest queries / budget over the compared arms",
        "budget_use_big_min": "smallest queries / div_budget over the diversity runs",
        "budget_use_big_max": "largest queries / div_budget over the diversity runs",
        "autort_pruned_div": "AUTO-RT: strategies pruned as redundant",
        "autort_pruned_cons": "AUTO-RT: strategies pruned as off-intent",
        "autort_lm_pruned_div": "AUTO-RT, LM generator: strategies pruned as redundant",
        "autort_lm_pruned_cons": "AUTO-RT, LM generator: strategies pruned as off-intent",
        "rl_dsp_pruned_div": "RL+DSP: strategies pruned as redundant",
        "rl_dsp_pruned_cons": "RL+DSP: strategies pruned as off-intent",
    }
)
TABLE_METRICS = ("fir_pick", "autort_pool", "rl_pool", "rl_prt_pool", "autort_samples", "rl_prt_samples")
