"""Pre-training: graph contrastive learning (GCL) + graph masked autoencoder (GMAE) over mixed-atlas batches.

Code `BrainGFM_pretrain.py` (dossier §5), per batch at "epoch" e:
- GMAE: mask ratio r = min(0.6, 0.1 + 0.05 e); keep max(4, floor(n (1 - r))) random valid nodes; the encoder sees the
  kept nodes and their induced sub-adjacency; [MASK] tokens fill the masked positions; a decoder predicts the masked
  nodes' feature rows: L_rec = SmoothL1 over the masked rows' N_a valid columns; plus
  L_adj = BCEWithLogits(Z_vis Z_vis^T, A_vis) over valid visible pairs.
- GCL: a second view with node-feature dropping (a row replaced by N(0, 0.1^2) noise with probability p) and
  symmetric edge dropping (keep an edge if (u + u^T)/2 > p), p = min(0.2, 0.05 + 0.01 e); NT-Xent (tau = 0.2, in-batch
  negatives) between the pooled embeddings of the masked view and the augmented view.
- Total: L = L_rec + 0.1 L_adj + 0.01 L_NTXent ("gmae": without the last term; "gcl": the last term only).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import DenseGCNConv
from tqdm.auto import tqdm

from .graphs import GraphSet
from .model import BrainGFM

MODES = ("gcl+gmae", "gcl", "gmae")


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float = 0.2) -> torch.Tensor:
    """NT-Xent of SimCLR as the official code: positives (i, i+B), all other 2B - 2 in-batch samples negatives."""
    b = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = (z @ z.T / tau).masked_fill(torch.eye(2 * b, dtype=torch.bool), float("-inf"))
    pos = torch.cat([torch.arange(b, 2 * b), torch.arange(b)])
    return F.cross_entropy(sim, pos)  # = -mean log(exp(s_pos) / sum_{k != i} exp(s_ik))


def gmae_loss(pred, target, masked, z_vis, adj_vis, vis_mask, adj_weight: float = 0.1) -> torch.Tensor:
    """L_rec + adj_weight * L_adj. ``pred``/``target`` (B, N, F), ``masked`` (B, N, F) bool: entries in the loss
    (valid columns of masked nodes); ``z_vis`` (B, K, H) visible node states, ``adj_vis`` (B, K, K),
    ``vis_mask`` (B, K)."""
    rec = F.smooth_l1_loss(pred[masked], target[masked])
    pair = vis_mask[:, :, None] & vis_mask[:, None, :]
    logits = z_vis @ z_vis.transpose(1, 2)
    adj = F.binary_cross_entropy_with_logits(logits[pair], adj_vis[pair])
    return rec + adj_weight * adj


def mask_nodes(n: torch.Tensor, n_pad: int, ratio: float, gen=None):
    """Kept node indices (B, K) in their original order, their validity (B, K; a prefix of each row) and the masked
    indicator (B, n_pad): each graph keeps max(4, floor(n (1 - ratio))) of its n valid nodes at random (code)."""
    keep = torch.minimum(torch.clamp(torch.floor(n.float() * (1 - ratio)).long(), min=4), n)
    score = torch.rand(len(n), n_pad, generator=gen)
    pad = torch.arange(n_pad)[None, :] >= n[:, None]
    order = score.masked_fill(pad, 2.0).argsort(1)  # valid nodes first, in random order
    k = int(keep.max())
    first = torch.arange(k)[None, :] < keep[:, None]
    key = torch.where(first, order[:, :k], order[:, :k] + n_pad).sort(1).values  # kept ones first, sorted
    valid = key < n_pad
    idx = torch.where(valid, key, key - n_pad)
    masked = ~pad
    masked[torch.arange(len(n))[:, None].expand_as(idx)[valid], idx[valid]] = False
    return idx, valid, masked


def augment(x, adj, mask, p: float, gen=None):
    """GCL view: node rows replaced by N(0, 0.1^2) noise with probability p; symmetric edge dropping at p."""
    drop = (torch.rand(x.shape[:2], generator=gen) < p) & mask
    x = torch.where(drop[:, :, None], 0.1 * torch.randn(x.shape, generator=gen), x)
    u = torch.rand(adj.shape, generator=gen)
    return x * mask[:, :, None], adj * (((u + u.transpose(1, 2)) / 2) > p).float()


class Decoder(nn.Module):
    """[MASK] tokens at masked positions, a GCN over the full adjacency (GraphMAE-style re-mask decoding: the graph
    locates the masked nodes; the code's Transformer decoder has no positions), a Transformer layer, Linear(H -> F)."""

    def __init__(self, hidden: int, out: int, heads: int = 4, layers: int = 1, dropout: float = 0.1):
        super().__init__()
        self.mask_token = nn.Parameter(torch.zeros(hidden))
        nn.init.normal_(self.mask_token, std=0.02)
        self.gcn = DenseGCNConv(hidden, hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, 2 * hidden, dropout, batch_first=True)
        self.att = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(hidden, out)

    def forward(self, z_vis, idx, valid, adj, mask):
        b, n = mask.shape
        full = self.mask_token.expand(b, n, -1).clone()
        rows = torch.arange(b)[:, None].expand_as(idx)
        full[rows[valid], idx[valid]] = z_vis[valid]
        h = torch.relu(self.gcn(full, adj, mask=mask)) + full
        return self.out(self.att(h, src_key_padding_mask=~mask))


@dataclass
class PretrainConfig:
    mode: str = field(default="gcl+gmae", metadata={"help": "gcl+gmae | gcl | gmae (paper: gcl+gmae)"})
    max_steps: int = field(default=600, metadata={"help": "step budget (ours; the code runs 10 epochs)"})
    batch: int = field(default=64, metadata={"help": "graphs per batch (code: 64)"})
    lr: float = field(default=1e-3, metadata={"help": "Adam lr (code demo 1e-3; main_pretrain 2e-5)"})
    weight_decay: float = field(default=1e-4, metadata={"help": "(code demo: 1e-4)"})
    tau: float = field(default=0.2, metadata={"help": "NT-Xent temperature (code: 0.2)"})
    w_adj: float = field(default=0.1, metadata={"help": "weight of L_adj (code: 0.1)"})
    w_cl: float = field(default=0.01, metadata={"help": "weight of L_NTXent (code: 0.01)"})
    epochs_equiv: int = field(default=10, metadata={"help": "schedule 'epochs' (code: 10 epochs)"})
    schedule_steps: int | None = field(
        default=None,
        metadata={
            "help": "steps over which the mask-ratio and augmentation schedules run their epochs_equiv "
            "'epochs', then hold their last values (None: max_steps, i.e. the budget; ours)"
        },
    )
    eval_every: int = field(default=50, metadata={"help": "steps between validation losses (ours)"})
    patience: int = field(default=4, metadata={"help": "evaluations without improvement before stopping (ours)"})

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"PretrainConfig.mode must be one of {MODES}, got {self.mode!r}")
        if self.schedule_steps is not None and self.schedule_steps < 1:
            raise ValueError(f"PretrainConfig.schedule_steps must be >= 1 or None, got {self.schedule_steps!r}")
        if self.max_steps < 1 or self.batch < 2 or self.lr <= 0 or self.tau <= 0:
            raise ValueError("PretrainConfig: max_steps >= 1, batch >= 2, lr > 0 and tau > 0 are required")


