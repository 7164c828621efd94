"""SPWOOD training: the SOS-Student supervised loss, orientation self-supervision, and the mean-teacher loop with
pseudo-label filtering; early stopping on validation rotated mAP.

L = L^s + w_u(t) L^u (SPWOOD Sec. 3): L^s = sparse focal + centerness + box (RBox: IoU in the box frame + PSC angle;
HBox: circumscription GIoU; point: centre + Voronoi-watershed size + Gaussian overlap) + w_ss L_Ang; after burn-in the
EMA teacher labels weakly augmented images of the whole training set (labelled ones included, as in the official
pipeline) and MPF selects the locations on which the student, fed a strongly (photometrically) augmented copy, is
trained by the dense QFL / L1 / centerness consistency of the official `Semi_GmmLoss9_Wo_P`.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F

from .config import SPWOODConfig
from .detector import TinyRotatedFCOS, decode, predict, psc_decode, psc_encode
from .filtering import select_pseudo
from .geometry import hbox_of, rotated_map
from .losses import (
    focal_terms,
    frame_iou_loss,
    gaussian_overlap_loss,
    hbox_iou_loss,
    layout_size_loss,
    orientation_consistency_loss,
    qfl_v2,
    sparse_focal_loss,
)
from .targets import LEVEL_SIZE, assign, cat_instances, flip_instances, instance_frame


def supervised_loss(model, out, insts, cfg: SPWOODConfig, size: int) -> dict:
    """SOS-Student loss on a labelled batch (outputs `out` of `model` on the images of `insts`)."""
    pts, strd, lvls = model.points(size)
    b, n, c = out["cls"].shape
    flat, img = cat_instances(insts)
    idx = assign(flat, img, b, pts, strd, lvls)  # (B, N)
    target = torch.zeros(b, n, c)
    pos_b, pos_n = torch.nonzero(idx >= 0, as_tuple=True)
    k = idx[pos_b, pos_n]
    target[pos_b, pos_n, flat["cls"][k]] = 1.0
    npos = max(len(k), 1)
    if cfg.sparse_focal:
        l_cls = sparse_focal_loss(out["cls"], target, cfg.gamma, cfg.alpha, cfg.thresh, cfg.hard_negative_weight,
                                  avg_factor=npos)  # fmt: skip
    else:
        l_cls = focal_terms(out["cls"], target, cfg.gamma, cfg.alpha).sum() / npos
    losses = {"cls": l_cls}
    if not len(k):
        return losses
    get = {key: v[k] for key, v in flat.items()}
    typ = get["type"]
    p_pts, p_str = pts[pos_n], strd[pos_n]
    reg, ang, ctr = out["reg"][pos_b, pos_n], out["ang"][pos_b, pos_n], out["ctr"][pos_b, pos_n]
    box = decode(p_pts, p_str, reg, ang)
    box_l, zero = [], reg.sum() * 0
    ctr_target = torch.zeros(len(k))
    # RBox: (l, t, r, b) in the box frame (IoU loss) + PSC angle; centerness from the exact distances
    r = typ == 0
    if r.any():
        rb = get["rbox"][r]
        d = p_pts[r] - rb[:, :2]
        cs, sn = torch.cos(rb[:, 4]), torch.sin(rb[:, 4])
        xl, yl = d[:, 0] * cs + d[:, 1] * sn, -d[:, 0] * sn + d[:, 1] * cs
        tgt = torch.stack([rb[:, 2] / 2 + xl, rb[:, 3] / 2 + yl, rb[:, 2] / 2 - xl, rb[:, 3] / 2 - yl], 1).clamp(
            min=0.1
        )
        box_l.append(frame_iou_loss(torch.exp(reg[r].clamp(max=6)) * p_str[r, None], tgt).sum())
        box_l.append(cfg.w_angle * (ang[r] - psc_encode(rb[:, 4])).abs().sum())
        ctr_target[r] = torch.sqrt((tgt[:, [0, 2]].min(1).values / tgt[:, [0, 2]].max(1).values)
                                   * (tgt[:, [1, 3]].min(1).values / tgt[:, [1, 3]].max(1).values))  # fmt: skip
    # HBox: the predicted rotated box's circumscribed horizontal box must equal the label (H2RBox-v2)
    h = typ == 1
    if h.any():
        hb = get["hbox"][h]
        box_l.append(hbox_iou_loss(hbox_of(box[h]), hb).sum())
        d = torch.cat([p_pts[h] - hb[:, :2], hb[:, 2:] - p_pts[h]], 1).clamp(min=0.1)
        ctr_target[h] = torch.sqrt((d[:, [0, 2]].min(1).values / d[:, [0, 2]].max(1).values)
                                   * (d[:, [1, 3]].min(1).values / d[:, [1, 3]].max(1).values))  # fmt: skip
    # point: centre on the point, size from the Voronoi-watershed segment, no overlap with neighbours
    p = typ == 2
    if p.any():
        box_l.append(((box[p, :2] - get["pt"][p]).abs().sum(1) / p_str[p]).sum())
        box_l.append(cfg.w_layout * layout_size_loss(box[p], get["cov"][p]).sum())
        kp = k[p]  # one box per instance (its first positive) for the overlap loss
        first = torch.full((len(flat["cls"]),), len(kp), dtype=torch.long)
        first = first.scatter_reduce(0, kp, torch.arange(len(kp)), reduce="amin")
        first = first[first < len(kp)]
        losses["overlap"] = cfg.w_overlap * gaussian_overlap_loss(box[p][first], pos_b[p][first])
    losses["box"] = sum(box_l, zero) / npos
    hasc = typ != 2
    losses["ctr"] = F.binary_cross_entropy_with_logits(ctr[hasc], ctr_target[hasc]) if hasc.any() else zero
    return losses


def transformed_view(images: torch.Tensor, rot: torch.Tensor, flip: torch.Tensor) -> torch.Tensor:
    """Images rotated by `rot` about their centre (content turns by +rot in the y-down frame), then flipped
    vertically where `flip` (bilinear, zero padding)."""
    c, s = torch.cos(rot), torch.sin(rot)
    fy = torch.where(flip, -1.0, 1.0)
    # output normalised coords q -> input p = Rot(-rot) diag(1, fy) q
    a = torch.stack([torch.stack([c, s * fy, torch.zeros_like(c)], -1),
                     torch.stack([-s, c * fy, torch.zeros_like(c)], -1)], 1)  # fmt: skip
    grid = F.affine_grid(a, list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def orientation_ss_loss(model, images, insts, out, cfg: SPWOODConfig, rng: np.random.Generator) -> torch.Tensor:
    """L_Ang on the weakly labelled (HBox / point) instances of a batch: one transformed view per image."""
    b, size = len(images), images.shape[-1]
    sel = [(i, j) for i, ins in enumerate(insts) for j in range(len(ins["cls"])) if ins["type"][j] > 0]
    if not sel:
        return out["reg"].sum() * 0
    rot = torch.as_tensor(rng.uniform(-math.pi, math.pi, b), dtype=torch.float32)
    flip = torch.as_tensor(rng.random(b) < cfg.flip_prob)
    view = model(transformed_view(images, rot, flip))
    ii = torch.tensor([i for i, _ in sel])
    ctr = torch.stack([instance_frame(insts[i])[0][j] for i, j in sel])
    lvl = torch.tensor([int(insts[i]["size"][j] > LEVEL_SIZE) for i, j in sel])
    o = size / 2
    d = ctr - o
    cr, sr = torch.cos(rot[ii]), torch.sin(rot[ii])
    ctr2 = torch.stack([cr * d[:, 0] - sr * d[:, 1], sr * d[:, 0] + cr * d[:, 1]], 1) + o
    ctr2[:, 1] = torch.where(flip[ii], size - ctr2[:, 1], ctr2[:, 1])
    ok = ((ctr2 > 2) & (ctr2 < size - 2)).all(1)
    if not ok.any():
        return out["reg"].sum() * 0
    th, th2 = torch.zeros(len(sel)), torch.zeros(len(sel))
    for lv in (0, 1):
        m = lvl == lv
        if not m.any():
            continue
        g1 = (ctr[m] / size * 2 - 1)[:, None, None]  # (K, 1, 1, 2) normalised positions
        g2 = (ctr2[m] / size * 2 - 1)[:, None, None]
        a1 = F.grid_sample(out["maps"]["ang"][lv][ii[m]], g1, align_corners=False)[:, :, 0, 0]
        a2 = F.grid_sample(view["maps"]["ang"][lv][ii[m]], g2, align_corners=False)[:, :, 0, 0]
        th = th.masked_scatter(m, psc_decode(a1))
        th2 = th2.masked_scatter(m, psc_decode(a2))
    loss = orientation_consistency_loss(th, th2, rot[ii], flip[ii])
    return loss[ok].mean()


def strong_aug(images: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Photometric strong view (official pipeline: ColorJitter(0.4, 0.4, 0.4, 0.1) p 0.8, grayscale p 0.2, blur):
    brightness, contrast and saturation jitter, grayscale, pixel noise; geometry unchanged."""
    b = len(images)
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(b, 1, 1, 1, generator=gen)  # noqa: E731
    on = (torch.rand(b, 1, 1, 1, generator=gen) < 0.8).float()
    x = images * (1 + on * u(-0.4, 0.4))
    mean = x.mean((1, 2, 3), keepdim=True)
    x = (x - mean) * (1 + on * u(-0.4, 0.4)) + mean
    gray = x.mean(1, keepdim=True)
    x = (x - gray) * (1 + on * u(-0.4, 0.4)) + gray
    x = torch.where(torch.rand(b, 1, 1, 1, generator=gen) < 0.2, x.mean(1, keepdim=True).expand_as(x), x)
    return (x + 0.03 * torch.randn(x.shape, generator=gen)).clamp(0, 1)


