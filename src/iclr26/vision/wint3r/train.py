"""Training with early stopping, reconstruction of a stream (merged overlaps, first-frame coordinates), evaluation.

`train(model, data, val)` minimises L_camera + L_pmap (Eqs. 9, 12) with Adam on sequences, evaluates the validation
loss every `eval_every` steps and keeps the best weights; it stops when the validation loss has not improved for
`patience` evaluations (or at `max_steps`). `reconstruct` turns a stream's window copies into one point map and one
pose per frame; `evaluate` aligns and scores them against the ground truth (Chamfer, ATE, RRA/RTA/AUC).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .geometry import ate, chamfer, enc_to_mat, mat_to_enc, rra_rta, to_first_frame
from .losses import camera_loss, point_loss
from .model import WinT3R, merge_windows


@dataclass
class TrainConfig:
    lr: float = field(default=2e-3, metadata={"help": "Adam learning rate (paper not captured; ours)"})
    batch: int = field(default=8, metadata={"help": "sequences per step (dossier: 8)"})
    max_steps: int = field(default=3000, metadata={"help": "cap on steps (early stopping decides; ours)"})
    eval_every: int = field(default=50, metadata={"help": "steps between validation evaluations (ours)"})
    patience: int = field(default=6, metadata={"help": "evaluations without improvement before stopping (ours)"})
    max_seconds: float = field(default=1e9, metadata={"help": "wall-clock cap per training run (a safety net)"})

    def __post_init__(self):
        if self.lr <= 0 or min(self.batch, self.max_steps, self.eval_every, self.patience) < 1:
            raise ValueError(f"TrainConfig: lr > 0 and batch, max_steps, eval_every, patience >= 1; got {self!r}")


def sequence_loss(model: WinT3R, frames: torch.Tensor, pts_gt: torch.Tensor, poses_gt: torch.Tensor) -> torch.Tensor:
    """L_cam + L_pmap on every window copy of the sequences (as the official training does)."""
    out = model(frames)
    idx = out["frame_idx"]
    lp, zp, zg = point_loss(out["pts"], out["conf"], pts_gt[:, idx], model.cfg.alpha)
    gt_enc = mat_to_enc(poses_gt[:, idx].float())
    lc = camera_loss(out["poses"], gt_enc, zp, zg, model.cfg.gamma)
    return model.cfg.cam_weight * lc + lp


def _tensors(data: dict):
    return (torch.as_tensor(data["images"]), torch.as_tensor(data["pts_local"]), torch.as_tensor(data["poses"]))


def train(model: WinT3R, data: dict, val: dict, cfg: TrainConfig | None = None, seed: int = 0, log=None) -> dict:
    """Train in place with early stopping on the validation loss; returns {"steps", "best_step", "best_val",
    "seconds"} (`best_step`: the step whose weights are kept)."""
    from tqdm import tqdm

    cfg = cfg or TrainConfig()
    x, p, g = _tensors(data)
    vx, vp, vg = _tensors(val)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))  # short warm-up
    best, best_state, best_step, bad, step, t0 = float("inf"), None, 0, 0, 0, time.time()
    bar = tqdm(total=cfg.max_steps, disable=log is None, leave=False, desc="wint3r")
    while step < cfg.max_steps and time.time() - t0 < cfg.max_seconds:
        model.train()
        idx = torch.randint(len(x), (cfg.batch,), generator=gen)
        loss = sequence_loss(model, x[idx], p[idx], g[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(), sched.step()
        step += 1
        bar.update(1)
        if step % cfg.eval_every == 0:
            v = validation_loss(model, vx, vp, vg)
            if v < best - 1e-4:
                best, best_state, best_step, bad = v, copy.deepcopy(model.state_dict()), step, 0
            else:
                bad += 1
            bar.set_postfix(val=f"{v:.3f}", best=f"{best:.3f}")
            if bad >= cfg.patience:
                break
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"steps": step, "best_step": best_step, "best_val": best, "seconds": time.time() - t0}


@torch.no_grad()
def validation_loss(model: WinT3R, x, p, g, batch: int = 16) -> float:
    model.eval()
    tot = [sequence_loss(model, x[i : i + batch], p[i : i + batch], g[i : i + batch]).item() * len(x[i : i + batch])
           for i in range(0, len(x), batch)]  # fmt: skip
    return float(sum(tot) / len(x))


@torch.no_grad()
def reconstruct(model: WinT3R, frames: torch.Tensor) -> dict:
    """One stream (T, 3, H, W) -> per frame local points (T, H, W, 3), confidence, camera-to-world poses (T, 4, 4)
    relative to the first frame, and world points (T, H, W, 3) = R_i P_i + t_i."""
    model.eval()
    out = model(frames[None])
    pts, conf, enc = merge_windows(out["frame_idx"], out["pts"][0], out["conf"][0], out["poses"][-1][0], len(frames))
    poses = to_first_frame(enc_to_mat(enc.double()))
    world = torch.einsum("tij,thwj->thwi", poses[:, :3, :3], pts.double()) + poses[:, None, None, :3, 3]
    return {"pts": pts, "conf": conf, "poses": poses.numpy(), "world": world.numpy()}


def gt_world(pts_local: np.ndarray, poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth poses relative to the first frame and world points in that frame."""
    rel = np.linalg.inv(poses[:1]) @ poses
    return rel, np.einsum("tij,thwj->thwi", rel[:, :3, :3], pts_local) + rel[:, None, None, :3, 3]


