"""The efficient-probing card's config, checked in the driver before any worker starts: every method config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.probing.efficient_probing import PROBES, ProbeTrainConfig, make_probe
from iclr26.probing.efficient_probing.vit import MAEConfig, ViTConfig

from . import Cfg


def _probe_kwargs(name: str, cfg: Cfg) -> dict:
    return {"ep": {"num_queries": cfg.ep_queries}, "aim": {"num_heads": cfg.attn_heads},
            "mhca": {"num_heads": cfg.attn_heads}}.get(name, {})  # fmt: skip


def _recipe(cfg: Cfg, lr: float, seed: int) -> ProbeTrainConfig:
    return ProbeTrainConfig(
        epochs=cfg.probe_epochs, warmup_epochs=cfg.probe_epochs // 10, batch_size=cfg.probe_batch, lr=lr, seed=seed
    )


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields, in the driver before any worker starts (issue 48); a ValueError names the field and its range."""
    ViTConfig(image_size=cfg.image_size, dim=cfg.dim, depth=cfg.depth, heads=cfg.heads)
    MAEConfig(epochs=cfg.mae_epochs, norm_pix_loss=False)
    if not cfg.lr_grid or not all(0 < lr < math.inf for lr in cfg.lr_grid):
        raise ValueError(f"lr_grid must hold one or more finite learning rates > 0, got {cfg.lr_grid!r}")
    for lr in cfg.lr_grid:
        _recipe(cfg, lr, 0)
    for name in PROBES:  # EP: dim divisible by its queries; AIM, MHCA: by their heads
        make_probe(name, cfg.dim, 10, **_probe_kwargs(name, cfg))
    if cfg.image_size < 8:  # glyphs are drawn at up to 8 px and digits at 8 px, pasted at random positions
        raise ValueError(f"image_size must be ≥ 8 pixels (a glyph or digit must fit), got {cfg.image_size}")
    for name, lo in (("n_glyph_train", 10), ("n_glyph_test", 1), ("lr_extensions", 0)):
        if getattr(cfg, name) < lo:
            raise ValueError(f"{name} must be ≥ {lo}, got {getattr(cfg, name)}")
    if not 10 <= cfg.n_digits <= 1797:
        raise ValueError(f"n_digits must be in [10, 1797] (scikit-learn's bundled digits), got {cfg.n_digits}")
    n_test = round(cfg.digit_test_fraction * cfg.n_digits)
    if not (0 < cfg.digit_test_fraction < 1 and 1 <= n_test <= cfg.n_digits - 10):
        raise ValueError(f"digit_test_fraction must leave ≥ 1 test and ≥ 10 training digits of n_digits="
                         f"{cfg.n_digits}, got {cfg.digit_test_fraction}")  # fmt: skip
