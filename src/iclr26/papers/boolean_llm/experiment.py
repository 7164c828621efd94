"""The MBOK reproduction: `run` (tiny LM on the Python manual per seed; SmolLM2 once per config, cached) and `plots`."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import os
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

from iclr26.compression.mbok import (
    MBOKConfig,
    bits_per_weight,
    boolean_layers,
    distill,
    fake_quantize_model,
    layer_errors,
    mean_errors,
    quantizable_linears,
    quantize_model,
    save_packed,
)
from iclr26.core.locks import cached_json
from iclr26.core.paths import trained_cache_dir
from iclr26.lm import zoo
from iclr26.lm.tiny import tiny_model
from iclr26.lm.train import encode_stream
from iclr26.worlds.text import load_domain, test_split, train_split

from . import BUDGET_VARIANTS, VERSION, Cfg
from .finetune import makers, perplexity, text_blocks, tiny_spec, tuned_lrs


def _tiny(cfg: Cfg, seed: int, ctx, m: dict) -> None:
    model, tok = zoo.load(tiny_spec(cfg).name, seed=seed, progress=not ctx.quiet)
    train, val, test = text_blocks(tok, cfg)
    g = torch.Generator().manual_seed(seed)
    calib = train[torch.randperm(len(train), generator=g)[: cfg.calib_blocks]]
    ppl = lambda mod: perplexity(mod, test)  # noqa: E731

    m["ppl_fp"] = ppl(model)
    rnd = tiny_model("llama", seed=seed, vocab_size=model.config.vocab_size, d_model=cfg.d_model,
                     n_layers=cfg.n_layers, max_len=cfg.seq_len)  # fmt: skip
    m["ppl_random"] = ppl(rnd)
    m["ppl_random_quarter"] = m["ppl_random"] / 4
    for method in ("rtn", "gptq", "hqq"):
        for bits in (2, 3):
            q = fake_quantize_model(copy.deepcopy(model), method, bits, 64, calib=calib)
            m[f"ppl_{method}{bits}"] = ppl(q)
    data_free = {}
    for k in (1, 2, 3):
        data_free[k] = quantize_model(copy.deepcopy(model), k=k)
        m[f"ppl_mbok{k}"] = ppl(data_free[k])
    with tempfile.TemporaryDirectory() as d:
        for k in (2, 3):
            m[f"bpw_mbok{k}"] = bits_per_weight(data_free[k], Path(d) / f"k{k}.safetensors")
    ctx.log(
        f"tiny FP PPL {m['ppl_fp']:.2f} (random {m['ppl_random']:.0f}); data-free: "
        + ", ".join(
            f"{k} {m['ppl_' + k]:.2f}"
            for k in ("rtn2", "gptq2", "hqq2", "mbok1", "mbok2", "rtn3", "gptq3", "hqq3", "mbok3")
        )  # fmt: skip
    )

    # every finetuned variant by one rule (finetune.py): early stopping on validation perplexity, lr tuned once
    lrs = tuned_lrs(cfg, ctx, seed)  # once per config, on the tuning model (cached)
    fits = makers(cfg, model, train, val, seed, progress=not ctx.quiet)
    m["lr_at_edge"] = float(any(v["at_edge"] for v in lrs.values()))

    def fit(name, key, lr):
        st, info = fits[name](lr)
        m[f"ppl_{key}"] = ppl(st)
        m[f"best_step_{key}"], m[f"steps_run_{key}"] = float(info["best_step"]), float(info["steps_run"])
        m[f"at_cap_{key}"] = float(info["steps_run"] >= cfg.ft_steps)  # the cap, not patience, ended it
        return st, info

    m["eta_last"], m["eta_all"] = lrs["last"]["lr"], lrs["all"]["lr"]
    m["lr_scales"], m["lr_onebit"] = lrs["scales"]["lr"], lrs["onebit"]["lr"]
    st, info = fit("last", "mbok2_ft", m["eta_last"])
    m["seconds_ft_mbok2"] = info["seconds"]
    m["flip_rate_last"] = sum(info["flip_rates"]) / len(info["flip_rates"])
    n_w = sum(layer.n_weights for _, layer in boolean_layers(st))
    mem = info["memory"]
    m["optstate_bpw_mbok"] = (mem["fp_state"] + mem["boolean_state"] + mem["latent"]) / n_w
    st, info = fit("all", "mbok2_ft_all", m["eta_all"])
    m["flip_rate_all"] = sum(info["flip_rates"]) / len(info["flip_rates"])
    m["rel_last_vs_all"] = m["ppl_mbok2_ft"] / m["ppl_mbok2_ft_all"] - 1
    fit("k3", "mbok3_ft", m["eta_last"])  # K = 3 reuses the η picked for K = 2 (saves a grid; stated in the docs)
    m["ratio_mbok3_ft_fp"] = m["ppl_mbok3_ft"] / m["ppl_fp"]
    fit("scales", "mbok2_scales", m["lr_scales"])
    m["lr_qat2"] = lrs["qat2"]["lr"]
    fit("qat2", "rtn2_qat", m["lr_qat2"])
    st, info = fit("onebit", "onebit", m["lr_onebit"])
    m["seconds_ft_onebit"] = info["seconds"]
    mem = info["memory"]
    m["optstate_bpw_onebit"] = (mem["fp_state"] + mem["boolean_state"] + mem["latent"]) / n_w
    m["optstate_ratio"] = m["optstate_bpw_mbok"] / m["optstate_bpw_onebit"]
    # the finetuning budget: optimizer steps run by each distilled variant relative to MBOK K = 2's (equal caps, no
    # early stop before the cap: min_frac = 1)
    ratios = [m[f"steps_run_{key}"] / m["steps_run_mbok2_ft"] for key in BUDGET_VARIANTS]
    m["budget_ratio_min"], m["budget_ratio_max"] = min(ratios), max(ratios)
    ctx.log(
        f"tiny finetuned: K=2 last {m['ppl_mbok2_ft']:.2f} (flip rate {m['flip_rate_last']:.1e}), all "
        f"{m['ppl_mbok2_ft_all']:.2f}, scalings only {m['ppl_mbok2_scales']:.2f}, K=3 {m['ppl_mbok3_ft']:.2f} "
        f"(FP {m['ppl_fp']:.2f}), OneBit {m['ppl_onebit']:.2f}, RTN-2 + QAT {m['ppl_rtn2_qat']:.2f}; optimiser "
        "bytes/weight MBOK "
        f"{m['optstate_bpw_mbok']:.2f} vs OneBit {m['optstate_bpw_onebit']:.2f}"
    )


def _real(cfg: Cfg, ctx) -> dict:
    """SmolLM2 part: deterministic (fixed calibration, evaluation blocks and FT data order), computed once per config
    and model, cached on disk (a lock makes a second process wait and reuse it) and reported for every seed."""
    name = ctx.model or cfg.real_model
    keyed = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "seeds"}
    stamp = os.path.getmtime(name) if os.path.exists(name) else None  # a local model edited in place: recompute
    spec = json.dumps([VERSION, name, stamp, keyed], sort_keys=True, default=str)
    path = trained_cache_dir() / "zoo" / f"mbok-real-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"
    out = cached_json(path, f"the MBOK part on {name}", lambda: _real_compute(cfg, ctx, name), quiet=ctx.quiet)
    ctx.save_artifact("real_part", out)
    return dict(out["metrics"])


def _real_compute(cfg: Cfg, ctx, name: str) -> dict:
    t_start = time.time()
    model, tok = zoo.load(name)
    model = model.float().eval()
    docs = load_domain("wikipedia")
    held = encode_stream(tok, test_split(docs), cfg.real_seq_len)
    pick = torch.linspace(0, len(held) - 1, min(cfg.real_eval_blocks, len(held))).round().long()
    test = held[pick]  # evenly spread over the held-out articles
    train = encode_stream(tok, train_split(docs)[:40], cfg.real_seq_len)
    g = torch.Generator().manual_seed(1234)
    perm = torch.randperm(len(train), generator=g)
    calib, ft_data = train[perm[: cfg.real_calib_blocks]], train[perm[cfg.real_calib_blocks :]]
    m, times = {}, {}

    def timed(label, fn):
        t0 = time.time()
        out = fn()
        times[label] = time.time() - t0
        return out

    m["real_ppl_fp"] = timed("eval fp", lambda: perplexity(model, test, batch_size=4))
    probe = test[:2]  # the FP model's inputs to every layer on these blocks: the output (activation) error

    def errors(key, q):
        m[f"real_outerr_{key}"], m[f"real_werr_{key}"] = mean_errors(layer_errors(model, q, probe))

    for variant in cfg.real_baselines:
        method, bits = variant[:-1], int(variant[-1])
        q = timed(variant, partial(fake_quantize_model, copy.deepcopy(model), method, bits, 64, calib))
        m[f"real_ppl_{variant}"] = perplexity(q, test, batch_size=4)
        errors(variant, q)
        del q
    students = {}
    for k in (1, 2, 3):
        students[k] = timed(f"mbok{k}", partial(quantize_model, copy.deepcopy(model), k=k))
        m[f"real_ppl_mbok{k}"] = perplexity(students[k], test, batch_size=4)
        errors(f"mbok{k}", students[k])
    # diagnosis: the layers whose inputs carry the largest ("massive") activations, kept in FP
    peaks = _input_peaks(model, calib[:2])
    worst = sorted(peaks, key=peaks.get, reverse=True)[: cfg.real_skip_layers]
    for k in (2, 3):
        q = quantize_model(copy.deepcopy(model), k=k, skip=tuple(worst))
        m[f"real_ppl_mbok{k}_skip"] = perplexity(q, test, batch_size=4)
        del q
    ctx.log(f"largest input peaks: {', '.join(f'{n} {peaks[n]:.0f}' for n in worst)} (median "
            f"{sorted(peaks.values())[len(peaks) // 2]:.1f}); kept FP: K=2 {m['real_ppl_mbok2_skip']:.1f}, "
            f"K=3 {m['real_ppl_mbok3_skip']:.1f}")  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        for k in (2, 3):
            m[f"real_bpw_mbok{k}"] = bits_per_weight(students[k], Path(d) / f"k{k}.safetensors")
        # the whole model against FP16 (embeddings, norms and head stay dense, in FP16 on both sides)
        from safetensors.torch import save_file

        half = {k: v.detach().half().contiguous() for k, v in model.state_dict().items()}
        half = {
            k: v
            for k, v in half.items()
            if k != "lm_head.weight" or not getattr(model.config, "tie_word_embeddings", False)
        }
        save_file(half, str(Path(d) / "fp16.safetensors"))
        m["real_file_mb_fp16"] = (Path(d) / "fp16.safetensors").stat().st_size / 2**20
        m["real_file_mb_mbok2"] = save_packed(students[2], Path(d) / "k2-full.safetensors", scale_dtype=torch.float16,
                                              dense_dtype=torch.float16) / 2**20  # fmt: skip
        m["real_size_ratio_fp16_mbok2"] = m["real_file_mb_mbok2"] / m["real_file_mb_fp16"]
    del students[1], students[3]
    ctx.log(
        f"{name} data-free, held-out Wikipedia PPL: FP {m['real_ppl_fp']:.2f}; "
        + ", ".join(f"{k} {m['real_ppl_' + k]:.1f}" for k in (*cfg.real_baselines, "mbok1", "mbok2", "mbok3"))
        + f"; packed bits/weight K=2 {m['real_bpw_mbok2']:.3f}, K=3 {m['real_bpw_mbok3']:.3f}"
    )
    student = students.pop(2)
    c = MBOKConfig(k=2, steps=cfg.real_ft_steps, batch_size=cfg.real_ft_batch, boolean_lr=cfg.real_bool_lr,
                   fp_lr=1e-4, gamma=cfg.gamma, seed=0)  # fmt: skip
    if cfg.real_ft_steps > 0:
        t0 = time.time()
        info = distill(student, model, ft_data, c, progress=not ctx.quiet, desc=f"{name} Boolean FT")
        m["real_seconds_per_ft_step"] = (time.time() - t0) / cfg.real_ft_steps
        m["real_flip_rate"] = sum(info["flip_rates"]) / len(info["flip_rates"])
        n_w = sum(layer.n_weights for _, layer in boolean_layers(student))
        mem = info["memory"]
        m["real_optstate_bpw_mbok"] = (mem["fp_state"] + mem["boolean_state"]) / n_w
    m["real_ppl_mbok2_ft"] = perplexity(student, test, batch_size=4)
    for k in [b for b in cfg.real_baselines if b.endswith("2")]:
        m[f"real_logratio_{k}_mbok2"] = math.log(m[f"real_ppl_{k}"] / m["real_ppl_mbok2"])
    # headroom of the 2-bit setting: the best 2-bit baseline's perplexity relative to FP (log)
    m["real_best2_logratio_fp"] = min(math.log(m[f"real_ppl_{k}"] / m["real_ppl_fp"])
                                      for k in cfg.real_baselines if k.endswith("2"))  # fmt: skip
    m["real_ratio_mbok3_fp"] = m["real_ppl_mbok3"] / m["real_ppl_fp"]
    m["real_logratio_mbok2_ft"] = math.log(m["real_ppl_mbok2"] / m["real_ppl_mbok2_ft"])
    ctx.log(
        f"{name}: K=2 + {cfg.real_ft_steps} Boolean FT steps: PPL {m['real_ppl_mbok2']:.2f} -> "
        f"{m['real_ppl_mbok2_ft']:.2f}; timings {', '.join(f'{k} {v:.0f}s' for k, v in times.items())}; "
        f"total {time.time() - t_start:.0f}s"
    )
    return {"metrics": m, "seconds": times}


@torch.no_grad()
def _input_peaks(model, blocks) -> dict[str, float]:
    """max |x| over the inputs of every quantisable layer (FP forward on a few blocks)."""
    peaks, handles = {}, []
    for name, mod in quantizable_linears(model):
        hook = lambda mod, inp, out, n=name: peaks.__setitem__(n, float(inp[0].abs().max()))  # noqa: E731
        handles.append(mod.register_forward_hook(hook))
    try:
        model(input_ids=blocks)
    finally:
        for h in handles:
            h.remove()
    return peaks


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    # even seeds start with the SmolLM2 part, odd seeds end with it: two seeds side by side (--jobs) then compute it
    # once (the odd one finds it cached) while the other trains its tiny models; neither part draws from the other's
    # random state (every stage seeds itself), so the order changes no number
    parts = [lambda: m.update(_real(cfg, ctx)) if cfg.real else None, lambda: _tiny(cfg, seed, ctx, m)]
    for part in parts if seed % 2 == 0 else parts[::-1]:
        part()
    ctx.log(f"seed {seed} done in {time.time() - t0:.0f}s")
    return m


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt
    import numpy as np

    seeds = list(per_seed.values())
    names = ["fp", "rtn3", "gptq3", "hqq3", "mbok3", "mbok3_ft", "rtn2", "gptq2", "hqq2", "mbok2", "mbok2_scales",
             "mbok2_ft", "mbok2_ft_all", "mbok1", "onebit"]  # fmt: skip
    vals = [[s[f"ppl_{n}"] for s in seeds if f"ppl_{n}" in s] for n in names]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="tab:blue")
    ax.set_yscale("log"), ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_ylabel("test perplexity (tiny LM)"), ax.set_title("MBOK vs baselines (mean ± std over seeds)")
    fig.tight_layout()
    return [("tiny_perplexity", fig)]
