"""The ENACT reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import time

import numpy as np
from scipy.stats import chi2, chisquare

from iclr26.core.threads import run_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.embodied.enact import (
    FrameConfig,
    FrameScorer,
    build_items,
    chance,
    edges,
    enumerate_paths,
    extract_keyframes,
    kfts_sample,
    oracle_answer,
    random_answer,
    rollout,
    score_answers,
    score_item,
)

from . import Cfg


def _trajectories(seeds, cfg: Cfg):
    return [[r[k] for k in extract_keyframes(r, cfg.min_stable)] for r in (rollout(s, cfg.n_changes) for s in seeds)]


def _naive(e: np.ndarray, length: int, n: int, valid: set, rng) -> list:
    """Control sampler: uniform start node, then a uniform successor; paths that end early are redrawn."""
    out, starts = [], sorted({p[0] for p in valid})
    while len(out) < n:
        p = [int(rng.choice(starts))]
        while len(p) < length and e[p[-1]].any():
            p.append(int(rng.choice(np.flatnonzero(e[p[-1]]))))
        if tuple(p) in valid:
            out.append(tuple(p))
    return out


def _tv(draws, paths) -> float:
    freq = np.array([draws.count(p) for p in paths]) / len(draws)
    return float(0.5 * np.abs(freq - 1 / len(paths)).sum())


def _log10p(counts) -> float:
    """log10 of the chi-square p-value against uniform, from the log survival function (no underflow to 0)."""
    stat = float(chisquare(counts).statistic)
    return float(chi2.logsf(stat, len(counts) - 1) / np.log(10))


def _fit(train, cfg: Cfg, seed: int, alpha: float, shuffle: bool = False) -> FrameScorer:
    fc = FrameConfig(hidden=cfg.hidden, alpha=alpha, pixel_noise=cfg.pixel_noise)
    return FrameScorer(fc, seed=seed).fit(train, shuffle_labels=shuffle)


def _tune(train, val_items, cfg: Cfg, seed: int, ctx):
    """The MLP's L2 strength by validation PA (`core.tuning.tune_on_grid`: the grid grows past a chosen edge)."""

    def evaluate(alpha):
        sc = _fit(train, cfg, seed, alpha)
        return score_answers(val_items, [sc.answer(it) for it in val_items])["overall"]["pairwise_accuracy"], sc

    res = tune_on_grid(evaluate, cfg.alpha_grid, max_extensions=2)
    ctx.log(f"seed {seed}: alpha grid {[f'{a:g}:{res.scores[a]:.3f}' for a in res.grid]} -> {res.best:g}"
            + (" (at an edge)" if res.at_edge else ""))  # fmt: skip
    return res.best, res.payload


def _kappa(acc: float, chance_acc: float) -> float:
    """Chance-corrected accuracy (acc - chance) / (1 - chance)."""
    return float((acc - chance_acc) / max(1e-9, 1 - chance_acc))


