"""The restkv reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import time
from dataclasses import asdict

import torch
from tqdm.auto import tqdm

from iclr26.kvcache.restkv.world import TASKS, SyntheticLongCtx, WikiLongCtx

from ...core.paths import trained_cache_dir
from ...core.threads import torch_threads
from ...kvcache import cache_lengths, compress_record, make_press, record_prefill, timed_generate
from ...kvcache.measure import continue_from
from . import (
    BASELINES,
    TINY_MODEL,
    TINY_RECIPE,
    TRAIN_FILLER_WEIGHT,
    TRAIN_LR,
    TRAIN_PHASES,
    Cfg,
)

REAL_MODEL = "smollm2-135m"  # the real-model half's default; `iclr26 run restkv --model X` replaces it


def _train_sequence(world, tok, rng, length, density=(0.2, 0.5)):
    """Token ids of one training text (``<bos>`` + :meth:`SyntheticLongCtx.training_segments`) and its answer mask
    (1 exactly on the tokens of the answers)."""
    segments = world.training_segments(length, rng, density)
    pieces = tok([piece for piece, _ in segments], add_special_tokens=False)["input_ids"]
    ids, ans = [tok.bos_token_id], [0]
    for x, (_, flag) in zip(pieces, segments):
        ids += x
        ans += [int(flag)] * len(x)
    return ids, ans


def _batch(world, tok, rng, n, length, density=(0.2, 0.5)):
    """(ids, answer mask, padding mask) of ``n`` training texts, right-padded."""
    seqs = [_train_sequence(world, tok, rng, length, density) for _ in range(n)]
    m = max(len(s) for s, _ in seqs)
    x = torch.zeros(n, m, dtype=torch.long)
    am, pm = torch.zeros(n, m), torch.zeros(n, m)
    for i, (s, a) in enumerate(seqs):
        x[i, : len(s)], am[i, : len(s)], pm[i, : len(s)] = torch.tensor(s), torch.tensor(a, dtype=torch.float), 1
    return x, am, pm


def _copy_batch(vocab, rng, n, half, bos):
    """Random token sequences of length ``half`` repeated once; the answer mask covers the repeat."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    r = torch.randint(4, vocab, (n, half), generator=g)  # ids 0–3 are the special tokens
    x = torch.cat([torch.full((n, 1), bos), r, r], 1)
    am = torch.cat([torch.zeros(n, half + 1), torch.ones(n, half)], 1)
    return x, am, torch.ones_like(am)


def _encode_tiny(tok, ex):
    return tok(ex.prompt)["input_ids"], tok(ex.answer, add_special_tokens=False)["input_ids"]


