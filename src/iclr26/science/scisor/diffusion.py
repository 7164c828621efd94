"""SCISOR: insertion-only forward / deletion-only reverse discrete diffusion (Baronet et al., ICLR 2026,
https://arxiv.org/abs/2511.07390; official code https://github.com/baronet2/SCISOR).

Idea. Noise a protein by *inserting* random letters (a pure-birth process: each of the n+1 gaps of a length-n
sequence spawns a letter Y ~ π at rate β(t)); learn the reverse, which only *deletes*. The denoiser is a softmax over
the positions of X_t that says which letter was inserted last; its exact training target marginalises over every
way X_0 can sit inside X_t (the alignment DP in :mod:`.alignments`). A trained model shrinks a real protein by
deleting, one at a time, the letters it believes were inserted, and scores a deletion variant by how likely the
model finds that deletion.

Closed form of the forward process (α(t) = exp(-∫β), α(0) = 1):
    M_t ~ NegBin(L+1, 1-α(t)),  P(M=m) = C(L+m, m) α^{L+1} (1-α)^m                        (Sec. 4, closed form)
    X_t = X_0's letters at a uniformly random size-L subset of the L+M positions, the others i.i.d. π.
We use α(t) = 1 - t (so β(t) = 1/(1-t)), the dossier's reasoned default (the code's "cos" schedule was not recovered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from .alignments import log_deletion_target
from .inputs import check_sequence, check_variants


@dataclass
class SCISORConfig:
    vocab: int = field(default=20, metadata={"help": "alphabet size (paper: 20 amino acids)"})
    d_model: int = field(default=128, metadata={"help": "transformer width (paper: ESM2-35M, 480; ours tiny)"})
    n_layers: int = field(default=4, metadata={"help": "transformer blocks (paper: 12; ours tiny)"})
    n_heads: int = field(default=4, metadata={"help": "attention heads (ours)"})
    d_cond: int = field(default=128, metadata={"help": "width of the M embedding for FiLM (code: d_embedding=128)"})
    max_len: int = field(default=1024, metadata={"help": "largest |X_t| the positional embedding covers (ours)"})
    t_max: float = field(default=0.75, metadata={"help": "largest diffusion time (code: 0.9; dossier tiny: 0.75)"})
    lr: float = field(default=1e-3, metadata={"help": "AdamW learning rate (paper 1e-4 for a pretrained ESM2; ours)"})
    grad_clip: float = field(default=1.0, metadata={"help": "gradient-norm clip (code: 1.0)"})
    dropout: float = field(default=0.0, metadata={"help": "dropout in the transformer (ours)"})

    def __post_init__(self):
        if not 0.0 < self.t_max < 1.0:
            raise ValueError(f"SCISORConfig.t_max must be in (0, 1) for α(t) = 1 - t; got {self.t_max!r}")
        if self.vocab < 2 or self.d_model % self.n_heads:
            raise ValueError(
                f"SCISORConfig: vocab ≥ 2 and d_model divisible by n_heads; got {self.vocab}, "
                f"{self.d_model}, {self.n_heads}"
            )
        if self.lr <= 0 or self.grad_clip <= 0 or not 0 <= self.dropout < 1:
            raise ValueError(
                f"SCISORConfig: lr > 0, grad_clip > 0, dropout in [0, 1); got {self.lr}, "
                f"{self.grad_clip}, {self.dropout}"
            )


# ---------------------------------------------------------------- forward process


def alpha(t: torch.Tensor) -> torch.Tensor:
    """α(t) = 1 - t: survival of the 'no insertion yet' event per gap."""
    return 1.0 - t


def sample_num_insertions(length: int, t: float, g: torch.Generator, at_least_one: bool = False) -> int:
    """M_t ~ NegBin(L+1, 1-α(t)); with ``at_least_one`` exactly conditioned on M ≥ 1 (the Rao-Blackwellised sampler;
    the code resamples M = 0 from the pmf on 1..20, we condition exactly by inverse CDF on a wide support)."""
    a = 1.0 - t
    mean = (length + 1) * (1 - a) / a
    top = int(mean + 12 * math.sqrt(max(mean / a, 1.0)) + 20)
    m = torch.arange(0 if not at_least_one else 1, top + 1, dtype=torch.float64)
    # log P(M=m) = log C(L+m, m) + (L+1) log α + m log(1-α)
    logp = (
        torch.lgamma(length + m + 1)
        - torch.lgamma(m + 1)
        - math.lgamma(length + 1)
        + (length + 1) * math.log(a)
        + m * math.log1p(-a)
    )
    p = torch.softmax(logp, 0)
    return int(m[torch.multinomial(p.float(), 1, generator=g)].item())


def insert(x0: torch.Tensor, m: int, pi: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """X_t from X_0 with m insertions: X_0 at a uniform size-L subset of positions, the rest i.i.d. π.
    Returns (X_t, inserted mask)."""
    n = len(x0) + m
    keep = torch.zeros(n, dtype=torch.bool)
    keep[torch.randperm(n, generator=g)[: len(x0)]] = True
    xt = torch.multinomial(pi.float(), n, replacement=True, generator=g)
    xt[keep] = x0
    return xt, ~keep


# ---------------------------------------------------------------- denoiser q_θ(i | X_t, M)


class Denoiser(nn.Module):
    """A tiny transformer encoder over X_t with FiLM conditioning on M after every block (code: FiLM between ESM
    layers, h ← (1 + A(M)) ⊙ h + B(M)); a linear head gives one deletion logit per position."""

    def __init__(self, cfg: SCISORConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.tok = nn.Embedding(cfg.vocab + 1, d)  # last id = padding
        self.pos = nn.Embedding(cfg.max_len, d)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, cfg.n_heads, 4 * d, cfg.dropout, batch_first=True, norm_first=True)
            for _ in range(cfg.n_layers)
        )
        self.cond = nn.Sequential(nn.Linear(cfg.d_cond, cfg.d_cond), nn.SiLU(), nn.Linear(cfg.d_cond, cfg.d_cond))
        self.film = nn.ModuleList(nn.Linear(cfg.d_cond, 2 * d) for _ in range(cfg.n_layers))
        for f in self.film:  # start as the identity map
            nn.init.zeros_(f.weight)
            nn.init.zeros_(f.bias)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 1)

    def embed_m(self, m: torch.Tensor) -> torch.Tensor:
        """Sinusoidal embedding of log(1 + M) followed by an MLP (reasoned; the code's embedding was not recovered)."""
        half = self.cfg.d_cond // 2
        freqs = torch.exp(-math.log(1000.0) * torch.arange(half, device=m.device) / half)
        arg = torch.log1p(m.float())[:, None] * freqs[None] * 10.0
        return self.cond(torch.cat([arg.sin(), arg.cos()], dim=1))

    def forward(self, xt: torch.Tensor, lengths: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """log q_θ(i | X_t, M): [B, N] log-probabilities over positions, -inf at padding."""
        b, n = xt.shape
        if n > self.cfg.max_len:
            raise ValueError(f"|X_t| = {n} exceeds SCISORConfig.max_len = {self.cfg.max_len}; raise max_len")
        pad = torch.arange(n, device=xt.device)[None] >= lengths[:, None]
        h = self.tok(xt.masked_fill(pad, self.cfg.vocab)) + self.pos(torch.arange(n, device=xt.device))[None]
        c = self.embed_m(m)
        for blk, film in zip(self.blocks, self.film):
            h = blk(h, src_key_padding_mask=pad)
            a, bb = film(c).chunk(2, dim=-1)
            h = (1 + a[:, None]) * h + bb[:, None]
        logits = self.head(self.norm(h)).squeeze(-1).masked_fill(pad, float("-inf"))
        return torch.log_softmax(logits, dim=-1)


def pad_batch(seqs: list[torch.Tensor], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs])
    out = torch.full((len(seqs), int(lengths.max())), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out, lengths


# ---------------------------------------------------------------- training loss (Thm 4.2)


def make_batch(
    x0s: list[torch.Tensor], cfg: SCISORConfig, pi: torch.Tensor, g: torch.Generator, onehot_target: bool = False
) -> dict:
    """Sample (t, M ≥ 1, X_t, log target) per sequence. ``onehot_target`` replaces the alignment-marginalised target
    by a one-hot on one truly inserted position (uniform among them: the insertion order is exchangeable), the
    paper's ablation of the Rao-Blackwellised target."""
    ts, ms, xts, inserted = [], [], [], []
    for x0 in x0s:
        t = float(torch.rand((), generator=g)) * cfg.t_max  # t ~ U(0, t_max)
        m = sample_num_insertions(len(x0), t, g, at_least_one=True)
        xt, ins = insert(x0, m, pi, g)
        ts.append(t), ms.append(m), xts.append(xt), inserted.append(ins)
    x0p, len0 = pad_batch(x0s, cfg.vocab)
    xtp, lent = pad_batch(xts, cfg.vocab)
    if onehot_target:
        target = torch.full(xtp.shape, float("-inf"))
        for i, ins in enumerate(inserted):
            idx = torch.nonzero(ins).flatten()
            target[i, idx[torch.randint(len(idx), (1,), generator=g)]] = 0.0
    else:
        target = log_deletion_target(x0p, xtp, len0, lent)  # Prop. 4.3
    return {"t": torch.tensor(ts), "m": torch.tensor(ms), "xt": xtp, "lent": lent, "len0": len0, "target": target}


def loss_from_batch(model: Denoiser, batch: dict) -> torch.Tensor:
    """Monte-Carlo estimate of the ELBO's diffusion term (Thm 4.2), per sequence ([B]):
        t_max · M · β(t)/(1-α(t)) · (1 - α(t)^{L+1}) · KL(p(·|X_0, X_t, M) ‖ q_θ(·|X_t, M)),
    the last factor being P(M ≥ 1), as M is sampled conditioned on M ≥ 1."""
    logq = model(batch["xt"], batch["lent"], batch["m"])
    tgt = batch["target"]
    p = tgt.exp()
    kl = (p * (tgt - logq)).nan_to_num(0.0).sum(-1)  # 0·log 0 = 0 at positions with no mass
    t = batch["t"]
    a = alpha(t)
    w = (1.0 / (1.0 - t)) / (1.0 - a) * (1.0 - a ** (batch["len0"].float() + 1))  # β/(1-α) · P(M≥1)
    return model.cfg.t_max * batch["m"].float() * kl * w


def elbo_diffusion_term(
    model: Denoiser, x0s: list[torch.Tensor], pi: torch.Tensor, g: torch.Generator, n_mc: int = 1
) -> torch.Tensor:
    """Held-out estimate of the diffusion term of −ELBO per sequence (nats), averaged over ``n_mc`` draws."""
    with torch.no_grad():
        return torch.stack([loss_from_batch(model, make_batch(x0s, model.cfg, pi, g)) for _ in range(n_mc)]).mean(0)


def log_kl_t1(x0: torch.Tensor, m: int, pi: torch.Tensor, g: torch.Generator) -> float:
    """The prior term at t_max for one draw (code `get_kl_t1`): log ali(X_0, X_1) − log C(L+M, L) − Σ log π(x)."""
    from .alignments import log_alignment_count

    x1, _ = insert(x0, m, pi, g)
    lc = float(log_alignment_count(x0, x1))
    return (
        lc
        - (math.lgamma(len(x0) + m + 1) - math.lgamma(m + 1) - math.lgamma(len(x0) + 1))
        - float(torch.log(pi[x0]).sum())
    )


# ---------------------------------------------------------------- using a trained model


@torch.no_grad()
def deletion_logprobs(model: Denoiser, x: torch.Tensor, m: int) -> torch.Tensor:
    """log q_θ(i | X, M=m) over the positions of one sequence."""
    return model(x[None], torch.tensor([len(x)]), torch.tensor([m]))[0]


@torch.no_grad()
def shrink(
    model: Denoiser, x: torch.Tensor, n_delete: int, temperature: float = 0.0, g: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shrink a sequence by deleting n_delete letters one at a time, each drawn from q_θ(· | X, S) with S the number
    of deletions still to make (code `shrink_sequence`); argmax when temperature = 0. Returns (short, kept indices)."""
    check_sequence(x, model.cfg.vocab)
    if not 0 <= n_delete < len(x):
        raise ValueError(f"n_delete must be in [0, {len(x)}); got {n_delete!r}")
    kept = torch.arange(len(x))
    for s in range(n_delete, 0, -1):
        logq = deletion_logprobs(model, x, s)
        i = (
            int(logq.argmax())
            if temperature == 0
            else int(torch.multinomial((logq / temperature).softmax(0), 1, generator=g))
        )
        x = torch.cat([x[:i], x[i + 1 :]])
        kept = torch.cat([kept[:i], kept[i + 1 :]])
    return x, kept


@torch.no_grad()
def score_deletions(model: Denoiser, wt: torch.Tensor, variants: list[tuple[int, ...]]) -> torch.Tensor:
    """Deletion-effect score of each variant (a tuple of deleted wild-type positions); higher = better tolerated.
    Single deletion i: log q_θ(i | X_wt, M=1). Several: delete them left to right with M = |D|, ..., 1 and sum the
    log-probabilities (the exact score is not stated in the paper's retrieved text; the dossier's reasoned choice)."""
    check_sequence(wt, model.cfg.vocab, "the wild type")
    check_variants(variants, len(wt))
    scores = torch.zeros(len(variants))
    states = [(wt, sorted(int(i) for i in v)) for v in variants]
    cache: dict[tuple, torch.Tensor] = {}
    while any(rem for _, rem in states):
        todo = [k for k, (_, rem) in enumerate(states) if rem]
        keys = [(tuple(states[k][0].tolist()), len(states[k][1])) for k in todo]
        need = list({kk for kk in keys if kk not in cache})
        for c in range(0, len(need), 64):
            chunk = need[c : c + 64]
            xs, lens = pad_batch([torch.tensor(kk[0]) for kk in chunk], model.cfg.vocab)
            out = model(xs, lens, torch.tensor([kk[1] for kk in chunk]))
            for kk, row in zip(chunk, out):
                cache[kk] = row[: len(kk[0])]
        for k, kk in zip(todo, keys):
            x, rem = states[k]
            i = rem[0]
            scores[k] += cache[kk][i]
            states[k] = (torch.cat([x[:i], x[i + 1 :]]), [r - 1 for r in rem[1:]])
    return scores


@torch.no_grad()
def sample(model: Denoiser, length: int, pi: torch.Tensor, g: torch.Generator, temperature: float = 1.0):
    """Unconditional generation: M insertions as at t_max, a random i.i.d.-π sequence of length L+M, then M model
    deletions (code `sample_sequence`, one deletion per step, no corrector)."""
    m = sample_num_insertions(length, model.cfg.t_max, g)
    x = torch.multinomial(pi.float(), length + m, replacement=True, generator=g)
    if m == 0:
        return x
    return shrink(model, x, m, temperature=temperature, g=g)[0]


def train_step(
    model: Denoiser,
    opt: torch.optim.Optimizer,
    x0s: list[torch.Tensor],
    pi: torch.Tensor,
    g: torch.Generator,
    onehot_target: bool = False,
) -> float:
    model.train()
    loss = loss_from_batch(model, make_batch(x0s, model.cfg, pi, g, onehot_target)).mean()
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), model.cfg.grad_clip)
    opt.step()
    model.eval()
    return float(loss.detach())


__all__ = [
    "SCISORConfig",
    "Denoiser",
    "alpha",
    "sample_num_insertions",
    "insert",
    "make_batch",
    "loss_from_batch",
    "elbo_diffusion_term",
    "log_kl_t1",
    "deletion_logprobs",
    "shrink",
    "score_deletions",
    "sample",
    "train_step",
    "pad_batch",
]
