"""Exact alignment counting for SCISOR's deletion target (Prop. 4.3 of https://arxiv.org/abs/2511.07390).

Under the insertion-only forward process, the clean sequence X_0 (length L) sits inside the noisy X_t (length
L + M) as an order-preserving embedding, uniformly at random among all ``ali(X_0, X_t)`` embeddings that are
consistent with the letters. The probability that position i of X_t was the last letter inserted is

    p(i | X_0, X_t, M) = ali(X_0, X_t \\ i) / (M · ali(X_0, X_t))                        (Prop. 4.3)

and Σ_i ali(X_0, X_t \\ i) = M · ali(X_0, X_t), so the target is the normalised vector of deletion counts. Both come
from one prefix/suffix dynamic programme, O(L·|X_t|), computed here in log space and batched over padded sequences:

    P[i, j] = #emb. of X_0[:j] into X_t[:i]   P[i, 0] = 1,  P[i, j] = P[i-1, j] + 1[X0_{j-1} = Xt_{i-1}] P[i-1, j-1]
    S[i, j] = #emb. of X_0[j:] into X_t[i:]   S[i, L] = 1,  S[i, j] = S[i+1, j] + 1[X0_j = Xt_i] S[i+1, j+1]
    del[i]  = Σ_j P[i, j] · S[i+1, j]              (embeddings that skip position i)
"""

from __future__ import annotations

import torch

NEG_INF = float("-inf")


def _check(x0: torch.Tensor, xt: torch.Tensor, len0: torch.Tensor | None, lent: torch.Tensor | None):
    if x0.dim() == 1:
        x0, xt = x0[None], xt[None]
    if x0.dim() != 2 or xt.dim() != 2 or x0.shape[0] != xt.shape[0]:
        raise ValueError(
            f"x0 and xt must be [B, L] and [B, N] with the same B; got {tuple(x0.shape)}, {tuple(xt.shape)}"
        )
    b = x0.shape[0]
    len0 = torch.full((b,), x0.shape[1], dtype=torch.long) if len0 is None else torch.as_tensor(len0).long()
    lent = torch.full((b,), xt.shape[1], dtype=torch.long) if lent is None else torch.as_tensor(lent).long()
    return x0, xt, len0.cpu(), lent.cpu()


def _log_match(x0, xt, len0, lent):
    """log 1[X0_j == Xt_i] as [B, Lmax, Nmax]; padded letters never match."""
    m = x0[:, :, None] == xt[:, None, :]
    m &= (torch.arange(x0.shape[1])[None, :, None] < len0[:, None, None]).to(m.device)
    m &= (torch.arange(xt.shape[1])[None, None, :] < lent[:, None, None]).to(m.device)
    out = torch.full(m.shape, NEG_INF, dtype=torch.float64, device=m.device)
    return out.masked_fill(m, 0.0)


def _log_prefix(lm: torch.Tensor) -> torch.Tensor:
    """P as [B, N+1, L+1] (log)."""
    b, lmax, n = lm.shape
    out = torch.full((b, n + 1, lmax + 1), NEG_INF, dtype=lm.dtype, device=lm.device)
    out[:, :, 0] = 0.0  # P[:, 0] = 1
    for j in range(1, lmax + 1):
        # P[i, j] = Σ_{i' < i} 1[X0_{j-1} = Xt_{i'}] P[i', j-1]  (cumulative sum of the recursion); P[0, j] = 0
        out[:, 1:, j] = torch.logcumsumexp(out[:, :-1, j - 1] + lm[:, j - 1, :], dim=1)
    return out


def _log_suffix(lm: torch.Tensor, len0: torch.Tensor) -> torch.Tensor:
    """S as [B, N+1, L+1] (log); column j = len0[b] is all ones for sequence b, columns beyond it are -inf."""
    b, lmax, n = lm.shape
    out = torch.full((b, n + 1, lmax + 1), NEG_INF, dtype=lm.dtype, device=lm.device)
    len0 = len0.to(lm.device)
    rows = torch.arange(b, device=lm.device)
    out[rows, :, len0] = 0.0  # S[:, len0] = 1 (the empty suffix embeds once anywhere)
    for j in range(lmax - 1, -1, -1):
        # S[i, j] = Σ_{i' ≥ i} 1[X0_j = Xt_{i'}] S[i'+1, j+1]  (reverse cumulative sum); S[N, j] = 0 for j < len0
        inc = out[:, 1:, j + 1] + lm[:, j, :]
        col = torch.logcumsumexp(inc.flip(1), dim=1).flip(1)
        live = (len0 > j)[:, None]  # rows whose X_0 extends past j; the others keep their 1 (j = len0) or -inf
        out[:, :-1, j] = torch.where(live, col, out[:, :-1, j])
    return out


@torch.no_grad()
def log_alignment_count(x0, xt, len0=None, lent=None) -> torch.Tensor:
    """log ali(X_0, X_t): the number of order-preserving embeddings of X_0 into X_t, per batch row ([B])."""
    x0, xt, len0, lent = _check(torch.as_tensor(x0), torch.as_tensor(xt), len0, lent)
    p = _log_prefix(_log_match(x0, xt, len0, lent))
    return p[torch.arange(x0.shape[0]), -1, len0.to(p.device)]


@torch.no_grad()
def log_deletion_counts(x0, xt, len0=None, lent=None) -> torch.Tensor:
    """log ali(X_0, X_t \\ i) for every position i of X_t ([B, N]; -inf at padding and where no embedding skips i)."""
    x0, xt, len0, lent = _check(torch.as_tensor(x0), torch.as_tensor(xt), len0, lent)
    lm = _log_match(x0, xt, len0, lent)
    p, s = _log_prefix(lm), _log_suffix(lm, len0)
    # del[i] = Σ_j P[i, j] S[i+1, j]
    out = torch.logsumexp(p[:, :-1, :] + s[:, 1:, :], dim=2)
    pad = torch.arange(xt.shape[1])[None, :] >= lent[:, None]
    return out.masked_fill(pad.to(out.device), NEG_INF)


@torch.no_grad()
def log_deletion_target(x0, xt, len0=None, lent=None) -> torch.Tensor:
    """log p(i | X_0, X_t, M) of Prop. 4.3: the normalised deletion counts ([B, N], float32)."""
    lc = log_deletion_counts(x0, xt, len0, lent)
    norm = torch.logsumexp(lc, dim=1, keepdim=True)
    if torch.isinf(norm).any():
        raise ValueError("X_0 is not a proper subsequence of X_t for some row (ali(X_0, X_t \\ i) = 0 for all i)")
    return (lc - norm).float()
