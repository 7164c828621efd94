"""LTPO: per-problem policy-gradient optimisation of K latent thought embeddings with the frozen model's own
confidence as reward (Ye, Liang & Shan, ICLR 2026, https://arxiv.org/abs/2510.04182).

State: the thoughts H ∈ R^{K×d}. Policy: an isotropic Gaussian around the state, A = H + ε, ε ~ N(0, σ²I) (the paper's
RL formulation; equation numbers other than the reward's Eq. 4-5 were not available to us).
Reward: R(A), the mean top-k confidence at the thought positions (Eq. 4-5), one forward pass, no decoding. Objective
J(H) = E_A[R(A)]; REINFORCE with ∇_H log π(A|H) = ε/σ² and one sample per step gives the update

    H ← H + η · R(H + ε) · ε / σ²          (no baseline, as the official code)
    σ ← γ_σ · σ

The latent with the highest reward seen is kept (the official code stores the *updated* H of the step whose
candidate scored best) and the answer is generated from [E(x); H*; E(g)]. The ``autograd`` estimator (an option of
the official code) instead back-propagates R(H + ε) through the frozen model and takes an Adam step on H.
Everything is batched over problems of equal shape; each problem draws its noise from its own seeded generator, so
a batch gives the same trajectories as one-by-one runs.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch

from .config import LTPOConfig
from .problem import THOUGHT_NOTE, LatentProblem, chat_problem
from .scorer import LatentScorer


@dataclass
class LTPOTrace:
    """What one optimisation did, per problem in the batch."""

    rewards: torch.Tensor  # [T, B] reward of the evaluated candidate at every step
    best_reward: torch.Tensor  # [B]
    best_step: torch.Tensor  # [B] (−1: no step beat the initial best_reward = 0)
    h_init: torch.Tensor  # [B, K, d]
    h_best: torch.Tensor
    h_last: torch.Tensor
    n_forward: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def h_answer(self, best: bool = True) -> torch.Tensor:
        return self.h_best if best else self.h_last


def _noise(gens: list[torch.Generator], like: torch.Tensor) -> torch.Tensor:
    """Standard normal noise shaped like ``like`` [B, K, d], row b drawn from generator b."""
    return torch.stack([torch.randn(like.shape[1:], generator=g, dtype=torch.float32) for g in gens]).to(like.dtype)


def _generators(seeds) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(int(s)) for s in seeds]


class LTPO:
    """Test-time latent thought optimisation on any HF causal LM (the model is never modified).

    >>> ltpo = LTPO(model, tokenizer, LTPOConfig(num_thoughts=8, steps=20))
    >>> text, trace = ltpo.solve("What is 17 + 25?")
    """

    def __init__(self, model, tokenizer=None, config: LTPOConfig | None = None, **overrides):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.config = config or LTPOConfig(**overrides)
        if config is not None and overrides:
            raise ValueError("pass either an LTPOConfig or keyword overrides, not both")
        if self.config.top_k > model.get_input_embeddings().weight.shape[0]:
            raise ValueError(f"LTPOConfig.top_k={self.config.top_k} exceeds the vocabulary size")

    # ------------------------------------------------------------------------------------------------- building
    def problem(self, question: str) -> LatentProblem:
        """The problem of one question: chat-formatted, or plain text for a tokenizer without a chat template."""
        if self.tokenizer is None:
            raise ValueError("LTPO.problem needs a tokenizer; pass LatentProblem objects to optimize() instead")
        c = self.config
        note = THOUGHT_NOTE if c.note is None else c.note
        return chat_problem(self.tokenizer, question, c.num_thoughts, c.placeholder, note, c.answer_prefix)

    def scorer(self, problems: list[LatentProblem]) -> LatentScorer:
        return LatentScorer(self.model, problems, self.config.use_cache, self.config.include_next_position)

    def sigma0(self) -> float:
        """σ0, in embedding units: ``sigma`` × RMS of the embedding table when ``sigma_relative``."""
        c = self.config
        if not c.sigma_relative:
            return c.sigma
        w = self.model.get_input_embeddings().weight
        return c.sigma * float(w.detach().float().pow(2).mean().sqrt())

    # ------------------------------------------------------------------------------------------------- the loop
    def optimize(self, problems: list[LatentProblem] | LatentProblem, seeds=None, scorer=None) -> LTPOTrace:
        """Run T steps on a batch of equal-shape problems; ``seeds`` (one per problem) seed the policy noise."""
        problems = [problems] if isinstance(problems, LatentProblem) else list(problems)
        seeds = list(range(len(problems))) if seeds is None else list(seeds)
        if len(seeds) != len(problems):
            raise ValueError(f"need one seed per problem: {len(seeds)} seeds for {len(problems)} problems")
        sc = scorer or self.scorer(problems)
        t0, n0 = time.perf_counter(), sc.n_forward
        if self.config.estimator == "reinforce":
            trace = self._reinforce(sc, _generators(seeds))
        else:
            trace = self._autograd(sc, _generators(seeds))
        trace.n_forward, trace.seconds = sc.n_forward - n0, time.perf_counter() - t0
        return trace

    @torch.no_grad()
    def _reinforce(self, sc: LatentScorer, gens, constant: torch.Tensor | None = None) -> LTPOTrace:
        """The REINFORCE loop; ``constant`` [B] replaces R(H + ε) in the update (not in the best-reward tracking):
        the constant-reward random walk, our control with the same noise (``baselines.random_walk``)."""
        c, sigma = self.config, self.sigma0()
        h = sc.h0.clone()
        best_r = torch.zeros(len(h))  # the official code starts best_reward at 0 (rewards are positive)
        best_step = torch.full((len(h),), -1)
        h_best, rewards = h.clone(), []
        active = torch.ones(len(h), dtype=torch.bool)
        for t in range(c.steps):
            eps = _noise(gens, h) * sigma  # policy: ε ~ N(0, σ²I)
            r = sc.reward(h + eps, c.top_k)  # R(H + ε): one forward pass, no grad
            _finite(r, "reward", t)
            if sigma > 0 and c.lr > 0:
                # REINFORCE: H ← H + η · R · ε / σ²   (frozen rows of problems that already stopped early)
                r_upd = r if constant is None else constant
                h = h + (c.lr * r_upd * active)[:, None, None] * eps / sigma**2
                _finite(h, "thoughts", t)
            sigma *= c.sigma_decay
            better = (r > best_r) & active
            best_r = torch.where(better, r, best_r)
            best_step = torch.where(better, t, best_step)
            h_best[better] = h[better]  # the updated H is stored, as in the official loop
            rewards.append(r)
            if c.reward_threshold > 0:
                active &= r < c.reward_threshold
                if not active.any():
                    break
        return LTPOTrace(_stack(rewards, len(h)), best_r, best_step, sc.h0.clone(), h_best, h)

    def _autograd(self, sc: LatentScorer, gens) -> LTPOTrace:
        c, sigma = self.config, self.sigma0()
        h = torch.nn.Parameter(sc.h0.clone().float())
        opt = torch.optim.Adam([h], lr=c.lr, maximize=True)
        best_r, best_step = torch.zeros(len(h)), torch.full((len(h),), -1)
        h_best, rewards = h.detach().clone(), []
        for t in range(c.steps):
            eps = _noise(gens, h.detach()) * sigma
            with torch.enable_grad():
                r = sc.reward(h + eps, c.top_k)
                _finite(r, "reward", t)
                # gradient of Σ_b R_b w.r.t. H only (the model's parameters get no .grad)
                (grad,) = torch.autograd.grad(r.sum(), h)
            h.grad = grad
            opt.step()
            sigma *= c.sigma_decay
            r = r.detach()
            better = r > best_r
            best_r, best_step = torch.where(better, r, best_r), torch.where(better, t, best_step)
            h_best[better] = h.detach()[better]
            rewards.append(r)
            if c.reward_threshold > 0 and bool((r >= c.reward_threshold).all()):
                break
        return LTPOTrace(_stack(rewards, len(h)), best_r, best_step, sc.h0.clone(), h_best, h.detach().clone())

    # ------------------------------------------------------------------------------------------------- answers
    @torch.no_grad()
    def generate(self, sc: LatentScorer, h: torch.Tensor, max_new_tokens: int | None = None) -> torch.Tensor:
        """Greedy answer ids [B, ≤ max_new_tokens] from ``generate(inputs_embeds=[E(x); H; E(g)])``."""
        x = sc.embeds(h)
        tok = self.tokenizer
        pad = getattr(tok, "pad_token_id", None) if tok is not None else None
        kw = dict(do_sample=False, num_beams=1, temperature=None, top_p=None, top_k=None)
        cache = copy.deepcopy(sc.cache) if sc.cache is not None else None  # the prefix is not encoded again
        mask = sc.attention_mask(x.shape[1] - sc.n_prefix)
        mask = torch.ones(x.shape[:2], dtype=torch.long) if mask is None else mask
        out = self.model.generate(inputs_embeds=x, past_key_values=cache, attention_mask=mask,
                                  max_new_tokens=max_new_tokens or self.config.max_new_tokens,
                                  pad_token_id=pad if pad is not None else 0, **kw)  # fmt: skip
        return out  # with inputs_embeds and no input_ids, generate returns only the new tokens

    def solve(self, question: str, seed: int = 0) -> tuple[str, LTPOTrace]:
        """Optimise the thoughts of one chat question and generate the answer text from the kept latent."""
        problem = self.problem(question)
        sc = self.scorer([problem])
        trace = self.optimize([problem], [seed], scorer=sc)
        ids = self.generate(sc, trace.h_answer(self.config.best_reward))
        return self.tokenizer.decode(ids[0], skip_special_tokens=True), trace


def _finite(x: torch.Tensor, what: str, step: int) -> None:
    if not bool(torch.isfinite(x).all()):
        raise FloatingPointError(
            f"LTPO: non-finite {what} at step {step} (the model's logits or the thoughts overflowed): lower "
            "LTPOConfig.lr or sigma (on small models use sigma_relative=True)"
        )


def _stack(rewards: list[torch.Tensor], b: int) -> torch.Tensor:
    return torch.stack(rewards) if rewards else torch.zeros(0, b)
