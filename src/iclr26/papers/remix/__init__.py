"""Reproduction: ReMix, *Squeeze the Soaked Sponge: Efficient Off-policy Reinforcement Finetuning for Large Language
Model* (Liang et al., ICLR 2026, https://arxiv.org/abs/2507.06892; code https://github.com/AnitaLeungxx/ReMix-Off-Policy-RFT).

Idea. On-policy RFT (PPO, GRPO) throws each rollout away after one update. ReMix (`iclr26.rlft.remix`, a TRL
`GRPOTrainer` subclass) trains on batches that mix fresh rollouts with the last N policies' rollouts (Mix-PPG, clip
re-centred at pi_k / pi_{k-i}) for m > 1 passes, constrains the policy by KL to a convex combination of base and
previous policy (KL-Convex), and at iteration T reincarnates: the current policy becomes the base and training goes
on-policy. The paper reports GRPO/PPO-level accuracy with 30-450x fewer rollouts on math benchmarks.

Protocol (math benchmarks and 1.5B models are out of reach; the dossier's verifiable world). Per seed: the
three-digit addition world (`iclr26.rlft.remix.world`), a micro llama SFT'd on a sloppy teacher (it forgets the last
operand 60 % of the time; ~30-40 % sampled accuracy), then from that policy, with one rollout budget for every arm:
GRPO (TRL's `GRPOTrainer`), ReMix-GRPO, and the ablations w/o UTD, w/o KL-Convex, w/o reincarnation and pure Mix-PPG
(all three off); GRPO with rewards shuffled within each batch is the control that must not learn, and a second GRPO
run with another sampling seed is the null arm of the speed-up (its curve equals GRPO's in expectation, so it must
not show a speed-up). Accuracy (sampled, T = 1, on held-out problems, fp32) is recorded against cumulative fresh
rollouts. The speed-up is measured by one rule for both arms (`curves.py`: smoothed curves, one level = 90 % of GRPO's
final gain, first crossing, no floor). Learning rates: each method's best final validation accuracy on a factor-2
grid (seed 100, `benchmarks/remix_lr.py`): GRPO 1.25e-4, ReMix 2.5e-4 (its ablations use ReMix's). ReMix's own knobs
are the paper's (p 0.4, N 2, m 2) with T and the lambda schedule rescaled to the toy run length. Opt-in
(`real_iters > 0`, `real.py`): ReMix vs GRPO on a real LM (SmolLM2-135M-Instruct, or `--model`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails

ARMS = ("grpo", "remix", "no_utd", "no_klc", "no_reinc", "mix_ppg", "shuffled", "grpo_null")


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    arms: tuple[str, ...] = field(default=ARMS, metadata={"help": "arms run per seed (grpo and remix are required)"})
    d_model: int = field(default=64, metadata={"help": "policy width (dossier: 128; ours, for CPU time)"})
    n_layers: int = field(default=2, metadata={"help": "policy depth (dossier: 3)"})
    sft_steps: int = field(default=1000, metadata={"help": "SFT steps on the noisy teacher (ours)"})
    sft_examples: int = field(default=4000, metadata={"help": "SFT demonstrations (dossier: 3k)"})
    noise: float = field(default=0.6, metadata={"help": "teacher's share of slips, a+b (ours: SFT acc ~35 %)"})
    pad_prob: float = field(default=0.5, metadata={"help": "teacher's share of scratchpad answers (ours)"})
    prompts_per_iter: int = field(default=8, metadata={"help": "prompts per iteration (dossier toy: 32)"})
    num_generations: int = field(default=8, metadata={"help": "G, samples per prompt (dossier toy: 8)"})
    budget: int = field(default=2560, metadata={"help": "fresh rollouts per arm (dossier toy: ~77k)"})
    lr: float = field(
        default=1.25e-4, metadata={"help": "AdamW lr (constant) of GRPO, the control and the null arm: its best on val"}
    )
    lr_remix: float = field(
        default=2.5e-4, metadata={"help": "AdamW lr of ReMix and its ablations: ReMix's best on val"}
    )
    beta: float = field(default=0.001, metadata={"help": "KL coefficient, every arm (paper/verl: 0.001)"})
    epsilon: float = field(default=0.2, metadata={"help": "clip epsilon (verl default 0.2)"})
    off_policy_ratio: float = field(default=0.4, metadata={"help": "p (paper: 0.4)"})
    history_window: int = field(default=2, metadata={"help": "N (paper: 2)"})
    utd: int = field(default=2, metadata={"help": "m (paper: 2)"})
    reincarnate_at: int = field(default=15, metadata={"help": "T in iterations (paper ReMix-GRPO: 50 of ~200)"})
    kl_lambda_start: int = field(default=8, metadata={"help": "lambda = 1 up to here (paper: 50; rescaled)"})
    kl_lambda_every: int = field(default=2, metadata={"help": "lambda drops 0.1 every this many (paper: 10)"})
    eval_every: int = field(default=3, metadata={"help": "iterations between held-out evaluations (ours)"})
    eval_samples: int = field(default=4, metadata={"help": "samples per held-out problem (ours; VERSION 1: 2)"})
    n_test: int = field(default=200, metadata={"help": "held-out test problems (of 1000)"})
    max_completion_length: int = field(default=6, metadata={"help": "max response tokens (scratchpad + EOS)"})
    reach_q: float = field(
        default=0.9, metadata={"help": "the speed-up's level: sft + q (GRPO's smoothed final - sft) (ours)"}
    )
    smooth_window: int = field(default=3, metadata={"help": "evaluations in the centred moving average (ours)"})
    micro: bool = field(default=True, metadata={"help": "run the micro-policy arms (off: only the real-model half)"})
    real_iters: int = field(
        default=0,
        metadata={"help": "real-LM half: iterations per arm on SmolLM2-135M or --model (0: off; opt-in, CPU-heavy)"},
    )
    real_model: str = field(default="smollm2-135m", metadata={"help": "the real LM when --model is not given"})
    real_prompts_per_iter: int = field(default=4, metadata={"help": "real half: prompts per iteration (ours)"})
    real_generations: int = field(default=4, metadata={"help": "real half: G samples per prompt (ours)"})
    real_lr: float = field(default=1e-5, metadata={"help": "real half: AdamW lr, full fine-tuning, both arms (ours)"})
    real_eval: int = field(default=64, metadata={"help": "real half: held-out problems scored greedily (ours)"})

    @property
    def all_arms(self) -> bool:
        """Whether every ablation and the controls run (the claims that read them need it)."""
        return self.micro and set(self.arms) == set(ARMS)

    @property
    def micro_on(self) -> bool:
        return self.micro

    def __post_init__(self):
        if not {"grpo", "remix"} <= set(self.arms) or not set(self.arms) <= set(ARMS):
            raise ValueError(f"Cfg.arms must include 'grpo' and 'remix' and be drawn from {ARMS}, got {self.arms!r}")
        if not 0.0 <= self.noise < 1.0 or not 0.0 <= self.pad_prob <= 1.0:
            raise ValueError("Cfg.noise must be in [0, 1) and Cfg.pad_prob in [0, 1]")
        if self.budget < self.prompts_per_iter * self.num_generations * 2:
            raise ValueError(f"Cfg.budget must allow at least two GRPO iterations, got {self.budget!r}")
        if min(self.sft_steps, self.eval_every, self.eval_samples, self.reincarnate_at) < 1:
            raise ValueError("Cfg: sft_steps, eval_every, eval_samples and reincarnate_at must be >= 1")
        if self.reincarnate_at % self.eval_every:
            raise ValueError("Cfg.reincarnate_at must be a multiple of eval_every (the length claim reads that point)")
        if not 0.0 < self.reach_q <= 1.0:
            raise ValueError(f"Cfg.reach_q must be in (0, 1], got {self.reach_q!r}")
        if self.smooth_window < 1 or self.smooth_window % 2 == 0:
            raise ValueError(f"Cfg.smooth_window must be an odd number >= 1, got {self.smooth_window!r}")
        if self.real_iters < 0 or (self.real_iters and self.real_iters < 2):
            raise ValueError(f"Cfg.real_iters must be 0 (off) or >= 2, got {self.real_iters!r}")
        if not self.micro and not self.real_iters:
            raise ValueError("nothing to run: Cfg.micro is off and Cfg.real_iters is 0")
        if self.real_generations < 2:
            raise ValueError(f"Cfg.real_generations must be >= 2 (GRPO groups), got {self.real_generations!r}")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), arms=("grpo", "remix", "no_reinc"), sft_steps=150, sft_examples=1500, budget=384,
                 reincarnate_at=3, kl_lambda_start=1, kl_lambda_every=1, eval_every=1, eval_samples=1, n_test=60),
    "quick": Cfg(),
    "full": Cfg(seeds=(0, 1, 2, 3, 4), d_model=128, n_layers=3, prompts_per_iter=32, budget=20480, reincarnate_at=30,
                kl_lambda_start=15, kl_lambda_every=3, eval_every=5, eval_samples=4, real_iters=12),
}  # fmt: skip
VERSION = 2  # 2: speed-up by one rule for both arms (smoothed curves, one level, no floor) with a null GRPO arm;
# fp32 training and evaluation (was TRL's CPU bf16 autocast for the RL points); 4 samples per held-out problem;
# optimizer steps and rollouts recorded per arm; opt-in real-LM half (real_iters, --model)
EXPECTED_SECONDS = {"smoke": 45, "quick": 420, "full": 7200}  # quick: estimate, cached SFT
ACCEPTS_MODEL = True  # --model: the real-LM half (opt-in, `--set real_iters=8`) runs on that model
MODEL_NOTE = "`--model` runs the opt-in real-LM half (`--set real_iters=8`, `--set micro=false` to run it alone)"

PAPER = "paper: R1-Distill-Qwen-1.5B/7B on DeepScaleR math, Pass@1 over 5 benchmarks"
_ROLLOUT_GATES = ("testbed", "shuffled-control", "null-control", "rollout-parity")

CLAIMS = [
    Claim(
        "testbed",
        "The SFT policy leaves room for RL (sampled accuracy 0.2-0.5) and GRPO improves it by > 0.1 within the budget",
        checks=(Check("sft_acc", ">", 0.2), Check("sft_acc", "<", 0.5), Check("grpo_gain", ">", 0.1)),
        when="micro_on",
        role="testbed",
        paper="(our testbed check; base R1-Distill-Qwen-1.5B 37.58 -> PPO 50.61)",
    ),
    Claim(
        "shuffled-control",
        "GRPO with rewards shuffled within each batch (the reward's information removed) does not pass the testbed's "
        "check: its gain stays below 0.1",
        checks=(fails(Check("shuffled_gain", ">", 0.1)),),
        when="all_arms",
        role="negative control",
        requires=("testbed",),
    ),
    Claim(
        "null-control",
        "A second GRPO run (another sampling seed: its curve equals GRPO's in expectation) put through the speed-up "
        "rule does not show the claimed speed-up (> 2x): the rule has no upward bias",
        checks=(fails(Check("null_speedup", ">", 2.0)),),
        when="all_arms",
        role="negative control",
        requires=("testbed",),
    ),
    Claim(
        "rollout-parity",
        "Every arm ends within 10 % of the same fresh-rollout budget (ReMix's arms overshoot by less than one "
        "iteration); optimizer steps differ by design and are recorded (ReMix's m = 2 passes per batch)",
        checks=(Check("rollout_spread", "<", 0.1, margin=0.001, deterministic=True),),
        when="micro_on",
        role="budget",
    ),
    Claim(
        "rollout-efficiency",
        "ReMix reaches GRPO's accuracy with several-fold (> 2x) fewer fresh rollouts: rollouts to reach 90 % of "
        "GRPO's final gain, one rule for both arms (ReMix takes more optimizer steps per rollout: that is its "
        "mechanism, recorded as steps_*)",
        checks=(Check("remix_speedup", ">", 2.0),),
        requires=_ROLLOUT_GATES,
        when="micro_on",
        paper=f"ReMix-PPO 52.10 with 0.079M rollouts vs DeepScaleR 52.14 with 2.519M; ~6x fewer than PPO ({PAPER})",
    ),
    Claim(
        "wall-clock",
        "ReMix reaches that accuracy level in less training wall-clock than GRPO (evaluations excluded, same rule)",
        checks=(Check("remix_wall_speedup", ">", 1.0),),
        requires=_ROLLOUT_GATES,
        when="micro_on",
        paper=f"~4x less wall-clock than PPO to surpass it ({PAPER})",
    ),
    Claim(
        "reincarnation-matters",
        "Without reincarnation the final accuracy is the lowest among the ablations (below ReMix, w/o UTD, "
        "w/o KL-Convex and pure Mix-PPG)",
        checks=(
            Check("acc_no_reinc", "<", "acc_remix"),
            Check("acc_no_reinc", "<", "acc_no_utd"),
            Check("acc_no_reinc", "<", "acc_no_klc"),
            Check("acc_no_reinc", "<", "acc_mix_ppg"),
        ),
        when="all_arms",
        requires=("testbed", "shuffled-control", "rollout-parity"),
        paper="1.5B: ReMix 52.10, w/o UTD 50.63, w/o KL-Convex 49.36, w/o reincarnation 47.26, pure Mix-PPG 48.70",
    ),
    Claim(
        "length-shrinks",
        "Response length shrinks in the mix-policy phase (the Whipping Effect): ReMix's mean length at T is below "
        "the SFT policy's, by more than GRPO's drops over the same rollouts (control: on-policy)",
        checks=(Check("remix_len_drop", ">", 0.0), Check("remix_len_drop", ">", "grpo_len_drop")),
        requires=("testbed",),
        when="micro_on",
        paper="ReMix's response length first shrinks, then grows after reincarnation (Fig. on 1.5B)",
    ),
    Claim(
        "real-headroom",
        "Real LM: within the real half's budget GRPO raises the held-out greedy accuracy by > 0.05 (the budget can "
        "show a rollout saving at all)",
        checks=(Check("real_acc_grpo", ">", "real_acc_start", margin=0.05),),
        when="real_iters",
        role="headroom",
    ),
    Claim(
        "real-replays",
        "Real LM: ReMix did replay (off-policy share of its mix-phase batches > 0.2) and both arms generated the same "
        "fresh rollouts within 10 %",
        checks=(
            Check("real_offpolicy_share", ">", 0.2, margin=0.001, deterministic=True),
            Check("real_rollout_spread", "<", 0.1, margin=0.001, deterministic=True),
        ),
        when="real_iters",
        role="non-degenerate",
    ),
    Claim(
        "real-rollout-efficiency",
        "Real LM: at the same fresh-rollout budget ReMix's held-out accuracy is above GRPO's (the paper's saving seen "
        "at a fixed small budget)",
        checks=(Check("real_acc_remix", ">", "real_acc_grpo"),),
        requires=("real-headroom", "real-replays"),
        when="real_iters",
        paper=f"ReMix matches PPO with ~10x fewer rollouts at 100 steps ({PAPER})",
    ),
]

METRICS = {
    "sft_acc": "SFT policy: sampled (T=1) accuracy on the held-out test problems",
    "sft_len": "SFT policy: mean response length in tokens (EOS included) on the test problems",
    "grpo_gain": "GRPO final accuracy - sft_acc",
    "shuffled_gain": "GRPO with rewards shuffled within each batch (control): final accuracy - sft_acc",
    "reach_level": "the speed-up's level: sft_acc + 0.9 (last point of GRPO's smoothed curve - sft_acc)",
    "grpo_rollouts_to_level": "fresh rollouts at which GRPO's smoothed curve first reaches the level (interpolated)",
    "remix_rollouts_to_level": "fresh rollouts at which ReMix's smoothed curve first reaches the level (NaN: never)",
    "null_rollouts_to_level": "the same for the null arm (GRPO, another seed)",
    "remix_speedup": "grpo_rollouts_to_level / remix_rollouts_to_level (0 when ReMix never reaches it; no floor)",
    "null_speedup": "grpo_rollouts_to_level / null_rollouts_to_level: the rule's value when nothing differs",
    "remix_wall_speedup": "GRPO's training seconds / ReMix's training seconds to first reach the level (smoothed "
    "curves, interpolated; evaluations excluded)",
    "null_wall_speedup": "the same for the null arm",
    "rollout_spread": "max / min - 1 of the arms' fresh rollouts at the end of their runs",
    "remix_len_drop": "sft_len - ReMix's mean length at iteration T (end of the mix phase)",
    "grpo_len_drop": "sft_len - GRPO's mean length after the same number of rollouts (interpolated)",
    "remix_train_s": "training seconds of the ReMix run (evaluations excluded)",
    "grpo_train_s": "training seconds of the GRPO run (evaluations excluded)",
    "remix_wall_s": "wall seconds of the ReMix run (training + evaluations)",
    "grpo_wall_s": "wall seconds of the GRPO run",
    "real_acc_start": "real LM: held-out greedy accuracy before RL (the model as given)",
    "real_acc_grpo": "real LM: held-out greedy accuracy after GRPO's fresh-rollout budget",
    "real_acc_remix": "real LM: held-out greedy accuracy after ReMix at the same fresh-rollout budget",
    "real_offpolicy_share": "real LM: mean share of replayed rollouts in ReMix's mix-phase batches",
    "real_rollout_spread": "real LM: max / min - 1 of the two arms' fresh rollouts",
    "real_rollouts_grpo": "real LM: GRPO's fresh rollouts",
    "real_rollouts_remix": "real LM: ReMix's fresh rollouts",
    "real_steps_grpo": "real LM: GRPO's optimizer steps",
    "real_steps_remix": "real LM: ReMix's optimizer steps",
    "real_reward_grpo": "real LM: mean training reward of GRPO's rollouts",
    "real_reward_remix": "real LM: mean training reward of ReMix's fresh rollouts",
    "real_seconds": "real LM: wall seconds of the real half",
}
for _a in ARMS:
    METRICS[f"acc_{_a}"] = f"{_a}: final accuracy (mean of the last two evaluations) at the common rollout budget"
    METRICS[f"auc_{_a}"] = f"{_a}: mean accuracy over the evaluations (area under the accuracy-rollouts curve)"
    METRICS[f"rollouts_{_a}"] = f"{_a}: fresh rollouts generated in all"
    METRICS[f"steps_{_a}"] = f"{_a}: optimizer steps taken"
TABLE_METRICS = ("acc_grpo", "acc_remix", "steps_grpo", "steps_remix", "null_speedup", "grpo_rollouts_to_level",
                 "remix_rollouts_to_level")  # fmt: skip
