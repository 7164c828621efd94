"""Learning-rate selection of the RF-MatID reproduction at quick scale, run once on a tuning lab (world seed 100, not
one of the evaluation seeds): `python -m iclr26.papers.rf_matid.tune --scale quick`.

The rule is the run's own (`experiment._tune`, used per seed when `Cfg.tune` is set, as at smoke and full scale): for
every model, `iclr26.core.tuning.tune_on_grid` over a geometric grid (nets: OneCycle max_lr 1e-3, 3e-3, 1e-2;
boosting: 0.05, 0.1, 0.2), extended past any edge pick; score = accuracy on held-out training distances of S2-mod1,
each candidate trained with the run's early stopping. At quick scale the per-seed tuning does not fit the time budget,
so the picks of this script are written into the card's `Cfg` (`lr_cnn`, `lr_transformer`, `lr_rf_matid`, `lr_gb`,
and `lr_cnn_time` for the CNN on the time-domain view) by hand and listed in the docs."""

from __future__ import annotations

import argparse
import json
import time

from iclr26.core.seeding import seed_everything
from iclr26.science.rf_matid.benchmark import view
from iclr26.science.rf_matid.world import RFMaterialWorld, RFWorldConfig

from . import CONFIGS
from .experiment import _tune

TUNING_SEED = 100


class _Log:
    def log(self, msg: str) -> None:
        print(msg, flush=True)


def tune(scale: str = "quick", models: tuple[str, ...] | None = None) -> dict:
    import torch

    torch.set_num_threads(1)
    cfg = CONFIGS[scale]
    seed_everything(TUNING_SEED)
    world = RFMaterialWorld(
        RFWorldConfig(n_bins=cfg.n_bins, repeats=cfg.repeats, kappa=cfg.kappa, angle_keep=cfg.angle_keep), TUNING_SEED
    )
    ds = world.dataset()
    x, f = view(ds.H, ds.f_ghz, "P1")
    xt = view(ds.H, ds.f_ghz, "P1", kind="time")[0]
    picks = {}
    for name in models or (*cfg.models, "cnn_time"):
        t0 = time.time()
        if name == "cnn_time":  # the CNN on the time-domain view, by the same rule
            picks[name] = _tune("cnn", xt, ds.label, f, ds.distance_mm, cfg, TUNING_SEED, _Log(), "cnn (time view)")
        else:
            picks[name] = _tune(name, x, ds.label, f, ds.distance_mm, cfg, TUNING_SEED, _Log())
        print(name, "picked", picks[name], f"({time.time() - t0:.0f} s)", flush=True)
    return picks


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="quick")
    ap.add_argument("--models", default=None, help="comma-separated subset of the card's models (and cnn_time)")
    args = ap.parse_args()
    print(json.dumps(tune(args.scale, tuple(args.models.split(",")) if args.models else None)))
