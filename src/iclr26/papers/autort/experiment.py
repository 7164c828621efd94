"""The AUTO-RT reproduction: `run` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from iclr26.core.threads import run_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.lm.tiny import tiny_model
from iclr26.rlft.autort import (
    AutoRT,
    AutoRTConfig,
    LMStrategyPolicy,
    StrategyPolicy,
    asr_top_k,
    first_inverse_rate,
    fit_supervised,
    multi_hot,
    select_downgrade,
    semantic_diversity,
    to_strategies,
)
from iclr26.rlft.autort.world import RedTeamEnv, RedTeamWorld, mask_of

from . import Cfg


def _asr(world: RedTeamWorld, split: str):
    return lambda cands: world.success_matrix([mask_of(c) for c in cands], world.splits[split]).mean(1)


def _evaluate(world: RedTeamWorld, cfg: Cfg, pool, final) -> dict[str, float]:
    """ASR_tst (Eq. 6) on test and validation behaviours and SeD of the top-k (ranked by training ASR) among the pool
    (strategies that broke the target during the run) and the final generator's samples; the share of the top-k that
    are pool strategies (a top-k filled with untested samples measures failure, not diversity); the pool's diversity
    and the hidden keys it holds."""
    test, top = asr_top_k(list(pool) + list(final), _asr(world, "train"), _asr(world, "test"), cfg.top_k)
    val, _ = asr_top_k(list(pool) + list(final), _asr(world, "train"), _asr(world, "val"), cfg.top_k)
    n = world.cfg.n_prims
    uniq = sorted({frozenset(s) for s in pool}, key=sorted)
    found = set(uniq)
    return {
        "asr": test,
        "val": val,
        "sed": semantic_diversity(np.stack([multi_hot(s, n) for s in top])) if top else 1.0,
        "topk_working": sum(s in found for s in top) / cfg.top_k,
        "pool_sed": semantic_diversity(np.stack([multi_hot(s, n) for s in uniq])) if uniq else 1.0,
        "keys": float(len({k for s in uniq for k in world.keys_in(mask_of(s))})),
    }


def _policy(world: RedTeamWorld, seed: int) -> StrategyPolicy:
    torch.manual_seed(1000 + seed)  # the same untrained generator for every arm of a seed
    return StrategyPolicy(world.cfg.n_prims, world.cfg.max_len)


_MODELS: dict = {}


def _lm_policy(world: RedTeamWorld, cfg: Cfg, seed: int, model_name: str | None = None) -> LMStrategyPolicy:
    """AUTO-RT's generator as an HF causal LM. Default: a randomly initialised 2-layer llama whose vocabulary is the
    primitives, the end token and a BOS prompt (the same untrained generator for every lr of a seed). With
    ``model_name`` (``--model``): that pretrained LM (a fresh copy per run), its primitive words chosen from its
    tokenizer (`LMStrategyPolicy.from_tokenizer`)."""
    n = world.cfg.n_prims
    if model_name is None:
        model = tiny_model("llama", seed=2000 + seed, vocab_size=n + 2, d_model=cfg.lm_width, n_layers=2, max_len=16)
        return LMStrategyPolicy(model, n, world.cfg.max_len, prompt_ids=[n + 1])
    if model_name not in _MODELS:
        from iclr26.lm.loading import load_model

        _MODELS.clear()
        _MODELS[model_name] = load_model(model_name)
    model, tok = _MODELS[model_name]
    return LMStrategyPolicy.from_tokenizer(copy.deepcopy(model), tok, n, world.cfg.max_len)


def _sample(policy, n: int, gen, temperature: float = 1.0) -> list[tuple[int, ...]]:
    return to_strategies(policy.sample(n, generator=gen, temperature=temperature), policy.end) if n else []


def _sampling_arm(world, cfg: Cfg, policy, seed: int, temperature: float = 1.0) -> dict:
    """FS / IL: the budget's strategies, each sent to the target on a random training behaviour."""
    gen, rng = torch.Generator().manual_seed(seed), np.random.default_rng(seed)
    strategies = _sample(policy, cfg.budget, gen, temperature)
    intents = rng.choice(world.splits["train"], len(strategies))
    pool = [s for s, a in zip(strategies, intents) if world.success(int(a), mask_of(s))]
    res = _evaluate(world, cfg, pool, _sample(policy, cfg.final_samples, gen, temperature))
    n = float(len(strategies))  # one target query each, no downgrade model
    return res | {"samples": n, "pool": float(len({frozenset(s) for s in pool})), "queries": n, "target_queries": n}


