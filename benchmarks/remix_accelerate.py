"""ReMix's scale-out route: the same `ReMixTrainer` code under `accelerate launch` with two CPU processes.

    accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no benchmarks/remix_accelerate.py
    (on a CPU-only machine `--multi_gpu` starts two gloo processes; `--cpu` would start one)
    python benchmarks/remix_accelerate.py          # one process, for comparison

Each process builds the same random micro policy (seeded) and trains it with ReMix (p = 0.4, N = 2, m = 2, KL-Convex,
reincarnation after iteration 3) on the arithmetic world for 6 iterations; TRL's `RepeatSampler` gives every
process its own prompt groups, rewards are gathered across processes for the group normalisation, and DDP averages
the gradients. The script checks that the parameters agree across processes at the end, and prints per process the
iterations, the fresh rollouts counted by the trainer (all processes together), the off-policy share and the wall time.
"""

from __future__ import annotations

import os
import tempfile
import time

import torch
from datasets import Dataset
from transformers.utils import logging as hf_logging

from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer
from iclr26.rlft.remix import ReMixConfig, ReMixTrainer
from iclr26.rlft.remix.world import ArithmeticWorld, parse_answer, reward


def main() -> None:
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(1)
    rank = int(os.environ.get("LOCAL_RANK", 0))
    w = ArithmeticWorld(0)
    tok = build_word_tokenizer(w.vocabulary_texts())
    tok.padding_side = "left"
    model = tiny_model("llama", seed=0, vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=32)
    answers = {p.prompt: p for p in w.train}

    def rf(prompts, completions, **kw):
        # exact answer 1, well-formed answer 0.2 (a random policy needs some signal to move)
        return [reward(c, answers[p]) + 0.2 * (parse_answer(c) is not None) for p, c in zip(prompts, completions)]

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/policy{rank}"
        model.save_pretrained(path)
        tok.save_pretrained(path)
        args = ReMixConfig(output_dir=f"{tmp}/out", per_device_train_batch_size=16, num_generations=4,
                           max_completion_length=6, learning_rate=1e-3, beta=0.01, reincarnate_at=3,
                           kl_lambda_start=1, kl_lambda_every=1, max_steps=9, report_to="none", use_cpu=True,
                           save_strategy="no", disable_tqdm=True, logging_steps=1000, seed=0)  # fmt: skip
        ds = Dataset.from_list([{"prompt": p.prompt} for p in w.train])
        tr = ReMixTrainer(model=path, reward_funcs=rf, args=args, train_dataset=ds, processing_class=tok)
        t0 = time.perf_counter()
        tr.train()
        wall = time.perf_counter() - t0
        flat = torch.cat([p.detach().flatten() for p in tr.accelerator.unwrap_model(tr.model).parameters()])
        gathered = tr.accelerator.gather(flat.unsqueeze(0))
        same = bool(torch.allclose(gathered[0], gathered[-1]))
        off = [h["off_policy_frac"] for h in tr.history]
        print(f"rank {tr.accelerator.process_index}/{tr.accelerator.num_processes}: iterations {tr.iteration}, "
              f"rollouts {tr.rollouts}, reincarnated {tr.reincarnated}, off-policy share per iteration "
              f"{[round(x, 2) for x in off]}, params equal across processes {same}, train wall {wall:.1f} s",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
