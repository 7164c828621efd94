"""AUTO-RT's training loop: PPO on the strategy generator with DSP (Eq. 3) and PRT (Eq. 4), under a target budget.

Per generated strategy s (the dossier's transcription of the paper's pipeline):

    if DSP and max_sim(s, pool) > c_1:      reward = C_div, stop          (no rephrasing, no queries)
    a ~ training behaviours
    if DSP and the judge says q = AM^r(a, s) lost the intent: reward = C_cons, stop
    if PRT:  TM' broken?  no -> 0;  yes -> 1 + [TM broken]                 (Eq. 4, TM queried only here)
    else:    reward = [TM broken]                                          (Eq. 2)
    if TM broken: s joins the pool

Batches of strategies update the generator by PPO (clipped ratio, several passes) with a KL penalty to the initial
generator; training stops when the target-query budget is spent (or after `max_samples_factor` x budget strategies).
Switching both components off gives the RL baseline with the plain reward of Eq. 2.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from tqdm.auto import tqdm

from .config import AutoRTConfig
from .policy import StrategyPolicy, to_strategies
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
        self.opt = torch.optim.Adam(policy.parameters(), lr=self.cfg.lr)
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
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return float(kl.detach())

    def train(self, progress: bool = False) -> list[dict]:
        cfg, env = self.cfg, self.env
        cap = int(cfg.max_samples_factor * cfg.target_budget)
        env.reset(seed=cfg.seed)
        bar = tqdm(total=cfg.target_budget, disable=not progress, desc="target queries")
        while env.target_queries < cfg.target_budget and self.samples < cap:
            toks = self.policy.sample(cfg.batch_size, generator=self.gen)
            rewards, keep = [], 0
            for s in to_strategies(toks, self.policy.end):
                if env.target_queries >= cfg.target_budget or self.samples >= cap:
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
                        "reward": float(np.mean(rewards)),
                        "pool": len(self.pruner.pool),
                        "kl": kl,
                    }
                )
            bar.n = min(env.target_queries, cfg.target_budget)
            bar.refresh()
        bar.close()
        return self.history

    @property
    def pool(self) -> list:
        return self.pruner.pool
