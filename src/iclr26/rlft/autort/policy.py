"""The toy strategy generator AM^g_theta: a GRU over primitive tokens that writes a strategy and stops.

The paper's generator is an LLM (Vicuna-7B) writing a strategy in words; in the abstract world a strategy is 1..L
primitive ids, so the generator is a small autoregressive policy (token `n_prims` = end). It is unconditional, as in
the paper: the strategy does not see the behaviour it will be applied to.
"""

from __future__ import annotations

import torch
from torch import nn


class PolicyDivergedError(FloatingPointError):
    """The generator's probabilities or a PPO loss became NaN/inf: the update diverged (learning rate too high)."""


def check_probs(p: torch.Tensor, where: str) -> torch.Tensor:
    """``p`` unchanged if every entry is finite; else a clear error instead of torch's raw multinomial failure."""
    if not torch.isfinite(p).all():
        raise PolicyDivergedError(
            f"the strategy generator's probabilities are NaN/inf ({where}): a PPO update diverged. Lower "
            "AutoRTConfig.lr (leave it None for the generator's default: 3e-3 for StrategyPolicy, 1e-6 for an "
            "LMStrategyPolicy on a pretrained LM) or raise kl_coef"
        )
    return p


def constrain(z: torch.Tensor, t: int, end: int, max_len: int) -> torch.Tensor:
    """Logits (n, n_prims + 1) at position t of a strategy: at least one primitive (no end at t = 0) and at most
    ``max_len`` (only end at t = max_len)."""
    if t == 0:
        z = z.index_fill(1, torch.tensor([end], device=z.device), float("-inf"))
    if t == max_len:
        z = torch.full_like(z, float("-inf")).index_fill(1, torch.tensor([end], device=z.device), 0.0)
    return z


class StrategyPolicy(nn.Module):
    default_lr = 3e-3  # AutoRTConfig(lr=None) uses it (the reproduction tunes it on validation)

    def __init__(self, n_prims: int, max_len: int, hidden: int = 64):
        super().__init__()
        self.n_prims, self.max_len = n_prims, max_len
        self.emb = nn.Embedding(n_prims + 2, hidden)  # + end + begin
        self.cell = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, n_prims + 1)

    @property
    def end(self) -> int:
        return self.n_prims

    def _logits(self, h: torch.Tensor, t: int) -> torch.Tensor:
        return constrain(self.out(h), t, self.end, self.max_len)

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None, temperature: float = 1.0) -> torch.Tensor:
        """(n, max_len + 1) token ids; everything after the first end token is end."""
        h = torch.zeros(n, self.cell.hidden_size)
        x = torch.full((n,), self.n_prims + 1)
        out = torch.full((n, self.max_len + 1), self.end)
        done = torch.zeros(n, dtype=torch.bool)
        for t in range(self.max_len + 1):
            h = self.cell(self.emb(x), h)
            p = check_probs(torch.softmax(self._logits(h, t) / temperature, -1), f"sampling position {t}")
            x = torch.multinomial(p, 1, generator=generator).squeeze(1)
            x = torch.where(done, torch.full_like(x, self.end), x)
            out[:, t] = x
            done |= x == self.end
            if done.all():
                break
        return out

    def log_prob(self, tokens: torch.Tensor) -> torch.Tensor:
        """(n,) log-probability of each sequence (tokens up to and including its first end)."""
        n = tokens.shape[0]
        h = torch.zeros(n, self.cell.hidden_size)
        x = torch.full((n,), self.n_prims + 1)
        total = torch.zeros(n)
        alive = torch.ones(n, dtype=torch.bool)
        for t in range(self.max_len + 1):
            h = self.cell(self.emb(x), h)
            lp = torch.log_softmax(self._logits(h, t), -1).gather(1, tokens[:, t : t + 1]).squeeze(1)
            total = total + torch.where(alive, lp, torch.zeros_like(lp))
            alive = alive & (tokens[:, t] != self.end)
            x = tokens[:, t]
            if not alive.any():
                break
        return total


def to_strategies(tokens: torch.Tensor, end: int) -> list[tuple[int, ...]]:
    """Token rows -> strategies (tuples of primitive ids, end removed)."""
    out = []
    for row in tokens.tolist():
        out.append(tuple(row[: row.index(end)] if end in row else row))
    return out


def to_tokens(strategies, max_len: int, end: int) -> torch.Tensor:
    """Strategies -> (n, max_len + 1) token rows padded with end (for supervised fitting)."""
    out = torch.full((len(strategies), max_len + 1), end)
    for i, s in enumerate(strategies):
        if not 1 <= len(s) <= max_len:
            raise ValueError(f"strategy length must lie in [1, {max_len}], got {s!r}")
        out[i, : len(s)] = torch.tensor(list(s))
    return out


def fit_supervised(policy: StrategyPolicy, strategies, lr: float = 1e-2, max_steps: int = 400, tol: float = 1e-3):
    """Imitation learning (the IL baseline): maximum likelihood on example strategies, to a loss plateau."""
    toks = to_tokens(strategies, policy.max_len, policy.end)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    prev = float("inf")
    for step in range(max_steps):
        loss = -policy.log_prob(toks).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 19:
            if prev - loss.item() < tol:
                break
            prev = loss.item()
    return policy
