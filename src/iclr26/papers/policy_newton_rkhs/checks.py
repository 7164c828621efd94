"""The policy-newton-rkhs card's config, checked in the driver before any worker starts: every method config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import numpy as np

from iclr26.theory.policy_newton import (
    PolicyNewtonConfig,
    RKHSGradientConfig,
)

from . import Cfg


def _finite(cfg: Cfg, names, lo: float = 0.0, closed: bool = False) -> None:
    for name in names:
        values = getattr(cfg, name)
        for v in values if isinstance(values, tuple) else (values,):
            if not ((lo <= v if closed else lo < v) and v < np.inf):
                raise ValueError(f"{name} must be finite and {'≥' if closed else '>'} {lo:g}, got {values!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields, in the driver before any worker starts (issue 48); a ValueError names the field and its range."""
    PolicyNewtonConfig(M=cfg.pn_M)
    RKHSGradientConfig(lr=cfg.rkhs_pg_lr, n_sample_states=cfg.rkhs_pg_sample_states)
    for name, lo in (("toy_iters", 3), ("n_envs", 1), ("horizon", 1), ("n_updates", 1)):  # 3: the order needs 3 errors
        v = getattr(cfg, name)
        if not (isinstance(v, int) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")
    if not cfg.toy_levels or not all(isinstance(v, int) and v >= 1 for v in cfg.toy_levels):
        raise ValueError(f"toy_levels must be one or more integers ≥ 1 (resource levels), got {cfg.toy_levels!r}")
    for name in ("toy_M_grid", "toy_lr_grid"):
        if not getattr(cfg, name):
            raise ValueError(f"{name} must hold at least one value")
    _finite(cfg, ("toy_kernel_gamma", "toy_M_grid", "toy_lr_grid", "toy_tol", "kernel_gamma", "crpn_M", "reinforce_lr"))
    _finite(cfg, ("toy_reg", "toy_init_scale", "toy_noise"), closed=True)
    if not 0 <= cfg.gamma <= 1:
        raise ValueError(f"gamma (the return discount) must be in [0, 1], got {cfg.gamma}")
    import gymnasium

    if cfg.env_id not in gymnasium.registry:
        raise ValueError(f"env_id {cfg.env_id!r} is not a registered Gymnasium environment (e.g. CartPole-v1)")