def _losses(model, dec, gs: GraphSet, text, cfg: PretrainConfig, epoch: int, gen):
    r = min(0.6, 0.1 + 0.05 * epoch)  # code's mask-ratio schedule
    p = min(0.2, 0.05 + 0.01 * epoch)  # code's augmentation schedule
    mask = gs.mask
    npad = gs.x.shape[1]
    idx, valid, masked = mask_nodes(gs.n, npad, r, gen)
    rows = torch.arange(len(gs))[:, None]
    xv = gs.x[rows, idx] * valid[:, :, None]
    av = gs.adj[rows[:, :, None], idx[:, :, None], idx[:, None, :]] * valid[:, :, None] * valid[:, None, :]
    z_vis, g_q, _ = model(xv, av, valid.sum(1), gs.atlas, text, use_prompt=False)
    total = torch.zeros(())
    if "gmae" in cfg.mode:
        pred = dec(z_vis, idx, valid, gs.adj, mask)[:, :, :npad]
        cols = torch.arange(npad)[None, None, :] < gs.n[:, None, None]
        total = total + gmae_loss(pred, gs.x, masked[:, :, None] & cols, z_vis, av, valid, cfg.w_adj)
    if "gcl" in cfg.mode:
        xa, aa = augment(gs.x, gs.adj, mask, p, gen)
        _, g_k, _ = model(xa, aa, gs.n, gs.atlas, text, use_prompt=False)
        total = total + cfg.w_cl * nt_xent(g_q, g_k, cfg.tau)
    return total


def schedule_epoch(step: int, cfg: PretrainConfig) -> int:
    """The schedules' 'epoch' at a step: epochs_equiv of them spread over ``schedule_steps`` (or the budget), then the
    last one held, so an early-stopped run with a large step cap sees the code's schedule in full."""
    return min(cfg.epochs_equiv - 1, step * cfg.epochs_equiv // (cfg.schedule_steps or cfg.max_steps))


def pretrain(model: BrainGFM, train: GraphSet, val: GraphSet, text: torch.Tensor, cfg: PretrainConfig, seed: int = 0,
             progress: bool = False) -> dict:  # fmt: skip
    """Pre-train ``model`` in place; keeps the state with the best validation loss (early stopping)."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    dec = Decoder(model.cfg.hidden, model.cfg.n_max)
    params = [p for n_, p in model.named_parameters() if not n_.startswith("prompt.")] + list(dec.parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    best, best_state, bad, hist = math.inf, copy.deepcopy(model.state_dict()), 0, []
    for step in tqdm(range(cfg.max_steps), disable=not progress, desc=f"pretrain {cfg.mode}"):
        epoch = schedule_epoch(step, cfg)
        model.train(), dec.train()
        b = train[torch.randint(len(train), (cfg.batch,), generator=gen)]
        loss = _losses(model, dec, b, text, cfg, epoch, gen)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 5.0)  # main_pretrain.py: max_norm 5
        opt.step()
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.max_steps:
            model.eval(), dec.eval()
            vgen = torch.Generator().manual_seed(12345)  # the same masks for every evaluation
            with torch.no_grad():
                v = sum(float(_losses(model, dec, val[i : i + 128], text, cfg, cfg.epochs_equiv - 1, vgen))
                        for i in range(0, len(val), 128))  # fmt: skip
            hist.append((step + 1, v))
            if v < best - 1e-4:
                best, best_state, bad = v, copy.deepcopy(model.state_dict()), 0
            else:
                bad += 1
                if bad >= cfg.patience:
                    break
    model.load_state_dict(best_state)
    return {"steps": step + 1, "best_val": best, "history": hist}
