"""Glance training to convergence with a fixed Focus segmenter, with early stopping on held-out windows.

Each Glance model (GF-Screen's GRL, the supervised balanced CE, the Dice-reward ablation) gets the same crop stream
(:class:`.train.CropSampler`), the same step rule (:func:`.train.glance_update`) and the same stopping rule: every
``eval_every`` steps it scores the windows of the validation volumes, the window-level AUROC of p(select) against
"the window holds lesion voxels" (the oracle Glance's selection) is computed, and a model stops after ``patience``
evaluations without improvement, but not before ``min_steps`` steps (a model whose first updates lower the score must
get the chance to recover); the weights of its best evaluation are restored. The official trainer keeps the
checkpoint with the best validation Dice of the screened volumes (``GF_RL_trainer.run_training``, once every
``val_every`` epochs); the window AUROC is ours: it is smooth at 20 validation volumes and needs no threshold.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from .screen import ScreenConfig, glance_scores
from .train import CropSampler, GlanceSpec, TrainConfig, detection_reward, glance_update, prepare_glance


@torch.no_grad()
def tile_windows(images: np.ndarray, labels: np.ndarray, cfg: ScreenConfig | None = None):
    """Every sliding window (MONAI's tiling, as at inference) of every volume: (windows [W, 1, *roi] float32,
    has_lesion [W] bool, volume index [W])."""
    from monai.inferers import sliding_window_inference

    cfg = cfg or ScreenConfig()
    wins, has, vol = [], [], []
    for k, (img, lab) in enumerate(zip(images, labels)):
        lab3 = np.asarray(lab).reshape(img.shape[1:])

        def record(win, slices, k=k, lab3=lab3):
            wins.append(win.clone())
            has.extend(bool(lab3[tuple(s[2:])].any()) for s in slices)
            vol.extend([k] * win.shape[0])
            return win

        x = torch.as_tensor(np.asarray(img, np.float32))[None]
        sliding_window_inference(x, cfg.roi, cfg.sw_batch_size, record, overlap=cfg.overlap, with_coord=True)
    return torch.cat(wins), np.array(has), np.array(vol)


@torch.no_grad()
def window_scores(glance: torch.nn.Module, windows: torch.Tensor, batch: int = 256) -> np.ndarray:
    """p(select) of every window, in eval mode."""
    glance.eval()
    return torch.cat([glance_scores(glance, windows[i : i + batch]) for i in range(0, len(windows), batch)]).numpy()


def window_auroc(scores: np.ndarray, has_lesion: np.ndarray) -> float:
    """AUROC of p(select) for "the window holds lesion voxels" (0.5 = uninformative; NaN with one class only)."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(has_lesion, bool)
    return float(roc_auc_score(y, scores)) if 0 < y.sum() < len(y) else float("nan")


def train_glance(
    images: np.ndarray,
    labels: np.ndarray,
    focus: torch.nn.Module,
    glances: dict[str, GlanceSpec],
    val: tuple[torch.Tensor, np.ndarray],
    cfg: TrainConfig | None = None,
    seed: int = 0,
    eval_every: int = 100,
    patience: int = 3,
    min_steps: int = 0,
    progress: bool = False,
    score_fn=None,
) -> dict[str, dict]:
    """Train every Glance model against a fixed Focus model (eval mode, its argmax gives the rewards) on one shared
    stream of pos/neg crop groups, each for at most ``cfg.steps`` steps with its own early stopping on ``val`` =
    (windows, has_lesion); returns per-model histories (``val_score``, ``val_step``, ``best_step``, ``steps``) and the
    training detection reward. No model stops before ``min_steps``. ``score_fn(model) -> float`` replaces the AUROC
    criterion (tests)."""
    if eval_every < 1 or patience < 1:
        raise ValueError(f"train_glance: eval_every and patience must be >= 1, got {eval_every!r}, {patience!r}")
    if min_steps < 0:
        raise ValueError(f"train_glance: min_steps must be >= 0, got {min_steps!r}")
    cfg = cfg or TrainConfig()
    torch.manual_seed(seed)
    sampler = CropSampler(images, labels, cfg, seed)
    refresh = max(1, int(round(cfg.refresh_epochs * max(1, len(images) // cfg.volumes_per_step))))
    score = score_fn or (lambda m: window_auroc(window_scores(m, val[0]), val[1]))
    state = {}
    for name, spec in glances.items():
        prepare_glance(spec, cfg)
        state[name] = {"best": score(spec.model), "weights": copy.deepcopy(spec.model.state_dict()), "bad": 0,
                       "val_score": [], "val_step": [], "best_step": 0, "steps": 0, "live": True}  # fmt: skip
        state[name]["val_score"].append(state[name]["best"])
        state[name]["val_step"].append(0)
    focus.eval()
    it = range(1, cfg.steps + 1)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="gf-screen glance", leave=False)
    reward = []
    for step in it:
        live = [n for n in glances if state[n]["live"]]
        if not live:
            break
        crops, labs = sampler.sample()
        with torch.no_grad():
            seg = focus(crops)
        has = labs.flatten(1).amax(1) > 0
        rewards = {"detect": detection_reward(seg, labs)}
        reward.append(float(rewards["detect"][has].mean()) if has.any() else float("nan"))
        for name in live:
            st = state[name]
            glance_update(glances[name], crops, has, seg, labs, rewards, refresh_now=step % refresh == 0)
            st["steps"] = step
            if step % eval_every == 0 or step == cfg.steps:
                s = score(glances[name].model)
                st["val_score"].append(s)
                st["val_step"].append(step)
                if s > st["best"] + 1e-4:
                    st.update(best=s, weights=copy.deepcopy(glances[name].model.state_dict()), bad=0, best_step=step)
                else:
                    st["bad"] += 1
                    st["live"] = st["bad"] < patience or step < min_steps
    out = {}
    for name, spec in glances.items():
        spec.model.load_state_dict(state[name]["weights"])
        spec.model.eval()
        out[name] = {k: state[name][k] for k in ("val_score", "val_step", "best_step", "steps", "best")}
    out["_reward"] = {"detect_on_lesion_crops": float(np.nanmean(reward)) if reward else float("nan")}
    return out


__all__ = ["tile_windows", "train_glance", "window_auroc", "window_scores"]