def evaluate(model: WinT3R, test: dict, max_points: int = 8000, seed: int = 0) -> dict[str, float]:
    """Mean over test streams of Chamfer (acc, comp, overall) after Sim(3) alignment, ATE, RRA/RTA@15/30, AUC@30."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(len(test["images"])):
        rec = reconstruct(model, torch.as_tensor(test["images"][s]))
        rows.append(score(rec["poses"], rec["world"], test["pts_local"][s], test["poses"][s], rng, max_points))
        rows[-1].update(video_depth(rec["pts"][..., 2].numpy(), test["pts_local"][s][..., 2]))
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def score(pred_poses, pred_world, pts_local, poses, rng, max_points: int = 8000) -> dict[str, float]:
    gt_poses, gt_pts = gt_world(pts_local, poses)
    a, b = pred_world.reshape(-1, 3), gt_pts.reshape(-1, 3)
    sel = rng.choice(len(a), min(max_points, len(a)), replace=False)
    m = {f"chamfer_{k}": v for k, v in chamfer(a[sel], b[sel]).items()}
    m["ate"] = ate(pred_poses, gt_poses)
    m.update(rra_rta(pred_poses, gt_poses))
    return m


def video_depth(pred: np.ndarray, gt: np.ndarray) -> dict[str, float]:
    """Video-depth metrics (paper §4, per-sequence scale alignment by the median ratio): Abs Rel = mean |s d - d*| / d*
    and δ < 1.25 = share of pixels with max(s d / d*, d* / (s d)) < 1.25."""
    s = np.median(gt) / max(np.median(pred), 1e-8)
    d = s * pred
    return {"absrel": float(np.mean(np.abs(d - gt) / gt)), "delta1": float(np.mean(np.maximum(d / gt, gt / d) < 1.25))}


def trivial_baseline(train_data: dict, test: dict, max_points: int = 8000, seed: int = 0) -> dict[str, float]:
    """A constant pose for every frame and the training set's mean local point map for every image (mean depth). ATE
    of a constant trajectory under Sim(3) alignment is the RMS spread of the true camera centres (scale -> 0)."""
    rng = np.random.default_rng(seed)
    mean_pts = train_data["pts_local"].reshape(-1, *train_data["pts_local"].shape[-3:]).mean(0)
    rows = []
    for s in range(len(test["images"])):
        t = len(test["images"][s])
        gt_poses, gt_pts = gt_world(test["pts_local"][s], test["poses"][s])
        pred = np.broadcast_to(mean_pts, gt_pts.shape)
        a, b = pred.reshape(-1, 3), gt_pts.reshape(-1, 3)
        sel = rng.choice(len(a), min(max_points, len(a)), replace=False)
        m = {f"chamfer_{k}": v for k, v in chamfer(a[sel], b[sel]).items()}
        m.update(video_depth(pred[..., 2], test["pts_local"][s][..., 2]))
        c = gt_poses[:, :3, 3]
        m["ate"] = float(np.sqrt(((c - c.mean(0)) ** 2).sum(1).mean()))
        eye = np.broadcast_to(np.eye(4), (t, 4, 4)).copy()
        eye[:, 2, 3] = np.arange(t) * 1e-3  # a constant forward drift (translation directions defined)
        m.update(rra_rta(eye, gt_poses))
        rows.append(m)
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


@torch.no_grad()
def frames_per_second(model: WinT3R, frames: torch.Tensor, repeats: int = 2) -> float:
    """Measured online throughput: frames of one stream through `model.stream` per second (best of `repeats`)."""
    model.eval()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in model.stream(frames):
            pass
        best = min(best, time.perf_counter() - t0)
    return len(frames) / best
