"""The bed-llm card's config, checked in the driver before any worker starts (issue 48): every method config the run
builds from the card config (the 20 Questions worlds' `TwentyQuestionsConfig`, one `BEDConfig` per tuning-grid point,
selection and belief: their own range checks run) and the ranges of the card's own fields that `Cfg.__post_init__`
leaves open, each error naming the field. Kept out of the experiment so that it stays outside the run's code
fingerprint."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from iclr26.agents.bed_llm import BEDConfig
from iclr26.agents.bed_llm.agent import BELIEFS, SELECTIONS
from iclr26.agents.bed_llm.world_twenty_questions import TwentyQuestionsConfig
from iclr26.lm import zoo

from . import Cfg


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_games": 1, "n_val_games": 1, "n_guesses": 0, "pref_items": 2, "pref_features": 1,
                    "pref_pool": 1, "pref_turns": 1, "pref_users": 1, "pref_val_users": 1, "pref_k": 1,
                    "real_turns": 1, "real_rounds": 1})  # fmt: skip
    _need(cfg.pref_k <= cfg.pref_items, "pref_k", f"≤ pref_items = {cfg.pref_items} (hit-rate@k)", cfg.pref_k)
    _need(math.isfinite(cfg.pref_beta) and cfg.pref_beta > 0, "pref_beta", "finite and > 0", cfg.pref_beta)
    _need(0 <= cfg.forget < 1, "forget", "in [0, 1) (the share of the history the sampler ignores)", cfg.forget)
    _need(math.isfinite(cfg.popularity) and cfg.popularity >= 0, "popularity", "finite and ≥ 0", cfg.popularity)
    _need(all(0 < c <= 1 for c in cfg.naive_grid) and bool(cfg.naive_grid), "naive_grid",
          "a non-empty tuple of confidences in (0, 1]", cfg.naive_grid)  # fmt: skip
    for name in ("tau_grid", "pref_tau_grid"):  # the tuning halves a grid's smallest value while it wins
        v = getattr(cfg, name)
        _need(bool(v) and all(0 < x < 1 for x in v), name, "a non-empty tuple of filter thresholds τ in (0, 1)", v)
    v = cfg.guess_grid
    _need(bool(v) and all(0 < x <= 1 for x in v), "guess_grid", "a non-empty tuple of guess thresholds in (0, 1]", v)
    counts = all(isinstance(nv, int) and 0 <= nv <= cfg.n_attributes for nv in cfg.vague_sweep)
    what = f"a tuple of subjective-attribute counts in [0, n_attributes = {cfg.n_attributes}]"
    _need(counts, "vague_sweep", what, cfg.vague_sweep)
    name = cfg.real_model
    known = name in ("smollm2-135m", "smollm2") or name in zoo.ZOO or "/" in name or Path(name).expanduser().exists()
    _need(known, "real_model", f"smollm2-135m, a zoo model ({', '.join(sorted(zoo.ZOO))}) or a local model folder",
          name)  # fmt: skip
    wc = TwentyQuestionsConfig(n_classes=cfg.n_classes, n_subclasses=cfg.n_subclasses, per_subclass=cfg.per_subclass,
                               n_attributes=cfg.n_attributes, n_vague=cfg.n_vague, ambiguous=cfg.ambiguous,
                               noise=cfg.noise)  # fmt: skip
    for nv in cfg.vague_sweep:  # n_vague in [0, n_attributes]
        replace(wc, n_vague=nv)
    base = dict(n_hypotheses=cfg.n_hypotheses, n_candidates=cfg.n_candidates, refill_rounds=cfg.refill_rounds)
    points = [(t, g) for t in cfg.tau_grid for g in cfg.guess_grid] + [(t, 0.5) for t in cfg.pref_tau_grid]
    for tau, g in points:  # BEDConfig: τ in (0, 1), guess threshold in (0, 1], sizes ≥ 1
        for selection in SELECTIONS:
            BEDConfig(filter_threshold=tau, guess_threshold=g, selection=selection, **base)
        for belief in BELIEFS:
            BEDConfig(filter_threshold=tau, guess_threshold=g, belief=belief, **base)