def unsup_loss(student_out, teacher_out, levels, cfg: SPWOODConfig) -> tuple[dict, dict]:
    """Dense teacher-student loss on pseudo-labelled locations (official `Semi_GmmLoss9_Wo_P`)."""
    with torch.no_grad():
        tp = torch.sigmoid(teacher_out["cls"])
        tc = torch.sigmoid(teacher_out["ctr"])
        conf = (tp * tc[..., None]).max(-1).values  # joint confidence class x centerness (P3, P4 in the code)
        mask, taus = select_pseudo(conf, levels, cfg.filter, cfg.fixed_thr)
        weight = torch.where(mask, conf, torch.zeros_like(conf))
    losses = {"u_cls": qfl_v2(student_out["cls"], tp, weight)}
    if mask.any():
        w = weight[mask][:, None]
        losses["u_box"] = 10 * ((student_out["reg"][mask] - teacher_out["reg"][mask]).abs() * w).mean()
        losses["u_ang"] = 10 * ((student_out["ang"][mask] - teacher_out["ang"][mask]).abs() * w).mean()
        bce = F.binary_cross_entropy_with_logits(student_out["ctr"][mask], tc[mask], reduction="none")
        losses["u_ctr"] = 10 * (bce * w[:, 0]).mean()
    return losses, {"n_pseudo": float(mask.sum()), **{f"tau{k}": v for k, v in taus.items()}}


