"""The seekbench card's config, checked in the driver before any worker starts (issue 48): every method config the
run builds from the card config (`SearchWorldConfig`, `RetrieverConfig`, the six agents' `AgentKnobs`: their own range
checks run) and the ranges of the card's own fields that `Cfg.__post_init__` leaves open, each error naming the field.
Kept out of the experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

from iclr26.agents.seekbench.retriever import RetrieverConfig
from iclr26.agents.seekbench.world import SearchWorldConfig

from . import Cfg
from .experiment import agents


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"n_entities": 1, "n_val": 1, "n_test": 2, "n_boot": 10, "n_boot_official": 10})
    names = SearchWorldConfig.__dataclass_fields__["n_names"].default ** 2  # first and last names of the world
    _need(cfg.n_entities <= names, "n_entities", f"an integer in [1, {names}] (the world's distinct names)",
          cfg.n_entities)  # fmt: skip
    _need(0 < cfg.level < 1, "level", "in (0, 1) (the bootstrap CI level)", cfg.level)
    knobs = agents(cfg)  # AgentKnobs: max_searches ≥ 1, probabilities in [0, 1]
    n_traces = len(knobs) * cfg.n_test  # every agent answers every test question
    _need(cfg.n_expert < n_traces, "n_expert", f"< the {n_traces} test traces ({len(knobs)} agents × n_test), so "
          "that the judges are scored on the rest", cfg.n_expert)  # fmt: skip
    SearchWorldConfig(n_entities=cfg.n_entities, p_missing=cfg.p_missing, p_conflict=cfg.p_conflict,
                      p_paraphrase=cfg.p_paraphrase)  # fmt: skip
    RetrieverConfig(k=cfg.top_k)
