"""The spwood card's config, checked in the driver before any worker starts: every method config the run builds from
the card config (their own range checks run) and the ranges of the card's own fields, each error naming the field.
Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import dataclasses

from iclr26.vision.spwood import SPWOODConfig

from . import Cfg

# every arm's SPWOODConfig overrides (experiment.run); the fixed threshold is tuned at run time, any grid value is valid
ARM_OVERRIDES = (
    {"filter": "none", "sparse_focal": False},  # full, supervised only
    {"filter": "fixed", "sparse_focal": False, "fixed_thr": 0.04},  # semi
    {"filter": "global", "sparse_focal": False},  # PWOOD-like
    {},  # SPWOOD, HBox, mixed
    {"filter": "global"},  # MPF ablation
    {"filter": "level", "sparse_focal": False},  # plain-focal ablation
    {"orientation_ss": False},  # HBox without L_Ang
)


def check_config(cfg: Cfg) -> None:
    """Build every arm's SPWOODConfig from `cfg` and check the card's own fields; a ValueError names the field."""
    for name, lo in (("n_train", 4), ("n_val", 4), ("n_test", 4), ("burn_in", 1), ("max_extra", 1),
                     ("full_steps", 1), ("eval_every", 1), ("patience", 1), ("batch", 1)):  # fmt: skip
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")
    if not (isinstance(cfg.width, int) and cfg.width >= 8 and cfg.width % 8 == 0):
        raise ValueError(f"width must be a positive multiple of 8 (the detector's GroupNorm has 8 groups), got "
                         f"{cfg.width!r}")  # fmt: skip
    for name in ("budget1", "budget2"):
        b = getattr(cfg, name)
        if len(b) != 2 or not all(0 < v <= 1 for v in b):
            raise ValueError(f"{name} must be (image ratio, instance ratio), both in (0, 1], got {b!r}")
    base = SPWOODConfig(burn_in=cfg.burn_in, max_steps=cfg.max_extra, eval_every=cfg.eval_every,
                        patience=cfg.patience, batch=cfg.batch, unsup_batch=cfg.batch, width=cfg.width)  # fmt: skip
    for kw in ARM_OVERRIDES:
        dataclasses.replace(base, **kw)
    dataclasses.replace(base, burn_in=cfg.full_steps, filter="none", sparse_focal=False)