def _seed_strategies(world: RedTeamWorld, cfg: Cfg, seed: int) -> list[tuple[int, ...]]:
    """IL's demonstrations: near misses (a key with one primitive swapped for 1-2 fillers), none breaks the target."""
    rng = np.random.default_rng([seed, 3])
    safe = [t for t in range(world.cfg.n_prims) if t not in world.destroyers]
    out = []
    while len(out) < cfg.n_seed_strategies:
        km = world.keys[int(rng.integers(len(world.keys)))]
        toks = [t for t in range(world.cfg.n_prims) if km >> t & 1]
        drop = toks.pop(int(rng.integers(len(toks))))
        fill = [t for t in rng.choice(safe, 2, replace=False) if t != drop and t not in toks]
        s = tuple(int(t) for t in rng.permutation(toks + fill[: int(rng.integers(1, 3))]))
        if not any(world.target_unsafe(a, mask_of(s)) for a in range(world.cfg.n_intents)):
            out.append(s)
    return out


def _rl_arm(world, cfg: Cfg, seed: int, lr: float, dsp: bool, prt, lm: bool = False, model=None, budget=None):
    env = RedTeamEnv(world, "train", downgrade=prt)
    acfg = AutoRTConfig(
        use_dsp=dsp,
        use_prt=prt is not None,
        target_budget=budget or cfg.budget,
        count_downgrade_queries=cfg.count_downgrade,
        lr=lr,
        seed=seed,
        max_samples_factor=cfg.max_samples_factor,
    )
    trainer = AutoRT(_lm_policy(world, cfg, seed, model) if lm else _policy(world, seed), env, acfg)
    trainer.train()
    gen = torch.Generator().manual_seed(seed + 77)
    res = _evaluate(world, cfg, trainer.pool, _sample(trainer.policy, cfg.final_samples, gen))
    return res | {
        "samples": float(trainer.samples),
        "pool": float(len({frozenset(s) for s in trainer.pool})),
        "queries": float(trainer.queries),
        "target_queries": float(env.target_queries),
        "pruned_div": float(trainer.pruner.pruned["diversity"]),
        "pruned_cons": float(trainer.pruner.pruned["consistency"]),
    }


def _fir(world: RedTeamWorld, cfg: Cfg, seed: int) -> list[float]:
    """FIR of every M_k on probes (random strategy, validation behaviour) ordered by the target's ease: the share of
    one-primitive extensions of the strategy that break the target (black-box target queries)."""
    rng = np.random.default_rng([seed, 5])
    n = world.cfg.n_prims
    probes = [
        (int(rng.choice(world.splits["val"])), mask_of(rng.choice(n, int(rng.integers(2, 6)), replace=False)))
        for _ in range(cfg.n_probes)
    ]
    ease = [np.mean([world.target_unsafe(a, m | 1 << t) for t in range(n)]) for a, m in probes]
    return [
        first_inverse_rate([world.downgrade_unsafe(k, a, m) for a, m in probes], ease)
        for k in range(1, world.n_downgrades + 1)
    ]


