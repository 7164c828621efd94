"""The dispersion card's config, checked in the driver before any worker starts (issue 48): every method config the
run builds (the two push-away terms) and the ranges of the card's own fields, each error naming the field."""

from __future__ import annotations

from ...lenses.dispersion import PushAwayConfig
from ...worlds.text import DOMAINS
from . import DispersionConfig


def _need(cfg: DispersionConfig, ok: bool, name: str, what: str) -> None:
    if not ok:
        raise ValueError(f"DispersionConfig.{name} must be {what}, got {getattr(cfg, name)!r}")


def check_config(cfg: DispersionConfig) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    PushAwayConfig(lam=cfg.push_lam_single, mode="single")
    PushAwayConfig(lam=cfg.push_lam_cross, mode="cross")
    for name in ("domains", "tiny_domains", "push_domains"):
        vals = getattr(cfg, name)
        _need(cfg, bool(vals) and all(d in DOMAINS for d in vals), name, f"a non-empty tuple of {', '.join(DOMAINS)}")
    _need(cfg, len(set(cfg.push_domains)) == 2, "push_domains", "two different domains (single-domain one first)")
    _need(cfg, cfg.n_bins >= 2, "n_bins", "≥ 2 (a Pearson r over bin means; ≥ 3 to be informative)")
    _need(cfg, cfg.segments_per_domain >= 2 * cfg.n_bins, "segments_per_domain", f"≥ 2 × n_bins = {2 * cfg.n_bins}")
    _need(cfg, cfg.seg_len >= 3, "seg_len", "≥ 3 tokens (BOS, and two positions for a dispersion)")
    _need(cfg, 0 < cfg.early_layer_frac < 1, "early_layer_frac", "in (0, 1)")
    _need(cfg, bool(cfg.tiny_sizes) and all(d >= 4 and d % 4 == 0 for d in cfg.tiny_sizes), "tiny_sizes",
          "widths ≥ 4 divisible by the 4 heads")  # fmt: skip
    _need(cfg, cfg.tiny_steps >= 2, "tiny_steps", "≥ 2")
    _need(cfg, all(0 < c < cfg.tiny_steps for c in cfg.tiny_checkpoints), "tiny_checkpoints",
          f"steps in 1 … tiny_steps − 1 = {cfg.tiny_steps - 1}")  # fmt: skip
    _need(cfg, len(cfg.tiny_sizes) * (len(cfg.tiny_checkpoints) + 1) >= 3, "tiny_checkpoints",
          "enough for ≥ 3 (size, checkpoint) points with tiny_sizes")  # fmt: skip
    for name, low in (("tiny_vocab", 64), ("max_docs", 1), ("tiny_eval_segments", 4), ("tiny_seq", 3),
                      ("knn_store_blocks", 1), ("knn_eval_blocks", 2), ("knn_k", 1), ("push_steps", 1),
                      ("push_batch", 2), ("push_replicates", 1)):  # fmt: skip
        _need(cfg, getattr(cfg, name) >= low, name, f"≥ {low}")
    store = cfg.knn_store_blocks * (cfg.tiny_seq - 1)
    _need(cfg, cfg.knn_k <= store, "knn_k", f"≤ the datastore's {store} tokens (knn_store_blocks × (tiny_seq − 1))")
    _need(cfg, cfg.push_d_model >= 4 and cfg.push_d_model % 4 == 0, "push_d_model", "≥ 4 and divisible by 4 heads")
    _need(cfg, cfg.push_lr > 0, "push_lr", "> 0")
