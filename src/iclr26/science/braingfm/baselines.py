"""Baseline: a vanilla GCN trained from scratch (dossier "Vanilla GCN (no PT)"): two torch-geometric GCNConv layers
on (X, A), global mean pooling and a linear head."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.data import Batch
from torch_geometric.nn import GCNConv, global_mean_pool

from .graphs import GraphSet, to_pyg


class VanillaGCN(nn.Module):
    def __init__(self, in_dim: int, hidden: int = 32, layers: int = 2, dropout: float = 0.1):
        super().__init__()
        if in_dim < 1 or hidden < 1 or layers < 1:
            raise ValueError(f"VanillaGCN: in_dim, hidden, layers must be >= 1, got {in_dim}, {hidden}, {layers}")
        self.convs = nn.ModuleList(GCNConv(in_dim if i == 0 else hidden, hidden) for i in range(layers))
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, 1)
        self.in_dim = in_dim

    def forward(self, gs: GraphSet, text=None):
        if int(gs.n.max()) != int(gs.n.min()) or int(gs.n[0]) != self.in_dim:
            raise ValueError(f"VanillaGCN expects graphs of one atlas with {self.in_dim} ROIs")
        b = Batch.from_data_list(to_pyg(gs))
        h = b.x
        for conv in self.convs:
            h = self.drop(torch.relu(conv(h, b.edge_index)))
        return self.out(global_mean_pool(h, b.batch)).squeeze(-1)
