"""The SCISOR reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import time

import numpy as np
import torch
from scipy.stats import spearmanr

from iclr26.core.threads import run_threads
from iclr26.science.scisor import Denoiser, SCISORConfig, elbo_diffusion_term, loss_from_batch, make_batch
from iclr26.science.scisor import score_deletions as scisor_scores
from iclr26.science.scisor import shrink as scisor_shrink
from iclr26.science.scisor.baselines import SeqLM, fit
from iclr26.worlds.protein_families import lengthened, make_world

from . import Cfg

MODELS = ("scisor", "ar", "mlm")


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _variants(n: int, n_multi: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    singles = [(i,) for i in range(n)]
    multi = []
    for _ in range(n_multi):
        k = int(rng.integers(2, 7))
        s = int(rng.integers(0, n - k + 1))
        multi.append(tuple(range(s, s + k)))
    return singles + multi


def _rho(a, b) -> float:
    r = spearmanr(a, b).statistic
    return float(r) if np.isfinite(r) else 0.0


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0 = time.time()
    torch.manual_seed(seed)
    world = make_world(cfg.n_families, cfg.per_family, seed, cfg.n_match)
    train = [torch.tensor(s) for ss in world.seqs for s in ss[: -cfg.n_val]]
    val = [torch.tensor(s) for ss in world.seqs for s in ss[-cfg.n_val :]]
    counts = torch.bincount(torch.cat(train), minlength=20).float()
    pi = counts / counts.sum()  # insertion distribution = training amino-acid frequencies (code: structured π)
    out: dict[str, float] = {}

    def batch_of(g):
        return [train[i] for i in torch.randint(len(train), (cfg.batch,), generator=g)]

    # ---------------------------------------------------------------- the three models, each to early stopping
    scfg = SCISORConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, d_cond=32, t_max=cfg.t_max, lr=cfg.lr)
    untrained = Denoiser(scfg).eval()
    scisor = Denoiser(scfg)
    scisor.load_state_dict(untrained.state_dict())
    n_val_res = sum(len(v) for v in val)

    def scisor_val():
        g = torch.Generator().manual_seed(10_000 + seed)  # the same noisy draws at every evaluation
        return float(elbo_diffusion_term(scisor, val, pi, g, n_mc=2).sum()) / n_val_res

    ar = SeqLM("ar", d_model=cfg.d_model, n_layers=cfg.n_layers)
    mlm = SeqLM("mlm", d_model=cfg.d_model, n_layers=cfg.n_layers)

    def ar_val():
        with torch.no_grad():
            return float(-ar.log_prob(val).sum()) / n_val_res

    def mlm_val():
        with torch.no_grad():
            return float(mlm.masked_loss(val, torch.Generator().manual_seed(20_000 + seed)).mean())

    kw = {"lr": cfg.lr, "max_steps": cfg.max_steps, "eval_every": cfg.eval_every, "patience": cfg.patience}
    fits = {
        "scisor": fit(
            scisor, lambda g: loss_from_batch(scisor, make_batch(batch_of(g), scfg, pi, g)), scisor_val, seed=seed, **kw
        ),  # fmt: skip
        "ar": fit(ar, lambda g: -ar.log_prob(batch_of(g)) / 50.0, ar_val, seed=seed, **kw),
        "mlm": fit(mlm, lambda g: mlm.masked_loss(batch_of(g), g), mlm_val, seed=seed, **kw),
    }
    for m, f in fits.items():
        out[f"steps_{m}"] = float(f["steps"])
        ctx.log(f"seed {seed}: {m} stopped at step {f['steps']}, best val {f['best_val']:.4f}")
    out["val_elbo_scisor"] = fits["scisor"]["best_val"]

    # ---------------------------------------------------------------- deletion-effect benchmark
    rng = np.random.default_rng([seed, 101])
    rho = {f"{k}_{m}": [] for k in ("single", "multi") for m in (*MODELS, "untrained")}
    for fam in world.families:
        for _ in range(cfg.n_wt):
            wt = fam.sample(rng)[0]
            var = _variants(len(wt), cfg.n_multi, rng)
            muts = [np.delete(wt, list(v)) for v in var]
            truth = fam.log_likelihood(muts) - fam.log_likelihood([wt])[0]
            wtt = torch.tensor(wt)
            with torch.no_grad():
                scores = {
                    "scisor": scisor_scores(scisor, wtt, var).numpy(),
                    "untrained": scisor_scores(untrained, wtt, var).numpy(),
                    "ar": ar.score_deletions(wtt, var).numpy(),
                    "mlm": mlm.score_deletions(wtt, var).numpy(),
                }
            ns = len(wt)
            for m, s in scores.items():
                rho[f"single_{m}"].append(_rho(s[:ns], truth[:ns]))
                rho[f"multi_{m}"].append(_rho(s[ns:], truth[ns:]))
    for k, v in rho.items():
        out[f"rho_{k}"] = float(np.mean(v))

    # ---------------------------------------------------------------- shrinking long members
    keep = {m: [] for m in (*MODELS, "random", "oracle")}
    ll = {m: [] for m in keep}
    examples = []
    for f, fam in enumerate(world.families):
        long_fam, got = lengthened(fam), 0
        while got < cfg.n_long:
            seq, motif, ins = long_fam.sample_annotated(rng)
            if not fam.motifs_present(seq):
                continue
            got += 1
            n_del = int(round(cfg.shrink_frac * len(seq)))
            x = torch.tensor(seq)
            res = {
                "scisor": scisor_shrink(scisor, x, n_del)[1].numpy(),
                "ar": ar.shrink(x, n_del)[1].numpy(),
                "mlm": mlm.shrink(x, n_del)[1].numpy(),
                "random": np.sort(rng.choice(len(seq), len(seq) - n_del, replace=False)),
            }
            # oracle: delete residues the generator truly inserted (random among them), then random non-motif ones
            order = np.concatenate(
                [rng.permutation(np.flatnonzero(ins)), rng.permutation(np.flatnonzero(~ins & ~motif))]
            )
            res["oracle"] = np.sort(np.setdiff1d(np.arange(len(seq)), order[:n_del]))
            for m, kept in res.items():
                short = seq[kept]
                keep[m].append(float(fam.motifs_present(short)))
                ll[m].append(float(fam.log_likelihood([short])[0]) / len(short))
            if f == 0 and got == 1:
                examples.append(
                    {"seq": seq.tolist(), "motif": motif.tolist(), "kept": {m: k.tolist() for m, k in res.items()}}
                )
    for m in keep:
        out[f"keep_{m}"] = float(np.mean(keep[m]))
        out[f"llres_{m}"] = float(np.mean(ll[m]))
    out["keep_before"] = 1.0
    out["seconds"] = time.time() - t0
    if hasattr(ctx, "save_artifact"):  # one shrunk example per seed: the figure's material
        ctx.save_artifact(f"shrink_example_seed{seed}.json", examples)
    ctx.log(
        f"seed {seed}: rho single scisor {out['rho_single_scisor']:.3f} ar {out['rho_single_ar']:.3f} mlm "
        f"{out['rho_single_mlm']:.3f}; keep scisor {out['keep_scisor']:.2f} ar {out['keep_ar']:.2f} mlm "
        f"{out['keep_mlm']:.2f} random {out['keep_random']:.2f} oracle {out['keep_oracle']:.2f} "
        f"({out['seconds']:.0f} s)"
    )
    return out


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, key, title in ((axes[0], "rho_single", "single deletions"), (axes[1], "rho_multi", "multi deletions")):
        names = (*MODELS, "untrained")
        vals = [[s[f"{key}_{m}"] for s in per_seed.values() if f"{key}_{m}" in s] for m in names]
        ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="C0")
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_title(f"Spearman ρ vs true effect: {title}", fontsize=9)
    names = (*MODELS, "random", "oracle")
    vals = [[s[f"keep_{m}"] for s in per_seed.values() if f"keep_{m}" in s] for m in names]
    axes[2].bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="C2")
    axes[2].set_xticks(range(len(names)), names, fontsize=8)
    axes[2].set_title(f"motifs kept after shrinking by {cfg.shrink_frac:.0%}", fontsize=9)
    fig.suptitle("SCISOR on profile-HMM families (mean ± sd over seeds)", fontsize=10)
    fig.tight_layout()
    return [("scisor_scores_and_shrinking", fig)]
