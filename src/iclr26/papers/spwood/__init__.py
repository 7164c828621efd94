"""Reproduction: SPWOOD, *Sparse Partial Weakly-Supervised Oriented Object Detection* (ICLR 2026,
https://arxiv.org/abs/2602.03634; code https://github.com/VisionXLab/SPWOOD).

Idea. Oriented object detection where only some images are labelled (partial), only some instances inside them
(sparse), and labels may be weak (horizontal boxes or points). SPWOOD trains a rotated FCOS in a mean-teacher loop
with (i) a sparse focal loss that stops pushing unlabelled objects to background at full strength, (ii) orientation
self-supervision (rotate / flip consistency) and spatial-layout losses so HBoxes and points supervise rotated boxes,
(iii) multi-level pseudo-label filtering: a two-component GMM per FPN level sets that level's confidence threshold,
and (iv) a category-balanced sparse partition of the labels. Paper (DOTA-v1.0, FCOS R-50, mAP50): SPWOOD 48.5 /
57.8 / 60.3 at three budgets vs PWOOD 38.0 / 51.9 / 55.2 and MCL (semi) 31.7 / 44.5 / 47.8; HBox 45.5, mixed 42.4.

Protocol (DOTA, ResNet-50 and 180k GPU iterations are out of reach: `iclr26.vision.spwood`, generated scenes of
`iclr26.vision.spwood.world`). Per seed: a training world (n_train scenes, 64 x 64, three categories of oriented objects
plus distractors), a validation world (early stopping, threshold tuning) and a test world. Two label budgets (share of
images labelled x share of instances per category kept, the overall-sparse partition). Arms, one tiny rotated FCOS
each: supervised only (plain focal, EMA weights); "semi" = mean teacher with a fixed confidence threshold (MCL-like;
the threshold tuned on validation: best F1 of the burn-in model's thresholded confidences against the validation
ground truth); "PWOOD-like" = mean teacher, plain focal, one GMM threshold over all levels; SPWOOD = sparse focal +
per-level GMM; ablations at budget 1: SPWOOD with a global GMM, SPWOOD with plain focal; label types at budget 1:
SPWOOD with HBox labels, with mixed RBox:HBox:point = 1:1:1, and HBox without orientation self-supervision (control);
the fully supervised detector (all images, all instances, RBox) is the upper bound and the testbed check, an untrained
detector its control. Tuning rule, the same for every arm: the paper's hyper-parameters; a supervised burn-in trained
to convergence (validation rotated mAP@0.5 of the EMA weights, patience, best checkpoint kept; cached and shared by
arms with the same labels and supervised loss; the supervised-only arm *is* the plain-focal burn-in), then the
mean-teacher arms self-train from it until validation mAP stops rising, keeping the best teacher. Metric: rotated
mAP@0.5 (VOC all-point AP, as DOTA) on the test world.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)  # 5 pre-declared (3 until the run took 469 s)
    n_train: int = field(default=300, metadata={"help": "training scenes (dossier: 3,000 images 128 px; ours)"})
    n_val: int = field(default=30, metadata={"help": "validation scenes, early stopping and tuning (ours)"})
    n_test: int = field(default=100, metadata={"help": "test scenes (dossier: 300)"})
    budget1: tuple[float, float] = field(
        default=(0.2, 0.25), metadata={"help": "(image, instance) ratio (paper 10%,10%)"}
    )
    budget2: tuple[float, float] = field(
        default=(0.3, 0.5), metadata={"help": "(image, instance) ratio (paper 20%,20%)"}
    )
    burn_in: int = field(
        default=1500, metadata={"help": "cap of the supervised burn-in, early-stopped on validation (paper 12.8k)"}
    )
    max_extra: int = field(default=1000, metadata={"help": "cap of the self-training steps; early stopping decides"})
    full_steps: int = field(default=1500, metadata={"help": "cap of the fully supervised detector's steps (ours)"})
    eval_every: int = field(default=50, metadata={"help": "validation mAP every n steps (ours)"})
    patience: int = field(default=3, metadata={"help": "evaluations without gain before stopping (ours)"})
    batch: int = field(default=8, metadata={"help": "labelled and unlabelled images per step (paper 4+4 per GPU)"})
    width: int = field(default=16, metadata={"help": "detector channels (paper: ResNet-50 + FPN 256)"})
    label_types: bool = field(default=True, metadata={"help": "run the HBox / mixed / no-orientation arms"})
    ablate_gmm: bool = field(default=True, metadata={"help": "run the global-GMM ablation of SPWOOD"})
    ablate_focal: bool = field(default=True, metadata={"help": "run the plain-focal ablation of SPWOOD"})

    def __post_init__(self):
        for b in (self.budget1, self.budget2):
            if len(b) != 2 or not all(0 < v <= 1 for v in b):
                raise ValueError(f"Cfg budgets must be (image ratio, instance ratio) in (0, 1], got {b!r}")
        if min(self.n_train, self.n_val, self.n_test) < 4:
            raise ValueError("Cfg: n_train, n_val and n_test must be >= 4")
        if min(self.burn_in, self.max_extra, self.full_steps, self.eval_every, self.patience, self.batch) < 1:
            raise ValueError("Cfg: burn_in, max_extra, full_steps, eval_every, patience and batch must be >= 1")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_train=24,
        n_val=6,
        n_test=6,
        burn_in=4,
        max_extra=4,
        full_steps=6,
        eval_every=2,
        patience=1,
        batch=4,
        ablate_gmm=False,
        ablate_focal=False,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_train=1000,
        n_val=60,
        n_test=300,
        burn_in=3000,
        max_extra=1500,
        full_steps=3000,
        eval_every=100,
        patience=3,
        width=32,
    ),
}
# 2: max_extra 200 -> 400 (every arm of version 1 ran into the step cap); 3: every arm trained to convergence by one
# rule (burn-in early-stopped on validation, cached; self-training from the converged burn-in, early-stopped);
# pseudo-labels on unlabelled images only (as the official SparseDataset); the plain-focal ablation on at quick
VERSION = 3
EXPECTED_SECONDS = {"smoke": 15, "quick": 720, "full": 7200}  # quick v3, 5 seeds, 2 jobs: 722 s empty, 371 s cached
ACCEPTS_MODEL = False
MODEL_NOTE = "the detector is trained here; plug `iclr26.vision.spwood` losses/filters into your own rotated FCOS"

PAPER = "DOTA-v1.0, rotated FCOS R-50, mAP50, budgets 10%/20%/30% images"

CLAIMS = [
    Claim(
        "testbed",
        "The testbed can do the task: the fully supervised detector reaches a rotated mAP@0.5 of at least 0.5 on the "
        "test world, far above the untrained detector",
        checks=(Check("map_full", ">", 0.5), Check("map_full", ">", "map_untrained", margin=0.3)),
        paper="(our check; the paper's fully supervised R-50 number was not recovered)",
        role="testbed",
    ),
    Claim(
        "label-headroom-b1",
        "The sparse labels leave room at budget 1: all labels (the oracle of the pseudo-labels) beat supervised-only "
        "training on the budget's labels by more than 0.05 mAP",
        checks=(Check("map_full", ">", "map_sup_b1", margin=0.05),),
        role="headroom",
    ),
    Claim(
        "label-headroom-b2",
        "The same at budget 2: all labels beat supervised-only training on the budget's labels by more than 0.05 mAP",
        checks=(Check("map_full", ">", "map_sup_b2", margin=0.05),),
        role="headroom",
    ),
    Claim(
        "pseudo-helps-b1",
        "Pseudo-labels can add to a converged burn-in here (budget 1): the plain mean teacher with a fixed threshold "
        "(the simplest pseudo-labeller) ends more than 0.02 mAP above the burn-in it started from",
        checks=(Check("map_semi_b1", ">", "map0_semi_b1", margin=0.02),),
        note="without it every arm's order is that of its burn-in, within the run-to-run (thread-count) noise",
        role="headroom",
    ),
    Claim(
        "pseudo-helps-b2",
        "The same at budget 2: the fixed-threshold mean teacher ends more than 0.02 mAP above its burn-in",
        checks=(Check("map_semi_b2", ">", "map0_semi_b2", margin=0.02),),
        role="headroom",
    ),
    Claim(
        "angle-headroom",
        "The testbed can learn angles and rewards them: with RBox labels the ships' median angle error is more than "
        "10 degrees below that of HBox labels without orientation self-supervision (where the angle is undetermined), "
        "and the mAP more than 0.02 above it",
        checks=(
            Check("angerr_spwood_b1", "<", "angerr_spwood_hbox_noss", margin=10.0),
            Check("map_spwood_b1", ">", "map_spwood_hbox_noss", margin=0.02),
        ),
        when="label_types",
        role="headroom",
    ),
    Claim(
        "hbox-angles",
        "The weak-label angle mechanism works here: with HBox labels, orientation self-supervision (L_Ang) lowers the "
        "ships' median angle error by more than 5 degrees against the same run without it",
        checks=(Check("angerr_spwood_hbox", "<", "angerr_spwood_hbox_noss", margin=5.0),),
        note="otherwise the RBox > HBox gap measures an angle the HBox arm never learns, not the cost of weak labels",
        when="label_types",
        role="non-degenerate",
        requires=("angle-headroom",),
    ),
    Claim(
        "order-budget1",
        "At the smaller budget SPWOOD > PWOOD-like > semi-supervised (fixed threshold) > supervised only",
        checks=(
            Check("map_spwood_b1", ">", "map_pwood_b1"),
            Check("map_pwood_b1", ">", "map_semi_b1"),
            Check("map_semi_b1", ">", "map_sup_b1"),
        ),
        paper=f"48.5 > 38.0 (PWOOD) > 31.7 (MCL, semi) at the first budget ({PAPER})",
        requires=("testbed", "label-headroom-b1", "pseudo-helps-b1"),
    ),
    Claim(
        "order-budget2",
        "At the larger budget SPWOOD > PWOOD-like > semi-supervised (fixed threshold) > supervised only",
        checks=(
            Check("map_spwood_b2", ">", "map_pwood_b2"),
            Check("map_pwood_b2", ">", "map_semi_b2"),
            Check("map_semi_b2", ">", "map_sup_b2"),
        ),
        paper=f"57.8 > 51.9 (PWOOD) > 44.5 (MCL) at the second budget ({PAPER})",
        requires=("testbed", "label-headroom-b2", "pseudo-helps-b2"),
    ),
    Claim(
        "label-types",
        "Cheaper labels cost little: SPWOOD with RBox > with HBox > with mixed RBox:HBox:point 1:1:1 labels (budget 1)",
        checks=(Check("map_spwood_b1", ">", "map_spwood_hbox"), Check("map_spwood_hbox", ">", "map_spwood_mixed")),
        paper=f"RBox 48.5 > HBox 45.5 > mixed 42.4 ({PAPER})",
        when="label_types",
        requires=("testbed", "hbox-angles"),
    ),
    Claim(
        "orientation-ss",
        "Orientation self-supervision is what lets HBox labels train angles: SPWOOD-HBox beats the same run without "
        "it (control) in mAP and in the ships' angle error",
        checks=(
            Check("map_spwood_hbox", ">", "map_spwood_hbox_noss", margin=0.02),
            Check("angerr_spwood_hbox", "<", "angerr_spwood_hbox_noss"),
        ),
        paper="w/o orientation learning ~43 vs 48.5 (ablation, budget 1; approximate, third-party reading)",
        when="label_types",
        requires=("testbed", "angle-headroom"),
    ),
    Claim(
        "mpf",
        "Multi-level pseudo-label filtering beats one global GMM threshold (SPWOOD with a global GMM, budget 1)",
        checks=(Check("map_spwood_b1", ">", "map_spwood_global_b1"),),
        paper="MPF ablation: per-level GMM > class-agnostic global threshold (numbers not recovered)",
        when="ablate_gmm",
        requires=("testbed", "label-headroom-b1", "pseudo-helps-b1"),
    ),
    Claim(
        "sparse-focal",
        "The sparse focal loss beats plain focal loss inside SPWOOD (budget 1)",
        checks=(Check("map_spwood_b1", ">", "map_plainfocal_b1"),),
        paper="sparse-annotation learning ablation (numbers not recovered)",
        when="ablate_focal",
        requires=("testbed", "label-headroom-b1", "pseudo-helps-b1"),
    ),
]

METRICS = {
    "map_full": "test rotated mAP@0.5 of the fully supervised detector (all images, all instances, RBox)",
    "map_untrained": "test mAP of the untrained (randomly initialised) detector (testbed reference)",
    "map_spwood_global_b1": "SPWOOD with one GMM over all levels instead of per level, budget 1",
    "map_plainfocal_b1": "SPWOOD with plain focal loss instead of the sparse focal loss, budget 1",
    "map_spwood_hbox": "SPWOOD with HBox labels (budget 1)",
    "map_spwood_mixed": "SPWOOD with mixed RBox:HBox:point = 1:1:1 labels (budget 1)",
    "map_spwood_hbox_noss": "SPWOOD with HBox labels and no orientation self-supervision (control), budget 1",
    "angerr_full": "median |angle error| (degrees) of ship detections (nearest centre < 4 px), fully supervised",
    "angerr_spwood_b1": "same, SPWOOD with RBox labels, budget 1",
    "angerr_spwood_hbox": "same, SPWOOD with HBox labels",
    "angerr_spwood_hbox_noss": "same, SPWOOD with HBox labels without orientation self-supervision (control)",
    "angerr_spwood_mixed": "same, SPWOOD with mixed labels",
    "tau_semi_b1": "fixed threshold of the semi baseline tuned on validation, budget 1",
    "tau_semi_b2": "same, budget 2",
    "n_lab_inst_b1": "labelled instances at budget 1",
    "n_lab_inst_b2": "labelled instances at budget 2",
}
for _b in ("b1", "b2"):
    for _a, _d in (("sup", "supervised only"), ("semi", "mean teacher, fixed threshold"),
                   ("pwood", "PWOOD-like: mean teacher, plain focal, global GMM"),
                   ("spwood", "SPWOOD: sparse focal + per-level GMM")):  # fmt: skip
        METRICS[f"map_{_a}_{_b}"] = f"test rotated mAP@0.5, {_d}, budget {_b[1]}"
METRICS.update({
    "steps_<arm>": "self-training steps run before early stopping stopped it (0 for supervised arms)",
    "burnin_steps_<arm>": "steps of the arm's supervised burn-in before early stopping stopped it",
    "gain_val_<arm>": "validation mAP of the kept teacher minus that of its burn-in starting point",
    "map0_<arm>": "test mAP of the arm's burn-in starting point (the teacher it self-trains from)",
    "map0_semi_b1": "test mAP of the semi baseline's burn-in starting point, budget 1 (the pseudo-labels' gate)",
    "map0_semi_b2": "same, budget 2",
})  # fmt: skip
