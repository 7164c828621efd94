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
from ...latent.ltpo import LTPO, LatentScorer, LTPOConfig, gold_oracle, random_search, random_walk
from ...lm.tiny import tiny_config
from . import Cfg
from .measures import _rms, auroc, cache_speedup, mean_initial_reward, pearson
from .tinymodel import RECIPE, latent_problem, load_reasoner
from .tuning import tune

METHODS = ("direct", "cotunk", "ltpo", "ltpo_ag", "rs", "walk", "oracle")
SPLITS = ("id", "idc", "ood")  # ID chains; ID chains whose initial thoughts are corrupted (positive control); OOD


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


def corruption(lps, d: int, scale: float, seed: int) -> torch.Tensor:
    """The fixed corruption δ [B, K, d] of the initial thoughts of problems ``lps`` (positive-control split): Gaussian,
    ``scale`` × RMS(E) per coordinate, drawn from a generator of the problem (the same δ for every method)."""
    out = []
    for p in lps:
        key = int(hashlib.sha1(repr((p.prefix_ids.tolist(), seed)).encode()).hexdigest()[:8], 16)
        out.append(torch.randn(p.num_thoughts, d, generator=torch.Generator().manual_seed(key)))
    return torch.stack(out) * scale


def evaluate(model, batches, n: int, method: str, params: dict, cfg: Cfg, base_seed: int, r0: float = 1.0,
             corrupt: float = 0.0):  # fmt: skip
    """Per-problem (correct, prediction, reward of the kept latent, R(H^0)) for one method; ``ltpo`` also returns
    its last iterate. ``corrupt`` > 0 starts every method from H^0 + δ (δ: ``corrupt`` × RMS(E), fixed per problem)."""
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
        if corrupt > 0:  # every method starts from the same corrupted thoughts (the scorer's H^0)
            sc.h0 = sc.h0 + corruption(lps, sc.h0.shape[-1], corrupt * rms, base_seed)
        r_init[idx] = sc.reward(sc.h0, cfg.top_k).numpy()
        sigma = params.get("sigma", 0.0) * rms
        eta = params.get("step", 0.0) * sigma**2 / r0  # η = s·σ0²/R̄0 (see Cfg.step_grid)
        lc = LTPOConfig(num_thoughts=cfg.num_thoughts, steps=cfg.steps, sigma=sigma, sigma_decay=cfg.sigma_decay,
                        top_k=cfg.top_k, lr=eta)  # fmt: skip
        if method == "cotunk":
            h, r = sc.h0, sc.reward(sc.h0, cfg.top_k)
        elif method in ("ltpo", "ltpo_ag"):
            if method == "ltpo_ag":
                lc = dataclasses.replace(lc, lr=params["adam"] * rms, estimator="autograd")
            tr = LTPO(model, None, lc).optimize(lps, seeds, scorer=sc)
            h, r = tr.h_best, tr.best_reward
            correct_last[idx] = (sc.answer_logits(tr.h_last).argmax(-1) == ans).numpy()
        elif method == "walk":  # LTPO's loop, same noise and (σ0, η), constant reward R(H^0) in the update
            tr = random_walk(sc, lc, seeds)
            h, r = tr.h_best, tr.best_reward
        elif method == "rs":
            tr = random_search(sc, lc, sigma, seeds)
            h, r = tr.h_best, tr.best_reward
        elif method == "oracle":
            tr = gold_oracle(sc, ans[:, None], cfg.steps, params["adam"] * rms)
            h, r = tr.h_best, sc.reward(tr.h_best, cfg.top_k)
        else:
            raise ValueError(f"unknown method {method!r}")
        p = sc.answer_logits(h).argmax(-1)
        correct[idx], pred[idx], reward[idx] = (p == ans).numpy(), p.numpy(), r.numpy()
    return {"correct": correct, "pred": pred, "reward": reward, "correct_last": correct_last, "r_init": r_init}


# ---------------------------------------------------------------------------------------------------- the world
TUNE_SEED = 77  # world seed of the tuning problems (validation 200 + 77), disjoint from every seed's test problems


