"""GF-Screen (Wu, Zhuang & Chen, ICLR 2026, https://arxiv.org/abs/2601.19103; code https://github.com/Luffy03/GF-Screen):
glance-and-focus screening of CT volumes. A cheap Glance classifier scores every sub-volume; a Focus segmenter runs
only on the selected ones. Selection is not differentiable, so the Glance model is trained by group-relative RL with
the Focus model's detection as reward (:mod:`.grl`); :mod:`.train` trains both on pos/neg crop groups and
:mod:`.glance_train` trains Glance models to convergence (early stopping) against a fixed Focus; :mod:`.screen`
runs the gated sliding-window inference with MONAI and computes detection / segmentation metrics."""

from .glance_train import tile_windows, train_glance, window_auroc, window_scores
from .grl import (
    GRLConfig,
    balanced_glance_ce,
    detection_reward,
    dice_reward,
    grl_loss,
    group_relative_advantages,
    select_prob,
)
from .models import make_focus, make_glance
from .screen import (
    ScreenConfig,
    WindowCache,
    aggregate,
    glance_scores,
    screen,
    segment_all,
    summarize,
    volume_metrics,
    window_outputs,
)
from .train import (
    CropSampler,
    GlanceSpec,
    TrainConfig,
    focus_loss,
    focus_val_score,
    glance_update,
    hard_background,
    prepare_glance,
    train_focus,
    train_glance_focus,
)

__all__ = [
    "CropSampler",
    "GRLConfig",
    "GlanceSpec",
    "ScreenConfig",
    "TrainConfig",
    "WindowCache",
    "aggregate",
    "balanced_glance_ce",
    "focus_loss",
    "focus_val_score",
    "detection_reward",
    "dice_reward",
    "glance_scores",
    "glance_update",
    "prepare_glance",
    "tile_windows",
    "train_glance",
    "window_auroc",
    "window_scores",
    "hard_background",
    "group_relative_advantages",
    "grl_loss",
    "make_focus",
    "make_glance",
    "screen",
    "segment_all",
    "select_prob",
    "summarize",
    "train_focus",
    "train_glance_focus",
    "volume_metrics",
    "window_outputs",
]
