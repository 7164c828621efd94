"""Learning-rate tuning rule of the MLR reproduction (one rule for every method, validation split only).

For each trained stage (single-policy SFT, MLR's Step-DPO, GRPO) the learning rate with the best validation accuracy
on a factor-2 grid, extended by `iclr26.probing.tuning.tune_on_grid` until the best value is interior; seed 100 (not
a reported seed), quick-scale data. Usage: `python benchmarks/mlr_lr.py [sft|dpo|grpo ...]` (all by default).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time

import torch

from iclr26.papers.mlr import CONFIGS
from iclr26.papers.mlr import experiment as E
from iclr26.probing.tuning import tune_on_grid

SEED = 100
GRIDS = {"sft": (1.5e-3, 3e-3, 6e-3), "dpo": (2.5e-4, 5e-4, 1e-3), "grpo": (6.25e-5, 1.25e-4, 2.5e-4)}


class Ctx:
    quiet = True

    def log(self, msg):
        print(msg, flush=True)


def main(which):
    torch.set_num_threads(1)
    cfg = CONFIGS["quick"]
    bench = E.Bench(cfg, SEED)
    base, tok = E._pretrained_base(cfg, bench.world, Ctx())
    for name in which:
        t = time.process_time()
        if name == "sft":

            def ev(lr):
                b = E.Bench(dataclasses.replace(cfg, sft_lr=lr), SEED)
                s = E._single(b, base, tok, cfg.n_traces, Ctx(), f"sft lr {lr:g}")
                return b.val_fn(s)(), None
        elif name == "dpo":
            start = E._two_level(bench, base, tok, Ctx())

            def ev(lr, start=start):
                b = E.Bench(dataclasses.replace(cfg, dpo_lr=lr, dpo_lr_planner=10 * lr), SEED)
                s, _ = E._step_dpo(b, E._clone_system(start, b, pair_rule="tsmc"), Ctx(), f"dpo lr {lr:g}")
                return b.val_fn(s)(), None
        else:
            sft = E._single(bench, base, tok, cfg.n_traces, Ctx(), "sft_full")

            def ev(lr, sft=sft):
                b = E.Bench(dataclasses.replace(cfg, grpo_lr=lr), SEED)
                s = E._grpo(b, copy.deepcopy(sft), Ctx())
                return b.val_fn(s)(), None

        r = tune_on_grid(ev, GRIDS[name], max_extensions=3)
        print(f"{name}: best lr {r.best:g} (val {r.score:.3f}, edge {r.at_edge}); grid "
              + ", ".join(f"{v:g}: {s:.3f}" for v, s in sorted(r.scores.items()))
              + f"; {time.process_time() - t:.0f} s CPU", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:] or ["sft", "dpo", "grpo"])