def _splits(cfg: Cfg, world, seed: int, count: int) -> dict:
    """{split: problems}: ID chains (also the corrupted split's problems, with their own draw), OOD evenly by length."""
    per = max(1, count // len(cfg.ood_ops))
    return {"id": world.sample(cfg.train_ops, count, seed), "idc": world.sample(cfg.train_ops, count, seed + 50_000),
            "ood": [p for n in cfg.ood_ops for p in world.sample(n, per, seed)]}  # fmt: skip


def _corrupt(s: str, cfg: Cfg) -> float:
    return cfg.corrupt if s == "idc" else 0.0


def tuned_params(cfg: Cfg, world, model, tok, ctx) -> tuple[dict, float]:
    """The one rule, run once per config and reasoner on its own validation problems (cached like a model): every
    method's hyper-parameters by the mean validation accuracy over the three splits, **among the settings that change
    at least ``min_moved`` of the validation answers** (a setting below that floor scores −1 + its moved share, so the
    rule can never switch the method off silently: with nothing above the floor it walks the grid towards the setting
    that moves most), grids extended while an edge wins. Returns (params per method, R̄0 of the tuning problems, which
    sets η = step·σ0²/R̄0 for every seed)."""
    spec = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "seeds" and not k.startswith("smol")}
    spec = json.dumps([spec, RECIPE, TUNE_SEED, 5], sort_keys=True, default=str)
    path = trained_cache_dir() / "zoo" / f"ltpo-params-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.json"

    def compute():
        k, pad = cfg.num_thoughts, max(cfg.ood_ops)
        val = _splits(cfg, world, 200 + TUNE_SEED, cfg.n_val)
        vb = {s: _batches(world, tok, ps, k, pad) for s, ps in val.items()}
        r0 = mean_initial_reward(model, [lps for s in ("id", "ood") for _, lps, _ in vb[s]], cfg.top_k)
        base = {s: evaluate(model, vb[s], len(val[s]), "cotunk", {}, cfg, 7_000 + TUNE_SEED, r0, _corrupt(s, cfg))
                for s in SPLITS}  # fmt: skip

        def val_score(method, floor=True):
            def f(**params):
                res = {s: evaluate(model, vb[s], len(val[s]), method, params, cfg, 7_000 + TUNE_SEED, r0,
                                   _corrupt(s, cfg)) for s in SPLITS}  # fmt: skip
                acc = float(np.mean([r["correct"].mean() for r in res.values()]))
                moved = float(np.mean([(res[s]["pred"] != base[s]["pred"]).mean() for s in SPLITS]))
                return acc if not floor or moved >= cfg.min_moved else moved - 1.0

            return f

        log = ctx.log
        return {"params": {
            "direct": {}, "cotunk": {},
            "ltpo": tune(val_score("ltpo"), {"sigma": cfg.sigma_grid, "step": cfg.step_grid}, log=log)[0],
            "ltpo_ag": tune(val_score("ltpo_ag"), {"sigma": cfg.sigma_grid, "adam": cfg.adam_grid}, log=log)[0],
            "rs": tune(val_score("rs"), {"sigma": cfg.sigma_grid}, log=log)[0],
            "oracle": tune(val_score("oracle", floor=False), {"adam": cfg.adam_grid}, log=log)[0],
        }, "r0": r0}  # fmt: skip

    out = cached_json(path, "the LTPO hyper-parameter tuning", compute)
    params = out["params"]
    params["walk"] = params["ltpo"]  # the walk is LTPO with the reward removed from the update: LTPO's own (σ0, η)
    return params, out["r0"]


