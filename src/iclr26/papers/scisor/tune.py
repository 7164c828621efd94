"""Learning-rate selection of the SCISOR reproduction, run once per scale on a tuning world (seed 100, not one of the
evaluation seeds): `python -m iclr26.papers.scisor.tune --scale quick`.

Rule (the same for every model): train with AdamW at each learning rate of the grid until the model's own validation
loss stops improving (the run's early stopping), pick the rate with the lowest validation loss; while the pick is an
edge of the grid, extend the grid by its ratio (×3) past that edge (`iclr26.core.tuning.tune_on_grid`, the
project's rule). The Spearman ρ of single deletion scores on validation wild types is printed for information only
(it plays no part in the choice). The picked rates are written into the card's `Cfg` (`lr_scisor`, `lr_ar`,
`lr_mlm`) by hand and listed in the docs."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from iclr26.core.tuning import tune_on_grid
from iclr26.science.scisor import score_deletions

from . import CONFIGS
from .experiment import _rho, setup, train_model

TUNING_SEED = 100


def _val_rho(name, model, fams, rng) -> float:
    rhos = []
    for fam in fams:
        for _ in range(2):
            wt = fam.sample(rng)[0]
            var = [(i,) for i in range(len(wt))]
            truth = fam.log_likelihood([np.delete(wt, i) for i in range(len(wt))]) - fam.log_likelihood([wt])[0]
            with torch.no_grad():
                s = score_deletions(model, torch.tensor(wt), var) if name == "scisor" else model.score_deletions(
                    torch.tensor(wt), var)  # fmt: skip
            rhos.append(_rho(s.numpy(), truth))
    return float(np.mean(rhos))


def tune(scale: str = "quick", models=("scisor", "ar", "mlm"), grid=(1e-3, 3e-3, 1e-2), max_extend: int = 3) -> dict:
    cfg = CONFIGS[scale]
    data = setup(cfg, TUNING_SEED)
    torch.set_num_threads(1)
    picks = {}
    for name in models:
        results = {}

        def evaluate(lr, name=name, results=results):
            t0 = time.time()
            model, rec = train_model(name, cfg, data, TUNING_SEED, lr)
            rho = _val_rho(name, model, data["world"].families, np.random.default_rng(7))
            results[lr] = {"val": rec["best_val"], "steps": rec["steps"], "best_step": rec["best_step"],
                           "capped": rec["capped"], "rho_single_val": rho, "seconds": time.time() - t0}  # fmt: skip
            print(name, f"lr {lr:g}", json.dumps(results[lr]), flush=True)
            return -rec["best_val"], None  # the project's rule: highest score = lowest validation loss

        res = tune_on_grid(evaluate, grid, max_extensions=max_extend)
        grid_out = {f"{k:g}": v for k, v in sorted(results.items())}
        picks[name] = {"lr": res.best, "at_edge": res.at_edge, "grid": grid_out}
        print(name, "picked", f"{res.best:g}", "(edge)" if res.at_edge else "", flush=True)
    return picks


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="quick")
    ap.add_argument("--models", default="scisor,ar,mlm")
    ap.add_argument("--out", default=None, help="also write the picks and the grids to this JSON file")
    args = ap.parse_args()
    picks = tune(args.scale, tuple(args.models.split(",")))
    print(json.dumps(picks, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(picks, fh, indent=1)
