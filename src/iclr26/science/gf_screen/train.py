"""Joint training of the Focus segmenter and Glance policies on pos/neg sub-volume groups (official `GF_RL_trainer`).

One step draws ``volumes_per_step`` CTs and ``crops_per_volume`` sub-volumes of each with MONAI's
``RandCropByPosNegLabeld`` (pos = neg = 1, background centres inside the body), then the paper's augmentation (flips
p = 0.2 per axis, rot90 p = 0.2, intensity shift ±0.1 p = 0.1). The group of N = volumes × crops sub-volumes is
segmented by the Focus model (MONAI ``DiceCELoss``) and scored by every Glance model; each Glance model is trained
either by GF-Screen's group-relative RL with the Focus output as reward (plus α·balanced CE), or, as the supervised
baseline, by the balanced CE alone. The Focus loss does not depend on the Glance models (the reward is detached), so
training several Glance models beside one Focus model gives each the same Focus it would get when trained alone.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from .grl import GRLConfig, balanced_glance_ce, detection_reward, dice_reward, grl_loss


@dataclass(frozen=True)
class TrainConfig:
    steps: int = field(default=400, metadata={"help": "optimiser steps (paper: 500 epochs of the corpus)"})
    volumes_per_step: int = field(default=4, metadata={"help": "CTs per step (code batch_size: 4)"})
    crops_per_volume: int = field(default=4, metadata={"help": "crops per CT (code sw_batch_size: 4); N = 16"})
    roi: tuple[int, int, int] = field(default=(16, 16, 16), metadata={"help": "crop size (paper: 96×96×64)"})
    fg_class_weight: float = field(default=1.0, metadata={"help": "CE weight of the lesion class (code: 1, none)"})
    fg_class_weight_final: float | None = field(
        default=None,
        metadata={"help": "anneal the lesion-class CE weight geometrically from fg_class_weight at the first step to "
                  "this at the last (None: constant; ours, so that p_fg drops on organ borders late in training)"},
    )  # fmt: skip
    dice_weight: float = field(
        default=1.0, metadata={"help": "weight λ of the Dice term of the Focus loss λ·Dice + CE (code: 1; 0 = CE only)"}
    )
    batch_dice: bool = field(default=False, metadata={"help": "Dice over the whole group (code: per sample)"})
    dice_start: float = field(
        default=0.0,
        metadata={"help": "share of the steps trained by the (weighted) CE alone before the Dice term is switched on "
                  "(code: 0; ours, a CE warm-up)"},
    )  # fmt: skip
    lr: float = field(default=3e-4, metadata={"help": "AdamW learning rate of both models (code: 3e-4)"})
    focus_lr: float | None = field(default=None, metadata={"help": "Focus learning rate if not `lr` (code: = lr)"})
    weight_decay: float = field(default=1e-5, metadata={"help": "AdamW weight decay (code reg_weight: 1e-5)"})
    warmup_epochs: float = field(default=1.0, metadata={"help": "linear warm-up, then cosine (code: 1 epoch)"})
    refresh_epochs: float = field(default=1.0, metadata={"help": "epochs between π_old refreshes (code: 1)"})
    flip_p: float = field(default=0.2, metadata={"help": "RandFlipd probability per axis (code: 0.2)"})
    rot_p: float = field(default=0.2, metadata={"help": "RandRotate90d probability (code: 0.2)"})
    shift_p: float = field(default=0.1, metadata={"help": "RandShiftIntensityd(0.1) probability (code: 0.1)"})
    context: float = field(
        default=1.0,
        metadata={"help": "pos/neg crops of context × roi, then a random roi crop inside (1 = the code's centred "
                  "crops; > 1 moves lesions off the crop centre, which sliding-window inference needs)"},
    )  # fmt: skip
    hard_neg: float = field(
        default=0.0,
        metadata={"help": "share of the volume draws whose background crop centres come from hard background voxels "
                  "(strongest image edges: organ borders, cysts, vessels; see CropSampler) instead of the whole "
                  "body (code: 0; ours, hard-negative crops)"},
    )  # fmt: skip
    hard_quantile: float = field(
        default=0.9, metadata={"help": "hard background = gradient magnitude above this quantile of the body (ours)"}
    )
    uniform_neg: float = field(
        default=0.0,
        metadata={"help": "share of the other (not hard-negative) volume draws whose background crop centres are "
                  "uniform over the whole volume, air included, like the paper's random crops of healthy CTs "
                  "(code: 0, centres inside the body; ours, so that a Glance sees every kind of window it scores)"},
    )  # fmt: skip

    def fg_weight_at(self, progress: float) -> float:
        """The lesion-class CE weight at training progress ∈ [0, 1] (geometric anneal, or constant)."""
        if self.fg_class_weight_final is None:
            return self.fg_class_weight
        p = min(max(float(progress), 0.0), 1.0)
        return float(self.fg_class_weight ** (1 - p) * self.fg_class_weight_final**p)

    def __post_init__(self):
        if min(self.steps, self.volumes_per_step, self.crops_per_volume) < 1:
            raise ValueError(f"TrainConfig: steps, volumes_per_step, crops_per_volume must be >= 1, got {self!r}")
        if self.volumes_per_step * self.crops_per_volume < 2:
            raise ValueError("TrainConfig: a group needs >= 2 sub-volumes (volumes_per_step * crops_per_volume)")
        if self.fg_class_weight <= 0:
            raise ValueError(f"TrainConfig.fg_class_weight must be > 0, got {self.fg_class_weight!r}")
        if self.fg_class_weight_final is not None and self.fg_class_weight_final <= 0:
            raise ValueError(
                f"TrainConfig.fg_class_weight_final must be > 0 or None, got {self.fg_class_weight_final!r}"
            )
        if not 0 <= self.dice_start <= 1:
            raise ValueError(f"TrainConfig.dice_start must lie in [0, 1], got {self.dice_start!r}")
        if not 0 <= self.uniform_neg <= 1:
            raise ValueError(f"TrainConfig.uniform_neg must lie in [0, 1], got {self.uniform_neg!r}")
        if not 0 <= self.hard_neg <= 1 or not 0 < self.hard_quantile < 1:
            raise ValueError(f"TrainConfig: hard_neg in [0, 1] and hard_quantile in (0, 1), got {self.hard_neg!r}, "
                             f"{self.hard_quantile!r}")  # fmt: skip
        if self.dice_weight < 0:
            raise ValueError(f"TrainConfig.dice_weight must be >= 0, got {self.dice_weight!r}")
        if self.context < 1:
            raise ValueError(f"TrainConfig.context must be >= 1, got {self.context!r}")
        if self.focus_lr is not None and self.focus_lr <= 0:
            raise ValueError(f"TrainConfig.focus_lr must be > 0 or None, got {self.focus_lr!r}")
        if self.lr <= 0 or self.weight_decay < 0 or self.refresh_epochs <= 0 or self.warmup_epochs < 0:
            raise ValueError(f"TrainConfig: lr, refresh_epochs > 0 and weight_decay, warmup_epochs >= 0, got {self!r}")


def hard_background(image: np.ndarray, label: np.ndarray, quantile: float = 0.9) -> np.ndarray:
    """Flat indices of the *hard* background voxels of one volume [1, X, Y, Z]: voxels inside the body (image > 0,
    eroded by 3 voxels so that the skin / air edge does not dominate) outside the lesions whose Gaussian gradient
    magnitude (σ = 1 voxel) lies above ``quantile`` of the inner body's. These are organ borders, the vertebrae,
    sharp-edged cysts and vessel walls, where a lesion-weighted loss puts its false positives; the rule uses the image
    only (no knowledge of the world's distractors), so it applies to real CTs as well."""
    from scipy import ndimage

    img = np.asarray(image, dtype=np.float32)[0]
    body = ndimage.binary_erosion(img > 0, iterations=3)
    if not body.any():
        return np.zeros(0, dtype=np.int64)
    g = ndimage.gaussian_gradient_magnitude(img, 1.0)
    hard = body & (g > np.quantile(g[body], quantile)) & (np.asarray(label)[0] == 0)
    return np.flatnonzero(hard.ravel())


class CropSampler:
    """Groups of pos/neg crops from a fixed set of volumes, with the paper's MONAI augmentation."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, cfg: TrainConfig, seed: int):
        from monai.transforms import (
            Compose,
            RandCropByPosNegLabeld,
            RandFlipd,
            RandRotate90d,
            RandShiftIntensityd,
            RandSpatialCropd,
        )
        from monai.transforms.utils import map_binary_to_indices

        if images.ndim != 5 or images.shape != labels.shape:
            raise ValueError(f"images and labels must both be [n, 1, X, Y, Z], got {images.shape}, {labels.shape}")
        self.images, self.labels, self.cfg = images, labels, cfg
        self.rng = np.random.default_rng(seed)
        # foreground / background centre indices once per volume (background: label 0 and image > 0, i.e. the body)
        self.idx = [map_binary_to_indices(lab, img, 0.0) for img, lab in zip(images, labels)]
        self.hard = [hard_background(img, lab, cfg.hard_quantile) for img, lab in zip(images, labels)] if (
            cfg.hard_neg > 0) else None  # fmt: skip
        keys = ["image", "label"]
        outer = tuple(min(int(round(cfg.context * r)), n) for r, n in zip(cfg.roi, images.shape[2:]))
        if any(r > n for r, n in zip(cfg.roi, images.shape[2:])):
            raise ValueError(f"TrainConfig.roi {cfg.roi} is larger than the volumes {images.shape[2:]}")
        self.tf = Compose([
            RandCropByPosNegLabeld(keys, "label", outer, pos=1, neg=1, num_samples=cfg.crops_per_volume,
                                   fg_indices_key="fg", bg_indices_key="bg", allow_smaller=False),
            RandSpatialCropd(keys, cfg.roi, random_size=False),  # the lesion anywhere in the crop, not only centred
            *[RandFlipd(keys, prob=cfg.flip_p, spatial_axis=a) for a in range(3)],
            RandRotate90d(keys, prob=cfg.rot_p, max_k=3),
            RandShiftIntensityd("image", offsets=0.1, prob=cfg.shift_p),
        ])  # fmt: skip
        self.tf.set_random_state(seed=seed)

    def sample(self) -> tuple[torch.Tensor, torch.Tensor]:
        crops, labs = [], []
        for i in self.rng.choice(len(self.images), self.cfg.volumes_per_step, replace=False):
            fg, bg = self.idx[i]
            if self.hard is not None and len(self.hard[i]) and self.rng.random() < self.cfg.hard_neg:
                bg = self.hard[i]  # hard-negative draw: background crops centred on strong edges
            elif self.cfg.uniform_neg > 0 and self.rng.random() < self.cfg.uniform_neg:
                # random-crop draw: background centres anywhere in the volume, air included
                bg = np.flatnonzero(np.asarray(self.labels[i]).ravel() == 0)
            with warnings.catch_warnings():  # lesion-free volumes: MONAI warns and samples background only
                warnings.simplefilter("ignore")
                outs = self.tf({"image": self.images[i], "label": self.labels[i], "fg": fg, "bg": bg})
            crops += [torch.as_tensor(np.asarray(o["image"])) for o in outs]
            labs += [torch.as_tensor(np.asarray(o["label"])) for o in outs]
        return torch.stack(crops).float(), torch.stack(labs).float()


@dataclass
class GlanceSpec:
    """A Glance model and how it is trained: ``grl`` a GRLConfig (GF-Screen), or None (balanced CE only)."""

    model: torch.nn.Module
    grl: GRLConfig | None = None
    ref: torch.nn.Module | None = None
    opt: torch.optim.Optimizer | None = None
    history: list = field(default_factory=list)


def focus_loss(cfg: TrainConfig, progress: float = 0.0):
    """The Focus loss ``λ·Dice + CE(weight = [1, w_fg])`` on logits [N, 2, ...] and labels [N, 1, ...] at training
    progress ∈ [0, 1] (the share of the steps done).

    With λ = 1 and w_fg = 1 it is MONAI's ``DiceCELoss(to_onehot_y=True, softmax=True)``, the official code's loss
    (per-sample soft Dice including the background channel, plus unweighted CE). Per-sample Dice on a lesion-free crop
    is minimised only by p_fg → 0 everywhere, which at CPU scale (few steps, most crops empty) keeps the lesion
    probability below 0.5, so argmax never fires and the binary reward is always 0; ``dice_weight=0`` with a
    lesion-class weight in the CE is the reproduction's fix (see docs, "Deviations"). ``cfg.fg_weight_at(progress)``
    anneals the class weight, and the Dice term is off while ``progress < cfg.dice_start`` (a CE warm-up)."""
    from monai.losses import DiceCELoss

    w_fg = cfg.fg_weight_at(progress)
    lam = cfg.dice_weight if progress >= cfg.dice_start else 0.0
    dice_ce = DiceCELoss(to_onehot_y=True, softmax=True, batch=cfg.batch_dice, lambda_dice=cfg.dice_weight)
    if w_fg == 1.0 and lam == cfg.dice_weight:
        return dice_ce
    w = torch.tensor([1.0, w_fg])

    def loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ce = torch.nn.functional.cross_entropy(out, y[:, 0].long(), weight=w)  # weighted mean over voxels
        return ce if lam == 0 else lam * dice_ce.dice(out, y) + ce

    return loss


def prepare_glance(spec: GlanceSpec, cfg: TrainConfig) -> None:
    """Give a Glance model its AdamW optimiser (constant lr, as the code's Glance optimiser) and, for GRL, the frozen
    reference policy π_old."""
    spec.opt = torch.optim.AdamW(spec.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    if spec.grl is not None:
        spec.ref = copy.deepcopy(spec.model).eval().requires_grad_(False)


def glance_update(spec: GlanceSpec, crops, has, seg, labs, rewards: dict, refresh_now: bool = False) -> float:
    """One optimiser step of one Glance model on a group: L_GRL + α·L_CE (GF-Screen) or the balanced CE alone
    (``spec.grl is None``). ``rewards`` caches the group's rewards by name (the Dice reward is computed on first use);
    ``refresh_now`` copies π_θ into π_old after the step (once per epoch in the code)."""
    spec.model.train()
    logits = spec.model(crops)
    ce = balanced_glance_ce(logits, has)
    if spec.grl is None:
        total = ce
    else:
        if spec.grl.reward not in rewards:
            rewards[spec.grl.reward] = dice_reward(seg, labs)
        with torch.no_grad():
            old = spec.ref(crops)
        l_grl, _ = grl_loss(logits, old, rewards[spec.grl.reward], spec.grl)
        total = l_grl + spec.grl.ce_weight * ce  # L_GRL + α·L_CE
    spec.opt.zero_grad()
    total.backward()
    spec.opt.step()
    spec.history.append(float(total.detach()))
    if spec.ref is not None and refresh_now:  # π_old ← π_θ once per epoch
        spec.ref.load_state_dict(spec.model.state_dict())
    return float(total.detach())


def train_glance_focus(
    images: np.ndarray,
    labels: np.ndarray,
    focus: torch.nn.Module,
    glances: dict[str, GlanceSpec],
    cfg: TrainConfig = TrainConfig(),
    seed: int = 0,
    progress: bool = False,
    update_focus: bool = True,
) -> dict[str, list]:
    """Train the Focus model and every Glance model on the same stream of groups; returns per-step histories.

    ``update_focus=False`` keeps a (pre-trained, see :func:`train_focus`) Focus model fixed in eval mode: it only
    segments the groups to give the rewards, as in the paper's later epochs once the segmenter has converged."""
    from monai.optimizers import WarmupCosineSchedule

    torch.manual_seed(seed)
    sampler = CropSampler(images, labels, cfg, seed)
    steps_per_epoch = max(1, len(images) // cfg.volumes_per_step)
    opt_f = torch.optim.AdamW(focus.parameters(), lr=cfg.focus_lr or cfg.lr, weight_decay=cfg.weight_decay)
    sched = WarmupCosineSchedule(opt_f, int(cfg.warmup_epochs * steps_per_epoch), cfg.steps)  # Focus only, as code
    for spec in glances.values():
        prepare_glance(spec, cfg)
    refresh = max(1, int(round(cfg.refresh_epochs * steps_per_epoch)))
    hist: dict[str, list] = {"seg_loss": [], "reward": []}
    it = range(cfg.steps)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="gf-screen train", leave=False)
    for step in it:
        crops, labs = sampler.sample()
        seg_loss = focus_loss(cfg, step / max(1, cfg.steps - 1))
        if update_focus:
            focus.train()
            seg = focus(crops)
            loss = seg_loss(seg, labs)
            opt_f.zero_grad()
            loss.backward()
            opt_f.step()
            sched.step()
        else:
            with torch.no_grad():
                seg = focus.eval()(crops)
                loss = seg_loss(seg, labs)
        seg = seg.detach()  # the reward never back-propagates into the Focus model
        hist["seg_loss"].append(float(loss.detach()))
        has = labs.flatten(1).amax(1) > 0
        rewards = {"detect": detection_reward(seg, labs)}
        hist["reward"].append(float(rewards["detect"].mean()))
        for spec in glances.values():
            glance_update(spec, crops, has, seg, labs, rewards, refresh_now=(step + 1) % refresh == 0)
    focus.eval()
    for spec in glances.values():
        spec.model.eval()
    return hist


def focus_val_score(focus: torch.nn.Module, images: np.ndarray, labels: np.ndarray, grid=(0.3, 0.5, 0.7, 0.9)):
    """Validation score of the Focus model on every window (the baseline): max over voxel thresholds of
    (scan F1 + Dice) / 2, the reproduction's one tuning criterion. Returns (score, best threshold)."""
    from .screen import ScreenConfig, segment_all, summarize, volume_metrics

    maps = [segment_all(torch.from_numpy(i[None]).float(), focus, ScreenConfig(roi=tuple(focus_roi(focus)))).numpy()
            for i in images]  # fmt: skip
    best = (-1.0, grid[0])
    for t in grid:
        m = summarize([volume_metrics(p > t, lab[0]) for p, lab in zip(maps, labels)])
        best = max(best, ((m["f1"] + m["dice"]) / 2, t), key=lambda x: x[0])
    return best


def focus_roi(focus: torch.nn.Module) -> tuple[int, int, int]:
    """The window size a Focus model was trained on (``focus.roi``, set by :func:`train_focus`; default 16³)."""
    return tuple(getattr(focus, "roi", (16, 16, 16)))


def train_focus(
    images: np.ndarray,
    labels: np.ndarray,
    focus: torch.nn.Module,
    val: tuple[np.ndarray, np.ndarray],
    cfg: TrainConfig = TrainConfig(),
    seed: int = 0,
    eval_every: int = 100,
    patience: int = 4,
    progress: bool = False,
) -> dict[str, list]:
    """Train the Focus segmenter alone to convergence: at most ``cfg.steps`` steps on pos/neg crop groups (same
    sampler, loss and schedule as :func:`train_glance_focus`), scored every ``eval_every`` steps on the validation
    volumes by :func:`focus_val_score`; stops after ``patience`` evaluations without improvement and restores the
    best weights (early stopping, the nnU-Net practice of keeping the best validation checkpoint)."""
    from monai.optimizers import WarmupCosineSchedule

    if eval_every < 1 or patience < 1:
        raise ValueError(f"train_focus: eval_every and patience must be >= 1, got {eval_every!r}, {patience!r}")
    torch.manual_seed(seed)
    focus.roi = tuple(cfg.roi)
    sampler = CropSampler(images, labels, cfg, seed)
    opt = torch.optim.AdamW(focus.parameters(), lr=cfg.focus_lr or cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = max(1, len(images) // cfg.volumes_per_step)
    sched = WarmupCosineSchedule(opt, int(cfg.warmup_epochs * steps_per_epoch), cfg.steps)
    hist: dict[str, list] = {"seg_loss": [], "val_score": [], "val_step": [], "best_step": [0]}
    best, best_state, bad = -np.inf, copy.deepcopy(focus.state_dict()), 0
    it = range(1, cfg.steps + 1)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="gf-screen focus", leave=False)
    for step in it:
        crops, labs = sampler.sample()
        focus.train()
        loss = focus_loss(cfg, (step - 1) / max(1, cfg.steps - 1))(focus(crops), labs)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        hist["seg_loss"].append(float(loss.detach()))
        if step % eval_every == 0 or step == cfg.steps:
            focus.eval()
            score, _ = focus_val_score(focus, *val)
            hist["val_score"].append(score)
            hist["val_step"].append(step)
            if score > best + 1e-4:
                best, best_state, bad = score, copy.deepcopy(focus.state_dict()), 0
                hist["best_step"] = [step]
            else:
                bad += 1
                if bad >= patience:
                    break
    focus.load_state_dict(best_state)
    focus.eval()
    return hist
