"""Baselines of SCISOR's evaluation (https://arxiv.org/abs/2511.07390, Sec. 5): sequence language models that score a
deletion variant by a likelihood ratio and shrink a protein greedily.

- ``SeqLM(kind="ar")``: a left-to-right transformer (the ProGen2 / Tranception role). Score of a variant =
  log p(mutant) − log p(wild type); greedy shrink deletes, at each step, the residue whose removal maximises log p.
- ``SeqLM(kind="mlm")``: a bidirectional masked LM (the ESM role). Score = pseudo-log-likelihood ratio
  PLL(mutant) − PLL(wild type), PLL(x) = Σ_i log p(x_i | x without i); greedy shrink deletes the residue with the
  lowest masked log-probability (its PLL contribution: one batched pass per step instead of |x|² passes, our choice).
- ``fit``: the one training loop of every model here: AdamW, early stopping on a validation loss.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn

from .inputs import check_sequence, check_variants


class SeqLM(nn.Module):
    """Tiny transformer over amino-acid ids 0..vocab-1 plus BOS, EOS, MASK and PAD tokens."""

    def __init__(self, kind: str, vocab: int = 20, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                 max_len: int = 512):  # fmt: skip
        super().__init__()
        if kind not in ("ar", "mlm"):
            raise ValueError(f"SeqLM kind must be 'ar' or 'mlm'; got {kind!r}")
        self.kind, self.vocab, self.max_len = kind, vocab, max_len
        self.bos, self.eos, self.mask, self.pad = vocab, vocab + 1, vocab + 2, vocab + 3
        self.tok = nn.Embedding(vocab + 4, d_model)
        self.pos = nn.Embedding(max_len + 2, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, 0.0, batch_first=True, norm_first=True)
        self.trunk = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab + 2)  # amino acids + EOS

    def logits(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        pad = torch.arange(n)[None] >= lengths[:, None]
        h = self.tok(ids) + self.pos(torch.arange(n))[None]
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if self.kind == "ar" else None
        return self.head(self.norm(self.trunk(h, mask=causal, src_key_padding_mask=pad, is_causal=causal is not None)))

    def wrap(self, seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """[BOS, x, EOS] padded."""
        lengths = torch.tensor([len(s) + 2 for s in seqs])
        ids = torch.full((len(seqs), int(lengths.max())), self.pad, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s) + 2] = torch.cat([torch.tensor([self.bos]), s, torch.tensor([self.eos])])
        return ids, lengths

    # ------------------------------------------------------------ AR
    def log_prob(self, seqs: list[torch.Tensor]) -> torch.Tensor:
        """AR: log p(x) = Σ_i log p(x_i | x_<i) + log p(EOS | x)."""
        ids, lengths = self.wrap(seqs)
        lp = torch.log_softmax(self.logits(ids[:, :-1], lengths - 1), -1)
        tgt = ids[:, 1:]
        valid = torch.arange(tgt.shape[1])[None] < (lengths - 1)[:, None]
        tok = lp.gather(-1, tgt.clamp(max=self.vocab + 1)[..., None])[..., 0]
        return (tok * valid).sum(1)

    # ------------------------------------------------------------ MLM
    def masked_loss(self, seqs: list[torch.Tensor], g: torch.Generator, rate: float = 0.15) -> torch.Tensor:
        """MLM: cross-entropy of the masked residues (at least one per sequence), per sequence."""
        ids, lengths = self.wrap(seqs)
        res = (torch.arange(ids.shape[1])[None] >= 1) & (torch.arange(ids.shape[1])[None] < (lengths - 1)[:, None])
        pick = (torch.rand(ids.shape, generator=g) < rate) & res
        for i, n in enumerate(lengths - 2):  # guarantee one masked residue
            pick[i, 1 + int(torch.randint(int(n), (1,), generator=g))] = True
        lp = torch.log_softmax(self.logits(ids.masked_fill(pick, self.mask), lengths), -1)
        tok = lp.gather(-1, ids.clamp(max=self.vocab + 1)[..., None])[..., 0]
        return -(tok * pick).sum(1) / pick.sum(1)

    def masked_logprobs(self, x: torch.Tensor) -> torch.Tensor:
        """MLM: log p(x_i | x without i) for every position i (one row per masked position)."""
        n = len(x)
        ids, lengths = self.wrap([x] * n)
        ar = torch.arange(n)
        ids[ar, ar + 1] = self.mask
        lp = torch.log_softmax(self.logits(ids, lengths), -1)
        return lp[ar, ar + 1, x]

    def pll(self, seqs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([self.masked_logprobs(s).sum() for s in seqs])

    # ------------------------------------------------------------ uses
    @torch.no_grad()
    def score_deletions(self, wt: torch.Tensor, variants: list[tuple[int, ...]]) -> torch.Tensor:
        """Likelihood-ratio score of each deletion variant (higher = better tolerated)."""
        check_sequence(wt, self.vocab, "the wild type")
        check_variants(variants, len(wt))
        muts = [wt[[i for i in range(len(wt)) if i not in {int(j) for j in v}]] for v in variants]
        f = self.log_prob if self.kind == "ar" else self.pll
        return f(muts) - f([wt])[0]

    @torch.no_grad()
    def shrink(self, x: torch.Tensor, n_delete: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy shrink (AR: best log p after the deletion; MLM: delete the lowest masked log-probability)."""
        check_sequence(x, self.vocab)
        if not 0 <= n_delete < len(x):
            raise ValueError(f"n_delete must be in [0, {len(x)}); got {n_delete!r}")
        kept = torch.arange(len(x))
        for _ in range(n_delete):
            if self.kind == "ar":
                i = int(self.log_prob([torch.cat([x[:j], x[j + 1 :]]) for j in range(len(x))]).argmax())
            else:
                i = int(self.masked_logprobs(x).argmin())
            x, kept = torch.cat([x[:i], x[i + 1 :]]), torch.cat([kept[:i], kept[i + 1 :]])
        return x, kept


def fit(model: nn.Module, loss_fn: Callable[[torch.Generator], torch.Tensor], val_fn: Callable[[], float],
        lr: float = 1e-3, max_steps: int = 2000, eval_every: int = 100, patience: int = 3, seed: int = 0,
        grad_clip: float = 1.0, progress: bool = False) -> dict:  # fmt: skip
    """AdamW with early stopping: evaluate ``val_fn`` every ``eval_every`` steps, stop after ``patience`` evaluations
    without improvement, restore the best weights. Returns {'steps', 'best_val', 'best_step', 'capped', 'history'};
    ``capped`` is True when the step cap, not early stopping, ended training (the model may not have converged)."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    model.eval()
    best, best_state, bad, hist, step, best_step = val_fn(), copy.deepcopy(model.state_dict()), 0, [], 0, 0
    capped = True
    hist.append((0, best))
    it = range(1, max_steps + 1)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, leave=False)
    for step in it:
        model.train()
        loss = loss_fn(g).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        if step % eval_every == 0:
            model.eval()
            v = val_fn()
            hist.append((step, v))
            if v < best - 1e-4:
                best, best_state, bad, best_step = v, copy.deepcopy(model.state_dict()), 0, step
            else:
                bad += 1
                if bad >= patience:
                    capped = False
                    break
    model.load_state_dict(best_state)
    model.eval()
    return {"steps": step, "best_val": best, "best_step": best_step, "capped": capped, "history": hist}
