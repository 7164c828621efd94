"""BrainGFM backbone: RWSE + atlas/disorder tokens + graph prompt + (Transformer -> GCN) rounds, and its heads.

Sequence fed to the backbone (dossier §2, code `BrainGFM_Gprompt.py`): ``[T/D], [A/P], proj(node_1..N)`` where
node i's input is ``[X_i, RWSE_i]`` zero-padded to D_max, [A/P] is a learnable per-atlas vector in R^{D_max} projected
by the same ``proj`` as the nodes, and [T/D] = Linear(text embedding) of the disorder's description (language prompt).
Each round: a post-LN Transformer layer over all N + 2 tokens (key-padding mask), then a GCN layer on the node tokens
over the prompted adjacency. Rounds are chained (the released code feeds every round the original input; dossier
"code bug"). Graph embedding g = masked mean of the node states.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from torch_geometric.nn import DenseGCNConv


@dataclass
class BrainGFMConfig:
    n_max: int = field(default=48, metadata={"help": "max ROIs over atlases (paper: 333 for Gordon333)"})
    n_atlases: int = field(default=6, metadata={"help": "atlases with a learnable [A/P] token (paper: 8)"})
    text_dim: int = field(default=384, metadata={"help": "text embedding width (MiniLM 384; Bio_ClinicalBERT 768)"})
    hidden: int = field(default=32, metadata={"help": "hidden width H (code: 128 or 256; dossier tiny: 64)"})
    heads: int = field(default=4, metadata={"help": "attention heads (code: 4 or 8)"})
    att_layers: int = field(default=1, metadata={"help": "Transformer layers per round (code: 2 or 4)"})
    rounds: int = field(default=2, metadata={"help": "Transformer+GCN rounds (code num_GNN_layers: 2 or 4)"})
    ffn: int = field(default=64, metadata={"help": "FFN width (code: 64 or 256)"})
    dropout: float = field(default=0.1, metadata={"help": "dropout (code: 0.3; ours for the tiny model)"})
    rwse_steps: int = field(default=5, metadata={"help": "random-walk steps of RWSE (code: 5)"})
    edge_strength: float = field(default=0.3, metadata={"help": "s of the edge prompt (code: 0.3)"})
    prompt_std: float = field(default=0.01, metadata={"help": "init std of the base prompts (code: 1e-2)"})

    def __post_init__(self):
        for name in ("n_max", "n_atlases", "text_dim", "hidden", "heads", "att_layers", "rounds", "ffn", "rwse_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"BrainGFMConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.hidden % self.heads:
            raise ValueError(f"BrainGFMConfig.hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if not 0 <= self.dropout < 1 or not 0 <= self.edge_strength <= 1:
            raise ValueError("BrainGFMConfig: dropout must be in [0, 1) and edge_strength in [0, 1]")

    @property
    def d_max(self) -> int:  # dossier pitfall: D_max >= max N_a + RWSE steps
        return self.n_max + self.rwse_steps


def rwse(adj: torch.Tensor, k: int) -> torch.Tensor:
    """Random-walk structural encoding: [diag(P^1), ..., diag(P^k)] with P = D^-1 A (code: +1e-6 on degrees)."""
    p = adj / (adj.sum(-1, keepdim=True) + 1e-6)
    out, rw = [], p
    for _ in range(k):
        out.append(torch.diagonal(rw, dim1=1, dim2=2))
        rw = rw @ p
    return torch.stack(out, -1)


def node_inputs(x: torch.Tensor, adj: torch.Tensor, n: torch.Tensor, cfg: BrainGFMConfig) -> torch.Tensor:
    """[X_i (N_a columns), RWSE_i (k columns)] zero-padded to D_max, as the code (RWSE starts at column N_a)."""
    b, nn_, _ = x.shape
    out = torch.zeros(b, nn_, cfg.d_max, dtype=x.dtype)
    w = min(x.shape[2], cfg.n_max)
    out[:, :, :w] = x[:, :, :w]
    cols = (n[:, None] + torch.arange(cfg.rwse_steps)[None, :])[:, None, :].expand(b, nn_, cfg.rwse_steps)
    return out.scatter(2, cols, rwse(adj, cfg.rwse_steps))


class GraphPrompt(nn.Module):
    """Learnable node/edge perturbations of the input graph, conditioned on ([T/D], [A/P]) (code `graph_prompt.py`).

    X' = X * (1 + tanh(a_n Pn + b_n));  E = sigmoid(a_e sym(Pe) + b_e);  A~ = clamp(A + s E (1 - A), 0, 1),
    symmetric with zero diagonal (the prompt can only add soft edges); (a_n, b_n, a_e, b_e) = MLP([T/D], [A/P])."""

    def __init__(self, cfg: BrainGFMConfig):
        super().__init__()
        self.cfg = cfg
        self.node = nn.Parameter(torch.randn(cfg.n_max, cfg.d_max) * cfg.prompt_std)
        self.edge = nn.Parameter(torch.randn(cfg.n_max, cfg.n_max) * cfg.prompt_std)
        h = cfg.hidden
        self.cond = nn.Sequential(nn.Linear(2 * h, h), nn.ReLU(), nn.Linear(h, 4))

    def forward(self, feats, adj, mask, td, ap):
        n = feats.shape[1]
        an, bn, ae, be = (t[:, :, None] for t in self.cond(torch.cat([td, ap], -1)).chunk(4, -1))
        m = mask.float()
        pn = self.node[:n] * m[:, :, None]  # padded rows zeroed
        x = feats * (1 + torch.tanh(an * pn + bn))
        x = x * m[:, :, None]
        pe = 0.5 * (self.edge[:n, :n] + self.edge[:n, :n].T)
        pe = (pe - torch.diag(torch.diagonal(pe)))[None] * m[:, :, None] * m[:, None, :]
        e = torch.sigmoid(ae * pe + be)
        a = torch.clamp(adj + self.cfg.edge_strength * e * (1 - adj), 0, 1)
        a = 0.5 * (a + a.transpose(1, 2)) * m[:, :, None] * m[:, None, :]
        return x, a - torch.diag_embed(torch.diagonal(a, dim1=1, dim2=2))


class BrainGFM(nn.Module):
    """The backbone; ``forward`` returns node states z (B, N, H), the graph embedding g (B, H) and [T/D] (B, H)."""

    def __init__(self, cfg: BrainGFMConfig | None = None):
        super().__init__()
        self.cfg = cfg = cfg or BrainGFMConfig()
        h = cfg.hidden
        self.proj = nn.Linear(cfg.d_max, h)
        self.atlas_tokens = nn.Parameter(torch.randn(cfg.n_atlases, cfg.d_max))  # [A/P], one per atlas (code)
        self.disease_proj = nn.Linear(cfg.text_dim, h)  # [T/D] = Linear(text embedding) (code: Linear(768, H))
        self.prompt = GraphPrompt(cfg)
        layer = lambda: nn.TransformerEncoderLayer(h, cfg.heads, cfg.ffn, cfg.dropout, batch_first=True)  # noqa: E731
        self.att = nn.ModuleList(nn.TransformerEncoder(layer(), cfg.att_layers, enable_nested_tensor=False)
                                 for _ in range(cfg.rounds))  # fmt: skip
        self.gcn = nn.ModuleList(DenseGCNConv(h, h) for _ in range(cfg.rounds))
        self.norm = nn.ModuleList(nn.LayerNorm(h) for _ in range(cfg.rounds))

    def prompt_parameters(self) -> list[nn.Parameter]:
        """The parameters of prompt tuning: graph prompt + language-prompt projection (the backbone stays frozen)."""
        return [*self.prompt.parameters(), *self.disease_proj.parameters()]

    def forward(self, x, adj, n, atlas, text, use_prompt: bool = True):
        b, nn_ = x.shape[:2]
        mask = torch.arange(nn_)[None, :] < n[:, None]
        feats = node_inputs(x, adj, n, self.cfg)
        td = self.disease_proj(text.expand(b, -1) if text.dim() == 2 and text.shape[0] == 1 else text)
        ap = self.proj(self.atlas_tokens[atlas])
        if use_prompt:
            feats, adj = self.prompt(feats, adj, mask, td, ap)
        seq = torch.cat([td[:, None], ap[:, None], self.proj(feats)], 1)
        pad = torch.cat([torch.zeros(b, 2, dtype=torch.bool), ~mask], 1)
        for att, gcn, norm in zip(self.att, self.gcn, self.norm):
            h = att(seq, src_key_padding_mask=pad)
            z = torch.relu(norm(gcn(h[:, 2:], adj, mask=mask)))  # code: ReLU(BN(A z W)); LayerNorm (padding)
            seq = torch.cat([h[:, :2], z], 1)  # chained rounds
        m = mask.float()[:, :, None]
        g = (z * m).sum(1) / m.sum(1).clamp_min(1)
        return z, g, td


class ConditionHead(nn.Module):
    """Shared binary head "patient under the condition described by [T/D]": logit = w.g + (U g).[T/D] + b.

    Not stated in the paper (dossier §7); the bilinear term lets one head serve every disorder, so an unseen
    disorder's description selects the evidence at zero shot. With a fixed [T/D] it is a linear head on g."""

    def __init__(self, hidden: int):
        super().__init__()
        self.lin = nn.Linear(hidden, 1)
        self.bil = nn.Linear(hidden, hidden, bias=False)

    def forward(self, g, td):
        return self.lin(g).squeeze(-1) + (self.bil(g) * td).sum(-1)


class Classifier(nn.Module):
    """Backbone + head for a disorder: ``forward(graphs, text)`` -> logits (B,)."""

    def __init__(self, backbone: BrainGFM, use_prompt: bool = True):
        super().__init__()
        self.backbone, self.head, self.use_prompt = backbone, ConditionHead(backbone.cfg.hidden), use_prompt

    def forward(self, gs, text):
        _, g, td = self.backbone(gs.x, gs.adj, gs.n, gs.atlas, text, use_prompt=self.use_prompt)
        return self.head(g, td)
