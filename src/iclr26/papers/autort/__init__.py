"""Reproduction: AUTO-RT, *Automatic Jailbreak Strategy Exploration for Red-Teaming Large Language Models* (Liu et
al., ICLR 2026, https://arxiv.org/abs/2501.01830; official code not located).

Idea. Red-teaming as RL over attack *strategies* rather than prompts: a strategy generator is trained by PPO; dynamic
strategy pruning (DSP, Eq. 3) ends an episode early with a penalty when a strategy repeats one already found or its
rephrased query loses the intent, before the target is queried; progressive reward tracking (PRT, Eq. 4) gives
partial credit when a downgraded (weakened) copy of the target gives in and queries the target only then; the
downgrade model is picked from a progressively weakened series by the First Inverse Rate (FIR) rule.

Protocol (no language models, no text: the dossier's abstract world `iclr26.rlft.autort.world`). Per seed a world with
hidden keys, a downgrade series M_1..M_6 and an unrelated downgrade (control). Arms at the same target-query budget:
FS (samples of the untrained generator), IL (generator fitted to 20 near-miss seed strategies), RL (PPO, Eq. 2
reward), RL+DSP, RL+PRT, AUTO-RT (both). Each arm's learning rate (IL: sampling temperature) is tuned by
`tune_on_grid` on ASR over validation behaviours; ASR_tst (Eq. 6) is the mean test ASR of the top-k discovered
strategies ranked by training ASR. PRT uses the FIR-selected model; RL+PRT is also run with every M_k to check the
rule. Testbed: an oracle that knows the keys, against FS (random).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    budget: int = field(default=1500, metadata={"help": "target queries per arm (paper: ~10k samples per stage)"})
    max_samples_factor: float = field(default=8.0, metadata={"help": "generated strategies <= factor x budget"})
    top_k: int = field(default=20, metadata={"help": "strategies in ASR_tst (paper: top-100)"})
    final_samples: int = field(default=256, metadata={"help": "final-policy samples added to the candidates (ours)"})
    lr_grid: tuple[float, ...] = field(default=(1e-3, 3e-3, 1e-2), metadata={"help": "PPO lr grid, extended at edges"})
    temp_grid: tuple[float, ...] = field(default=(0.5, 1.0, 2.0), metadata={"help": "IL sampling temperatures"})
    n_seed_strategies: int = field(default=20, metadata={"help": "near-miss seed strategies for IL (dossier: 20)"})
    n_probes: int = field(default=1000, metadata={"help": "probes for FIR (ours)"})
    fir_sweep: bool = field(default=True, metadata={"help": "run RL+PRT with every M_k (checks the FIR rule)"})
    max_extensions: int = field(default=2, metadata={"help": "grid extensions past an edge pick"})
    lm_generator: bool = field(
        default=True,
        metadata={"help": "also run AUTO-RT with a tiny llama generator (LMStrategyPolicy; reported, in no claim)"},
    )
    lm_width: int = field(default=64, metadata={"help": "d_model of the tiny llama generator (2 layers; ours)"})

    def __post_init__(self):
        if self.budget < 64:
            raise ValueError(f"Cfg.budget must be >= 64 target queries, got {self.budget!r}")
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
    ),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), budget=5000),
}
VERSION = 2  # 2: adds the reported AUTO-RT arm with an HF causal-LM generator (other arms unchanged)
EXPECTED_SECONDS = {"smoke": 11, "quick": 190, "full": 1500}  # measured (busy 2-core CPU, one thread); full: estimate
ACCEPTS_MODEL = False
MODEL_NOTE = "the generator is a toy token policy; the world has no language model to replace"

PAPER = "paper v1 Table 1, ASR_tst on 16 white-box targets (Vicuna-7B generator)"
ARMS = ("fs", "il", "rl", "rl_dsp", "rl_prt", "autort")

CLAIMS = [
    Claim(
        "testbed",
        "The world can be red-teamed: an oracle that knows the hidden keys reaches a high ASR_tst, far above the "
        "untrained generator (FS, random strategies), which stays low",
        checks=(Check("oracle_asr", ">", "fs_asr", margin=0.15), Check("fs_asr", "<", 0.1)),
        paper="(our testbed check; not in the paper)",
    ),
    Claim(
        "autort-beats-baselines",
        "AUTO-RT reaches a higher test attack success (ASR_tst, Eq. 6) than RL, FS and IL at the same target budget",
        checks=(
            Check("autort_asr", ">", "rl_asr"),
            Check("autort_asr", ">", "fs_asr"),
            Check("autort_asr", ">", "il_asr"),
        ),
        paper=f"best on 13-14 of 16 targets, e.g. Vicuna-7B 56.40 vs IL 36.90, Gemma-2-2B 48.15 vs 7.49 ({PAPER})",
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
    ),
    Claim(
        "diversity",
        "AUTO-RT finds more diverse strategies: lower SeD of its top-k than RL (the paper's measure), more distinct "
        "hidden keys among the strategies that broke the target than RL, and a less self-similar pool than RL+PRT "
        "(the same method without pruning)",
        checks=(
            Check("autort_sed", "<", "rl_sed"),
            Check("autort_keys", ">", "rl_keys"),
            Check("autort_pool_sed", "<", "rl_prt_pool_sed"),
        ),
        paper="SeD averaged over 16 models: AUTO-RT 0.52 vs AutoDAN 0.86 (lower = more diverse)",
    ),
    Claim(
        "fir-rule",
        "The FIR rule picks a good downgrade model: RL+PRT with the FIR pick beats the average over the series and the "
        "next, weaker model (the first after the FIR jump); its regret to the best model is reported",
        checks=(Check("rl_prt_asr", ">", "prt_kmean_asr"), Check("rl_prt_asr", ">", "prt_next_asr")),
        paper="FIR chooses the last model before FIR jumps (paper Fig. on M_1..M_6); no number to compare",
    ),
    Claim(
        "prt-control",
        "Control: PRT with a downgrade model unrelated to the target (its own near-misses) does worse than with the "
        "FIR pick, so PRT's gain comes from a downgrade that shares the target's unsafe region",
        checks=(Check("rl_prt_asr", ">", "prt_unrelated_asr"),),
        paper="(our control; the paper notes that a bad downgrade can change the optimum, since Eq. 4 is not "
        "potential-based)",
    ),
]

_ARM_NAMES = {
    "fs": "FS",
    "il": "IL",
    "rl": "RL",
    "rl_dsp": "RL+DSP",
    "rl_prt": "RL+PRT (FIR pick)",
    "autort": "AUTO-RT",
    "autort_lm": "AUTO-RT, generator a tiny HF llama (reported)",
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
for _k in range(1, 7):
    METRICS[f"fir_M{_k}"] = f"FIR of downgrade model M_{_k} on the probes ordered by the target's ease"
    METRICS[f"prt_M{_k}_asr"] = f"RL+PRT with downgrade M_{_k}: ASR_tst"
METRICS.update(
    {
        "fir_pick": "downgrade index chosen by the FIR rule (last model before the largest FIR increase)",
        "best_k": "downgrade index with the best RL+PRT ASR_tst",
        "prt_kmean_asr": "RL+PRT ASR_tst averaged over M_1..M_6",
        "fir_regret": "best RL+PRT ASR_tst over M_k minus that of the FIR pick",
        "prt_next_asr": "RL+PRT ASR_tst with M_(pick+1), the first model after the FIR jump (the pick if it is M_K)",
        "prt_unrelated_asr": "control: RL+PRT with the unrelated downgrade model, ASR_tst",
        "autort_pruned_div": "AUTO-RT: strategies pruned as redundant",
        "autort_pruned_cons": "AUTO-RT: strategies pruned as off-intent",
    }
)
