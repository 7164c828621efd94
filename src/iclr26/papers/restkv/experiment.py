"""The restkv reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict

import torch
from tqdm.auto import tqdm

from iclr26.kvcache.restkv.world import TASKS, WikiLongCtx

from ...core.threads import torch_threads
from ...kvcache import cache_lengths, compress_record, make_press, record_prefill, timed_generate
from ...kvcache.measure import continue_from
from . import BASELINES, Cfg
from .tiny_model import encode_tiny, tiny_longctx_model, tiny_train_info

REAL_MODEL = "smollm2-135m"  # the real-model half's default; `iclr26 run restkv --model X` replaces it


# ---------------------------------------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(model, encoded, methods, budgets, window, seed, desc="eval"):
    """encoded: list of (task, prompt ids, answer ids). Returns {(method, budget): [(task, exact, token acc)]} with two
    extra entries, "timing" (mean seconds of the bare prefill and of each press's scoring + eviction, at the first
    budget, where every press scores from scratch) and "kept" ({(method, budget): mean over examples of the tokens
    kept per layer and KV head, read from the compressed cache tensors, over the budget}), and whether every compressed
    cache held exactly its budget in every layer and head (PyramidKV excluded: its layer budgets differ by design)."""
    results: dict = {}
    timing: dict = {}
    kept: dict = {}
    exact_budget = True
    for task, p, a in tqdm(encoded, desc=desc, leave=False):
        prefix, tail = torch.tensor([p[:-1]]), [p[-1]]
        t0 = time.perf_counter()
        rec = record_prefill(model, prefix)
        timing.setdefault("prefill", []).append(time.perf_counter() - t0)
        t = prefix.shape[1]
        feed = torch.tensor([tail + a[:-1]])
        for method in methods:
            memo: dict = {}
            for b in budgets if method != "full" else (None,):
                press = make_press(method, budget=b, window_size=window, seed=seed, score_cache=memo)
                t0 = time.perf_counter()
                cache = compress_record(rec, press)
                if b is None or b == budgets[0]:  # later budgets may reuse memoised scores (budget-free scorers)
                    timing.setdefault(method, []).append(time.perf_counter() - t0)
                lens = cache_lengths(cache)
                if b is not None:
                    kept.setdefault((method, b), []).append(sum(lens) / len(lens) / min(b, t))
                    if method != "pyramidkv":
                        exact_budget &= all(n == min(b, t) for n in lens)
                pred = continue_from(model, cache, t, feed)[0].argmax(-1)
                ok = (pred == torch.tensor(a)).float()
                results.setdefault((method, b), []).append((task, float(ok.all()), float(ok.mean())))
    results["timing"] = {k: _mean(v) for k, v in timing.items()}
    results["kept"] = {k: _mean(v) for k, v in kept.items()}
    return results, exact_budget


def _summarise(results, budgets, tag, m, n_seeds=1):
    """metrics: full-cache accuracy per task; accuracy per method and budget (mean over tasks and examples); the
    resolution of the ReST-KV − SnapKV comparison at the smallest budget for a run of ``n_seeds`` such seeds."""
    timing = results.pop("timing")
    kept = results.pop("kept")
    for (method, b), ratio in kept.items():
        m[f"kept_{tag}_{method}_b{b}"] = ratio
    # budget parity: the largest deviation of any press's kept tokens (mean over layers, heads and examples) from B
    m[f"budget_dev_{tag}"] = max(abs(r - 1.0) for r in kept.values())
    for method in ("snapkv", "restkv"):
        if method in timing:  # prefill + scoring + eviction, over the bare prefill
            m[f"prefill_cost_{tag}_{method}"] = (timing["prefill"] + timing[method] - timing["full"]) / timing[
                "prefill"
            ]
    if "snapkv" in timing and "restkv" in timing:
        m[f"prefill_overhead_{tag}_restkv_vs_snapkv"] = (
            m[f"prefill_cost_{tag}_restkv"] / m[f"prefill_cost_{tag}_snapkv"] - 1.0
        )
    full = results[("full", None)]
    for task in TASKS:
        vals = [e for tk, e, _ in full if tk == task]
        if vals:
            m[f"fullacc_{tag}_{task}"] = sum(vals) / len(vals)
    m[f"fullacc_{tag}"] = sum(e for _, e, _ in full) / len(full)
    curves = {}
    for (method, b), rows in results.items():
        if method == "full":
            continue
        acc = sum(e for _, e, _ in rows) / len(rows)
        m[f"acc_{tag}_{method}_b{b}"] = acc
        m[f"tokacc_{tag}_{method}_b{b}"] = sum(x for _, _, x in rows) / len(rows)
        curves.setdefault(method, {})[b] = {
            "acc": acc,
            **{task: _mean([e for tk, e, _ in rows if tk == task]) for task in TASKS},
        }
    lo, hi = min(budgets), max(budgets)
    for method in curves:
        m[f"acc_{tag}_{method}"] = _mean([m[f"acc_{tag}_{method}_b{b}"] for b in budgets])
        m[f"acc_{tag}_{method}_small"] = m[f"acc_{tag}_{method}_b{lo}"]  # scale-independent names for the claims
    base = [x for x in BASELINES if f"acc_{tag}_{x}_b{lo}" in m]
    m[f"acc_{tag}_best_baseline_b{lo}"] = max(m[f"acc_{tag}_{x}_b{lo}"] for x in base)
    m[f"acc_{tag}_best_baseline_small"] = m[f"acc_{tag}_best_baseline_b{lo}"]
    scored = [x for x in base if x != "random"]  # the negative control's comparison: baselines that score tokens
    if scored:
        m[f"acc_{tag}_best_scored_baseline_small"] = max(m[f"acc_{tag}_{x}_b{lo}"] for x in scored)
    gap_lo = m[f"acc_{tag}_restkv_b{lo}"] - m[f"acc_{tag}_snapkv_b{lo}"]
    gap_hi = m[f"acc_{tag}_restkv_b{hi}"] - m[f"acc_{tag}_snapkv_b{hi}"]
    m[f"gap_vs_snapkv_{tag}_small"], m[f"gap_vs_snapkv_{tag}_large"] = gap_lo, gap_hi
    m[f"gap_widening_{tag}"] = gap_lo - gap_hi
    # power of the design: the one-sided 95 % half-width of mean(ReST-KV − SnapKV) over n_seeds × examples paired
    # 0/1 outcomes is 1.645·√(discord / N) at the observed share of examples on which the two presses disagree
    pairs = list(zip(results[("restkv", lo)], results[("snapkv", lo)]))
    discord = _mean([abs(r[1] - s[1]) for r, s in pairs])
    m[f"discord_{tag}_restkv_snapkv_small"] = discord
    m[f"resolution_{tag}"] = 1.645 * (max(discord, 1 / len(pairs)) / (len(pairs) * n_seeds)) ** 0.5
    if f"acc_{tag}_restkv_legacy_b{lo}" in m:
        m[f"gap_vs_legacy_{tag}_small"] = m[f"acc_{tag}_restkv_b{lo}"] - m[f"acc_{tag}_restkv_legacy_b{lo}"]
    return curves


def _mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def _efficiency(
    model, make_ids, lengths, budget, window, new_tokens, tag, m, repeats=1, methods=("full", "snapkv", "restkv")
):
    """Time ``model.generate`` under each press (best of ``repeats``, the methods interleaved per context length)."""
    rows = {}
    for n in lengths:
        ids = make_ids(n)
        for method in methods:
            press = make_press(method, budget=budget, window_size=window)
            r = timed_generate(model, ids, press, max_new_tokens=new_tokens, repeats=repeats)
            if method != "full" and r["cache_len"] != budget:
                raise RuntimeError(f"{method} did not evict: cache holds {r['cache_len']} tokens, budget {budget}")
            rows[(method, n)] = r
        for method in methods:
            r, f = rows[(method, n)], rows[("full", n)]
            m[f"decode_ms_{tag}_{method}_L{n}"] = 1e3 * r["decode_s_per_token"]
            m[f"prefill_s_{tag}_{method}_L{n}"] = r["prefill_s"]
            if method != "full":
                m[f"decode_speedup_{tag}_{method}_L{n}"] = f["decode_s_per_token"] / max(r["decode_s_per_token"], 1e-9)
                m[f"kv_ratio_{tag}_{method}_L{n}"] = r["kv_bytes"] / f["kv_bytes"]
                m[f"peak_mem_ratio_{tag}_{method}_L{n}"] = r["peak_mem_bytes"] / max(f["peak_mem_bytes"], 1)
    n = max(lengths)
    for method in methods[1:]:
        for k in ("decode_speedup", "kv_ratio", "peak_mem_ratio"):
            m[f"{k}_{tag}_{method}_longest"] = m[f"{k}_{tag}_{method}_L{n}"]
    m[f"ttft_overhead_{tag}_restkv_vs_snapkv"] = (
        rows[("restkv", n)]["prefill_s"] / rows[("snapkv", n)]["prefill_s"] - 1.0
    )
    return {f"{k[0]}@{k[1]}": v for k, v in rows.items()}


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads(cfg.threads):
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    m: dict[str, float] = {}
    rng = random.Random(1000 + seed)
    t0 = time.time()
    model, tok, world = tiny_longctx_model(cfg.tiny_trained, seed=0, progress=not ctx.quiet)
    info = tiny_train_info(0) if cfg.tiny_trained else {}
    if info:
        m["tiny_train_s"] = info["train_s"]  # one-off (cached): seconds the tiny model's training took
    ctx.log(f"tiny model ready ({time.time() - t0:.0f} s; its one-off training took {info.get('train_s', 0):.0f} s)")
    encoded = []
    for task in TASKS:
        for _ in range(cfg.tiny_examples):
            p, a = encode_tiny(tok, world.sample(task, cfg.tiny_length, rng))
            encoded.append((task, p, a))
    res, exact = evaluate(model, encoded, cfg.methods, cfg.tiny_budgets, cfg.tiny_window, seed, "eval tiny")
    curves = {"tiny": _summarise(res, cfg.tiny_budgets, "tiny", m, len(cfg.seeds))}
    m["budget_exact_tiny"] = float(exact)
    ctx.log(
        f"tiny: full-cache acc {m['fullacc_tiny']:.2f}; restkv@{min(cfg.tiny_budgets)} "
        f"{m[f'acc_tiny_restkv_b{min(cfg.tiny_budgets)}']:.2f} vs snapkv "
        f"{m[f'acc_tiny_snapkv_b{min(cfg.tiny_budgets)}']:.2f} ({time.time() - t0:.0f} s)"
    )
    vocab = len(tok)
    eff = {
        "tiny": _efficiency(
            model,
            lambda n: torch.randint(4, vocab, (1, n), generator=torch.Generator().manual_seed(seed)),
            cfg.eff_lengths,
            cfg.eff_budget,
            cfg.tiny_window,
            cfg.eff_new_tokens,
            "tiny",
            m,
            cfg.eff_repeats,
        )
    }
    if cfg.smol:
        curves["smollm2"], eff_real = real_model_part(cfg, seed, getattr(ctx, "model", None), rng, m)
        if eff_real is not None:
            eff["smollm2"] = eff_real
        ctx.log(f"smollm2: full-cache acc {m['fullacc_smollm2']:.2f} ({time.time() - t0:.0f} s)")
    ctx.save_artifact("curves", {"accuracy": curves, "efficiency": eff, "config": asdict(cfg)})
    ctx.log(f"done in {time.time() - t0:.0f} s")
    return m


def real_model_part(cfg: Cfg, seed: int, model_name: str | None, rng: random.Random, m: dict):
    """The real-model half: needles in Wikipedia text, on ``model_name`` (any local HF causal LM; default
    SmolLM2-135M). Metrics go into ``m`` with the tag ``smollm2`` (the claims' name for the real-model setting).
    Returns (accuracy curves, efficiency rows or None)."""
    from ...lm import zoo

    smol, stok = zoo.load(model_name or REAL_MODEL)
    limit = getattr(smol.config, "max_position_embeddings", None)
    longest = max(*cfg.smol_lengths, cfg.eff_smol_length if cfg.eff_smol else 0)
    if limit is not None and longest + 16 > limit:
        raise ValueError(
            f"{model_name or REAL_MODEL!r} takes {limit} positions; the real-model half needs {longest} plus the "
            "answer: lower smol_lengths / eff_smol_length or use a model with a longer context"
        )
    wiki = WikiLongCtx(seed=0)
    encoded = []
    for n in cfg.smol_lengths:
        for i in range(cfg.smol_examples):  # tasks in rotation, starting at the seed
            ex = wiki.sample(cfg.smol_tasks[(seed + i) % len(cfg.smol_tasks)], n, stok, rng)
            p = stok(ex.prompt, add_special_tokens=False)["input_ids"]
            encoded.append((ex.task, p, stok(" " + ex.answer, add_special_tokens=False)["input_ids"]))
    methods = [x for x in cfg.methods if x in cfg.smol_methods] if cfg.smol_methods else cfg.methods
    res, exact = evaluate(smol, encoded, methods, cfg.smol_budgets, cfg.smol_window, seed, "eval smollm2")
    curves = _summarise(res, cfg.smol_budgets, "smollm2", m, len(cfg.seeds))
    m["budget_exact_smollm2"] = float(exact)
    eff = None
    if cfg.eff_smol:
        p = encoded[0][1][: cfg.eff_smol_length]
        eff = _efficiency(
            smol,
            lambda n: torch.tensor([p[:n]]),
            (cfg.eff_smol_length,),
            cfg.eff_budget,
            cfg.smol_window,
            cfg.eff_new_tokens,
            "smollm2",
            m,
            cfg.eff_repeats,
        )
    return curves, eff


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    art = sorted((run_dir / "artifacts").glob("curves*.json"))
    if not art:
        return []
    data = json.loads(art[0].read_text())
    acc = data["accuracy"]
    figs = []
    fig, axes = plt.subplots(1, len(acc), figsize=(6 * len(acc), 4), squeeze=False)
    for ax, (tag, curves) in zip(axes[0], acc.items()):
        budgets = cfg.tiny_budgets if tag == "tiny" else cfg.smol_budgets
        for method in curves:
            ys = [_mean([s.get(f"acc_{tag}_{method}_b{b}", float("nan")) for s in per_seed.values()]) for b in budgets]
            ax.plot(
                budgets,
                ys,
                "o-" if method.startswith("restkv") else "s--",
                label=method,
                lw=2.5 if method == "restkv" else 1,
            )
        full = _mean([s[f"fullacc_{tag}"] for s in per_seed.values()])
        ax.axhline(full, color="k", ls=":", label="full cache")
        ax.set(xscale="log", xlabel="KV pairs kept per layer and head", ylabel="exact match", title=tag)
    axes[0][-1].legend(fontsize=7)
    figs.append(("accuracy_vs_budget", fig))
    eff = data["efficiency"]["tiny"]
    fig, ax = plt.subplots(figsize=(5, 4))
    for method in ("full", "snapkv", "restkv"):
        xs = sorted(int(k.split("@")[1]) for k in eff if k.startswith(method + "@"))
        ys = [_mean([s[f"decode_ms_tiny_{method}_L{n}"] for s in per_seed.values()]) for n in xs]
        ax.plot(xs, ys, "o-", label=method)
    ax.set(xscale="log", xlabel="context length (tokens)", ylabel="decode ms / token", title="tiny model, CPU")
    ax.legend()
    figs.append(("decode_time_vs_length", fig))
    return figs
