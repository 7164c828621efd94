"""The scisor card's config, checked in the driver before any worker starts: every method config the run builds from
the card config (their own range checks run) and the ranges of the card's own fields, each error naming the field.
Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

from iclr26.science.scisor.baselines import SeqLM

from . import Cfg
from .experiment import scisor_config

N_MOTIFS = 3  # the world's families carry three motifs (make_family's default)


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields; a ValueError names the field and its range."""
    _at_least(cfg, {"n_families": 1, "per_family": 2, "n_val": 1, "n_wt": 1, "n_multi": 2, "n_long": 1,
                    "d_model": 4, "n_layers": 1, "batch": 1, "max_steps": 1, "eval_every": 1, "patience": 1,
                    "val_mc": 1})  # fmt: skip
    if cfg.n_match < 13 * N_MOTIFS:
        raise ValueError(f"n_match must be an integer ≥ {13 * N_MOTIFS} (13 columns per motif), got {cfg.n_match!r}")
    if cfg.d_model % 4:
        raise ValueError(f"d_model must be divisible by the 4 attention heads of every model, got {cfg.d_model}")
    for lr in (cfg.lr_scisor, cfg.lr_ar, cfg.lr_mlm):
        if not 0 < lr < 1.0:
            raise ValueError(f"lr_scisor, lr_ar and lr_mlm must be in (0, 1) (AdamW rates), got {lr!r}")
        scisor_config(cfg, lr)  # SCISORConfig: t_max in (0, 1), lr > 0, d_model divisible by its heads
    for kind in ("ar", "mlm"):  # the baselines' trunks, as the run builds them
        SeqLM(kind, d_model=cfg.d_model, n_layers=cfg.n_layers)
