"""LTPO's baselines on the same frozen model and the same problems.

- CoT-Unk: the placeholder thoughts H^0, not optimised (≡ LTPO with T = 0, or with σ → 0 and η = 0).
- Direct: no thought slots at all (the prompt without the thoughts; built by the caller).
- Random search (our control): T candidates H^0 + ε_t with the same σ schedule and the same number of forward
  passes; the candidate with the highest confidence reward is kept. It has the reward but no policy gradient.
- Constant-reward random walk (our control, issue #41): LTPO's own loop with the same noise ε_t (same seeds) and
  the same σ schedule, best-reward tracking included, but R(H + ε) in the update replaced by a constant (the reward of
  H^0). Its displacement is what LTPO's update does without any reward signal; LTPO minus the walk is the policy
  gradient's contribution.
- Gold-label oracle (upper bound, leaks the label): Adam on H maximising log p(gold answer | x, H, g), T steps; the
  latent with the highest gold log-probability is kept.
"""

from __future__ import annotations

import time

import torch

from .config import LTPOConfig
from .optimize import LTPO, LTPOTrace, _generators, _noise, _stack
from .scorer import LatentScorer


@torch.no_grad()
def random_search(sc: LatentScorer, cfg: LTPOConfig, sigma0: float, seeds) -> LTPOTrace:
    """Best-reward candidate among T Gaussian perturbations of H^0 (same σ schedule and passes as LTPO)."""
    t0, n0, gens = time.perf_counter(), sc.n_forward, _generators(seeds)
    h0, sigma = sc.h0, sigma0
    best_r, best_step = torch.full((len(h0),), -float("inf")), torch.full((len(h0),), -1)
    h_best, rewards = h0.clone(), []
    for t in range(cfg.steps):
        cand = h0 + _noise(gens, h0) * sigma
        r = sc.reward(cand, cfg.top_k)
        better = r > best_r
        best_r, best_step = torch.where(better, r, best_r), torch.where(better, t, best_step)
        h_best[better] = cand[better]
        rewards.append(r)
        sigma *= cfg.sigma_decay
    return LTPOTrace(_stack(rewards, len(h0)), best_r, best_step, h0.clone(), h_best, h_best.clone(),
                     sc.n_forward - n0, time.perf_counter() - t0)  # fmt: skip


@torch.no_grad()
def random_walk(sc: LatentScorer, cfg: LTPOConfig, seeds, constant: torch.Tensor | None = None) -> LTPOTrace:
    """LTPO's REINFORCE loop (``cfg``'s σ0, η, decay; the same seeded noise) with a constant reward in the update:
    ``H ← H + η · c · ε / σ²``, c = R(H^0) per problem unless given. Best-reward tracking as LTPO's."""
    if cfg.estimator != "reinforce":
        raise ValueError("random_walk is the control of the REINFORCE estimator: pass estimator='reinforce'")
    t0, n0 = time.perf_counter(), sc.n_forward
    c = sc.reward(sc.h0, cfg.top_k) if constant is None else torch.as_tensor(constant, dtype=torch.float32)
    trace = LTPO(sc.model, None, cfg)._reinforce(sc, _generators(seeds), constant=c.reshape(len(sc.h0)))
    trace.n_forward, trace.seconds = sc.n_forward - n0, time.perf_counter() - t0
    return trace


def gold_oracle(sc: LatentScorer, answer_ids: torch.Tensor, steps: int, lr: float) -> LTPOTrace:
    """Adam on H maximising the gold answer's log-probability (label leak: an upper bound, not a method)."""
    t0, n0 = time.perf_counter(), sc.n_forward
    h = torch.nn.Parameter(sc.h0.clone().float())
    opt = torch.optim.Adam([h], lr=lr, maximize=True)
    best, best_step, h_best, trace = None, torch.full((len(h),), -1), h.detach().clone(), []
    for t in range(steps + 1):  # the last pass only scores the final H
        with torch.enable_grad():
            lp = sc.gold_logprob(h, answer_ids)
            grad = torch.autograd.grad(lp.sum(), h)[0] if t < steps else None
        lp = lp.detach()
        better = lp > best if best is not None else torch.ones_like(lp, dtype=torch.bool)
        best = lp if best is None else torch.where(better, lp, best)
        best_step = torch.where(better, t, best_step)
        h_best[better] = h.detach()[better]
        trace.append(lp)
        if grad is not None:
            h.grad = grad
            opt.step()
    return LTPOTrace(torch.stack(trace), best, best_step, sc.h0.clone(), h_best, h.detach().clone(),
                     sc.n_forward - n0, time.perf_counter() - t0)  # fmt: skip
