"""AUTO-RT's training loop: PPO on the strategy generator with DSP (Eq. 3) and PRT (Eq. 4), under a target budget.

Per generated strategy s (the dossier's transcription of the paper's pipeline):

    if DSP and max_sim(s, pool) > c_1:      reward = C_div, stop          (no rephrasing, no queries)
    a ~ training behaviours
    if DSP and the judge says q = AM^r(a, s) lost the intent: reward = C_cons, stop
    if PRT:  TM' broken?  no -> 0;  yes -> 1 + [TM broken]                 (Eq. 4, TM queried only here)
    else:    reward = [TM broken]                                          (Eq. 2)
    if TM broken: s joins the pool

Batches of strategies update the generator by PPO (clipped ratio, several passes) with a KL penalty to the initial
generator; training stops when the query budget is spent (target queries, plus downgrade queries unless
``count_downgrade_queries=False``) or after `max_samples_factor` x budget strategies. A non-finite PPO loss or
parameter (a diverging update) raises `PolicyDivergedError` naming the learning rate.
Switching both components off gives the RL baseline with the plain reward of Eq. 2.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from tqdm.auto import tqdm

from .config import AutoRTConfig
from .policy import PolicyDivergedError, StrategyPolicy, to_strategies
from .prt import ProgressiveRewardTracker
from .pruning import DynamicStrategyPruner, multi_hot


class AutoRT:
    """``AutoRT(policy, env, cfg).train()``; ``env`` has ``reset``, ``consistent``, ``query_target`` and, for PRT,
    ``query_downgrade`` and ``target_queries`` (`iclr26.rlft.autort.world.RedTeamEnv`)."""

    def __init__(self, policy: StrategyPolicy, env, cfg: AutoRTConfig | None = None, embed=None):
        self.policy, self.env, self.cfg = policy, env, cfg or AutoRTConfig()
        if self.cfg.use_prt and getattr(env, "downgrade", None) is None:
            raise ValueError("use_prt=True needs an environment with a downgrade model (RedTeamEnv(..., downgrade=k))")
        self.ref = copy.deepcopy(policy).requires_grad_(False)
        self.lr = self.cfg.lr if self.cfg.lr is not None else getattr(policy, "default_lr", 3e-3)
        self.opt = torch.optim.Adam([p for p in policy.parameters() if p.requires_grad], lr=self.lr)
        embed = embed or (lambda s: multi_hot(s, policy.n_prims))
        self.pruner = DynamicStrategyPruner(embed, self.cfg.sim_threshold, self.cfg.div_penalty, self.cfg.cons_penalty)
        self.prt = ProgressiveRewardTracker(env) if self.cfg.use_prt else None
        self.gen = torch.Generator().manual_seed(self.cfg.seed)
        self.samples, self.history = 0, []
        self.generated: set = set()  # every distinct strategy generated (sets of primitives)

    def _reward(self, s) -> float:
        """One strategy through the pipeline; returns its reward and adds target hits to the pool."""
        env, cfg = self.env, self.cfg
        env.reset()  # a = a training behaviour (nothing is queried yet)
        if cfg.use_dsp:  # Eq. 3: diversity, then consistency; the first failure ends the episode with its penalty
            penalty = self.pruner.check(s, lambda: env.consistent(s))
            if penalty is not None:
                return penalty
        if self.prt is not None:
            r, hit = self.prt(s)
        else:
            hit = bool(env.query_target(s))
            r = float(hit)
        if hit:
            self.pruner.add(s)
        return r

    def _update(self, tokens: torch.Tensor, rewards: torch.Tensor) -> float:
        cfg = self.cfg
        if not torch.isfinite(rewards).all():
            raise ValueError(f"rewards must be finite numbers, got {rewards.tolist()} (check the environment's judge)")
        std = rewards.std()
        adv = (rewards - rewards.mean()) / (std + 1e-8) if std > 0 else torch.zeros_like(rewards)
        with torch.no_grad():
            old, ref = self.policy.log_prob(tokens), self.ref.log_prob(tokens)
        for _ in range(cfg.ppo_epochs):
            lp = self.policy.log_prob(tokens)
            ratio = torch.exp(lp - old)
            pg = -torch.min(ratio * adv, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * adv).mean()
            log_r = ref - lp
            kl = (torch.exp(log_r) - 1 - log_r).mean()  # k3 estimator of KL(pi_theta || pi_init)
            loss = pg + cfg.kl_coef * kl
            if not torch.isfinite(loss):
                self._diverged(f"the PPO loss is {float(loss.detach())}")
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        if any(not torch.isfinite(p).all() for p in self.policy.parameters() if p.requires_grad):
            self._diverged("a parameter became NaN/inf")
        return float(kl.detach())

    def _diverged(self, what: str):
        raise PolicyDivergedError(
            f"PPO update {len(self.history) + 1} diverged ({what}) at lr {self.lr:g}: lower AutoRTConfig.lr (None "
            "picks the generator's default: 1e-6 for an LMStrategyPolicy on a pretrained LM) or raise kl_coef"
        )

    @property
    def queries(self) -> int:
        """Queries spent against the budget: target queries, plus downgrade queries when they count."""
        down = getattr(self.env, "downgrade_queries", 0) if self.cfg.count_downgrade_queries else 0
        return self.env.target_queries + down

    def train(self, progress: bool = False) -> list[dict]:
        cfg, env = self.cfg, self.env
        cap = int(cfg.max_samples_factor * cfg.target_budget)
        env.reset(seed=cfg.seed)
        bar = tqdm(total=cfg.target_budget, disable=not progress, desc="queries")
        while self.queries < cfg.target_budget and self.samples < cap:
            toks = self.policy.sample(cfg.batch_size, generator=self.gen)
            rewards, keep = [], 0
            for s in to_strategies(toks, self.policy.end):
                if self.queries >= cfg.target_budget or self.samples >= cap:
                    break
                self.generated.add(frozenset(s))
                rewards.append(self._reward(s))
                keep += 1
                self.samples += 1
            if keep >= 2:
                kl = self._update(toks[:keep], torch.tensor(rewards, dtype=torch.float32))
                self.history.append(
                    {
                        "samples": self.samples,
                        "target_queries": env.target_queries,
                        "queries": self.queries,
                        "reward": float(np.mean(rewards)),
                        "pool": len(self.pruner.pool),
                        "kl": kl,
                    }
                )
            bar.n = min(self.queries, cfg.target_budget)
            bar.refresh()
        bar.close()
        return self.history

    @property
    def pool(self) -> list:
        return self.pruner.pool
