"""Decode time and peak memory per eviction method and context length, with ratios to the full cache.

Runs the normal ``model.generate`` path under each press (prefill, eviction, greedy decoding from the shrunk cache) and
checks that the cache really shrank. Default model: a random tiny llama (timing does not depend on the weights);
``--model smollm2-135m`` uses the real SmolLM2-135M.

    python benchmarks/kv_decode.py --lengths 1024 2048 4096 --budget 128 --methods full snapkv restkv
"""

from __future__ import annotations

import argparse

import torch

from iclr26.kvcache import METHODS, make_press, timed_generate


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny", help="'tiny' (random llama, d=256, 4 layers) or a zoo/HF model name")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--budget", type=int, default=128, help="KV pairs kept per layer and head")
    ap.add_argument(
        "--methods", nargs="+", default=["full", "streaming_llm", "snapkv", "tova", "h2o", "restkv"], choices=METHODS
    )
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.model == "tiny":
        from iclr26.lm.tiny import tiny_model

        model = tiny_model(
            "llama",
            vocab_size=1000,
            d_model=256,
            n_layers=4,
            n_heads=8,
            n_kv_heads=2,
            max_len=max(args.lengths) + args.new_tokens,
        )
        vocab = 1000
    else:
        from iclr26.lm import zoo

        model, tok = zoo.load(args.model)
        vocab = len(tok)
    model = model.to(device)
    print(f"model={args.model} device={device} budget={args.budget} new_tokens={args.new_tokens}")
    print(
        f"{'method':>14} {'len':>6} {'cache':>6} {'prefill s':>10} {'decode ms/tok':>14} {'x full':>7} "
        f"{'KV MB':>8} {'peak MB':>8} {'peak/full':>9}"
    )
    for n in args.lengths:
        ids = torch.randint(4, vocab, (1, n), generator=torch.Generator().manual_seed(0)).to(device)
        full = None
        for method in ["full"] + [m for m in args.methods if m != "full"]:
            press = make_press(method, budget=args.budget, window_size=args.window)
            r = timed_generate(model, ids, press, max_new_tokens=args.new_tokens, repeats=2)
            if method != "full" and r["cache_len"] > args.budget:
                raise RuntimeError(f"{method} did not shrink the cache ({r['cache_len']} > {args.budget})")
            full = full or r
            speed = full["decode_s_per_token"] / max(r["decode_s_per_token"], 1e-12)
            peak = r["peak_mem_bytes"] / max(full["peak_mem_bytes"], 1)
            print(
                f"{method:>14} {n:>6} {r['cache_len']:>6} {r['prefill_s']:>10.3f} "
                f"{1e3 * r['decode_s_per_token']:>14.2f} {speed:>7.2f} {r['kv_bytes'] / 2**20:>8.2f} "
                f"{r['peak_mem_bytes'] / 2**20:>8.1f} {peak:>9.2f}"
            )


if __name__ == "__main__":
    main()
