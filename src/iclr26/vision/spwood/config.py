"""SPWOOD hyper-parameters (one dataclass, TRL style; each field says where its value comes from)."""

from __future__ import annotations

from dataclasses import dataclass, field

FILTERS = ("level", "global", "fixed", "none")


@dataclass(frozen=True)
class SPWOODConfig:
    # sparse focal loss (SOS-Student)
    sparse_focal: bool = field(default=True, metadata={"help": "sparse focal loss; False = plain focal (baselines)"})
    gamma: float = field(default=2.0, metadata={"help": "focal gamma (code: 2.0)"})
    alpha: float = field(default=0.25, metadata={"help": "focal alpha (code: 0.25)"})
    thresh: float = field(
        default=1.0, metadata={"help": "hard negative if p > 1 - thresh (code: 1.0 = every negative)"}
    )
    hard_negative_weight: float = field(default=0.4, metadata={"help": "omega for hard negatives (code: 0.4)"})
    # weak labels (SOS-Student)
    orientation_ss: bool = field(default=True, metadata={"help": "orientation self-supervision for HBox/point labels"})
    w_ss: float = field(default=1.0, metadata={"help": "weight of L_Ang (code loss_ss 1.0; paper text 0.2)"})
    flip_prob: float = field(default=0.5, metadata={"help": "P(flipped view) in L_Ang (code ss_prob; our choice)"})
    w_overlap: float = field(default=10.0, metadata={"help": "Gaussian overlap loss weight (paper/code: 10)"})
    w_layout: float = field(default=5.0, metadata={"help": "Voronoi-watershed size loss weight (paper/code: 5)"})
    w_angle: float = field(default=0.2, metadata={"help": "PSC angle loss weight for RBox labels (not stated; ours)"})
    # mean teacher + pseudo-label filtering (MPF)
    mean_teacher: bool = field(default=True, metadata={"help": "teacher-student training; False = supervised only"})
    filter: str = field(default="level", metadata={"help": "'level' (MPF), 'global' (PWOOD-like), 'fixed', 'none'"})
    fixed_thr: float = field(default=0.5, metadata={"help": "threshold of the 'fixed' filter (tuned on validation)"})
    w_unsup: float = field(default=1.0, metadata={"help": "unsupervised loss weight (code unsup_weight: 1.0)"})
    ema: float = field(default=0.99, metadata={"help": "EMA momentum (code 0.9996 over 180k it; ours, short runs)"})
    burn_in: int = field(
        default=1500, metadata={"help": "cap of the supervised burn-in; early stopping decides (code 12,800 of 180k)"}
    )
    ramp: int = field(default=50, metadata={"help": "steps of linear unsup-weight ramp (code weight_suppress linear)"})
    # optimisation (ours: a tiny detector from scratch; the paper's AdamW 5e-5 is for a pretrained ResNet-50)
    lr: float = field(default=5e-3, metadata={"help": "AdamW learning rate (code 5e-5 with pretrained R-50; ours)"})
    weight_decay: float = field(default=0.05, metadata={"help": "AdamW weight decay (code: 0.05)"})
    grad_clip: float = field(default=35.0, metadata={"help": "gradient-norm clip (code: 35)"})
    batch: int = field(default=8, metadata={"help": "labelled images per step (code 2 x 4 GPUs; ours)"})
    unsup_batch: int = field(default=8, metadata={"help": "unlabelled images per step (ours)"})
    max_steps: int = field(default=600, metadata={"help": "cap of the self-training steps after the burn-in (ours)"})
    eval_every: int = field(default=50, metadata={"help": "validation mAP every n steps (ours)"})
    patience: int = field(default=3, metadata={"help": "stop after n evaluations without improvement (ours)"})
    width: int = field(default=32, metadata={"help": "detector channels (ours; the paper uses ResNet-50 + FPN)"})
    # inference (code test_cfg)
    score_thr: float = field(default=0.05, metadata={"help": "test score threshold (code: 0.05)"})
    nms_iou: float = field(default=0.1, metadata={"help": "rotated NMS IoU (code: 0.1)"})

    def __post_init__(self):
        if self.filter not in FILTERS:
            raise ValueError(f"SPWOODConfig.filter must be one of {FILTERS}, got {self.filter!r}")
        for name in ("thresh", "hard_negative_weight", "alpha", "flip_prob", "fixed_thr", "score_thr", "nms_iou"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise ValueError(f"SPWOODConfig.{name} must lie in [0, 1], got {v!r}")
        if not 0 <= self.ema < 1:
            raise ValueError(f"SPWOODConfig.ema must lie in [0, 1), got {self.ema!r}")
        for name in ("batch", "unsup_batch", "burn_in", "max_steps", "eval_every", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"SPWOODConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.lr <= 0 or self.gamma < 0:
            raise ValueError("SPWOODConfig: lr > 0 and gamma >= 0 are required")