def _train_tiny(model, world, tok, rng, progress):
    """The curriculum of TRAIN_PHASES; returns the answer-token accuracy of the last 50 task steps."""
    total = sum(p.steps for p in TRAIN_PHASES)
    opt = torch.optim.AdamW(model.parameters(), lr=TRAIN_LR["peak"], betas=(0.9, 0.98), weight_decay=0.01)
    warm, tail = TRAIN_LR["warmup"], TRAIN_LR["decay_steps"]

    def lr(s):
        if s < warm:
            return (s + 1) / warm
        return 1.0 if s < total - tail else 0.1 + 0.45 * (1 + math.cos(math.pi * (s - total + tail) / tail))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr)
    model.train()
    bar = tqdm(total=total, desc="train longctx-tiny", disable=not progress, leave=False)
    hits: list[float] = []
    for phase in TRAIN_PHASES:
        for _ in range(phase.steps):
            if rng.random() < phase.copy_frac:
                half = rng.choice(phase.lengths) if phase.copy_frac == 1.0 else 64
                x, am, pm = _copy_batch(len(tok), rng, max(1, phase.tokens // (2 * half)), half, tok.bos_token_id)
                task = False
            else:
                n = rng.choice(phase.lengths)
                x, am, pm = _batch(world, tok, rng, max(1, phase.tokens // n), n, phase.density)
                task = True
            logits = model(input_ids=x, attention_mask=pm.long()).logits[:, :-1]
            ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
            w = pm[:, 1:] * TRAIN_FILLER_WEIGHT + am[:, 1:]  # answer tokens weigh 1 + the filler weight
            loss = (ce * w).sum() / w.sum()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            if task:
                mask = am[:, 1:] > 0
                hits = [*hits[-49:], float((logits.argmax(-1)[mask] == x[:, 1:][mask]).float().mean())]
                bar.set_postfix(answer_acc=f"{_mean(hits):.2f}", refresh=False)
            bar.update()
    bar.close()
    model.eval()
    return _mean(hits)


def tiny_longctx_model(trained: bool = True, seed: int = 0, progress: bool = True):
    """(model, tokenizer, world) of the tiny long-context model, trained by TRAIN_PHASES (``trained=False``: random
    init, for smoke runs). Cached under the zoo folder with the training time; the key covers the architecture, the
    recipe and the world's vocabulary, so changing any of them retrains."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from ...lm.tiny import tiny_config
    from ...lm.tokenizer import build_word_tokenizer

    world = SyntheticLongCtx(seed=0)
    tok = build_word_tokenizer(world.vocabulary_texts())
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(vocab_size=len(tok), **TINY_MODEL))
    if not trained:
        return model.eval(), tok, world
    out = _tiny_dir(world, seed)
    if not (out / "model.safetensors").exists():
        t0 = time.time()
        acc = _train_tiny(model, world, tok, random.Random(seed), progress)
        tmp = out.with_name(out.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp / "tokenizer")
        info = {"train_s": time.time() - t0, "threads": torch.get_num_threads(), "final_answer_acc": acc}
        (tmp / "train.json").write_text(json.dumps(info, indent=1))
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    tok = PreTrainedTokenizerFast.from_pretrained(out / "tokenizer")
    return model.eval(), tok, world


def _tiny_dir(world, seed):
    spec = [TINY_RECIPE, world.vocabulary_texts()]
    key = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]
    return trained_cache_dir() / "zoo" / f"longctx-tiny-s{seed}-{key}"


def tiny_train_info(seed: int = 0) -> dict:
    """The cached tiny model's training record (seconds, threads, final answer accuracy), or {} if not trained yet."""
    f = _tiny_dir(SyntheticLongCtx(seed=0), seed) / "train.json"
    return json.loads(f.read_text()) if f.exists() else {}


# ---------------------------------------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(model, encoded, methods, budgets, window, seed, desc="eval"):
    """encoded: list of (task, prompt ids, answer ids). Returns {(method, budget): [(task, exact, token acc)]} and
    whether every compressed cache held exactly its budget in every layer and head."""
    results: dict = {}
    timing: dict = {}
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
                timing.setdefault(method, []).append(time.perf_counter() - t0)
                lens = cache_lengths(cache)
                if b is not None and method != "pyramidkv":
                    exact_budget &= all(n == min(b, t) for n in lens)
                pred = continue_from(model, cache, t, feed)[0].argmax(-1)
                ok = (pred == torch.tensor(a)).float()
                results.setdefault((method, b), []).append((task, float(ok.all()), float(ok.mean())))
    results["timing"] = {k: _mean(v) for k, v in timing.items()}
    return results, exact_budget


def _summarise(results, budgets, tag, m):
    """metrics: full-cache accuracy per task; accuracy per method and budget (mean over tasks and examples)."""
    timing = results.pop("timing")
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
    best_base_lo = max(m[f"acc_{tag}_{x}_b{lo}"] for x in BASELINES if f"acc_{tag}_{x}_b{lo}" in m)
    m[f"acc_{tag}_best_baseline_b{lo}"] = best_base_lo
    gap_lo = m[f"acc_{tag}_restkv_b{lo}"] - m[f"acc_{tag}_snapkv_b{lo}"]
    gap_hi = m[f"acc_{tag}_restkv_b{hi}"] - m[f"acc_{tag}_snapkv_b{hi}"]
    m[f"gap_vs_snapkv_{tag}_small"], m[f"gap_vs_snapkv_{tag}_large"] = gap_lo, gap_hi
    m[f"gap_widening_{tag}"] = gap_lo - gap_hi
    if f"acc_{tag}_restkv_legacy_b{lo}" in m:
        m[f"gap_vs_legacy_{tag}_small"] = m[f"acc_{tag}_restkv_b{lo}"] - m[f"acc_{tag}_restkv_legacy_b{lo}"]
    return curves


def _mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def _efficiency(model, make_ids, lengths, budget, window, new_tokens, tag, m, methods=("full", "snapkv", "restkv")):
    rows = {}
    for n in lengths:
        ids = make_ids(n)
        for method in methods:
            press = make_press(method, budget=budget, window_size=window)
            r = timed_generate(model, ids, press, max_new_tokens=new_tokens)
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
        m[f"decode_speedup_{tag}_{method}_longest"] = m[f"decode_speedup_{tag}_{method}_L{n}"]
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
            p, a = _encode_tiny(tok, world.sample(task, cfg.tiny_length, rng))
            encoded.append((task, p, a))
    res, exact = evaluate(model, encoded, cfg.methods, cfg.tiny_budgets, cfg.tiny_window, seed, "eval tiny")
    curves = {"tiny": _summarise(res, cfg.tiny_budgets, "tiny", m)}
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
    res, exact = evaluate(smol, encoded, cfg.methods, cfg.smol_budgets, cfg.smol_window, seed, "eval smollm2")
    curves = _summarise(res, cfg.smol_budgets, "smollm2", m)
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
