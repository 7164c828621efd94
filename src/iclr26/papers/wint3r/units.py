"""The reproduction's data and its trained arms, each arm of each seed a cached unit (`core.units`).

Training the four arms is nearly all of a seed's time (at quick scale about 4 x 400 s of one core). An arm depends
only on its seed, the training fields of the config, the arm's switches and the code, so it is built once and saved to
``trained_cache_dir()/wint3r``: an interrupted run resumes arm by arm, and a worker that has finished its own seed
trains the arms of a seed still waiting for a worker (`prepare`), so three seeds on two workers no longer take two
full rounds. Every arm starts from its own seeds (initialisation ``torch.manual_seed(seed)``, batches from a generator
seeded by ``seed``), so a unit trained in another process is the same tensor for tensor.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from iclr26.core.units import cached_unit, code_digest, unit_path
from iclr26.vision.wint3r import TrainConfig, WinT3R, WinT3RConfig, train
from iclr26.vision.wint3r.world import make_streams

from . import ARM_CFG, ARMS, Cfg

_FIELDS = ("n_train", "n_val", "train_len", "texture_mix", "dim", "lr", "batch", "max_steps", "eval_every", "patience")


@functools.lru_cache(maxsize=8)
def streams(n: int, length: int, seed: int, texture_mix: float) -> dict:
    """`make_streams`, kept per process (every arm of a seed trains on the same data)."""
    return make_streams(n, length, seed, texture_mix=texture_mix)


def train_val(cfg: Cfg, seed: int) -> tuple[dict, dict]:
    return (streams(cfg.n_train, cfg.train_len, 1000 * seed + 1, cfg.texture_mix),
            streams(cfg.n_val, cfg.train_len, 1000 * seed + 2, cfg.texture_mix))  # fmt: skip


def new_model(cfg: Cfg, seed: int, arm: str) -> WinT3R:
    """The arm's model at its initialisation: the same in every arm of a seed (the switches add no parameters)."""
    torch.manual_seed(seed)
    return WinT3R(WinT3RConfig(dim=cfg.dim, **ARM_CFG[arm]))


@functools.lru_cache(maxsize=1)
def _code() -> str:
    import iclr26.vision.wint3r as vis
    import iclr26.vision.wint3r.world as world

    return code_digest([*sorted(Path(vis.__file__).parent.glob("*.py")), Path(world.__file__), Path(__file__)])


def arm_path(cfg: Cfg, seed: int, arm: str) -> Path:
    spec = {"seed": seed, "arm": arm, "code": _code(), **{k: getattr(cfg, k) for k in _FIELDS}}
    return unit_path("wint3r", f"s{seed}-{arm}", spec)


def _build(cfg: Cfg, seed: int, arm: str, progress) -> dict:
    data, val = train_val(cfg, seed)
    model = new_model(cfg, seed, arm)
    tcfg = TrainConfig(lr=cfg.lr, batch=cfg.batch, max_steps=cfg.max_steps, eval_every=cfg.eval_every,
                       patience=cfg.patience)  # fmt: skip
    info = train(model, data, val, tcfg, seed=seed, log=progress)
    return {"state": model.state_dict(), **info}


def arm_unit(cfg: Cfg, seed: int, arm: str, wait: bool = True, log=None) -> dict | None:
    """The trained arm ``arm`` of ``seed``: {"state", "steps", "best_step", "best_val", "seconds"} (``seconds``: the
    training time in the process that built it). ``wait=False``: None if another process is training it."""
    return cached_unit(arm_path(cfg, seed, arm), lambda: _build(cfg, seed, arm, log), f"WinT3R arm {arm} of seed "
                       f"{seed}", wait=wait, log=log)  # fmt: skip


def trained_arms(cfg: Cfg, seed: int, log=None) -> dict[str, dict]:
    """This seed's arm units: first those no other process is training, then the rest (waiting for them)."""
    out = {}
    for arm in ARMS:
        if (u := arm_unit(cfg, seed, arm, wait=False, log=log)) is not None:
            out[arm] = u
    return {arm: out[arm] if arm in out else arm_unit(cfg, seed, arm, log=log) for arm in ARMS}


def prepare(cfg: Cfg, seed: int, seeds: tuple[int, ...], log=None) -> None:
    """Train the arms of the seeds after ``seed`` in ``seeds`` that nobody trains yet (work for a worker that would
    otherwise idle at the end of the run); arms another process holds are skipped."""
    for later in seeds[seeds.index(seed) + 1 :] if seed in seeds else ():
        for arm in ARMS:
            if not arm_path(cfg, later, arm).exists():
                arm_unit(cfg, later, arm, wait=False, log=log)