def _world_part(cfg: Cfg, seed: int, ctx, world, model, tok, m: dict) -> None:
    k, pad = cfg.num_thoughts, max(cfg.ood_ops)
    test = _splits(cfg, world, 100 + seed, cfg.n_test)
    tb = {s: _batches(world, tok, ps, k, pad) for s, ps in test.items()}
    params, r0 = tuned_params(cfg, world, model, tok, ctx)
    m["sigma_ltpo"], m["step_ltpo"], m["sigma_rs"] = (
        params["ltpo"]["sigma"],
        params["ltpo"]["step"],
        params["rs"]["sigma"],
    )
    res = {(s, meth): evaluate(model, tb[s], len(test[s]), meth, params[meth], cfg, seed, r0, _corrupt(s, cfg))
           for s in SPLITS for meth in METHODS if not (meth == "direct" and s == "idc")}  # fmt: skip
    for (s, meth), r in res.items():
        m[f"acc_{s}_{meth}"] = float(r["correct"].mean())
        if meth == "ltpo":
            m[f"acc_{s}_ltpo_last"] = float(r["correct_last"].mean())
    ood_n = np.array([p.n_ops for p in test["ood"]])
    for n in cfg.ood_ops:
        for meth in ("cotunk", "ltpo"):
            m[f"acc_n{n}_{meth}"] = float(res[("ood", meth)]["correct"][ood_n == n].mean())

    # does the reward carry signal? AUROC of R for correctness: of the initial thoughts (CoT-Unk) and of LTPO's kept
    for s in SPLITS:
        cu, lt = res[(s, "cotunk")], res[(s, "ltpo")]
        m[f"auroc_{s}_init"] = auroc(cu["r_init"], cu["correct"])
        m[f"auroc_{s}"] = auroc(lt["reward"], lt["correct"])
        m[f"corr_{s}_ltpo"] = pearson(lt["reward"], lt["correct"])
        # non-degenerate arms: the share of answers a method changed relative to CoT-Unk (0: a no-op)
        for meth in ("ltpo", "rs", "walk"):
            m[f"moved_{s}_{meth}"] = float((res[(s, meth)]["pred"] != cu["pred"]).mean())
    m["corr_ood_cotunk"] = pearson(res[("ood", "cotunk")]["r_init"], res[("ood", "cotunk")]["correct"])
    lt, cu = res[("ood", "ltpo")], res[("ood", "cotunk")]
    m["flip_wrong_ood"] = float(((cu["correct"] == 1) & (lt["correct"] == 0)).mean())
    m["flip_right_ood"] = float(((cu["correct"] == 0) & (lt["correct"] == 1)).mean())
    top = lt["reward"] >= np.quantile(lt["reward"], 0.75)
    m["confident_wrong_ood"] = float(1 - lt["correct"][top].mean())
    # how far LTPO's update is from the constant-reward walk's (same noise): cosine of the displacements H_T − H^0
    _, lps, _ = tb["idc"][0]
    sc = LatentScorer(model, lps)
    sc.h0 = sc.h0 + corruption(lps, sc.h0.shape[-1], cfg.corrupt * _rms(model), seed)
    p = params["ltpo"]
    sigma = p["sigma"] * _rms(model)
    lc = LTPOConfig(num_thoughts=k, steps=cfg.steps, sigma=sigma, sigma_decay=cfg.sigma_decay, top_k=cfg.top_k,
                    lr=p["step"] * sigma**2 / r0)  # fmt: skip
    seeds = [seed * 1_000_003 + i for i in range(len(lps))]
    d_lt = (LTPO(model, None, lc).optimize(lps, seeds, scorer=sc).h_last - sc.h0).flatten(1)
    d_wk = (random_walk(sc, lc, seeds).h_last - sc.h0).flatten(1)
    m["cos_ltpo_walk"] = float(torch.nn.functional.cosine_similarity(d_lt, d_wk, dim=1).mean())

    # control: an untrained model of the same shape (its confidence carries no knowledge of the answer)
    torch.manual_seed(1_000 + seed)
    shape = {n: RECIPE[n] for n in ("n_heads", "n_kv_heads", "max_len")} | {"d_model": cfg.d_model,
                                                                             "n_layers": cfg.n_layers}  # fmt: skip
    untrained = AutoModelForCausalLM.from_config(tiny_config("llama", vocab_size=len(tok), **shape)).eval()
    un = evaluate(untrained, tb["idc"], len(test["idc"]), "cotunk", {}, cfg, seed, 1.0, cfg.corrupt)
    m["corr_untrained"] = pearson(un["r_init"], un["correct"])
    m["abs_corr_untrained"] = abs(m["corr_untrained"])
    m["corr_idc_init"] = pearson(res[("idc", "cotunk")]["r_init"], res[("idc", "cotunk")]["correct"])

    # measured speed of the cached-prefix loop against the naive loop (the longest OOD batch)
    _, lps, _ = tb["ood"][-1]
    m["speedup_cache_world"] = cache_speedup(model, lps, cfg.steps, cfg.top_k)[0]
    ctx.log(
        f"seed {seed}: ID cot-unk {m['acc_id_cotunk']:.3f} ltpo {m['acc_id_ltpo']:.3f} | corrupted ID cot-unk "
        f"{m['acc_idc_cotunk']:.3f} ltpo {m['acc_idc_ltpo']:.3f} walk {m['acc_idc_walk']:.3f} rs {m['acc_idc_rs']:.3f}"
        f" oracle {m['acc_idc_oracle']:.3f} (AUROC of R(H0) {m['auroc_idc_init']:.2f}, moved {m['moved_idc_ltpo']:.2f})"
        f" | OOD cot-unk {m['acc_ood_cotunk']:.3f} ltpo {m['acc_ood_ltpo']:.3f} walk {m['acc_ood_walk']:.3f} rs "
        f"{m['acc_ood_rs']:.3f} oracle {m['acc_ood_oracle']:.3f} (AUROC {m['auroc_ood_init']:.2f}, moved "
        f"{m['moved_ood_ltpo']:.2f}) | cos(LTPO, walk) {m['cos_ltpo_walk']:.3f}"
    )


def plots(run_dir, per_seed, cfg):
    """Accuracy of every method ID / OOD (world) and on SmolLM2, mean ± std over seeds."""
    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    names = ("direct", "cotunk", "ltpo", "ltpo_last", "ltpo_ag", "walk", "rs", "oracle")
    panels = [("id", "world, ID (n = train_ops)"), ("idc", "world, ID, corrupted thoughts"),
              ("ood", "world, OOD (longer chains)"), ("smol", "SmolLM2")]  # fmt: skip
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