def evaluate(model, images, gts, n_classes, cfg: SPWOODConfig) -> float:
    dets = predict(model, images, cfg.score_thr, cfg.nms_iou)
    return rotated_map(dets, gts, n_classes)[0]


def _batch_insts(insts, idx, flips, size):
    out = []
    for i, (fh, fv) in zip(idx, flips):
        ins = insts[i]
        if fh:
            ins = flip_instances(ins, size, True)
        if fv:
            ins = flip_instances(ins, size, False)
        out.append(ins)
    return out


def _flip_images(x, flips):
    x = x.clone()
    for b, (fh, fv) in enumerate(flips):
        if fh:
            x[b] = x[b].flip(-1)
        if fv:
            x[b] = x[b].flip(-2)
    return x


def burn_in_key(cfg: SPWOODConfig) -> tuple:
    """Fields that change the burn-in phase (supervised only): runs equal in them share one burn-in checkpoint."""
    return (cfg.sparse_focal, cfg.gamma, cfg.alpha, cfg.thresh, cfg.hard_negative_weight, cfg.orientation_ss,
            cfg.w_ss, cfg.flip_prob, cfg.w_overlap, cfg.w_layout, cfg.w_angle, cfg.lr, cfg.weight_decay,
            cfg.grad_clip, cfg.batch, cfg.burn_in, cfg.width, cfg.ema, cfg.eval_every, cfg.patience)  # fmt: skip


