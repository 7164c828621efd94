"""Reproduction: UniVLA, *Unified Vision-Language-Action Model* (Wang et al., ICLR 2026,
https://arxiv.org/abs/2506.19850; code https://github.com/baaivision/UniVLA).

Idea. Text, images and actions are discrete tokens of one vocabulary, modelled by one decoder-only transformer.
Before policy fine-tuning, the model is *post-trained as a world model* on action-free robot videos: given the
instruction and frames I_1..I_t it predicts the next frames (loss on vision tokens only). The paper's ablation: world-
model post-training lifts LIBERO from 48.5 (none) to 94.2, LIBERO-Long from 17.4 to 89.2, more than text-to-image
(69.8) or text-free video prediction (78.9), while action-only post-training on other robots hurts (43.9); the gain is
largest on long tasks and with little fine-tuning data (CALVIN with 10% data: 3.19 vs 0.15).

Protocol (Emu3-8.5B, LIBERO and 622k videos are out of reach: `iclr26.embodied.univla` on ToyTable,
`iclr26.embodied.univla.world`). Per seed: a patch VQ (k-means codebook) and a FAST DCT tokeniser; a post-training
corpus of expert videos of *another robot* (different action space); one tiny Llama per arm, post-trained for the same
number of steps with the arm's sequences, then fine-tuned to convergence by one rule for every arm (action-token loss,
history 1 + 1 frames, chunk 2; reduce-on-plateau LR and early stopping on the validation demos' action loss, the step
cap only a safety net that the run reports) on few demonstrations (n_few short + n_few long, the count at which the
no-post-training policy sits mid-range), and evaluated closed-loop on n_eval short (one pick-place) and n_eval long
(three chained) tasks. Arms: none, world model (text + frames), the encoder + action-token baseline (a patch-MLP
encoder in place of vision tokens, no post-training), and two controls: *junk* post-training (world-model sequences
whose vision codes are random: nothing to learn) and a world model trained on *shuffled instructions* (held-out vision
loss only: does the world model use the text?); none and world model also on many demonstrations. At full scale also
action-only, text-to-image and video-prediction post-training.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails

ARMS = ("none", "action_only", "t2i", "video", "world_model", "encoder", "junk", "wm_shuffled")
POST_TASK = {"none": None, "encoder": None, "action_only": "action_only", "t2i": "t2i", "video": "video",
             "world_model": "world_model", "junk": "world_model", "wm_shuffled": "world_model"}  # fmt: skip
CORRUPT = {"junk": "random_codes", "wm_shuffled": "shuffled_text"}  # the controls' post-training data


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    arms: tuple[str, ...] = field(
        default=("none", "world_model", "encoder", "junk"),
        metadata={"help": "arms fine-tuned on few demos (quick: none, world model, encoder, junk; full: all)"},
    )
    many_arms: tuple[str, ...] = field(default=("none", "world_model"), metadata={"help": "arms also on many demos"})
    post_only: tuple[str, ...] = field(
        default=("wm_shuffled",), metadata={"help": "arms post-trained only (held-out vision loss; ours)"}
    )
    n_few: int = field(
        default=40,
        metadata={"help": "few: demos per task family, where none sits mid-range (ours; paper: 10% of CALVIN)"},
    )
    n_many: int = field(default=80, metadata={"help": "many: demos per family (paper: 50 per LIBERO task)"})
    n_heldout: int = field(default=100, metadata={"help": "held-out videos (other robot) for vision losses (ours)"})
    n_val: int = field(default=10, metadata={"help": "validation demos per family, early stopping (ours)"})
    n_post: int = field(default=1000, metadata={"help": "post-training videos, other robot (paper: ~622k)"})
    n_eval: int = field(default=30, metadata={"help": "closed-loop episodes per family (paper: 50 per task)"})
    post_steps: int = field(default=300, metadata={"help": "post-training steps, every arm (paper: 30k)"})
    ft_steps: int = field(default=3000, metadata={"help": "fine-tuning safety cap; early stopping ends it (paper: 8k)"})
    batch: int = field(default=32, metadata={"help": "batch, both stages (paper: 64 post-training, 192 fine-tuning)"})
    lr: float = field(
        default=5e-3,
        metadata={
            "help": "peak LR; cosine in post-training, halved on plateaus in fine-tuning (paper: 8e-5 cosine; ours)"
        },
    )
    eval_every: int = field(default=25, metadata={"help": "steps between validation losses (ours)"})
    patience: int = field(default=6, metadata={"help": "early-stopping patience in evaluations (ours)"})
    decay_patience: int = field(default=3, metadata={"help": "evaluations without improvement per LR halving (ours)"})
    chunk: int = field(default=2, metadata={"help": "action chunk H (paper: 10; 5 on SimplerEnv)"})
    n_frames: int = field(default=4, metadata={"help": "frames per post-training clip (paper code: 6)"})
    stride: int = field(default=2, metadata={"help": "env steps between clip frames (ours)"})
    codebook: int = field(default=128, metadata={"help": "VQ codebook size (paper: 32,768)"})
    d_model: int = field(default=64, metadata={"help": "tiny Llama width (paper: Emu3 8.5B, 4096)"})
    n_layers: int = field(default=2, metadata={"help": "tiny Llama depth (paper: 32)"})
    n_heads: int = field(default=4, metadata={"help": "attention heads (paper: 32)"})
    patch_pos: bool = field(default=True, metadata={"help": "learned patch-index embedding (ours; Emu3: 1-D RoPE)"})

    def __post_init__(self):
        bad = [a for a in (*self.arms, *self.many_arms, *self.post_only) if a not in ARMS]
        if bad:
            raise ValueError(f"Cfg.arms/many_arms: unknown arms {bad}; choose from {ARMS}")
        if "world_model" not in self.arms or "none" not in self.arms:
            raise ValueError("Cfg.arms must contain 'none' and 'world_model' (every claim compares them)")
        if min(self.n_few, self.n_many, self.n_val, self.n_post, self.n_eval, self.n_heldout) < 1:
            raise ValueError("Cfg: n_few, n_many, n_val, n_post, n_eval, n_heldout must be >= 1")
        if any(POST_TASK[a] is None for a in self.post_only):
            raise ValueError(f"Cfg.post_only: arms without post-training cannot be post-trained only: {self.post_only}")
        if not 1 <= self.chunk <= 10:
            raise ValueError(f"Cfg.chunk must be in [1, 10], got {self.chunk!r}")

    # which claims apply at a scale (Claim.when)
    @property
    def has_many(self) -> bool:
        return {"none", "world_model"} <= set(self.many_arms)

    @property
    def has_controls(self) -> bool:
        return "junk" in self.arms and "wm_shuffled" in (*self.arms, *self.post_only)

    @property
    def has_variants(self) -> bool:
        return {"t2i", "video"} <= set(self.arms)

    @property
    def has_encoder(self) -> bool:
        return "encoder" in self.arms

    @property
    def has_action_only(self) -> bool:
        return "action_only" in self.arms


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        arms=("none", "world_model", "junk"),
        many_arms=(),
        n_few=3,
        n_val=3,
        n_post=20,
        n_eval=6,
        n_heldout=6,
        post_steps=6,
        ft_steps=6,
        batch=8,
        eval_every=3,
        patience=1,
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(6)), arms=(*ARMS[:-1],), n_post=3000, post_steps=2000, ft_steps=6000, n_eval=200),
}
VERSION = 3  # 3: few = 40 demos (none mid-range), many = 80, junk and shuffled-instruction controls, gates; 4 seeds
EXPECTED_SECONDS = {"smoke": 40, "quick": 600, "full": 9000}  # quick: see the docs' Timings; full: estimate
ACCEPTS_MODEL = False
MODEL_NOTE = "the method works on any transformers causal LM over the unified vocabulary (UnifiedVLA wraps Llama)"

PAPER = "paper: Emu3-8.5B, LIBERO / CALVIN / SimplerEnv, 622k post-training videos"
HEADLINE = "world-model-helps"

CLAIMS = [
    Claim(
        "testbed",
        "The tasks are solvable and learnable: the scripted expert solves short and long tasks, and the few-demo "
        "policy without post-training succeeds on short tasks far more often than an untrained model",
        checks=(
            Check("expert_short_success", ">", 0.99, margin=0.005, deterministic=True),
            Check("expert_long_success", ">", 0.99, margin=0.005, deterministic=True),
            Check("none_few_short_success", ">", "untrained_short_success", margin=0.3),
        ),
        paper="(testbed check; the paper's benchmarks come with their own demonstrations)",
        role="testbed",
    ),
    Claim(
        "headroom",
        "Headroom: without post-training the few-demo policy sits mid-range (mean of short success and long progress "
        "between 0.3 and 0.6), so post-training can both help and hurt it (the expert scores 1)",
        checks=(Check("none_few_avg_progress", ">", 0.3), Check("none_few_avg_progress", "<", 0.6)),
        role="headroom",
    ),
    Claim(
        "junk-control",
        "Negative control: post-training on junk (world-model sequences with random vision codes) does not improve the "
        "few-demo policy by the claim's margin",
        checks=(fails(Check("junk_few_avg_progress", ">", "none_few_avg_progress", margin=0.05)),),
        role="negative control",
        when="has_controls",
    ),
    Claim(
        "junk-loss-control",
        "Negative control of the action-loss claim: junk post-training does not lower the validation action loss by "
        "that claim's margin",
        checks=(fails(Check("junk_few_val_loss", "<", "none_few_val_loss", margin=0.02)),),
        role="negative control",
        when="has_controls",
    ),
    Claim(
        "wm-uses-instruction",
        "Non-degenerate world model: trained with the true instructions it predicts held-out frames better than the "
        "same world model trained on shuffled instructions (otherwise it is text-free video prediction)",
        checks=(Check("wm_shuffled_vision_loss", ">", "world_model_vision_loss", margin=0.01),),
        role="non-degenerate",
        when="has_controls",
    ),
    Claim(
        "world-model-helps",
        "World-model post-training improves the few-demo policy over no post-training (mean of short success and long "
        "progress, by 0.05)",
        checks=(Check("world_model_few_avg_progress", ">", "none_few_avg_progress", margin=0.05),),
        paper=f"LIBERO 48.5 -> 94.2, LIBERO-Long 17.4 -> 89.2, CALVIN 1.46 -> 4.61 of 5 ({PAPER})",
        requires=("testbed", "headroom", "junk-control", "wm-uses-instruction"),
    ),
    Claim(
        "wm-lower-action-loss",
        "World-model post-training lowers the few-demo policy's validation action-token loss (teacher-forced NLL, "
        "a finer measure than success; by 0.02 nats)",
        checks=(Check("world_model_few_val_loss", "<", "none_few_val_loss", margin=0.02),),
        paper="(our finer measure; the paper reports success only)",
        requires=("testbed", "junk-loss-control", "wm-uses-instruction"),
    ),
    Claim(
        "world-model-best",
        "World-model post-training beats text-to-image and text-free video prediction post-training (mean of short "
        "success and long progress, few demos)",
        checks=(Check("wm_minus_t2i_few", ">", 0.0), Check("wm_minus_video_few", ">", 0.0)),
        paper="LIBERO: world model 94.2 > video 78.9 > text-to-image 69.8 > none 48.5",
        when="has_variants",
        requires=("testbed", "headroom", "junk-control", "wm-uses-instruction"),
    ),
    Claim(
        "beats-encoder",
        "The unified token model with world-model post-training beats an encoder + action-token baseline "
        "(pi0-FAST-like: image features in place of vision tokens, no post-training), by 0.05",
        checks=(Check("wm_minus_encoder_few", ">", 0.05),),
        paper="LIBERO 95.5 vs pi0-FAST 85.5",
        when="has_encoder",
        requires=("testbed", "headroom", "junk-control", "wm-uses-instruction"),
    ),
    Claim(
        "long-gain",
        "World-model post-training helps long tasks (long progress) and more than short ones",
        checks=(Check("gain_long_few", ">", 0.0), Check("gain_long_few", ">", "gain_short_few")),
        paper="LIBERO-Long +71.8 points vs LIBERO average +45.7",
        requires=("testbed", "headroom", "junk-control", "wm-uses-instruction"),
    ),
    Claim(
        "few-demo-gain",
        "World-model post-training helps with few demonstrations (by 0.05), and more than with many",
        checks=(Check("gain_avg_few", ">", 0.05), Check("gain_avg_few", ">", "gain_avg_many")),
        paper="CALVIN with 10% of the data: 3.19 vs 0.15 (full data: 4.41 vs 1.46)",
        when="has_many",
        requires=("testbed", "headroom", "junk-control", "wm-uses-instruction"),
    ),
    Claim(
        "action-only-hurts",
        "Action-only post-training on another robot does not help: its few-demo score is below no post-training",
        checks=(Check("action_only_few_avg_progress", "<", "none_few_avg_progress"),),
        paper="LIBERO 43.9 vs 48.5; CALVIN 0.52 vs 1.46",
        when="has_action_only",
        requires=("testbed", "headroom"),
    ),
]
TABLE_METRICS = ("none_few_short_success", "world_model_few_short_success", "none_few_long_progress",
                 "world_model_few_long_progress", "none_many_avg_progress", "world_model_many_avg_progress",
                 "encoder_few_avg_progress", "junk_vision_loss", "world_model_few_ft_steps",
                 "none_few_ft_steps")  # fmt: skip

METRICS = {
    "codebook_used": "vision codes in the fitted patch VQ (distinct patches, at most the codebook size)",
    "expert_short_success": "scripted expert: success on the short evaluation tasks",
    "expert_long_success": "scripted expert: success on the long evaluation tasks",
    "untrained_short_success": "untrained (random-init) model: success on short tasks (control)",
    "seconds": "wall seconds of the seed",
    "world_model_vision_loss": "world model after post-training: vision-token loss on held-out clips (true text)",
    "wm_shuffled_vision_loss": "world model post-trained on shuffled instructions: the same held-out loss (control)",
    "junk_vision_loss": "junk post-training (random vision codes): the same held-out loss",
    "gain_short_few": "world_model_few_short_success - none_few_short_success",
    "gain_long_few": "world_model_few_long_progress - none_few_long_progress",
    "gain_avg_few": "world_model_few_avg_progress - none_few_avg_progress",
    "gain_avg_many": "world_model_many_avg_progress - none_many_avg_progress",
}
for _a in ARMS:
    METRICS[f"{_a}_post_seconds"] = f"{_a}: post-training wall seconds (0 without post-training)"
    if _a != "world_model":
        METRICS[f"wm_minus_{_a}_few"] = f"world_model_few_avg_progress - {_a}_few_avg_progress"
    for _r in ("few", "many"):
        _p = f"{_a}_{_r}"
        METRICS[f"{_p}_short_success"] = f"{_a}, {_r} demos: closed-loop success on short tasks (n_eval episodes)"
        METRICS[f"{_p}_long_success"] = f"{_a}, {_r} demos: success on long (3-subtask) tasks"
        METRICS[f"{_p}_long_completed"] = f"{_a}, {_r} demos: mean consecutive subgoals done on long tasks (0-3)"
        METRICS[f"{_p}_short_completed"] = f"{_a}, {_r} demos: mean subgoals done on short tasks (0-1)"
        METRICS[f"{_p}_avg_success"] = f"{_a}, {_r} demos: mean of short and long success"
        METRICS[f"{_p}_long_progress"] = f"{_a}, {_r} demos: long_completed / 3 (share of subgoals done)"
        METRICS[f"{_p}_avg_progress"] = f"{_a}, {_r} demos: mean of short success and long progress"
        METRICS[f"{_p}_ft_steps"] = f"{_a}, {_r} demos: fine-tuning steps until early stopping"
        METRICS[f"{_p}_ft_capped"] = f"{_a}, {_r} demos: 1 if fine-tuning hit the step cap (not converged), else 0"
        METRICS[f"{_p}_val_loss"] = f"{_a}, {_r} demos: best validation action-token loss"
        METRICS[f"{_p}_ft_seconds"] = f"{_a}, {_r} demos: fine-tuning + evaluation wall seconds"
