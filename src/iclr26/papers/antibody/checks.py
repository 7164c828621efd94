"""The antibody card's config, checked in the driver before any worker starts (issue 48): every config the run builds
from the card config (the world, the tiny Llama's HF config: their own range checks run) and the ranges of the card's
own fields that `Cfg.__post_init__` leaves open (learning rates, tuning grids, the sizes of the world's disjoint prompt
sets: a split larger than its prompt space would never finish drawing), each error naming the field. Kept out of the
experiment so that it stays outside the run's code fingerprint."""

from __future__ import annotations

import math

from iclr26.lm.tiny import tiny_config
from iclr26.rlft.antibody.world import SLOTS, ForbiddenWorld

from . import Cfg

GRIDS = ("booster_grid", "eta_grid", "lisa_grid", "tau_grid", "attack_lr_grid")
SIZES = "n_align, n_harm, n_ft, n_val, n_test"


def _need(ok: bool, name: str, what: str, value) -> None:
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _at_least(cfg: Cfg, bounds: dict[str, int]) -> None:
    for name, lo in bounds.items():
        v = getattr(cfg, name)
        _need(isinstance(v, int) and not isinstance(v, bool) and v >= lo, name, f"an integer ≥ {lo}", v)


def _prompt_space(cfg: Cfg, w: ForbiddenWorld) -> None:
    """Every split draws distinct prompts from one shared pool per kind (`ForbiddenWorld.splits`)."""
    quarter, c = cfg.n_align // 4, len(w.content)
    forbidden = (cfg.n_align - 2 * quarter) + cfg.n_harm + cfg.n_ft + cfg.n_val + cfg.n_test
    pools = (("forbidden prompts", forbidden, SLOTS * len(w.triggers) * c ** (SLOTS - 1)),
             ("user harmful prompts", cfg.n_ft, SLOTS * len(w.attack_triggers) * c ** (SLOTS - 1)),
             ("task-B prompts", quarter + cfg.n_ft + cfg.n_val + cfg.n_test, c**SLOTS),
             ("known-token task-B prompts", quarter, len(w.known) ** SLOTS),
             ("task-A prompts", quarter + cfg.n_val + cfg.n_test, c**SLOTS))  # fmt: skip
    for what, n, space in pools:
        _need(n <= space, SIZES, f"within the world's {space} distinct {what} (they draw {n})",
              (cfg.n_align, cfg.n_harm, cfg.n_ft, cfg.n_val, cfg.n_test))  # fmt: skip


def check_config(cfg: Cfg) -> None:
    """Raise ValueError naming the first field out of its range (the run would fail on it later, in a worker)."""
    _at_least(cfg, {"d_model": 1, "n_layers": 1, "pretrain_pool": 1, "pretrain_bs": 1, "n_align": 4, "n_harm": 1,
                    "max_ext": 0})  # fmt: skip
    for name in ("pretrain_lr", "align_lr", "ft_lr"):
        v = getattr(cfg, name)
        _need(math.isfinite(v) and v > 0, name, "a finite learning rate > 0", v)
    _need(0 <= cfg.warmup <= 1, "warmup", "a share of the fine-tuning steps in [0, 1]", cfg.warmup)
    _need(math.isfinite(cfg.weight_decay) and cfg.weight_decay >= 0, "weight_decay", "finite and ≥ 0",
          cfg.weight_decay)  # fmt: skip
    _need(math.isfinite(cfg.paper_eta) and cfg.paper_eta >= 0, "paper_eta", "finite and ≥ 0", cfg.paper_eta)
    for name in GRIDS:  # `tune_on_grid` takes positive grids
        v = getattr(cfg, name)
        _need(bool(v) and all(math.isfinite(x) and x > 0 for x in v), name, "a non-empty tuple of finite values > 0", v)
    w = ForbiddenWorld(0)  # the vocabulary sizes are the same for every seed
    tiny_config("llama", vocab_size=w.vocab_size, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4,
                d_ff=4 * cfg.d_model, max_len=16)  # d_model divisible by the 4 heads  # fmt: skip
    _prompt_space(cfg, w)
