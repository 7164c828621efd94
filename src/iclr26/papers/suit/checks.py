"""The suit card's config, checked in the driver before any worker starts (issue 48): every editor config the run
builds from the card config (their own range checks run) and the ranges of the card's own fields, each error naming the
field. Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.editing import AlphaEditConfig, MEMITConfig
from iclr26.editing.suit import SUITConfig
from iclr26.lm import zoo

from . import Cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def _editors(cfg: Cfg, common: dict) -> None:
    """The configs `make_editors` builds (λ and the threshold are calibrated later: their defaults stand in)."""
    MEMITConfig(**common, mom2_update_weight=1.0)
    AlphaEditConfig(**common, nullspace_relative=True)
    for kp in (True, False):  # SUITConfig: tau_energy in [0, 1)
        SUITConfig(**common, mom2_update_weight=1.0, nullspace_relative=True, tau_energy=cfg.tau_energy,
                   use_key_projection=kp)  # fmt: skip
    SUITConfig(**common, mom2_update_weight=1.0, nullspace_relative=True, tau_energy=0.6)  # the τ = 0.6 size report


def _prefixes(cfg: Cfg, name: str) -> None:
    v = getattr(cfg, name)  # the editors' context_templates: random prefixes (length in tokens, how many)
    ok = all(len(x) == 2 and all(isinstance(n, int) for n in x) and x[0] >= 1 and x[1] >= 0 for x in v)
    _need(ok, name, "((length ≥ 1, count ≥ 0), ...) of random prefixes", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    spec = zoo.ZOO.get(cfg.tiny_model)
    facts = sorted(k for k, v in zoo.ZOO.items() if v.world == "facts")
    _need(spec is not None and spec.world == "facts", "tiny_model", f"a zoo fact model ({', '.join(facts)})",
          cfg.tiny_model)  # fmt: skip
    _at_least(cfg, {"n_edits": 1, "batch_size": 1, "stats_n_tokens": 1})
    _need(math.isfinite(cfg.tau_energy) and 0 <= cfg.tau_energy < 1, "tau_energy", "in [0, 1)", cfg.tau_energy)
    eff = cfg.calibration_efficacy
    _need(math.isfinite(eff) and eff <= 1, "calibration_efficacy",
          "≤ 1 (a target efficacy in (0, 1]; ≤ 0 keeps the scale-transferred knobs)", eff)  # fmt: skip
    if cfg.calibration_efficacy > 0:
        _at_least(cfg, {"calibration_edits": 1})
    _prefixes(cfg, "prefixes")
    _editors(cfg, dict(context_templates=cfg.prefixes, stats_n_tokens=cfg.stats_n_tokens))
    if cfg.smollm2:
        _at_least(cfg, {"n_edits_smollm2": 1, "batch_size_smollm2": 1, "stats_n_tokens_smollm2": 1})
        _prefixes(cfg, "prefixes_smollm2")
        _editors(cfg, dict(context_templates=cfg.prefixes_smollm2, stats_n_tokens=cfg.stats_n_tokens_smollm2))