@torch.no_grad()
def _ema(teacher, student, m: float) -> None:
    """theta_t <- m theta_t + (1 - m) theta_s (official `MeanTeacher` hook; m = 0 copies the student)."""
    for pt, ps in zip(teacher.parameters(), student.parameters()):
        pt.mul_(m).add_(ps.detach(), alpha=1 - m)


def _fit_phase(n_steps, step_fn, student, teacher, opt, val, n_classes, cfg, progress, desc):
    """Run `step_fn(step)` for up to n_steps; validation rotated mAP of the teacher (EMA weights) every
    `cfg.eval_every` steps; stop after `cfg.patience` evaluations without gain. Returns (best val, the student /
    teacher / optimiser states at the best evaluation, history [(step, val)])."""
    best, best_state, bad, hist = -1.0, None, 0, []
    it = range(1, n_steps + 1)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc=desc, leave=False)
    for step in it:
        step_fn(step)
        if step % cfg.eval_every == 0 or step == n_steps:
            score = evaluate(teacher, val[0], val[1], n_classes, cfg)
            hist.append((step, score))
            if score > best:
                best, bad = score, 0
                best_state = {k: copy.deepcopy(m.state_dict()) for k, m in
                              (("student", student), ("teacher", teacher), ("opt", opt))}  # fmt: skip
            else:
                bad += 1
                if bad >= cfg.patience:
                    break
    return best, best_state, hist


