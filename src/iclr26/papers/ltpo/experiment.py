"""The LTPO reproduction: `run` (imported only to run; the light card is `__init__.py`).

Part 1, the modular-arithmetic world on a tiny reasoner trained here; part 2, SmolLM2-135M-Instruct on one-step
questions (`smol.py`). Every method runs on the same frozen model, batched over problems of equal length.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from iclr26.latent.ltpo.world import ModArithWorld

from ...core.locks import cached_json
from ...core.paths import trained_cache_dir
from ...core.threads import run_threads
from ...latent.ltpo import LTPO, LatentScorer, LTPOConfig, gold_oracle, random_search
from ...lm.tiny import tiny_config
from . import Cfg
from .measures import _rms, auroc, cache_speedup, mean_initial_reward, pearson
from .tinymodel import RECIPE, latent_problem, load_reasoner
from .tuning import tune

METHODS = ("direct", "cotunk", "ltpo", "ltpo_ag", "rs", "oracle")


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads(), torch.no_grad():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    world = ModArithWorld(cfg.modulus, cfg.train_ops)
    # one reasoner (training seed 0) for every evaluation seed: seeds vary the problems and the policy noise
    model, tok, info = reasoner(cfg, world, progress=not getattr(ctx, "quiet", True))
    m["train_val_acc"], m["train_steps"] = info["val_acc_id"], float(info["steps"])
    m["train_capped"] = float(info.get("capped", True))
    _world_part(cfg, seed, ctx, world, model, tok, m)
    ctx.log(f"seed {seed}: world part done in {time.time() - t0:.0f}s")
    if cfg.smol:
        from .smol import smol_part

        smol_part(cfg, seed, ctx, m)
    ctx.log(f"seed {seed}: {time.time() - t0:.0f}s")
    return m


def reasoner(cfg: Cfg, world, progress: bool = False):
    """The cached tiny reasoner of this config (trained with seed 0 on first use)."""
    recipe = {
        "steps": cfg.train_steps,
        "d_model": cfg.d_model,
        "n_layers": cfg.n_layers,
        "pad_to_ops": max(cfg.ood_ops),
    }
    return load_reasoner(world, cfg.num_thoughts, 0, recipe, progress=progress)


# ---------------------------------------------------------------------------------------------------- evaluation
def _batches(world, tok, probs, k, pad_to_ops):
    """Problems grouped by length (equal shapes batch together): [(indices, latent problems, answer ids)]."""
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(probs):
        groups.setdefault(p.n_ops, []).append(i)
    out = []
    for idx in groups.values():
        lps = [latent_problem(tok, probs[i], k, pad_to_ops) for i in idx]
        ans = torch.tensor([tok.convert_tokens_to_ids(str(probs[i].answer)) for i in idx])
        out.append((idx, lps, ans))
    return out


def evaluate(model, batches, n: int, method: str, params: dict, cfg: Cfg, base_seed: int, r0: float = 1.0):
    """Per-problem (correct, reward of the kept latent) for one method; ``ltpo`` also returns the last iterate."""
    rms = _rms(model)
    correct, reward, correct_last, r_init = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    pred = np.full(n, -1)
    for idx, lps, ans in batches:
        seeds = [base_seed * 1_000_003 + i for i in idx]
        if method == "direct":  # no thought slots: prefix then the answer marker
            ids = torch.stack([torch.cat([p.prefix_ids, p.suffix_ids]) for p in lps])
            p = model(input_ids=ids).logits[:, -1].argmax(-1)
            correct[idx], pred[idx] = (p == ans).numpy(), p.numpy()
            continue
        sc = LatentScorer(model, lps)
        r_init[idx] = sc.reward(sc.h0, cfg.top_k).numpy()
        if method == "cotunk":
            h, r = sc.h0, sc.reward(sc.h0, cfg.top_k)
        elif method in ("ltpo", "ltpo_ag"):
            sigma = params["sigma"] * rms
            lr = params["step"] * sigma**2 / r0 if method == "ltpo" else params["adam"] * rms  # η (see Cfg.step_grid)
            lc = LTPOConfig(num_thoughts=cfg.num_thoughts, steps=cfg.steps, lr=lr, sigma=sigma,
                            sigma_decay=cfg.sigma_decay, top_k=cfg.top_k,
                            estimator="reinforce" if method == "ltpo" else "autograd")  # fmt: skip
            tr = LTPO(model, None, lc).optimize(lps, seeds, scorer=sc)
            h, r = tr.h_best, tr.best_reward
            last = sc.answer_logits(tr.h_last).argmax(-1)
            correct_last[idx] = (last == ans).numpy()
        elif method == "rs":
            lc = LTPOConfig(
                num_thoughts=cfg.num_thoughts, steps=cfg.steps, sigma_decay=cfg.sigma_decay, top_k=cfg.top_k
            )
            tr = random_search(sc, lc, params["sigma"] * rms, seeds)
            h, r = tr.h_best, tr.best_reward
        elif method == "oracle":
            tr = gold_oracle(sc, ans[:, None], cfg.steps, params["adam"] * rms)
            h, r = tr.h_best, sc.reward(tr.h_best, cfg.top_k)
        else:
            raise ValueError(f"unknown method {method!r}")
        p = sc.answer_logits(h).argmax(-1)
        correct[idx], pred[idx], reward[idx] = (p == ans).numpy(), p.numpy(), r.numpy()
    return {"correct": correct, "pred": pred, "reward": reward, "correct_last": correct_last, "r_init": r_init}


def _centre(grid) -> float:
    """Geometric centre of a positive grid (its middle value for an odd geometric grid)."""
    return float(np.exp(np.mean(np.log([min(grid), max(grid)]))))


# ---------------------------------------------------------------------------------------------------- the world
TUNE_SEED = 77  # world seed of the tuning problems (validation 200 + 77), disjoint from every seed's test problems


def tuned_params(cfg: Cfg, world, model, tok, ctx) -> tuple[dict, float]:
    """The one rule, run once per config and reasoner on its own validation problems (cached like a model): every
    method's hyper-parameters by the mean of ID and OOD validation accuracy, grids extended while an edge wins.
    Returns (params per method, R̄0 of the tuning problems, which sets η = step·σ0²/R̄0 for every seed)."""
    spec = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "seeds" and not k.startswith("smol")}
    spec = json.dumps([spec, RECIPE, TUNE_SEED], sort_keys=True, default=str)
    path = trained_cache_dir() / "zoo" / f"ltpo-params-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"

    def compute():
        k, pad, vper = cfg.num_thoughts, max(cfg.ood_ops), max(1, cfg.n_val // len(cfg.ood_ops))
        val = {"id": world.sample(cfg.train_ops, cfg.n_val, 200 + TUNE_SEED),
               "ood": [p for n in cfg.ood_ops for p in world.sample(n, vper, 200 + TUNE_SEED)]}  # fmt: skip
        vb = {s: _batches(world, tok, ps, k, pad) for s, ps in val.items()}
        r0 = mean_initial_reward(model, [lps for _, lps, _ in vb["id"] + vb["ood"]], cfg.top_k)

        def val_score(method):
            def f(**params):
                return np.mean([evaluate(model, vb[s], len(val[s]), method, params, cfg, 7_000 + TUNE_SEED, r0)
                                ["correct"].mean() for s in ("id", "ood")])  # fmt: skip

            return f

        log = ctx.log
        params = {
            "direct": {},
            "cotunk": {},
            "ltpo": tune(val_score("ltpo"), {"sigma": cfg.sigma_grid, "step": cfg.step_grid}, log=log)[0],
            "ltpo_ag": tune(val_score("ltpo_ag"), {"sigma": cfg.sigma_grid, "adam": cfg.adam_grid}, log=log)[0],
            "rs": tune(val_score("rs"), {"sigma": cfg.sigma_grid}, log=log)[0],
            "oracle": tune(val_score("oracle"), {"adam": cfg.adam_grid}, log=log)[0],
        }
        return {"params": params, "r0": r0}

    out = cached_json(path, "the LTPO hyper-parameter tuning", compute)
    return out["params"], out["r0"]


def _world_part(cfg: Cfg, seed: int, ctx, world, model, tok, m: dict) -> None:
    k = cfg.num_thoughts
    per = max(1, cfg.n_test // len(cfg.ood_ops))
    test = {"id": world.sample(cfg.train_ops, cfg.n_test, 100 + seed),
            "ood": [p for n in cfg.ood_ops for p in world.sample(n, per, 100 + seed)]}  # fmt: skip
    pad = max(cfg.ood_ops)
    tb = {s: _batches(world, tok, ps, k, pad) for s, ps in test.items()}
    params, r0 = tuned_params(cfg, world, model, tok, ctx)
    m["sigma_ltpo"], m["step_ltpo"], m["sigma_rs"] = (
        params["ltpo"]["sigma"],
        params["ltpo"]["step"],
        params["rs"]["sigma"],
    )
    res = {(s, meth): evaluate(model, tb[s], len(test[s]), meth, params[meth], cfg, seed, r0)
           for s in ("id", "ood") for meth in METHODS}  # fmt: skip
    for (s, meth), r in res.items():
        m[f"acc_{s}_{meth}"] = float(r["correct"].mean())
        if meth == "ltpo":
            m[f"acc_{s}_ltpo_last"] = float(r["correct_last"].mean())
    ood_n = np.array([p.n_ops for p in test["ood"]])
    for n in cfg.ood_ops:
        for meth in ("cotunk", "ltpo"):
            m[f"acc_n{n}_{meth}"] = float(res[("ood", meth)]["correct"][ood_n == n].mean())

    # reward vs correctness, and where confidence misleads
    lt, cu = res[("ood", "ltpo")], res[("ood", "cotunk")]
    m["corr_ood_ltpo"] = pearson(lt["reward"], lt["correct"])
    m["corr_id_ltpo"] = pearson(res[("id", "ltpo")]["reward"], res[("id", "ltpo")]["correct"])
    m["corr_ood_cotunk"] = pearson(cu["reward"], cu["correct"])
    m["auroc_id"] = auroc(res[("id", "ltpo")]["reward"], res[("id", "ltpo")]["correct"])
    m["auroc_ood"] = auroc(lt["reward"], lt["correct"])
    # guard: a tuned LTPO that changes no answer is CoT-Unk, and "beats random search" would be vacuous
    for s in ("id", "ood"):
        for meth in ("ltpo", "rs"):
            m[f"moved_{s}_{meth}"] = float((res[(s, meth)]["pred"] != res[(s, "cotunk")]["pred"]).mean())
    # LTPO switched on: the centre of the tuning grids before any extension (untuned; reported, in no claim)
    centre = {"sigma": _centre(cfg.sigma_grid), "step": _centre(cfg.step_grid)}
    for s in ("id", "ood"):
        on = evaluate(model, tb[s], len(test[s]), "ltpo", centre, cfg, seed, r0)
        m[f"acc_{s}_ltpo_centre"] = float(on["correct"].mean())
        m[f"moved_{s}_ltpo_centre"] = float((on["pred"] != res[(s, "cotunk")]["pred"]).mean())
    m["flip_wrong_ood"] = float(((cu["correct"] == 1) & (lt["correct"] == 0)).mean())
    m["flip_right_ood"] = float(((cu["correct"] == 0) & (lt["correct"] == 1)).mean())
    top = lt["reward"] >= np.quantile(lt["reward"], 0.75)
    m["confident_wrong_ood"] = float(1 - lt["correct"][top].mean())

    # control: an untrained model of the same shape (its confidence carries no knowledge of the answer)
    torch.manual_seed(1_000 + seed)
    shape = {n: RECIPE[n] for n in ("n_heads", "n_kv_heads", "max_len")} | {
        "d_model": cfg.d_model,
        "n_layers": cfg.n_layers,
    }
    untrained = AutoModelForCausalLM.from_config(tiny_config("llama", vocab_size=len(tok), **shape)).eval()
    un = evaluate(untrained, tb["ood"], len(test["ood"]), "cotunk", {}, cfg, seed)
    m["corr_untrained"] = pearson(un["reward"], un["correct"])
    m["abs_corr_untrained"] = abs(m["corr_untrained"])

    # measured speed of the cached-prefix loop against the naive loop (the longest OOD batch)
    _, lps, _ = tb["ood"][-1]
    m["speedup_cache_world"] = cache_speedup(model, lps, cfg.steps, cfg.top_k)
    ctx.log(
        f"seed {seed}: ID direct {m['acc_id_direct']:.3f} cot-unk {m['acc_id_cotunk']:.3f} ltpo {m['acc_id_ltpo']:.3f}"
        f" | OOD cot-unk {m['acc_ood_cotunk']:.3f} ltpo {m['acc_ood_ltpo']:.3f} (last {m['acc_ood_ltpo_last']:.3f},"
        f" autograd {m['acc_ood_ltpo_ag']:.3f}) rs {m['acc_ood_rs']:.3f} oracle {m['acc_ood_oracle']:.3f} | r_ood "
        f"{m['corr_ood_ltpo']:.3f} untrained {m['corr_untrained']:.3f} | cache x{m['speedup_cache_world']:.2f} | "
        f"LTPO moved {m['moved_ood_ltpo']:.3f} of OOD answers; grid-centre LTPO OOD {m['acc_ood_ltpo_centre']:.3f} "
        f"(moved {m['moved_ood_ltpo_centre']:.3f})"
    )


def plots(run_dir, per_seed, cfg):
    """Accuracy of every method ID / OOD (world) and on SmolLM2, mean ± std over seeds."""
    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    names = ("direct", "cotunk", "ltpo", "ltpo_last", "ltpo_ag", "rs", "oracle")
    panels = [("id", "world, ID (n = train_ops)"), ("ood", "world, OOD (longer chains)"), ("smol", "SmolLM2")]
    panels = [(k, t) for k, t in panels if any(f"acc_{k}_ltpo" in s for s in seeds)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2), squeeze=False)
    for ax, (key, title) in zip(axes[0], panels):
        vals = [[s[f"acc_{key}_{n}"] for s in seeds if f"acc_{key}_{n}" in s] for n in names]
        keep = [i for i, v in enumerate(vals) if v]
        ax.bar(range(len(keep)), [np.mean(vals[i]) for i in keep], yerr=[np.std(vals[i]) for i in keep], color="C0")
        ax.set_xticks(range(len(keep)), [names[i] for i in keep], rotation=45, fontsize=7)
        ax.set_ylim(0, 1), ax.set_title(title, fontsize=9), ax.set_ylabel("accuracy")
    fig.tight_layout()
    return [("accuracy_by_method", fig)]