def _oracle(world: RedTeamWorld, cfg: Cfg) -> float:
    """Knows the keys: candidates are every key and every union of two keys that fits in a strategy."""
    toks = [tuple(t for t in range(world.cfg.n_prims) if km >> t & 1) for km in world.keys]
    cands = toks + [
        tuple(sorted(set(a) | set(b)))
        for i, a in enumerate(toks)
        for b in toks[i + 1 :]
        if len(set(a) | set(b)) <= world.cfg.max_len
    ]
    return asr_top_k(cands, _asr(world, "train"), _asr(world, "test"), cfg.top_k)[0]


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _tuned(name: str, fn, grid, cfg: Cfg, ctx) -> tuple[float, dict]:
    g = tune_on_grid(lambda v: ((r := fn(v))["val"], r), grid, max_extensions=cfg.max_extensions)
    ctx.log(
        f"  {name}: grid {[f'{v:g}:{g.scores[v]:.3f}' for v in g.grid]} -> {g.best:g}"
        + (" (edge)" if g.at_edge and len(g.grid) > 1 else "")
    )
    return g.best, g.payload


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    world = RedTeamWorld(seed)
    m["oracle_asr"] = _oracle(world, cfg)

    firs = _fir(world, cfg, seed)
    k_fir = select_downgrade(firs)
    m.update({f"fir_M{k}": f for k, f in enumerate(firs, 1)} | {"fir_pick": float(k_fir)})

    results, hps = {}, {}
    results["fs"], hps["fs"] = _sampling_arm(world, cfg, _policy(world, seed), seed), 0.0
    il = fit_supervised(_policy(world, seed), _seed_strategies(world, cfg, seed))
    hps["il"], results["il"] = _tuned(
        "IL temperature", lambda t: _sampling_arm(world, cfg, il, seed, t), cfg.temp_grid, cfg, ctx
    )
    arms = {"rl": (False, None), "rl_dsp": (True, None), "rl_prt": (False, k_fir), "autort": (True, k_fir)}
    for arm, (dsp, prt) in arms.items():
        hps[arm], results[arm] = _tuned(
            f"{arm} lr", lambda lr, d=dsp, p=prt: _rl_arm(world, cfg, seed, lr, d, p), cfg.lr_grid, cfg, ctx
        )
    if cfg.lm_generator:  # the same AUTO-RT, its generator an HF causal LM (--model: yours); the same tuning rule
        name = getattr(ctx, "model", None)
        grid = cfg.model_lr_grid if name else cfg.lr_grid
        hps["autort_lm"], results["autort_lm"] = _tuned(
            "autort_lm lr", lambda lr: _rl_arm(world, cfg, seed, lr, True, k_fir, lm=True, model=name), grid, cfg, ctx
        )
    for arm, r in results.items():
        for key, v in r.items():
            m[f"{arm}_{key}"] = v
        m[f"{arm}_hp"] = hps[arm]
    use = [m[f"{a}_queries"] / cfg.budget for a in results]
    m["budget_use_min"], m["budget_use_max"] = min(use), max(use)

    if cfg.fir_sweep:  # RL+PRT with every downgrade model, at RL+PRT's tuned learning rate (reported)
        per_k = {k_fir: results["rl_prt"]["asr"]}
        for k in range(1, world.n_downgrades + 1):
            if k != k_fir:
                per_k[k] = _rl_arm(world, cfg, seed, hps["rl_prt"], False, k)["asr"]
        m.update({f"prt_M{k}_asr": v for k, v in per_k.items()})
        m["prt_kmean_asr"] = float(np.mean(list(per_k.values())))
        m["best_k"] = float(max(per_k, key=per_k.get))
        m["fir_regret"] = max(per_k.values()) - per_k[k_fir]
    unrelated = _rl_arm(world, cfg, seed, hps["rl_prt"], False, "unrelated")
    m["prt_unrelated_asr"], m["prt_unrelated_queries"] = unrelated["asr"], unrelated["queries"]

    if cfg.div_budget:  # diversity at a budget where plain RL succeeds, at each arm's tuned lr
        big = {"rl": (False, None), "rl_prt": (False, k_fir), "autort": (True, k_fir)}
        for arm, (dsp, prt) in big.items():
            r = _rl_arm(world, cfg, seed, hps[arm], dsp, prt, budget=cfg.div_budget)
            m.update({f"{arm}_{k}_big": v for k, v in r.items() if k != "val"})
        use = [m[f"{a}_queries_big"] / cfg.div_budget for a in big]
        m["budget_use_big_min"], m["budget_use_big_max"] = min(use), max(use)
    ctx.log(
        f"seed {seed}: oracle {m['oracle_asr']:.3f}; FIR {[round(f, 3) for f in firs]} -> M{k_fir}; ASR_tst "
        + ", ".join(f"{a} {results[a]['asr']:.3f}" for a in results)
        + f"; unrelated PRT {m['prt_unrelated_asr']:.3f}; {time.time() - t0:.1f}s"
    )
    return m
