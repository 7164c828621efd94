"""WinT3R: window-based streaming reconstruction with a camera token pool (Li et al., ICLR 2026,
https://arxiv.org/abs/2509.05296; official code https://github.com/LiZizun/WinT3R).

Idea. A streaming (online) feed-forward model predicts a point map and a camera pose per frame. Frames are processed in
windows of w = 4 with stride 2 (half overlap): inside a window all frames' tokens attend to each other directly, and a
persistent state (CUT3R-style register tokens) carries memory from window to window. Each frame's camera is summarised
by one compact camera token; all past camera tokens are kept in a pool, which the camera head reads (block-causal) when
predicting the current window's poses. Losses: a confidence-weighted, scale-normalised point loss and an L1 loss on the
relative poses of every frame pair (no world frame needed).

Modules: `masks` (window schedule, block-banded frame mask, block-causal pool mask, `CameraTokenPool`), `model`
(`WinT3R`, `WinT3RConfig`, `merge_windows`), `losses` (Eqs. 9 and 12), `geometry` (pose encodings, Umeyama, Chamfer,
ATE via evo, RRA/RTA/AUC), `train` (early stopping, reconstruction, evaluation, the trivial baseline, FPS).
"""

from .geometry import ate, chamfer, enc_to_mat, mat_to_enc, relative_poses, rra_rta, to_first_frame, umeyama
from .losses import camera_loss, point_loss, relative_encodings
from .masks import CameraTokenPool, frame_mask, pool_mask, window_schedule
from .model import WinT3R, WinT3RConfig, merge_windows
from .train import TrainConfig, evaluate, frames_per_second, reconstruct, train, trivial_baseline

__all__ = [
    "CameraTokenPool",
    "TrainConfig",
    "WinT3R",
    "WinT3RConfig",
    "ate",
    "camera_loss",
    "chamfer",
    "enc_to_mat",
    "evaluate",
    "frame_mask",
    "frames_per_second",
    "mat_to_enc",
    "merge_windows",
    "point_loss",
    "pool_mask",
    "reconstruct",
    "relative_encodings",
    "relative_poses",
    "rra_rta",
    "to_first_frame",
    "train",
    "trivial_baseline",
    "umeyama",
    "window_schedule",
]
