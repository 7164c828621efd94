"""A tiny Vision Transformer and its masked-autoencoder (MAE) pre-training, as a frozen backbone for probing.

MAE (He et al. 2022, https://arxiv.org/abs/2111.06377) hides a random 75 % of the patches, encodes only the visible
ones (with a [CLS] token that no loss term reads), and a light decoder reconstructs the hidden patches' pixels
(per-patch normalised). Its objective is local: nothing asks the [CLS] token, or the mean token, to summarise the
image. That is the regime where Psomas et al. (https://arxiv.org/abs/2506.10178) find linear probes understate an
encoder and attentive probes (and their efficient variant EP, `iclr26.probing.efficient_probing`) recover the
information.

`TinyViT` is a pre-norm ViT (torch's `TransformerEncoderLayer`) with fixed 2-D sin-cos position embeddings, as in MAE.
`pretrain_mae` trains it from scratch; `extract_tokens` returns the frozen [CLS] + patch tokens of the last block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class ViTConfig:
    """Shape of the tiny ViT (a scale-down of ViT-B/16 for 32×32 images on a CPU)."""

    image_size: int = field(default=32, metadata={"help": "input side in pixels (divisible by patch_size)"})
    patch_size: int = field(default=4, metadata={"help": "patch side; 32/4 → 64 patch tokens"})
    in_chans: int = field(default=1, metadata={"help": "image channels (≥ 1)"})
    dim: int = field(default=64, metadata={"help": "token width D (divisible by heads); ViT-B uses 768"})
    depth: int = field(default=4, metadata={"help": "encoder blocks (≥ 1); ViT-B uses 12"})
    heads: int = field(default=4, metadata={"help": "attention heads (≥ 1)"})
    mlp_ratio: float = field(default=4.0, metadata={"help": "MLP hidden width / D (> 0), as in ViT"})

    def __post_init__(self):
        if self.image_size % self.patch_size:
            raise ValueError(f"ViTConfig.image_size ({self.image_size}) must be divisible by patch_size")
        if (
            min(self.patch_size, self.in_chans, self.dim, self.depth, self.heads) < 1
            or not 0 < self.mlp_ratio < math.inf
        ):
            raise ValueError("ViTConfig sizes must be ≥ 1 and mlp_ratio finite and > 0")
        if self.dim % self.heads or self.dim % 4:
            raise ValueError(f"ViTConfig.dim ({self.dim}) must be divisible by heads ({self.heads}) and by 4")

    @property
    def num_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def sincos_pos_embed(grid: int, dim: int) -> torch.Tensor:
    """Fixed 2-D sin-cos embedding (grid², dim): half the channels encode the row, half the column (MAE)."""
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4))
    ys, xs = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    out = [f(pos.reshape(-1, 1).double() * omega) for pos in (ys, xs) for f in (torch.sin, torch.cos)]
    return torch.cat(out, 1).float()


def _blocks(dim: int, depth: int, heads: int, mlp_ratio: float) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(
        dim, heads, int(dim * mlp_ratio), dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    return nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)


class TinyViT(nn.Module):
    """Patch embedding → [CLS] + patches + fixed pos-embed → pre-norm blocks → LayerNorm."""

    def __init__(self, cfg: ViTConfig | None = None):
        super().__init__()
        self.cfg = c = cfg or ViTConfig()
        self.patch_embed = nn.Conv2d(c.in_chans, c.dim, c.patch_size, c.patch_size)
        self.cls_token = nn.Parameter(torch.randn(1, 1, c.dim) * 0.02)
        self.register_buffer("pos_embed", sincos_pos_embed(c.image_size // c.patch_size, c.dim)[None])
        self.blocks = _blocks(c.dim, c.depth, c.heads, c.mlp_ratio)
        self.norm = nn.LayerNorm(c.dim)

    def forward(self, images: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Tokens (B, 1 + N_kept, D): [CLS] first, then the patches listed in `keep` (B, N_kept), or all of them."""
        c = self.cfg
        if images.dim() != 4 or images.shape[1:] != (c.in_chans, c.image_size, c.image_size):
            raise ValueError(
                f"expected images (B, {c.in_chans}, {c.image_size}, {c.image_size}), got {tuple(images.shape)}"
            )
        if not bool(torch.isfinite(images).all()):
            raise ValueError("images contain NaN or inf; clean the input pixels")
        x = self.patch_embed(images).flatten(2).transpose(1, 2) + self.pos_embed
        if keep is not None:
            x = torch.gather(x, 1, keep[..., None].expand(-1, -1, x.shape[-1]))
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1)
        return self.norm(self.blocks(x))


