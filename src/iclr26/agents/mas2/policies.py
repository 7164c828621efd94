"""Meta-policies over discrete choices: a candidate scorer with a softmax per decision factor.

A decision is one or more *factors* (the Generator and Rectifier: one; the Implementer: one per role of the template),
each a set of candidate rows; the action picks one candidate per factor and

    log π(a | c) = Σ_f [ s_θ(x_{f, a_f}) − log Σ_j exp s_θ(x_{f, j}) ]

is exact (no sampling of text). The scorer is a small MLP whose last layer starts at zero, so the initial policy is
uniform: the frozen reference π_ref of the DPO loss ("reference = initial uniform-ish policy", dossier). A user with an
LLM meta-agent replaces the scorer by the LM's log-likelihood of the action text (any `Scorer`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import nn


class Scorer(Protocol):
    """Maps candidate rows [..., F] to scores [...]; an nn.Module so that it can be trained."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...


class MLPScorer(nn.Module):
    """Two ReLU layers and a linear score. (A tanh MLP of width 64 underfitted the rare hard-task contexts: it kept
    the cheapest backbone everywhere although the preference data favoured stronger ones there.)"""

    def __init__(self, dim: int, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.out = nn.Linear(hidden, 1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)  # uniform initial policy

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.net(x)).squeeze(-1)

    def numpy_forward(self, x: np.ndarray) -> np.ndarray:
        """The same scores in numpy (no autograd): ~10× faster than torch for one small decision."""
        l1, l2 = self.net[0], self.net[2]
        h = np.maximum(x @ l1.weight.detach().numpy().T + l1.bias.detach().numpy(), 0.0)
        h = np.maximum(h @ l2.weight.detach().numpy().T + l2.bias.detach().numpy(), 0.0)
        return h @ self.out.weight.detach().numpy()[0] + self.out.bias.detach().numpy()[0]


@dataclass
class DecisionBatch:
    """Padded decisions: feats [B, F_max, C_max, D], cand_mask [B, F_max, C_max], factor_mask [B, F_max]."""

    feats: torch.Tensor
    cand_mask: torch.Tensor
    factor_mask: torch.Tensor

    @staticmethod
    def of(decisions: list[np.ndarray]) -> DecisionBatch:
        """`decisions[i]` is [n_factors, n_candidates, D] (or [n_candidates, D] for one factor)."""
        ds = [d[None] if d.ndim == 2 else d for d in decisions]
        B, Fm, Cm, D = len(ds), max(d.shape[0] for d in ds), max(d.shape[1] for d in ds), ds[0].shape[2]
        feats = np.zeros((B, Fm, Cm, D), dtype=np.float32)
        cmask = np.zeros((B, Fm, Cm), dtype=bool)
        for i, d in enumerate(ds):
            feats[i, : d.shape[0], : d.shape[1]] = d
            cmask[i, : d.shape[0], : d.shape[1]] = True
        return DecisionBatch(torch.from_numpy(feats), torch.from_numpy(cmask), torch.from_numpy(cmask.any(-1)))

    def index(self, idx) -> DecisionBatch:
        return DecisionBatch(self.feats[idx], self.cand_mask[idx], self.factor_mask[idx])


class MetaPolicy(nn.Module):
    """π_θ(a | c) for one meta-agent (Generator, Implementer or Rectifier)."""

    def __init__(self, scorer: nn.Module):
        super().__init__()
        self.scorer = scorer

    def factor_logprobs(self, batch: DecisionBatch) -> torch.Tensor:
        """[B, F_max, C_max] log-softmax over each factor's candidates (−inf on padding)."""
        s = self.scorer(batch.feats).masked_fill(~batch.cand_mask, float("-inf"))
        lp = torch.log_softmax(s, dim=-1)
        return lp.masked_fill(~batch.cand_mask, float("-inf"))

    def logprob(self, batch: DecisionBatch, actions: torch.Tensor) -> torch.Tensor:
        """log π(a | c) [B] for actions [B, F_max] (candidate index per factor; padded factors ignored)."""
        lp = self.factor_logprobs(batch)
        picked = lp.gather(-1, actions.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return picked.masked_fill(~batch.factor_mask, 0.0).sum(-1)

    def greedy(self, decision: np.ndarray) -> tuple[int, ...]:
        return tuple(int(i) for i in self.decision_logprobs(decision).argmax(-1))

    @torch.no_grad()
    def decision_logprobs(self, decision: np.ndarray) -> np.ndarray:
        """[n_factors, n_candidates] log-probabilities of one decision."""
        d = decision[None] if decision.ndim == 2 else decision
        if hasattr(self.scorer, "numpy_forward"):
            s = self.scorer.numpy_forward(d)
            m = s.max(-1, keepdims=True)
            return s - m - np.log(np.exp(s - m).sum(-1, keepdims=True))
        return self.factor_logprobs(DecisionBatch.of([decision]))[0].numpy()[: d.shape[0]]

    def sample_distinct(
        self, decision: np.ndarray, k: int, rng: np.random.Generator, lp: np.ndarray | None = None
    ) -> list[tuple[int, ...]]:
        """Up to k distinct joint actions, sampled without replacement (Gumbel top-k over the joint log-probs);
        `lp` = precomputed `decision_logprobs(decision)`."""
        lp = self.decision_logprobs(decision) if lp is None else lp
        n_f, n_c = lp.shape
        grids = np.meshgrid(*[np.arange(n_c)] * n_f, indexing="ij")
        joint = np.stack([g.ravel() for g in grids], 1)  # every joint action [n_c^n_f, n_f]
        score = sum(lp[f, joint[:, f]] for f in range(n_f)) + rng.gumbel(size=len(joint))
        top = np.argsort(-score)[: min(k, len(joint))]
        return [tuple(int(i) for i in joint[j]) for j in top]

    def frozen_copy(self) -> MetaPolicy:
        ref = copy.deepcopy(self)
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref.eval()


@dataclass
class MetaAgents:
    """The three meta-agents of MAS²."""

    generator: MetaPolicy
    implementer: MetaPolicy
    rectifier: MetaPolicy

    @staticmethod
    def init(seed: int, hidden: int = 128) -> MetaAgents:
        from .features import GEN_DIM, IMP_DIM, REC_DIM

        torch.manual_seed(seed)
        return MetaAgents(*(MetaPolicy(MLPScorer(d, hidden)) for d in (GEN_DIM, IMP_DIM, REC_DIM)))

    def role(self, name: str) -> MetaPolicy:
        return getattr(self, name)

    def copy(self) -> MetaAgents:
        return MetaAgents(*(copy.deepcopy(p) for p in (self.generator, self.implementer, self.rectifier)))