def _random_scores(items, cfg: Cfg, rng) -> list[dict]:
    return [score_item(it, random_answer(it, rng)) for _ in range(cfg.random_reps) for it in items]


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    base = 100_000 * (seed + 1)  # disjoint trajectory seeds: test, validation, training
    test_s = range(base, base + cfg.n_test)
    val_s = range(base + 10_000, base + 10_000 + cfg.n_val)
    train_s = range(base + 20_000, base + 20_000 + cfg.n_train)
    kw = {"min_stable": cfg.min_stable, "n_changes": cfg.n_changes}
    items = build_items(test_s, cfg.lengths, cfg.per_length, sample_seed=42 + seed, **kw)
    val_items = build_items(val_s, cfg.lengths, cfg.per_length, sample_seed=4242 + seed, **kw)
    raws = [rollout(s, cfg.n_changes) for s in test_s]
    m["raw_frames_per_traj"] = float(np.mean([len(r) for r in raws]))
    m["keyframes_per_traj"] = float(np.mean([len(extract_keyframes(r, cfg.min_stable)) for r in raws]))
    m["n_items"] = float(len(items))
    lmin, lmax = min(cfg.lengths), max(cfg.lengths)
    task_of = {"forward": "fwd", "inverse": "inv"}

    # KFTS uniformity on a real key-frame DAG (chi-square vs brute-force enumeration); a naive sampler shows the power
    graphs = _trajectories([test_s[0]], cfg)[0]
    e = edges(graphs)
    paths = enumerate_paths(e, 3)
    rng = np.random.default_rng(seed)
    draws = kfts_sample(e, 3, cfg.kfts_draws, rng)
    naive = _naive(e, 3, cfg.kfts_draws, set(paths), rng)
    m["n_paths"] = float(len(paths))
    m["kfts_chi2_p"] = float(chisquare([draws.count(p) for p in paths]).pvalue)
    m["kfts_log10p"] = _log10p([draws.count(p) for p in paths])
    m["naive_log10p"] = _log10p([naive.count(p) for p in paths])
    m["kfts_tv"], m["naive_tv"] = _tv(draws, paths), _tv(naive, paths)

    # sanity: the oracle maximises the verifier's own rule (TA = PA = 1 by construction)
    res = score_answers(items, [oracle_answer(it) for it in items])
    m["oracle_ta"], m["oracle_pa"] = res["overall"]["task_accuracy"], res["overall"]["pairwise_accuracy"]
    m["oracle_ta_Lmax"] = float(np.mean([r["task_accuracy"] for r, it in zip(res["items"], items) if it["L"] == lmax]))

    # sanity: a random permutation against exact chance levels; its per-task and per-L scores are the chance levels
    rep = _random_scores(items, cfg, rng)
    n_it = len(items)
    short = [i for i, it in enumerate(items) if it["L"] <= 5]
    m["random_ta"] = float(np.mean([rep[r * n_it + i]["task_accuracy"] for r in range(cfg.random_reps) for i in short]))
    m["random_ta_exact"] = float(np.mean([chance(items[i])["task_accuracy"] for i in short]))
    m["random_ta_absdiff"] = abs(m["random_ta"] - m["random_ta_exact"])
    m["random_order_acc"] = float(np.mean([r["order_accuracy"] for r in rep]))
    m["random_order_absdiff"] = abs(m["random_order_acc"] - 0.5)
    m["random_pa"] = float(np.mean([r["pairwise_accuracy"] for r in rep]))
    rep_items = [it for _ in range(cfg.random_reps) for it in items]

    def mean_of(scores, its, key, keep):
        return float(np.mean([r[key] for r, it in zip(scores, its) if keep(it)]))

    for L in cfg.lengths:
        m[f"random_pa_L{L}"] = mean_of(rep, rep_items, "pairwise_accuracy", lambda it, L=L: it["L"] == L)
    m["random_pa_Lmin"], m["random_pa_Lmax"] = m[f"random_pa_L{lmin}"], m[f"random_pa_L{lmax}"]
    rep2 = _random_scores(items, cfg, np.random.default_rng(seed + 777))  # control: a second random answerer
    for t, tt in task_of.items():
        for met, key in (("ta", "task_accuracy"), ("pa", "pairwise_accuracy")):
            m[f"random_{met}_{tt}"] = mean_of(rep, rep_items, key, lambda it, t=t: it["task"] == t)
        ta2 = mean_of(rep2, rep_items, "task_accuracy", lambda it, t=t: it["task"] == t)
        m[f"random2_kta_{tt}"] = _kappa(ta2, m[f"random_ta_{tt}"])

    # the answerer that can fail like a VLM: a small MLP on rendered frames, tuned on validation items
    train = _trajectories(train_s, cfg)
    m["frame_alpha"], scorer = _tune(train, val_items, cfg, seed, ctx)
    res = score_answers(items, [scorer.answer(it) for it in items])
    m["frame_ta"], m["frame_pa"] = res["overall"]["task_accuracy"], res["overall"]["pairwise_accuracy"]
    for t, tt in task_of.items():
        m[f"frame_ta_{tt}"], m[f"frame_pa_{tt}"] = res[t]["task_accuracy"], res[t]["pairwise_accuracy"]
        m[f"frame_kta_{tt}"] = _kappa(m[f"frame_ta_{tt}"], m[f"random_ta_{tt}"])
        for L in cfg.lengths:
            g = res[f"{t}/L{L}"]
            m[f"frame_ta_{tt}_L{L}"], m[f"frame_pa_{tt}_L{L}"] = g["task_accuracy"], g["pairwise_accuracy"]
    for L in cfg.lengths:
        per = [r for r, it in zip(res["items"], items) if it["L"] == L]
        m[f"frame_ta_L{L}"] = float(np.mean([r["task_accuracy"] for r in per]))
        m[f"frame_pa_L{L}"] = float(np.mean([r["pairwise_accuracy"] for r in per]))
    for name, L in (("Lmin", lmin), ("Lmax", lmax)):
        m[f"frame_ta_{name}"], m[f"frame_pa_{name}"] = m[f"frame_ta_L{L}"], m[f"frame_pa_L{L}"]
        m[f"frame_kpa_{name}"] = _kappa(m[f"frame_pa_{name}"], m[f"random_pa_{name}"])
    m["frame_ta_null_Lmax"] = m["frame_pa_Lmin"] ** (lmax - 1)  # independent steps of constant accuracy
    m.update({f"err_{k}": v for k, v in res["errors"].items()})
    shuffled = _fit(train, cfg, seed, m["frame_alpha"], shuffle=True)
    m["frame_shuffled_pa"] = score_answers(items, [shuffled.answer(it) for it in items])["overall"]["pairwise_accuracy"]
    m["seconds"] = time.time() - t0
    ctx.log(
        f"seed {seed}: {len(items)} items; oracle TA {m['oracle_ta']:.3f}; random TA {m['random_ta']:.3f} vs exact "
        f"{m['random_ta_exact']:.3f}; KFTS log10 p {m['kfts_log10p']:.2f} (naive {m['naive_log10p']:.0f}); frame "
        f"PA {m['frame_pa']:.3f} (shuffled {m['frame_shuffled_pa']:.3f}, random {m['random_pa']:.3f}); TA L{lmin} "
        f"{m['frame_ta_Lmin']:.3f} -> L{lmax} {m['frame_ta_Lmax']:.3f} (null {m['frame_ta_null_Lmax']:.3f}); kTA fwd "
        f"{m['frame_kta_fwd']:.3f} inv {m['frame_kta_inv']:.3f}; {m['seconds']:.1f}s"
    )
    return m


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    from iclr26.embodied.enact.render import frame_strip

    seeds = list(per_seed.values())
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, met, title in ((axes[0], "ta", "task accuracy"), (axes[1], "pa", "pairwise accuracy")):
        for t, style in (("fwd", "-o"), ("inv", "--s")):
            ys = [[s[f"frame_{met}_{t}_L{L}"] for s in seeds if f"frame_{met}_{t}_L{L}" in s] for L in cfg.lengths]
            ax.errorbar(cfg.lengths, [np.mean(y) for y in ys], yerr=[np.std(y) for y in ys], fmt=style,
                        label=f"frame scorer {t}")  # fmt: skip
        if met == "pa":
            ys = [[s[f"random_pa_L{L}"] for s in seeds if f"random_pa_L{L}" in s] for L in cfg.lengths]
            ax.plot(cfg.lengths, [np.mean(y) for y in ys], ":", color="gray", label="random")
        else:  # the mechanical null: independent steps at the shortest L's per-step accuracy
            pa0 = np.mean([s["frame_pa_Lmin"] for s in seeds if "frame_pa_Lmin" in s])
            ax.plot(cfg.lengths, [pa0 ** (L - 1) for L in cfg.lengths], ":", color="black", label="null PA(Lmin)^(L-1)")
        ax.set_xlabel("horizon L"), ax.set_title(title), ax.set_ylim(0, 1.02), ax.legend(fontsize=7)
    fig.tight_layout()
    graphs = _trajectories([100_000], cfg)[0][:6]
    strip = frame_strip(graphs, titles=[f"key frame {i}" for i in range(len(graphs))])
    return [("accuracy_vs_horizon", fig), ("key_frames", strip)]
