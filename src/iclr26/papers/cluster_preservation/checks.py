"""The cluster-preservation card's config, checked in the driver before any worker starts: every method config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import numpy as np

from iclr26.theory.cluster_preservation import (
    ClusterConfig,
    UoSConfig,
)

from . import Cfg


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields, in the driver before any worker starts (issue 48); a ValueError names the field and its range."""
    for cone in (cfg.train_cone, None, *cfg.sweep_cones):  # UoSConfig: dimensions, noise, shared ρ, cone angle
        _uos(cfg, cone)
    ClusterConfig(method=cfg.readout, tsc_q=cfg.tsc_q)
    for name in ("sweep_repeats", "width", "train_steps", "batch", "digits_width", "digits_steps", "digits_subsample"):
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
    if not 0 < cfg.lr < np.inf:
        raise ValueError(f"lr must be finite and > 0, got {cfg.lr}")
    if not cfg.sweep_cones:
        raise ValueError("sweep_cones must hold at least one cone angle in (0, 360] degrees")
    if not cfg.sweep_bias or not all(0 <= s < np.inf for s in cfg.sweep_bias):
        raise ValueError(f"sweep_bias must be one or more finite bias scales ≥ 0, got {cfg.sweep_bias!r}")
    if not (isinstance(cfg.digits_dim, int) and 1 <= cfg.digits_dim < 64):
        raise ValueError(
            f"digits_dim must be an integer in [1, 63] (the digits live in 64 pixels), got {cfg.digits_dim!r}"
        )
    if -(-1797 // cfg.digits_subsample) < 40:  # a stratified half split needs ≥ 2 test digits of every class
        raise ValueError(
            f"digits_subsample must be in [1, 44] (keep ≥ 40 of the 1,797 digits), got {cfg.digits_subsample}"
        )


def _uos(cfg: Cfg, cone: float | None) -> UoSConfig:
    return UoSConfig(ambient_dim=cfg.ambient_dim, n_clusters=cfg.n_clusters, subspace_dim=cfg.subspace_dim,
                     n_per_cluster=cfg.n_per_cluster, noise=cfg.noise, shared=cfg.shared, cone_angle=cone)  # fmt: skip
