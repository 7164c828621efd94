"""Group-relative RL for the Glance model (GF-Screen, Wu, Zhuang & Chen, ICLR 2026, https://arxiv.org/abs/2601.19103).

The Glance policy π_θ(a | v) decides for each CT sub-volume v whether the Focus segmenter should look at it
(a = 1, "select") or not (a = 0). The decision is not differentiable, so the Glance model is trained with a critic-free,
GRPO-like objective in which every sub-volume of a training step is one "response" of the group:

    r_i   = 1[ (argmax S_φ(v_i) == 1) ∧ (y_i == 1) has any voxel ]          (binary detection reward, Eq. reward)
    A_i   = clip( (r_i − mean(r)) / max(std(r), 0.01), −5, 5 )              (group-relative advantage)
    ρ_i   = clamp( exp(log(p_i + 1e-6) − log(p_i^old + 1e-6)), 0.01, 5 ),    p_i = softmax(π_θ(v_i) / τ)[select]
    L_clip = −mean( min(ρ_i A_i, clip(ρ_i, 1 − ε, 1 + ε) A_i) )
    L_KL   = β · mean( q_i − log q_i − 1 ),  q_i = clamp(p_i^old / (p_i + 1e-6), 1e-4, 1e4)   (k3 estimator)
    L_GRL  = L_clip + L_KL,     L_total = L_seg + α · L_CE + L_GRL

with L_CE the class-balanced cross-entropy of "the sub-volume contains lesion voxels" (weight α = 0.1). As in the
official code, the surrogate uses the probability of the *select* action for every sub-volume (not a sampled action);
the reference policy π_old is a frozen copy refreshed once per epoch. With a constant reward every A_i is 0, so the
clipped surrogate has zero gradient; with any reward whose group mean is subtracted, Σ_i A_i = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class GRLConfig:
    """Hyper-parameters of the Glance objective (values from the official `GF_Screen_RL.py` unless stated)."""

    eps: float = field(default=0.1, metadata={"help": "PPO/GRPO clip range ε (code: 0.1)"})
    beta: float = field(default=0.01, metadata={"help": "KL weight β, k3 estimator (code: 0.01)"})
    temperature: float = field(default=1.0, metadata={"help": "softmax temperature τ of the policy (code: 1.0)"})
    ce_weight: float = field(default=0.1, metadata={"help": "weight α of the balanced CE term (paper/code: 0.1)"})
    std_floor: float = field(default=0.01, metadata={"help": "floor of the reward std in A (code: 0.01)"})
    adv_clip: float = field(default=5.0, metadata={"help": "advantage clip (code: ±5)"})
    ratio_clamp: tuple[float, float] = field(default=(0.01, 5.0), metadata={"help": "ratio clamp (code: [0.01, 5])"})
    reward: str = field(default="detect", metadata={"help": "'detect' (binary, paper) or 'dice' (ablation)"})

    def __post_init__(self):
        if not 0 < self.eps < 1:
            raise ValueError(f"GRLConfig.eps must lie in (0, 1), got {self.eps!r}")
        if self.beta < 0 or self.ce_weight < 0:
            raise ValueError(f"GRLConfig.beta and ce_weight must be >= 0, got {self.beta!r}, {self.ce_weight!r}")
        if self.temperature <= 0 or self.std_floor <= 0 or self.adv_clip <= 0:
            raise ValueError(f"GRLConfig.temperature, std_floor and adv_clip must be > 0, got {self!r}")
        if not 0 < self.ratio_clamp[0] < 1 < self.ratio_clamp[1]:
            raise ValueError(f"GRLConfig.ratio_clamp must be (lo < 1 < hi) with lo > 0, got {self.ratio_clamp!r}")
        if self.reward not in ("detect", "dice"):
            raise ValueError(f"GRLConfig.reward must be 'detect' or 'dice', got {self.reward!r}")


def detection_reward(seg_logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """r_i = 1 if the Focus prediction (argmax) overlaps the lesion in sub-volume i, else 0. Shapes [N, 2, ...] and
    [N, 1, ...]; returns [N] float (no gradient)."""
    pred = seg_logits.detach().argmax(1) == 1
    return (pred & (labels[:, 0] > 0)).flatten(1).any(1).float()


def dice_reward(seg_logits: torch.Tensor, labels: torch.Tensor, smooth: float = 1e-6) -> torch.Tensor:
    """Ablation reward: the per-sub-volume Dice of the argmax prediction (1 for an empty prediction of an empty
    label, as the official ``get_dice_reward`` with its smoothing)."""
    pred = (seg_logits.detach().argmax(1) == 1).flatten(1).float()
    gt = (labels[:, 0] > 0).flatten(1).float()
    return (2 * (pred * gt).sum(1) + smooth) / (pred.sum(1) + gt.sum(1) + smooth)


def group_relative_advantages(rewards: torch.Tensor, std_floor: float = 0.01, clip: float = 5.0) -> torch.Tensor:
    """A_i = clip((r_i − mean r) / max(std r, floor), ±clip) over the whole group (unbiased std, as the code)."""
    if rewards.dim() != 1 or rewards.numel() < 2:
        raise ValueError(f"rewards must be a 1-D group of >= 2 values, got shape {tuple(rewards.shape)}")
    r = rewards.float()
    std = torch.clamp(r.std(), min=std_floor)
    return torch.clamp((r - r.mean()) / std, -clip, clip)


def select_prob(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """p(select) = softmax(logits / τ)[:, 1], in float32."""
    return F.softmax(logits.float() / temperature, dim=1)[:, 1]


def balanced_glance_ce(logits: torch.Tensor, has_lesion: torch.Tensor) -> torch.Tensor:
    """L_CE = −mean_{y=1} log p − mean_{y=0} log(1 − p) (the official ``get_glance_loss``; a class absent from the
    group contributes 0)."""
    p = select_prob(logits)
    pos, neg = has_lesion.float(), 1 - has_lesion.float()
    return -(pos * torch.log(p + 1e-6)).sum() / (pos.sum() + 1e-6) - (neg * torch.log(1 - p + 1e-6)).sum() / (
        neg.sum() + 1e-6
    )


def grl_loss(
    logits: torch.Tensor, old_logits: torch.Tensor, rewards: torch.Tensor, cfg: GRLConfig = GRLConfig()
) -> tuple[torch.Tensor, dict[str, float]]:
    """L_GRL = L_clip + L_KL for one group (logits [N, 2] of the live policy, old_logits of the frozen reference)."""
    if logits.shape != old_logits.shape or logits.shape[0] != rewards.shape[0]:
        raise ValueError(f"shapes differ: logits {tuple(logits.shape)}, old {tuple(old_logits.shape)}, "
                         f"rewards {tuple(rewards.shape)}")  # fmt: skip
    p = select_prob(logits, cfg.temperature)
    with torch.no_grad():
        p_old = select_prob(old_logits.detach(), cfg.temperature)
        adv = group_relative_advantages(rewards.detach(), cfg.std_floor, cfg.adv_clip)
    ratio = torch.exp(torch.log(p + 1e-6) - torch.log(p_old + 1e-6)).clamp(*cfg.ratio_clamp)
    surr = torch.minimum(ratio * adv, ratio.clamp(1 - cfg.eps, 1 + cfg.eps) * adv)
    l_clip = -surr.mean()
    q = (p_old / (p + 1e-6)).clamp(1e-4, 1e4)  # k3 estimator of KL(π_old || π_θ)
    l_kl = cfg.beta * (q - torch.log(q + 1e-6) - 1).mean()
    info = {"clip": float(l_clip.detach()), "kl": float(l_kl.detach()), "reward": float(rewards.float().mean())}
    return l_clip + l_kl, info
