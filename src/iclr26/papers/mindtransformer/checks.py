"""The mindtransformer card's config, checked in the driver before any worker starts (issue 48): every config the run
builds from the card config (`EncodingConfig`, the regions of the voxel world: their own range checks run) and the
ranges of the card's own fields, each error naming the field. Kept out of the experiment so that it stays outside the
run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.lenses.mindtransformer.encoding import EncodingConfig
from iclr26.lm import zoo

from . import Cfg
from .experiment import _regions

JITTER, DURATION, LEAD, TAIL = 0.1, 0.2, 2.0, 16.0  # `word_timings` and `n_scans_for` defaults, as `analyse` uses them


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _int(v, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        _need(_int(getattr(cfg, name), lo), name, f"an integer ≥ {lo}", getattr(cfg, name))


def _layers(cfg: Cfg, name: str, n_layers: int | None) -> None:
    v = getattr(cfg, name)
    top = "" if n_layers is None else f" < {n_layers} (the model's blocks)"
    ok = len(v) == 2 and all(_int(x, 0) for x in v) and v[0] <= v[1] and (n_layers is None or v[1] < n_layers)
    _need(ok, name, f"(early, later) block indices with 0 ≤ early ≤ later{top}", v)


def _run_length(cfg: Cfg, name: str) -> None:
    """The shortest run a seed can draw must keep TRs after trimming `trim` at both ends (`prepare_run`)."""
    n = getattr(cfg, name)
    scans = math.ceil((LEAD + (n - 1) * (cfg.word_gap - JITTER) + DURATION + TAIL) / cfg.tr)
    _need(scans > 2 * cfg.trim + 2, name, f"long enough for more than 2 × trim + 2 = {2 * cfg.trim + 2} TRs per run "
          f"(its runs can be as short as {scans} TRs of tr = {cfg.tr} s; lower trim or add words)", n)  # fmt: skip


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_runs": 3, "tiny_words_per_run": 1, "voxels_per_region": 1, "noise_voxels": 1, "k_features": 1,
                    "trim": 0})  # fmt: skip
    spec = zoo.ZOO.get(cfg.tiny_model)
    facts = sorted(k for k, v in zoo.ZOO.items() if v.world == "facts")
    _need(spec is not None and spec.world == "facts", "tiny_model", f"a zoo fact model ({', '.join(facts)})",
          cfg.tiny_model)  # fmt: skip
    _layers(cfg, "tiny_layers", spec.model.get("n_layers"))
    rho = cfg.rho
    _need(len(rho) == 2 and 0 < rho[0] <= rho[1] < 1, "rho", "(rho_min, rho_max) with 0 < rho_min ≤ rho_max < 1", rho)
    _need(math.isfinite(cfg.word_gap) and cfg.word_gap >= JITTER + DURATION, "word_gap",
          f"≥ {JITTER + DURATION:g} s (jitter {JITTER} s + word duration {DURATION} s: words must not overlap)",
          cfg.word_gap)  # fmt: skip
    _need(math.isfinite(cfg.tr) and cfg.tr > 0, "tr", "finite and > 0 seconds", cfg.tr)
    EncodingConfig(tr=cfg.tr, trim=cfg.trim)
    _regions(*cfg.tiny_layers, cfg.voxels_per_region, cfg.noise_voxels)  # Region: n_voxels ≥ 1
    _run_length(cfg, "tiny_words_per_run")
    if cfg.smollm2:
        _at_least(cfg, {"smol_words_per_run": 1})
        _layers(cfg, "smol_layers", None)  # the model's depth is known once it is loaded (--model may replace it)
        _run_length(cfg, "smol_words_per_run")
