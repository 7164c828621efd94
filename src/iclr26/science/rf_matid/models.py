"""Classifiers of the benchmark, sized for a CPU: a spectral 1-D CNN (Material-ID-like), a patch transformer
(Transformer1D-like) and a tiny version of the authors' RF_MatID model (ConvNeXt + Transformer hybrid).

All take x [B, N, C] (C = 2 for whitened (Re, Im), 1 for the time-domain view) and return logits [B, n_classes].

RF_MatID (official `model_zoo/RF_MatID.py`): per-bin MLP value embedding 2 → d/4 → d/2 → d plus a sinusoidal
positional encoding of the bin's frequency, p = (f − 4) / (43.5 − 4) · 2047; a "spatial" branch (a linear map over the
sequence axis to a 32 × 32 grid, HF `ConvNextModel` from scratch, its output map read as tokens) and a "temporal" branch
(TransformerEncoder, 3 layers, 8 heads, FFN 256, dropout 0.2, adaptive average pool to 12 tokens); the tokens of both
branches are concatenated, LayerNorm-ed, flattened and classified by an MLP 512 → 128 → C. Our tiny version keeps this
structure with d = 32, the per-bin value MLP max-pooled over patches of 32 bins (at ≥ 512 bins) to form the tokens,
an 8 × 8 grid, a 2-stage ConvNeXt (hidden sizes 32, 64, one block each), 2 encoder layers
with 4 heads (FFN 64), 8 pooled tokens and an MLP 128 → C.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoid(pos: torch.Tensor, d: int) -> torch.Tensor:
    """Standard sinusoidal encoding (base 10000) of real positions pos [N] → [N, d]."""
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(len(pos), d)
    pe[:, 0::2] = torch.sin(pos[:, None] * div)
    pe[:, 1::2] = torch.cos(pos[:, None] * div)
    return pe


class SpectralCNN(nn.Module):
    """Material-ID-like 1-D CNN: conv–BN–ReLU blocks with stride 2, global average pooling, dropout, linear."""

    def __init__(self, in_ch: int, n_classes: int, width: int = 16, dropout: float = 0.2):
        super().__init__()
        chans, layers = [in_ch, width, 2 * width, 2 * width, 4 * width], []
        for i, (k, s) in enumerate(((8, 4), (5, 2), (5, 2), (3, 2))):
            layers += [nn.Conv1d(chans[i], chans[i + 1], k, stride=s, padding=k // 2, bias=False),
                       nn.BatchNorm1d(chans[i + 1]), nn.ReLU()]  # fmt: skip
        self.body = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(chans[-1], n_classes))

    def forward(self, x):
        return self.head(self.body(x.transpose(1, 2)).mean(-1))


class PatchTransformer(nn.Module):
    """Transformer1D-like: a small conv stem (conv k8/s4, BN, ReLU, then a conv with stride patch/4) turns each patch
    of `patch` bins into a token (official: a linear embedding per bin), sinusoidal PE, encoder, mean pool, linear."""

    def __init__(self, in_ch: int, n_classes: int, n_bins: int, patch: int = 16, d: int = 32, layers: int = 2,
                 heads: int = 4, dropout: float = 0.1):  # fmt: skip
        super().__init__()
        self.embed = nn.Sequential(
            nn.Conv1d(in_ch, 16, 8, stride=4, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, d, patch // 4, stride=patch // 4),
        )  # fmt: skip
        self.register_buffer("pe", sinusoid(torch.arange(n_bins // patch, dtype=torch.float32), d))
        enc = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, n_classes)

    def forward(self, x):
        t = self.embed(x.transpose(1, 2)).transpose(1, 2)
        return self.head(self.encoder(t + self.pe[: t.shape[1]]).mean(1))


class RFMatIDTiny(nn.Module):
    """The authors' RF_MatID hybrid at CPU size (see the module docstring for the mapping to the official model)."""

    def __init__(self, in_ch: int, n_classes: int, f_ghz, patch: int = 16, d: int = 32, grid: int = 8,
                 layers: int = 2, heads: int = 4, pooled: int = 8, dropout: float = 0.2):  # fmt: skip
        super().__init__()
        from transformers import ConvNextConfig, ConvNextModel

        f = torch.as_tensor(f_ghz, dtype=torch.float32)
        n_tok = len(f) // patch
        self.patch, self.d, self.grid = patch, d, grid
        centre = f[: n_tok * patch].view(n_tok, patch).mean(1)
        self.register_buffer("pe", sinusoid((centre - 4.0) / (43.5 - 4.0) * 2047, d))  # frequency PE (official)
        self.value = nn.Sequential(
            nn.Conv1d(in_ch, d // 4, 1), nn.ReLU(), nn.Conv1d(d // 4, d // 2, 1), nn.ReLU(), nn.Conv1d(d // 2, d, 1)
        )  # per-bin value MLP 2 → d/4 → d/2 → d (official), then max-pooled over each patch of bins (ours)
        self.value_norm = nn.LayerNorm(d)  # ours: puts the value tokens on the PE's scale at init
        self.to_grid = nn.Linear(n_tok, grid * grid)  # linear over the sequence axis (official: N → 1024)
        cfg = ConvNextConfig(num_channels=d, num_stages=2, hidden_sizes=[32, 64], depths=[1, 1], image_size=grid,
                             drop_path_rate=0.0)  # fmt: skip
        self.convnext = ConvNextModel(cfg)
        enc = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.pool = nn.AdaptiveAvgPool1d(pooled)
        n_sp = 64 * (grid // 8) ** 2 // d
        self.norm = nn.LayerNorm(d)
        self.head = nn.Sequential(nn.Linear(d * (n_sp + pooled), 128), nn.ReLU(), nn.Linear(128, n_classes))

    def forward(self, x):
        b, n, c = x.shape
        n_tok = self.pe.shape[0]
        v = self.value(x[:, : n_tok * self.patch].transpose(1, 2))  # [B, d, T * patch]
        tok = self.value_norm(v.view(b, self.d, n_tok, self.patch).amax(-1).transpose(1, 2)) + self.pe  # [B, T, d]
        img = self.to_grid(tok.transpose(1, 2)).view(b, self.d, self.grid, self.grid)
        sp = self.convnext(img).last_hidden_state  # [B, 64, g/8, g/8]
        sp = sp.flatten(2).transpose(1, 2).reshape(b, -1, self.d)  # spatial tokens of width d
        tm = self.pool(self.encoder(tok).transpose(1, 2)).transpose(1, 2)  # [B, pooled, d]
        return self.head(self.norm(torch.cat([sp, tm], 1)).flatten(1))


NET_MODELS = ("cnn", "transformer", "rf_matid")


def build_model(name: str, in_ch: int, n_classes: int, f_ghz) -> nn.Module:
    """A fresh network by name: 'cnn', 'transformer' or 'rf_matid'."""
    n = len(f_ghz)
    if name == "cnn":
        return SpectralCNN(in_ch, n_classes)
    if name == "transformer":
        return PatchTransformer(in_ch, n_classes, n, patch=32 if n >= 512 else 8 if n >= 128 else 4)
    if name == "rf_matid":
        return RFMatIDTiny(in_ch, n_classes, f_ghz, patch=32 if n >= 512 else 8 if n >= 128 else 4)
    raise ValueError(f"unknown model {name!r}; expected one of {NET_MODELS} (or 'gb' via train.fit_gb)")
