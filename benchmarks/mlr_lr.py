"""Learning-rate tuning of the MLR reproduction, run alone (the reproduction runs the same rule itself and caches it).

The rule lives in `iclr26.papers.mlr.tuning`: every stage (single-policy SFT, the planner LoRA's SFT, MLR's Step-DPO,
GRPO) gets the lr with the best validation score on a factor-2 grid that `iclr26.core.tuning.tune_on_grid` extends
past edge picks, on tuning seed 100. This script fills the same cache and prints the result.
Usage: `python benchmarks/mlr_lr.py [smoke|quick|full]` (quick by default; run it alone on the machine).
"""

from __future__ import annotations

import json
import sys
import time

import torch

from iclr26.papers.mlr import CONFIGS
from iclr26.papers.mlr.tuning import tuned_lrs


class Ctx:
    quiet = True

    def log(self, msg):
        print(msg, flush=True)


def main(scale: str = "quick"):
    torch.set_num_threads(1)
    t = time.process_time()
    lrs = tuned_lrs(CONFIGS[scale], Ctx())
    print(json.dumps(lrs, indent=1))
    print(f"{time.process_time() - t:.0f} s CPU (0 when read from the cache)")


if __name__ == "__main__":
    main(*sys.argv[1:])
