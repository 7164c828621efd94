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
corpus of
expert videos of *another robot* (different action space); one tiny Llama per arm, post-trained for the same number of
steps with the arm's sequences, then fine-tuned to convergence by one rule for every arm (action-token loss, history
1 + 1 frames, chunk 2; reduce-on-plateau LR and early stopping on the validation demos' action loss, the step cap only
a safety net that the run reports) on few demonstrations (n_few short + n_few long), and evaluated closed-loop on
n_eval short (one pick-place) and n_eval long (three chained) tasks. Arms: none, world model (text + frames) and an
encoder + action-token baseline (a patch-MLP encoder in place of vision tokens, no post-training); at full scale also
action-only (text, image, action of the other robot), text-to-image (text -> final frame) and video prediction
(frames, no text), cut at quick for time. The none and world-model arms are also fine-tuned on many demonstrations
(the testbed check: a converged policy can learn the tasks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim

ARMS = ("none", "action_only", "t2i", "video", "world_model", "encoder")
POST_TASK = {"none": None, "encoder": None, "action_only": "action_only", "t2i": "t2i", "video": "video",
             "world_model": "world_model"}  # fmt: skip


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = field(
        default=("none", "world_model", "encoder"),
        metadata={"help": "arms fine-tuned on few demos (quick: none, world model, encoder for time; full: all six)"},
    )
    many_arms: tuple[str, ...] = field(default=("none", "world_model"), metadata={"help": "arms also on many demos"})
    n_few: int = field(default=10, metadata={"help": "few: demos per task family (paper: 10% of CALVIN)"})
    n_many: int = field(default=60, metadata={"help": "many: demos per family (paper: 50 per LIBERO task)"})
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
        bad = [a for a in (*self.arms, *self.many_arms) if a not in ARMS]
        if bad:
            raise ValueError(f"Cfg.arms/many_arms: unknown arms {bad}; choose from {ARMS}")
        if "world_model" not in self.arms or "none" not in self.arms:
            raise ValueError("Cfg.arms must contain 'none' and 'world_model' (every claim compares them)")
        if min(self.n_few, self.n_many, self.n_val, self.n_post, self.n_eval) < 1:
            raise ValueError("Cfg: n_few, n_many, n_val, n_post, n_eval must be >= 1")
        if not 1 <= self.chunk <= 10:
            raise ValueError(f"Cfg.chunk must be in [1, 10], got {self.chunk!r}")

    # which claims apply at a scale (Claim.when)
    @property
    def has_many(self) -> bool:
        return {"none", "world_model"} <= set(self.many_arms)

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
        arms=("none", "world_model"),
        many_arms=(),
        n_few=3,
        n_val=3,
        n_post=20,
        n_eval=6,
        post_steps=6,
        ft_steps=6,
        batch=8,
        eval_every=3,
        patience=1,
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(seeds=(0, 1, 2, 3, 4), arms=ARMS, n_post=3000, post_steps=2000, ft_steps=6000, n_eval=200),
}
VERSION = 2  # 2: fine-tuning to convergence (reduce-on-plateau + early stopping, cap not hit), batch 32; quick arms
EXPECTED_SECONDS = {"smoke": 30, "quick": 530, "full": 7200}  # quick: 532 s wall, 482 s CPU (busy); full: estimate
ACCEPTS_MODEL = False
MODEL_NOTE = "the method works on any transformers causal LM over the unified vocabulary (UnifiedVLA wraps Llama)"

PAPER = "paper: Emu3-8.5B, LIBERO / CALVIN / SimplerEnv, 622k post-training videos"

CLAIMS = [
    Claim(
        "testbed",
        "The tasks are solvable: the scripted expert solves short and long tasks, and a policy fine-tuned on many "
        "demonstrations succeeds on short tasks far more often than an untrained model (control)",
        checks=(
            Check("expert_short_success", ">", 0.99, margin=0.005, deterministic=True),
            Check("expert_long_success", ">", 0.99, margin=0.005, deterministic=True),
            Check("none_many_short_success", ">", "untrained_short_success", margin=0.3),
        ),
        paper="(testbed check; the paper's benchmarks come with their own demonstrations)",
        when="has_many",
    ),
    Claim(
        "world-model-helps",
        "World-model post-training improves the few-demo policy over no post-training on long tasks (share of the "
        "chain's subgoals done, CALVIN's average length / 3)",
        checks=(Check("world_model_few_long_progress", ">", "none_few_long_progress"),),
        paper=f"LIBERO-Long 17.4 -> 89.2, CALVIN 1.46 -> 4.61 of 5 ({PAPER})",
    ),
    Claim(
        "wm-lower-action-loss",
        "World-model post-training lowers the few-demo policy's validation action-token loss (teacher-forced NLL, "
        "a finer measure than success)",
        checks=(Check("world_model_few_val_loss", "<", "none_few_val_loss"),),
        paper="(our finer measure; the paper reports success only)",
    ),
    Claim(
        "world-model-best",
        "World-model post-training beats text-to-image and text-free video prediction post-training (mean of short "
        "success and long progress, few demos)",
        checks=(Check("wm_minus_t2i_few", ">", 0.0), Check("wm_minus_video_few", ">", 0.0)),
        paper="LIBERO: world model 94.2 > video 78.9 > text-to-image 69.8 > none 48.5",
        when="has_variants",
    ),
    Claim(
        "beats-encoder",
        "The unified token model with world-model post-training beats an encoder + action-token baseline "
        "(pi0-FAST-like: image features in place of vision tokens, no post-training)",
        checks=(Check("wm_minus_encoder_few", ">", 0.0),),
        paper="LIBERO 95.5 vs pi0-FAST 85.5",
        when="has_encoder",
    ),
    Claim(
        "long-gain",
        "The gain of world-model post-training over none is larger on long tasks (progress) than on short ones",
        checks=(Check("gain_long_few", ">", "gain_short_few"),),
        paper="LIBERO-Long +71.8 points vs LIBERO average +45.7",
    ),
    Claim(
        "few-demo-gain",
        "The gain of world-model post-training over none is larger with few demonstrations than with many",
        checks=(Check("gain_avg_few", ">", "gain_avg_many"),),
        paper="CALVIN with 10% of the data: 3.19 vs 0.15 (full data: 4.41 vs 1.46)",
        when="has_many",
    ),
    Claim(
        "action-only-hurts",
        "Action-only post-training on another robot does not help: its few-demo score is below no post-training",
        checks=(Check("action_only_few_avg_progress", "<", "none_few_avg_progress"),),
        paper="LIBERO 43.9 vs 48.5; CALVIN 0.52 vs 1.46",
        when="has_action_only",
    ),
]

METRICS = {
    "codebook_used": "vision codes in the fitted patch VQ (distinct patches, at most the codebook size)",
    "expert_short_success": "scripted expert: success on the short evaluation tasks",
    "expert_long_success": "scripted expert: success on the long evaluation tasks",
    "untrained_short_success": "untrained (random-init) model: success on short tasks (control)",
    "seconds": "wall seconds of the seed",
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
