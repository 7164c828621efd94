"""Reproduction: VTA, *Verbal Technical Analysis: Reasoning on Time-Series for Financial Technical Analysis* (Koa et
al., ICLR 2026, https://arxiv.org/abs/2511.08616; code https://github.com/chen-jan/VTA).

Idea. An LLM reasons in words over a price window annotated with statistics and technical indicators and writes a
10-day forecast; Time-GRPO trains that reasoning with an inverse-MSE reward (5 / (1 + 10 MSE)) plus format rewards.
A time-series backbone is then conditioned on attributes (min, max, mean) of the reasoner's forecast through an
alignment layer, trained with conditioning dropout and used with classifier-free guidance. Claim: the combination
(VTA) has the lowest MSE / MAE among forecasters, and GRPO makes the reasoner better than supervised training alone.

Protocol (real stocks and a 7B LLM are out of reach; the paper's pipeline on `iclr26.rlft.vta.world`). Per seed: a
regime-switching market (up / down / mean-reverting / volatile, mean duration 40 days, Student-t noise), closes
standardised per stock on the train days, chronological 70/10/20 split, windows L = H = 10. Indicators by `ta` on
the whole past series. The reasoner is a micro llama with an exact word tokenizer: prompt = the window's past
returns and discrete indicator readings; completion = ``<think>`` a 4-word analyst rationale ``</think>``
``<answer>`` 10 quantised cumulative returns ``</answer>``. Reasoner-SFT (TRL `SFTTrainer`) on rule-based analyst
rationales + the true future bins, epochs by validation MSE (early stopping); then Time-GRPO (TRL `GRPOTrainer`, the
official four rewards, G = 8), checkpoint chosen by validation MSE. Both reasoner learning rates are tuned once per
config by the same validation MSE on a separate tuning market (`tune_on_grid`, cached; every seed uses them).
Forecasters (test MSE / MAE on standardised closes): naive last value, DLinear, backbone only (RevIN MLP), reasoner
only (its decoded path), VTA with the SFT-only reasoner, VTA with the Time-GRPO reasoner; each trained to
convergence with early stopping, learning rate (and the CFG scale w for VTA) chosen on validation by `tune_on_grid`.
Testbed check: the generator's oracle (conditional mean given the hidden regime) against naive. Control: VTA trained
and evaluated with the reasoner's outputs shuffled across windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    n_stocks: int = field(default=6, metadata={"help": "synthetic stocks (dossier: 30)"})
    n_days: int = field(default=1000, metadata={"help": "trading days per stock (dossier: 2500)"})
    lookback: int = field(default=10, metadata={"help": "look-back L (paper: 10)"})
    horizon: int = field(default=10, metadata={"help": "forecast horizon H (paper: 10)"})
    # reasoner
    d_model: int = field(default=64, metadata={"help": "reasoner width (dossier: 64; paper: Qwen2.5-7B)"})
    n_layers: int = field(default=2, metadata={"help": "reasoner layers (dossier: 2)"})
    base_steps: int = field(default=1500, metadata={"help": "pre-training steps of the cached base reasoner (ours)"})
    base_stocks: int = field(default=8, metadata={"help": "stocks of the base reasoner's separate market (ours)"})
    sft_lr_grid: tuple[float, ...] = field(
        default=(3e-4, 1e-3, 3e-3),
        metadata={"help": "reasoner SFT lr grid, tuned once by val MSE (code 2e-4 for LoRA on 7B; ours: micro LM)"},
    )
    sft_max_epochs: int = field(default=2, metadata={"help": "max SFT epochs, best by val MSE (code: 2)"})
    grpo_steps: int = field(
        default=200,
        metadata={"help": "Time-GRPO steps, fixed and pre-declared, final weights kept (ours; VERSION 3: early "
                  "stopping on val MSE with step 0 a candidate)"},
    )  # fmt: skip
    grpo_lr: float = field(
        default=1e-4,
        metadata={"help": "Time-GRPO lr, fixed and pre-declared (dossier: 1e-4; code 5e-6 for LoRA on 7B; VERSION 3 "
                  "tuned it by val MSE and every pick left the reasoner within 1e-4 of SFT)"},
    )  # fmt: skip
    grpo_batch: int = field(default=64, metadata={"help": "completions per GRPO step (code: 4 x 2 accum. x 4 GPUs)"})
    num_generations: int = field(default=8, metadata={"help": "G completions per prompt (code: 4; dossier: 8)"})
    reward_samples: int = field(default=2, metadata={"help": "sampled completions per test window for the reward"})
    max_extensions: int = field(default=3, metadata={"help": "grid extensions past an edge pick (tune_on_grid)"})
    beta: float = field(default=0.04, metadata={"help": "KL coefficient to the SFT reference (TRL default then: 0.04)"})
    # forecasters
    lr_grid: tuple[float, ...] = field(default=(1e-3, 3e-3), metadata={"help": "lr grid, extended at edges"})
    w_grid: tuple[float, ...] = field(default=(0.5, 1.0, 2.0), metadata={"help": "CFG w grid (code: 2.0 / 0.1)"})
    max_epochs: int = field(default=60, metadata={"help": "max forecaster epochs (code: 100)"})
    patience: int = field(default=6, metadata={"help": "early-stopping patience (code: 10)"})
    oracle_paths: int = field(default=256, metadata={"help": "Monte-Carlo futures of the oracle (ours)"})
    micro: bool = field(default=True, metadata={"help": "run the micro reproduction (off: only the real-LM half)"})
    real_steps: int = field(
        default=0,
        metadata={"help": "real-LM half: Time-GRPO steps after a LoRA SFT, on SmolLM2-135M or --model (0: off; "
                  "opt-in, CPU-heavy)"},
    )  # fmt: skip
    real_model: str = field(default="smollm2-135m", metadata={"help": "the real LM when --model is not given"})
    real_sft_steps: int = field(default=24, metadata={"help": "real half: LoRA SFT steps of 8 windows (ours)"})
    real_eval: int = field(default=24, metadata={"help": "real half: held-out windows scored (ours)"})

    def __post_init__(self):
        if self.n_stocks < 1 or self.n_days < 200:
            raise ValueError(f"Cfg needs n_stocks >= 1 and n_days >= 200, got {self.n_stocks!r}, {self.n_days!r}")
        if self.grpo_batch % self.num_generations:
            raise ValueError(f"Cfg.grpo_batch ({self.grpo_batch}) must be a multiple of num_generations")
        if self.grpo_steps < 1 or not self.grpo_lr > 0 or self.reward_samples < 1:
            raise ValueError("Cfg.grpo_steps and reward_samples must be >= 1 and grpo_lr > 0")
        if self.real_steps < 0 or self.real_sft_steps < 1 or self.real_eval < 2:
            raise ValueError("Cfg.real_steps must be >= 0, real_sft_steps >= 1 and real_eval >= 2")
        if not self.micro and not self.real_steps:
            raise ValueError("nothing to run: Cfg.micro is off and Cfg.real_steps is 0")
        if min(self.sft_max_epochs, self.max_epochs, self.patience) < 1:
            raise ValueError("Cfg.sft_max_epochs, max_epochs and patience must be >= 1")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), n_stocks=2, n_days=300, base_steps=20, base_stocks=1, sft_max_epochs=1, grpo_steps=2,
                 grpo_batch=16, max_epochs=3, patience=1, oracle_paths=16, lr_grid=(3e-3,), w_grid=(1.0,),
                 sft_lr_grid=(1e-3,), reward_samples=1),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), n_stocks=30, n_days=2500, grpo_steps=800, sft_max_epochs=10, max_epochs=100,
                patience=10, real_steps=8),
}  # fmt: skip
VERSION = 4  # 4: Time-GRPO for a fixed 200 steps at a pre-declared lr 1e-4, final weights (no selection, no GRPO
# tuning); the reasoner claim scores the sampled reward GRPO optimises; the shuffled control uses VTA's lr and w;
# gates; forecast() in eval mode; 6 seeds; opt-in real-LM half (real_steps, --model)
EXPECTED_SECONDS = {"smoke": 40, "quick": 600, "full": 7200}  # quick: estimate, empty cache, 2 jobs
ACCEPTS_MODEL = True  # --model: the real-LM half (opt-in, `--set real_steps=4`) runs on that model
MODEL_NOTE = "`--model` runs the opt-in real-LM half (`--set real_steps=4`, `--set micro=false` to run it alone)"

PAPER = (
    "paper: StockNet / Dow Jones / EURO STOXX 50 / China A50, Qwen2.5-7B reasoner, CALF backbone (table is an image)"
)

_VTA_GATES = ("testbed", "headroom", "shuffled-control")

CLAIMS = [
    Claim(
        "testbed",
        "The market has exploitable structure: the generator's oracle (conditional mean given the hidden regime) "
        "beats the naive last-value forecast by more than 5 % MSE",
        checks=(Check("oracle_gain", ">", 0.05),),
        when="micro",
        role="testbed",
        paper="(our testbed check; not in the paper)",
    ),
    Claim(
        "headroom",
        "The oracle also beats the best learned forecaster without reasoning (the backbone) by more than 5 % MSE: "
        "there is room for the reasoning to add information",
        checks=(Check("oracle_gain_backbone", ">", 0.05),),
        when="micro",
        role="headroom",
    ),
    Claim(
        "shuffled-control",
        "Control: VTA trained and tested on the reasoner's outputs permuted across windows (the method's own lr and w) "
        "does not pass VTA's check against the backbone (it is not below the backbone's MSE)",
        checks=(fails(Check("vta_shuffled_mse", "<", "backbone_mse")),),  # the claims' check, on junk inputs
        when="micro",
        role="negative control",
        requires=("testbed",),
    ),
    Claim(
        "reasoner-moved",
        "Time-GRPO changed the reasoner: its greedy completion differs from the SFT reasoner's on > 10 % of the test "
        "windows (the GRPO arm is not the SFT arm again)",
        checks=(Check("reasoner_changed", ">", 0.10),),
        when="micro",
        role="non-degenerate",
    ),
    Claim(
        "reasoner-headroom",
        "An oracle answer (the generator's conditional mean, well formatted) earns a reward above the SFT reasoner's "
        "sampled reward by > 0.05: GRPO has room to raise it",
        checks=(Check("oracle_reward", ">", "reasoner_sft_reward", margin=0.05),),
        when="micro",
        role="headroom",
    ),
    Claim(
        "vta-lowest",
        "VTA (backbone conditioned on the Time-GRPO reasoner with CFG) has the lowest test MSE and MAE of all "
        "forecasters (naive, DLinear, backbone only, reasoner only, VTA with an SFT-only reasoner)",
        checks=(Check("vta_mse", "<", "best_other_mse"), Check("vta_mae", "<", "best_other_mae")),
        requires=_VTA_GATES,
        when="micro",
        paper=f"VTA best MSE / MAE on all four markets ({PAPER})",
    ),
    Claim(
        "vta-beats-parts",
        "VTA improves over both of its parts: the unconditioned backbone and the reasoner alone",
        checks=(Check("vta_mse", "<", "backbone_mse"), Check("vta_mse", "<", "reasoner_mse")),
        requires=_VTA_GATES,
        when="micro",
        paper="ablations: backbone-only and LLM-only are worse than VTA",
    ),
    Claim(
        "grpo-improves-reasoner",
        "Time-GRPO improves the reasoner over the SFT-only reasoner it starts from, on what it optimises: the reward "
        "of completions sampled at T = 1 on test windows",
        checks=(Check("reasoner_reward", ">", "reasoner_sft_reward"),),
        requires=("testbed", "reasoner-moved", "reasoner-headroom"),
        when="micro",
        paper="GRPO / multi-stage training improves over SFT (ablation)",
    ),
    Claim(
        "grpo-lowers-greedy-mse",
        "Time-GRPO lowers the test MSE of the reasoner's greedy forecast, the path the forecaster is conditioned on "
        "(not what GRPO optimises: it maximises the expected sampled reward)",
        checks=(Check("reasoner_mse", "<", "reasoner_sft_mse"),),
        requires=("testbed", "reasoner-moved"),
        when="micro",
        paper="GRPO / multi-stage training improves over SFT (ablation, forecast error)",
    ),
    Claim(
        "real-testbed",
        "Real LM: after the LoRA SFT the reasoner writes the official answer (10 numbers) on > 80 % of held-out "
        "windows, which the model before SFT does not (control, +0.5)",
        checks=(Check("real_parse_sft", ">", 0.8), Check("real_parse_sft", ">", "real_parse_base", margin=0.5)),
        when="real_steps",
        role="testbed",
    ),
    Claim(
        "real-moved",
        "Real LM: the Time-GRPO steps changed the greedy completions on > 10 % of the held-out windows",
        checks=(Check("real_changed", ">", 0.10),),
        when="real_steps",
        role="non-degenerate",
    ),
    Claim(
        "real-grpo-improves",
        "Real LM: Time-GRPO raises the sampled reward on held-out windows over the LoRA-SFT reasoner it starts from",
        checks=(Check("real_reward_grpo", ">", "real_reward_sft"),),
        requires=("real-testbed", "real-moved"),
        when="real_steps",
        paper="Time-GRPO improves Qwen2.5-7B's reasoning over SFT (multi-stage ablation)",
    ),
]

METRICS = {
    "naive_mse": "test MSE (standardised closes, all windows and 10 steps) of the last-value forecast",
    "naive_mae": "test MAE of the last-value forecast",
    "oracle_mse": "test MSE of the generator's conditional mean given the hidden state (Monte Carlo)",
    "oracle_gain": "1 - oracle_mse / naive_mse",
    "dlinear_mse": "test MSE of DLinear (lr by val MSE, early stopping)",
    "dlinear_mae": "test MAE of DLinear",
    "backbone_mse": "test MSE of the backbone alone (RevIN MLP; lr by val MSE, early stopping)",
    "backbone_mae": "test MAE of the backbone alone",
    "reasoner_sft_mse": "test MSE of the SFT-only reasoner's decoded path (greedy; unparsed -> naive)",
    "reasoner_sft_mae": "test MAE of the SFT-only reasoner",
    "reasoner_mse": "test MSE of the Time-GRPO reasoner's decoded path (greedy; unparsed -> naive)",
    "reasoner_mae": "test MAE of the Time-GRPO reasoner",
    "vta_sft_mse": "test MSE of VTA with the SFT-only reasoner (lr and w by val MSE)",
    "vta_sft_mae": "test MAE of VTA with the SFT-only reasoner",
    "vta_mse": "test MSE of VTA with the Time-GRPO reasoner (lr and w by val MSE)",
    "vta_mae": "test MAE of VTA",
    "vta_shuffled_mse": "test MSE of VTA trained and tested on reasoner outputs permuted across windows (control; "
    "VTA's lr and w)",
    "shuffled_gain": "1 - vta_shuffled_mse / backbone_mse",
    "best_other_mse": "min test MSE of naive, DLinear, backbone, reasoner, VTA-SFT (per seed)",
    "best_other_mae": "min test MAE of the same",
    "vta_w": "CFG scale w chosen on validation for VTA",
    "vta_sft_w": "CFG scale w chosen for VTA with the SFT-only reasoner",
    "reasoner_parse_rate": "share of test completions of the GRPO reasoner that parse into 10 bins",
    "grpo_reward_first": "mean total reward of the first 10 % of GRPO steps",
    "grpo_reward_last": "mean total reward of the last 10 % of GRPO steps",
    "grpo_steps": "Time-GRPO steps run (fixed: grpo_steps)",
    "grpo_weight_change": "L2 norm of the Time-GRPO reasoner's weights minus the SFT reasoner's",
    "sft_epochs": "SFT epoch with the lowest validation MSE",
    "sft_lr": "reasoner SFT lr, tuned once on the tuning market by validation MSE (grid grown past an edge)",
    "grpo_lr": "reasoner Time-GRPO lr (fixed, pre-declared)",
    "lrs_at_edge": "1 if the SFT lr is still at its grid's edge after the extensions",
    "oracle_gain_backbone": "1 - oracle_mse / backbone_mse",
    "reasoner_reward": "Time-GRPO reasoner: mean total reward (the four official terms) of completions sampled at "
    "T = 1 on the test windows (reward_samples per window)",
    "reasoner_sft_reward": "the same for the SFT-only reasoner",
    "reasoner_correct_reward": "Time-GRPO reasoner: the inverse-MSE term alone, sampled, test windows",
    "reasoner_sft_correct_reward": "the same for the SFT-only reasoner",
    "oracle_reward": "inverse-MSE reward of the oracle path on the test windows + 2.0 (a well-formatted answer's "
    "format terms)",
    "reasoner_changed": "share of test windows whose greedy completion differs between the SFT and GRPO reasoners",
    "real_parse_base": "real LM before SFT: share of held-out windows whose greedy answer parses into 10 numbers",
    "real_parse_sft": "real LM after the LoRA SFT: the same",
    "real_parse_grpo": "real LM after Time-GRPO: the same",
    "real_mse_sft": "real LM after SFT: greedy forecast MSE on the held-out windows (unparsed: naive)",
    "real_mse_grpo": "real LM after Time-GRPO: the same",
    "real_naive_mse": "the naive last-value forecast on the same windows",
    "real_reward_sft": "real LM after SFT: mean total reward of 2 completions per held-out window sampled at T = 1",
    "real_reward_grpo": "real LM after Time-GRPO: the same",
    "real_changed": "real LM: share of held-out windows whose greedy completion changed with Time-GRPO",
    "real_seconds": "real LM: wall seconds of the real half",
    "seconds_reasoner": "wall seconds of SFT + GRPO + generation",
    "seconds_total": "wall seconds of the seed",
}
