"""The restkv card's config, checked in the driver before any worker starts (issue 48): every press the run builds
from the card config (`make_press` for each method, budget and window: their own range checks run) and the ranges of
the card's own fields, each error naming the field. Kept out of the experiment so that it stays outside the run's code
fingerprint."""

from __future__ import annotations

from iclr26.kvcache import make_press
from iclr26.kvcache.baselines import METHODS as KNOWN_METHODS
from iclr26.kvcache.restkv.world import TASKS

from . import BASELINES, Cfg

NEEDED = ("full", "snapkv", "restkv")  # the comparisons every setting's metrics are built from


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _int(v, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        _need(_int(getattr(cfg, name), lo), name, f"an integer ≥ {lo}", getattr(cfg, name))


def _ints(cfg: Cfg, name: str, lo: int) -> None:
    v = getattr(cfg, name)
    _need(bool(v) and all(_int(x, lo) for x in v), name, f"a non-empty tuple of integers ≥ {lo}", v)


def _methods(name: str, methods) -> None:
    _need(all(m in KNOWN_METHODS for m in methods), name, f"methods among {', '.join(KNOWN_METHODS)}", methods)
    _need(all(m in methods for m in NEEDED) and any(m in BASELINES for m in methods), name,
          f"methods that include {', '.join(NEEDED)} and one baseline of {', '.join(BASELINES)}", methods)  # fmt: skip


def _presses(methods, budgets, window: int) -> None:
    for m in methods:
        for b in budgets if m != "full" else (None,):
            make_press(m, budget=b, window_size=window)  # budget ≥ 1, window ≥ 1 (≥ 2 with ReST-KV's smoothing)


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _methods("methods", cfg.methods)
    _at_least(cfg, {"tiny_length": 64, "tiny_examples": 1, "tiny_window": 2, "eff_budget": 1, "eff_new_tokens": 1,
                    "eff_repeats": 1, "threads": 1})  # fmt: skip
    _ints(cfg, "tiny_budgets", 1)
    _ints(cfg, "eff_lengths", 1)
    _need(cfg.eff_budget < min(cfg.eff_lengths), "eff_budget", f"< min(eff_lengths) = {min(cfg.eff_lengths)} (a press "
          "that keeps the whole context does not evict)", cfg.eff_budget)  # fmt: skip
    _presses(cfg.methods, cfg.tiny_budgets, cfg.tiny_window)
    _presses(("full", "snapkv", "restkv"), (cfg.eff_budget,), cfg.tiny_window)
    if cfg.smol:
        _at_least(cfg, {"smol_examples": 1, "smol_window": 2})
        _ints(cfg, "smol_lengths", 128)
        _ints(cfg, "smol_budgets", 1)
        _need(bool(cfg.smol_tasks) and all(t in TASKS for t in cfg.smol_tasks), "smol_tasks",
              f"a non-empty tuple of {', '.join(TASKS)}", cfg.smol_tasks)  # fmt: skip
        methods = [m for m in cfg.methods if m in cfg.smol_methods] if cfg.smol_methods else cfg.methods
        if cfg.smol_methods:
            _methods("smol_methods", cfg.smol_methods)
        _presses(methods, cfg.smol_budgets, cfg.smol_window)
        if cfg.eff_smol:
            _at_least(cfg, {"eff_smol_length": cfg.eff_budget + 1})
            _presses(("full", "snapkv", "restkv"), (cfg.eff_budget,), cfg.smol_window)
