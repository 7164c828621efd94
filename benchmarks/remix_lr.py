"""The learning-rate rule of the ReMix reproduction, the same for GRPO and ReMix: the best rate on validation problems.

    python benchmarks/remix_lr.py [SEED] [LR ...]        # default seed 100 (not a reproduction seed)

Per learning rate on the grid (extended while the best sits on an edge), GRPO (TRL's `GRPOTrainer`) and ReMix are
trained from the seed's SFT policy with the quick configuration's budget; the score is the mean sampled accuracy
over the last two evaluations on the *validation* problems (never the test problems). Each method gets its own best
rate (the card's `lr` for GRPO and the control, `lr_remix` for ReMix and its ablations); the grid is extended by a
factor 2 until neither method's best sits on an edge.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time

import torch
from transformers.utils import logging as hf_logging

from iclr26.papers.remix import CONFIGS
from iclr26.papers.remix import experiment as E
from iclr26.rlft.remix.world import ArithmeticWorld


class _Ctx:
    quiet = True

    def log(self, msg):
        print(msg, flush=True)


def main() -> None:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(1)
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    grid = sorted(float(x) for x in sys.argv[2:]) or [5e-4, 1e-3, 2e-3, 4e-3]
    base = CONFIGS["quick"]
    world = ArithmeticWorld(seed, n_test=base.n_test)
    t0 = time.perf_counter()
    model, tok = E._sft(base, seed, world, _Ctx())

    def eval_fn(m):
        return E.evaluate(m, tok, world.val, 4, seed + 7, base.max_completion_length)

    print(f"SFT ({time.perf_counter() - t0:.0f} s): val acc/len {eval_fn(model)}", flush=True)
    scores: dict[tuple[str, float], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(f"{tmp}/sft")
        tok.save_pretrained(f"{tmp}/sft")
        while True:
            for lr in grid:
                for arm in ("grpo", "remix"):
                    if (arm, lr) in scores:
                        continue
                    cfg = dataclasses.replace(base, lr=lr, lr_remix=lr)
                    pts, wall = E._train_arm(arm, cfg, seed, f"{tmp}/sft", tok, world, eval_fn, f"{tmp}/{arm}{lr}")
                    scores[arm, lr] = E._final(pts)
                    curve = " ".join(f"{r}:{a:.2f}/{n:.1f}" for r, a, n, _ in pts)
                    print(
                        f"{arm:5s} lr {lr:g}: final val acc {scores[arm, lr]:.3f} ({wall:.0f} s)  {curve}", flush=True
                    )
            bests = [max(grid, key=lambda lr, a=a: scores[a, lr]) for a in ("grpo", "remix")]
            if grid[-1] in bests and grid[-1] < 0.05:
                grid.append(grid[-1] * 2)
            elif grid[0] in bests and grid[0] > 1e-5:
                grid.insert(0, grid[0] / 2)
            else:
                break
    best, best_remix = bests
    print(f"GRPO's best learning rate on validation: {best:g}")
    print(f"ReMix's best learning rate on validation: {best_remix:g}")


if __name__ == "__main__":
    main()
