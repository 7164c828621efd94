"""Reproduction: WinT3R, *Window-Based Streaming Reconstruction with Camera Token Pool* (ICLR 2026,
https://arxiv.org/abs/2509.05296; code https://github.com/LiZizun/WinT3R).

Idea. A streaming reconstruction model processes frames in windows of w = 4 with stride 2 (half overlap), so the
frames of a window attend to each other directly, while a persistent state carries memory between windows; a pool of
all past compact camera tokens is read by the camera head. The paper's ablations: removing the window (frame-by-frame,
state only) or the overlap worsens Chamfer (Table 5); removing the pool strongly worsens the pose metrics (Table 6);
speed stays real-time (17 FPS).

Protocol (`iclr26.vision.wint3r`, world `iclr26.vision.wint3r.world`). Per seed: ray-cast rooms with exact depth and
poses; training sequences of 8 frames, a validation set of 8-frame sequences (early stopping), long test streams of
24 frames in unseen rooms. Four arms of the same tiny model (same parameter count, same initialisation seed): full
(w 4, stride 2, pool), no overlap (stride 4), no window (w 1: state only, CUT3R-like), no pool (camera head sees its
own window). Every arm is trained by the same rule: AdamW, validation loss every `eval_every` steps, best weights kept,
stop after `patience` evaluations without improvement. Metrics on the test streams: Chamfer (mean of accuracy and
completeness) after a Sim(3) Umeyama alignment of the predicted world points, ATE (evo, Sim(3)), RRA/RTA@15/30 and
AUC@30 over all frame pairs, and measured online frames per second. Testbed control: a trivial predictor (constant pose,
the training set's mean point map).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    n_train: int = field(default=300, metadata={"help": "training sequences (dossier: 4,000)"})
    n_val: int = field(default=32, metadata={"help": "validation sequences for early stopping (ours)"})
    n_test: int = field(default=6, metadata={"help": "test streams (dossier: 200)"})
    train_len: int = field(default=8, metadata={"help": "frames per training sequence (dossier: 8)"})
    test_len: int = field(default=24, metadata={"help": "frames per test stream, 'long' (dossier: 48)"})
    texture_mix: float = field(
        default=1.0, metadata={"help": "0 checker per surface .. 1 smooth room-wide colour field (ours)"}
    )
    dim: int = field(default=32, metadata={"help": "token width of the tiny model (ours)"})
    lr: float = field(default=4e-3, metadata={"help": "AdamW learning rate (not captured; ours)"})
    batch: int = field(
        default=4, metadata={"help": "sequences per step (dossier: 8; ours 4 for more steps in the budget)"}
    )
    max_steps: int = field(
        default=8000,
        metadata={
            "help": "safety net only; early stopping decides (ours; VERSION 3 had 1,500, before the rotation "
            "plateau ends at ~3,200 steps)"
        },
    )
    eval_every: int = field(default=50, metadata={"help": "steps between validation evaluations (ours)"})
    patience: int = field(
        default=20,
        metadata={
            "help": "evaluations without improvement before stopping (ours; 20 x 50 = 1,000 steps, longer "
            "than the validation loss's flat stretches on the plateau; VERSION 3 had 4)"
        },
    )

    def __post_init__(self):
        if not self.seeds:
            raise ValueError("Cfg.seeds must not be empty")
        if min(self.n_train, self.n_val, self.n_test) < 1:
            raise ValueError("Cfg: n_train, n_val and n_test must be >= 1")
        if self.train_len < 4 or self.test_len < 4:
            raise ValueError(f"Cfg: train_len and test_len must be >= 4 (one window), got {self.train_len}, "
                             f"{self.test_len}")  # fmt: skip
        if not 0 <= self.texture_mix <= 1:
            raise ValueError(f"Cfg.texture_mix must lie in [0, 1], got {self.texture_mix!r}")
        if min(self.batch, self.max_steps, self.eval_every, self.patience) < 1 or self.lr <= 0:
            raise ValueError("Cfg: batch, max_steps, eval_every, patience >= 1 and lr > 0 are required")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_train=8,
        n_val=2,
        n_test=1,
        train_len=6,
        test_len=8,
        dim=16,
        max_steps=4,
        eval_every=2,
        patience=1,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_train=4000,
        n_val=100,
        n_test=50,
        test_len=48,
        dim=64,
        max_steps=20000,
        eval_every=200,
        patience=6,
    ),
}
VERSION = 4
EXPECTED_SECONDS = {"smoke": 20, "quick": 2700, "full": 40000}  # quick: estimate with shared arm units
ACCEPTS_MODEL = False
MODEL_NOTE = "the method takes a released WinT3R-style state_dict only through `iclr26.vision.wint3r.WinT3R` (tiny)"

ARMS = ("full", "nooverlap", "nowindow", "nopool")
ARM_CFG = {  # arm: WinT3RConfig overrides
    "full": {},
    "nooverlap": {"stride": 4},
    "nowindow": {"window": 1, "stride": 1},
    "nopool": {"pool": False},
}

CLAIMS = [
    Claim(
        "testbed",
        "The testbed can do the task: the full model beats a trivial predictor (constant pose, mean point map) in "
        "Chamfer and ATE by a clear margin",
        checks=(Check("chamfer_gain_trivial", ">", 0.2), Check("ate_full", "<", "ate_trivial")),
        paper="(our check)",
        role="testbed",
    ),
    Claim(
        "pose-learned",
        "The model learns pose here: the full model's AUC@30 beats the trivial predictor (constant pose, forward "
        "drift) by 0.1",
        checks=(Check("auc30_full", ">", "auc30_trivial", margin=0.1),),
        paper="(our check)",
        note="the world points are placed by the predicted poses, so the Chamfer comparisons rest on it too",
        role="testbed",
    ),
    Claim(
        "window",
        "Intra-window attention with half overlap improves reconstruction: Chamfer of the full model below no window "
        "(state only, frame by frame) and below no overlap (stride = w)",
        checks=(Check("chamfer_full", "<", "chamfer_nowindow"), Check("chamfer_full", "<", "chamfer_nooverlap")),
        paper="Table 5: removing the window or the overlap worsens Chamfer on 7-Scenes / NRGBD (full: 0.034 / 0.085)",
        requires=("testbed", "pose-learned"),
    ),
    Claim(
        "pool",
        "The camera token pool improves pose: ATE lower and RRA@15, AUC@30 higher than a camera head that sees only "
        "the current window",
        checks=(
            Check("ate_full", "<", "ate_nopool"),
            Check("rra15_full", ">", "rra15_nopool"),
            Check("auc30_full", ">", "auc30_nopool"),
        ),
        paper="Table 6: removing the pool strongly degrades RRA / RTA / AUC",
        requires=("testbed", "pose-learned"),
    ),
    Claim(
        "speed",
        "At near-equal speed: the full model's measured online throughput is at least 2/3 of the no-window and of the "
        "no-pool arms'",
        checks=(Check("fps_ratio_window", ">", 0.667), Check("fps_ratio_pool", ">", 0.667)),
        paper="17.2 FPS on KITTI, the fastest online method (no per-ablation FPS reported)",
        requires=("testbed", "pose-learned"),
    ),
]

METRICS = {
    "chamfer_trivial": "Chamfer overall of the trivial predictor (constant pose, mean point map), aligned",
    "ate_trivial": "ATE of a constant trajectory: RMS spread of the true camera centres (Sim(3) scale -> 0)",
    "rra15_trivial": "RRA@15 of the constant pose",
    "auc30_trivial": "AUC@30 of the constant pose with a constant forward drift",
    "absrel_trivial": "video depth Abs Rel of the mean point map (per-stream median scaling)",
    "delta1_trivial": "video depth δ < 1.25 of the mean point map",
    "chamfer_gain_trivial": "1 - chamfer_full / chamfer_trivial (relative Chamfer gain over the trivial predictor)",
    "fps_ratio_window": "fps_full / fps_nowindow (measured, interleaved)",
    "fps_ratio_pool": "fps_full / fps_nopool (measured, interleaved)",
    "params": "parameters of the model (equal in every arm)",
}
for _a in ARMS:
    METRICS[f"chamfer_{_a}"] = f"arm {_a}: Chamfer overall (mean of acc and comp) after Sim(3) Umeyama, test streams"
    METRICS[f"acc_{_a}"] = f"arm {_a}: Chamfer accuracy (predicted -> nearest true point)"
    METRICS[f"comp_{_a}"] = f"arm {_a}: Chamfer completeness (true -> nearest predicted point)"
    METRICS[f"ate_{_a}"] = f"arm {_a}: ATE, RMSE of camera centres after Sim(3) alignment (evo)"
    for _m in ("rra15", "rta15", "rra30", "rta30"):
        METRICS[f"{_m}_{_a}"] = f"arm {_a}: {_m[:3].upper()}@{_m[3:]} over all frame pairs"
    METRICS[f"auc30_{_a}"] = f"arm {_a}: AUC@30 of min(rotation, translation-direction) accuracy"
    METRICS[f"absrel_{_a}"] = f"arm {_a}: video depth Abs Rel (local z, per-stream median scaling; paper §4)"
    METRICS[f"delta1_{_a}"] = f"arm {_a}: video depth δ < 1.25"
    METRICS[f"fps_{_a}"] = f"arm {_a}: measured online frames per second (stream, batch 1, one thread, best of 3)"
    METRICS[f"steps_{_a}"] = f"arm {_a}: training steps until early stopping"
    METRICS[f"early_{_a}"] = f"arm {_a}: 1 if patience ended training (converged), 0 if the safety-net step cap did"
    METRICS[f"best_step_{_a}"] = f"arm {_a}: the step whose weights were kept (best validation loss)"
    METRICS[f"val_{_a}"] = f"arm {_a}: best validation loss"
