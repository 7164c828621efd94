"""The kernel-surrogate card's config, checked in the driver before any worker starts: every method config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import numpy as np

from iclr26.theory.kernel_surrogate import (
    sample_subsets,
)
from iclr26.theory.kernel_surrogate.gradient import (
    GradientEstimatorConfig,
)

from . import Cfg
from .experiment import _krr


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")


def check_config(cfg: Cfg) -> None:
    """Build every method config the run builds from `cfg` (their own range checks run) and check the card's own
    fields, in the driver before any worker starts (issue 48); a ValueError names the field and its range."""
    _at_least(cfg, {"n_per_task": 4, "n_target": 6, "n_features": 1, "n_fit": 2, "n_heldout": 2, "mlp_hidden": 1,
                    "pretrain_iters": 1, "n_est_subsets": 1, "n_est_far": 0, "n_e2e_subsets": 2})  # fmt: skip
    _krr(cfg)  # KernelSurrogateConfig: kernel name, alpha ≥ 0
    for mu, n in ((cfg.mu, cfg.n_est_subsets), (cfg.mu_far, cfg.n_est_far)):
        if n:  # GradientEstimatorConfig: proj_dim ≥ 1, l2 = μ > 0
            GradientEstimatorConfig(proj_dim=cfg.proj_dim, l2=mu, seed=0)
    if not 0 < cfg.l2 < np.inf:
        raise ValueError(f"l2 (the logistic model's ridge) must be finite and > 0, got {cfg.l2}")
    if not 0 < cfg.fd_eps < 1:  # the task weights 1 ± ε of the finite differences must stay positive
        raise ValueError(f"fd_eps must be in (0, 1), got {cfg.fd_eps}")
    if cfg.n_fit + cfg.n_heldout > 2**12 - 1:
        raise ValueError(f"n_fit + n_heldout must be ≤ 4095 (the distinct non-empty subsets of the 12 tasks), got "
                         f"{cfg.n_fit} + {cfg.n_heldout}")  # fmt: skip
    sample_subsets(12, 2, cfg.p, 0)  # p (inclusion probability) in (0, 1)
