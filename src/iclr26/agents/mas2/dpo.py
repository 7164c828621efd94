"""Value-scaled DPO (MAS² Eq. for L_CTO), written in the form of TRL's sigmoid DPO loss.

TRL (`DPOTrainer`, loss_type "sigmoid"): with chosen/rejected log-ratios ρ_w = log π_θ(a_w|c) − log π_ref(a_w|c) and
ρ_l likewise,  loss = −log σ(β (ρ_w − ρ_l)), averaged over pairs. MAS² weights each sibling pair by its value gap:

    L_CTO = −E[ ΔV · log σ( β log π_θ(a_w|c)/π_ref(a_w|c) − β log π_θ(a_l|c)/π_ref(a_l|c) ) ],

which is plain DPO when every ΔV = 1. For an HF causal-LM meta-agent the same function applies to the summed token
log-probs of the action text (TRL's `concatenated_forward` gives them); here the log-probs are exact over discrete
candidates. One policy (and one frozen reference) per meta-agent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .cto import Preference
from .policies import DecisionBatch, MetaPolicy


def dpo_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    ref_chosen_logps: torch.Tensor,
    ref_rejected_logps: torch.Tensor,
    beta: float,
) -> torch.Tensor:
    """Per-pair sigmoid DPO loss (TRL's default): −log σ(β[(π_w − ref_w) − (π_l − ref_l)])."""
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite number ≥ 0, got {beta!r}")
    shapes = {t.shape for t in (policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps)}
    if len(shapes) != 1:
        raise ValueError(f"the four log-prob tensors must have one shape (one entry per pair), got {sorted(shapes)}")
    logits = (policy_chosen_logps - ref_chosen_logps) - (policy_rejected_logps - ref_rejected_logps)
    if not torch.isfinite(logits).all():
        raise ValueError("a log-probability is NaN or inf (a pair whose action has probability 0, or a diverged "
                         "policy): the DPO loss would be NaN")  # fmt: skip
    return -F.logsigmoid(beta * logits)


def value_scaled_dpo_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    ref_chosen_logps: torch.Tensor,
    ref_rejected_logps: torch.Tensor,
    value_gaps: torch.Tensor,
    beta: float,
) -> torch.Tensor:
    """L_CTO: the mean over pairs of ΔV · DPO loss (equals `dpo_loss(...).mean()` when ΔV ≡ 1)."""
    losses = dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta)
    if value_gaps.shape != losses.shape:
        raise ValueError(
            f"value_gaps must have one entry per pair {tuple(losses.shape)}, got {tuple(value_gaps.shape)}"
        )
    if not torch.isfinite(value_gaps).all() or (value_gaps < 0).any():
        raise ValueError("value gaps ΔV must be finite and ≥ 0 (the winner's value minus the loser's)")
    return (value_gaps * losses).mean()


@dataclass(frozen=True)
class DPOConfig:
    beta: float = field(default=0.1, metadata={"help": "DPO temperature β (paper: not given; DPO default 0.1)"})
    lr: float = field(default=1e-3, metadata={"help": "Adam learning rate (not given; dossier 1e-3)"})
    batch_size: int = field(default=256, metadata={"help": "pairs per step (not given; our choice)"})
    value_scaled: bool = field(default=True, metadata={"help": "weight pairs by ΔV (MAS²); False = plain DPO"})

    def __post_init__(self):
        finite = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (self.beta, self.lr))
        if not finite or self.beta < 0 or self.lr <= 0 or self.batch_size < 1:
            raise ValueError(f"DPOConfig: beta ≥ 0, lr > 0, batch_size ≥ 1 required; got {self}")


class PreferenceSet:
    """Sibling pairs of one meta-agent as padded tensors, with the frozen reference's log-probs precomputed."""

    def __init__(self, prefs: list[Preference], reference: MetaPolicy, value_scaled: bool):
        if not prefs:
            raise ValueError("PreferenceSet: no preference pairs (the trees had no siblings with different values)")
        self.batch = DecisionBatch.of([p.context for p in prefs])
        Fm = self.batch.factor_mask.shape[1]
        pad = lambda a: list(a) + [0] * (Fm - len(a))  # noqa: E731
        self.win = torch.tensor([pad(p.win) for p in prefs])
        self.lose = torch.tensor([pad(p.lose) for p in prefs])
        self.dv = torch.tensor([p.dv if value_scaled else 1.0 for p in prefs], dtype=torch.float32)
        with torch.no_grad():
            self.ref_w = reference.logprob(self.batch, self.win)
            self.ref_l = reference.logprob(self.batch, self.lose)

    def __len__(self) -> int:
        return len(self.dv)

    def loss(self, policy: MetaPolicy, idx, beta: float) -> torch.Tensor:
        b = self.batch.index(idx)
        return value_scaled_dpo_loss(
            policy.logprob(b, self.win[idx]),
            policy.logprob(b, self.lose[idx]),
            self.ref_w[idx],
            self.ref_l[idx],
            self.dv[idx],
            beta,
        )


class DPOTrainerLite:
    """Adam on L_CTO for one meta-agent; `epoch()` makes one shuffled pass over the pairs."""

    def __init__(self, policy: MetaPolicy, data: PreferenceSet, cfg: DPOConfig, seed: int):
        self.policy, self.data, self.cfg = policy, data, cfg
        self.opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
        self.rng = np.random.default_rng(seed)

    def epoch(self) -> float:
        perm = self.rng.permutation(len(self.data))
        total = 0.0
        for s in range(0, len(perm), self.cfg.batch_size):
            idx = torch.from_numpy(perm[s : s + self.cfg.batch_size])
            loss = self.data.loss(self.policy, idx, self.cfg.beta)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += float(loss.detach()) * len(idx)
        return total / len(perm)