def train_spwood(
    images: torch.Tensor,
    insts: list,
    labelled: np.ndarray,
    val: tuple,
    n_classes: int,
    cfg: SPWOODConfig,
    seed: int = 0,
    init: dict | None = None,
    progress: bool = False,
):
    """Train a detector. images: all training images (n, 3, S, S); insts: instance dicts (only labelled images'
    entries are read); labelled: indices of labelled images; val: (images, [(boxes, labels)]) for early stopping.

    Two phases (SPWOOD / MCL), each trained to convergence: (1) the supervised burn-in, at most `cfg.burn_in` steps,
    with an EMA teacher from the first step, stopped by early stopping on the teacher's validation rotated mAP
    (every `eval_every` steps, `patience` evaluations without gain), the best checkpoint kept; (2) for mean-teacher
    runs with a filter, self-training of the burn-in's best student / teacher / optimiser state with the teacher's
    pseudo-labels on the unlabelled images (official `SparseDataset`: sources `sup` + `unsup_unlabeled`), at most
    `cfg.max_steps` steps, the same early stopping, the best teacher kept (the code tests on the teacher). Supervised
    runs (filter 'none' or no mean teacher) return the burn-in's best teacher (EMA weights). The burn-in is
    deterministic given the seed and `burn_in_key(cfg)`, so `init` = the `info["burn_in"]` of an earlier run with the
    same key and data skips it. Returns (best model in eval mode, info dict)."""
    if len(labelled) == 0:
        raise ValueError("train_spwood needs at least one labelled image")
    torch.manual_seed(seed)
    size = images.shape[-1]
    student = TinyRotatedFCOS(n_classes, cfg.width)
    teacher = copy.deepcopy(student).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(student.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    _, _, levels = student.points(size)
    weak = any(int(insts[i]["type"].max()) > 0 for i in labelled if len(insts[i]["type"]))
    unl = np.setdiff1d(np.arange(len(images)), labelled)
    unl = unl if len(unl) else np.arange(len(images))
    st = {"rng": np.random.default_rng(seed), "gen": torch.Generator().manual_seed(seed), "phase2": False}
    info = {"n_pseudo": 0.0}

    def step_fn(step):
        rng = st["rng"]
        student.train()
        idx = rng.choice(labelled, size=min(cfg.batch, len(labelled)), replace=False)
        flips = rng.random((len(idx), 2)) < 0.5
        x = _flip_images(images[idx], flips)
        bi = _batch_insts(insts, idx, flips, size)
        out = student(x)
        losses = supervised_loss(student, out, bi, cfg, size)
        if weak and cfg.orientation_ss:
            losses["ss"] = cfg.w_ss * orientation_ss_loss(student, x, bi, out, cfg, rng)
        if st["phase2"]:
            uidx = rng.choice(unl, size=min(cfg.unsup_batch, len(unl)), replace=False)
            xu = _flip_images(images[uidx], rng.random((len(uidx), 2)) < 0.5)
            with torch.no_grad():
                t_out = teacher(xu)
            ul, stats = unsup_loss(student(strong_aug(xu, st["gen"])), t_out, levels, cfg)
            ramp = min(1.0, step / max(cfg.ramp, 1))  # linear ramp (code: weight_suppress, see the docs)
            for key, v in ul.items():
                losses[key] = cfg.w_unsup * ramp * v
            info["n_pseudo"] += stats["n_pseudo"]
        loss = sum(losses.values())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), cfg.grad_clip)
        opt.step()
        _ema(teacher, student, 0.0 if step == 1 and not st["phase2"] else cfg.ema)

    if init is None:
        val_b, state, hist_b = _fit_phase(cfg.burn_in, step_fn, student, teacher, opt, val, n_classes, cfg,
                                          progress, "burn-in")  # fmt: skip
        init = {"key": burn_in_key(cfg), "val": val_b, "steps": hist_b[-1][0], "history": hist_b, **state}
    elif tuple(init["key"]) != burn_in_key(cfg):
        raise ValueError("train_spwood: init comes from a run with other burn-in settings; drop init")
    info["burn_in"] = init
    info.update(best_val=init["val"], steps=0, history=[], burn_in_steps=init["steps"], start_val=init["val"],
                best_step=0)  # fmt: skip
    final = TinyRotatedFCOS(n_classes, cfg.width)
    if not cfg.mean_teacher or cfg.filter == "none":
        final.load_state_dict(init["teacher"])
        return final.eval(), info
    student.load_state_dict(init["student"])
    teacher.load_state_dict(init["teacher"])
    opt.load_state_dict(copy.deepcopy(init["opt"]))  # load_state_dict aliases the tensors; AdamW updates in place
    # the same random stream after the burn-in, whether it was computed here or resumed
    st.update(rng=np.random.default_rng([seed, 1]), gen=torch.Generator().manual_seed(seed + 1), phase2=True)
    best, state, hist = _fit_phase(cfg.max_steps, step_fn, student, teacher, opt, val, n_classes, cfg, progress,
                                   "self-training")  # fmt: skip
    final.load_state_dict(state["teacher"])
    info.update(best_val=best, steps=hist[-1][0], history=hist, best_step=max(hist, key=lambda h: h[1])[0])
    return final.eval(), info