@dataclass
class MAEConfig:
    """MAE pre-training recipe (He et al. 2022) scaled to a CPU."""

    mask_ratio: float = field(default=0.75, metadata={"help": "fraction of patches hidden, in (0, 1) (MAE: 0.75)"})
    decoder_dim: int = field(default=32, metadata={"help": "decoder width (MAE: 512); our CPU scale-down"})
    decoder_depth: int = field(default=1, metadata={"help": "decoder blocks (MAE: 8); our CPU scale-down"})
    norm_pix_loss: bool = field(default=True, metadata={"help": "normalise each target patch (MAE default)"})
    epochs: int = field(default=20, metadata={"help": "passes over the images (MAE: 800-1600); our budget"})
    batch_size: int = field(default=128, metadata={"help": "images per step (MAE: 4096); our choice"})
    lr: float = field(default=1.5e-3, metadata={"help": "AdamW peak LR (MAE: 1.5e-4 × batch/256); ours for tiny"})
    weight_decay: float = field(default=0.05, metadata={"help": "AdamW weight decay (MAE: 0.05)"})
    warmup_fraction: float = field(default=0.1, metadata={"help": "linear warm-up share of steps, then cosine"})

    def __post_init__(self):
        if not 0 < self.mask_ratio < 1:
            raise ValueError(f"MAEConfig.mask_ratio must be in (0, 1), got {self.mask_ratio}")
        for name in ("decoder_dim", "decoder_depth", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"MAEConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if not (0 < self.lr < math.inf and 0 <= self.weight_decay < math.inf and 0 <= self.warmup_fraction < 1):
            raise ValueError("MAEConfig needs lr > 0, weight_decay ≥ 0 and warmup_fraction in [0, 1)")


class MAE(nn.Module):
    """Encoder on visible patches; decoder on [visible + mask tokens] predicts the hidden patches' pixels."""

    def __init__(self, vit_cfg: ViTConfig | None = None, cfg: MAEConfig | None = None):
        super().__init__()
        self.encoder = TinyViT(vit_cfg)
        self.cfg = cfg or MAEConfig()
        v, d = self.encoder.cfg, self.cfg.decoder_dim
        if d % 4:
            raise ValueError(f"MAEConfig.decoder_dim must be divisible by 4, got {d}")
        self.decoder_embed = nn.Linear(v.dim, d)
        self.mask_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.register_buffer("dec_pos", sincos_pos_embed(v.image_size // v.patch_size, d)[None])
        self.decoder = _blocks(d, self.cfg.decoder_depth, max(1, d // 16), 4.0)
        self.decoder_norm = nn.LayerNorm(d)
        self.decoder_pred = nn.Linear(d, v.patch_size**2 * v.in_chans)

    def patchify(self, images: torch.Tensor) -> torch.Tensor:
        p = self.encoder.cfg.patch_size
        b, c, h, w = images.shape
        x = images.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, (h // p) * (w // p), p * p * c)

    def loss(self, images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        v = self.encoder.cfg
        b, n = images.shape[0], v.num_patches
        n_keep = max(1, int(round(n * (1 - self.cfg.mask_ratio))))
        # random masking: a random permutation per image; the first n_keep indices stay visible
        order = torch.argsort(torch.rand(b, n, generator=generator), 1)
        keep, hidden = order[:, :n_keep], order[:, n_keep:]
        latent = self.encoder(images, keep)
        x = self.decoder_embed(latent[:, 1:])
        full = self.mask_token.expand(b, n, -1).clone()
        full.scatter_(1, keep[..., None].expand(-1, -1, x.shape[-1]), x)  # un-shuffle: visible tokens back in place
        full = full + self.dec_pos
        dec = torch.cat([self.decoder_embed(latent[:, :1]), full], 1)
        pred = self.decoder_pred(self.decoder_norm(self.decoder(dec)))[:, 1:]
        target = self.patchify(images)
        if self.cfg.norm_pix_loss:
            mean, var = target.mean(-1, keepdim=True), target.var(-1, keepdim=True)
            target = (target - mean) / (var + 1e-6).sqrt()
        err = (pred - target).pow(2).mean(-1)  # per-patch MSE
        return torch.gather(err, 1, hidden).mean()  # loss on hidden patches only


def pretrain_mae(
    images: torch.Tensor,
    vit_cfg: ViTConfig | None = None,
    cfg: MAEConfig | None = None,
    seed: int = 0,
    progress: bool = False,
) -> tuple[TinyViT, list[float]]:
    """Pre-train a TinyViT with MAE on `images` (B, C, H, W); return the encoder (eval mode) and the loss curve."""
    if len(images) == 0:
        raise ValueError("pretrain_mae needs at least one image")
    if not bool(torch.isfinite(images).all()):
        raise ValueError("images contain NaN or inf; clean the input pixels before pre-training")
    torch.manual_seed(seed)
    mae = MAE(vit_cfg, cfg)
    c = mae.cfg
    gen = torch.Generator().manual_seed(seed)
    steps_per_epoch = max(1, math.ceil(len(images) / c.batch_size))
    total = c.epochs * steps_per_epoch
    warm = int(c.warmup_fraction * total)
    opt = torch.optim.AdamW(mae.parameters(), lr=c.lr, weight_decay=c.weight_decay, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total - warm)))
    )
    epochs = range(c.epochs)
    if progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc="MAE pre-training", leave=False)
    curve = []
    mae.train()
    for _ in epochs:
        perm, total_loss = torch.randperm(len(images), generator=gen), 0.0
        for s in range(steps_per_epoch):
            loss = mae.loss(images[perm[s * c.batch_size : (s + 1) * c.batch_size]], gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total_loss += loss.item()
        curve.append(total_loss / steps_per_epoch)
    encoder = mae.encoder.eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    return encoder, curve


@torch.no_grad()
def extract_tokens(encoder: TinyViT, images: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Frozen last-block tokens (B, 1 + N, D), [CLS] first; compute once and cache (no augmentation)."""
    if batch_size < 1 or len(images) == 0:
        raise ValueError(f"need batch_size ≥ 1 and at least one image, got {batch_size} and {len(images)} images")
    encoder.eval()
    return torch.cat([encoder(images[s : s + batch_size]) for s in range(0, len(images), batch_size)])
