"""The SCISOR reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`).

`setup` and `train_model` are shared with `tune.py`, which picks each model's learning rate on a tuning world."""

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
from iclr26.science.scisor.world import lengthened, make_world

from . import Cfg

MODELS = ("scisor", "ar", "mlm")
SHRINKERS = (*MODELS, "random", "hmm", "oracle")


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


# ---------------------------------------------------------------- data and training (shared with tune.py)


def setup(cfg: Cfg, seed: int) -> dict:
    """The families of one seed, the training / validation members and the insertion distribution π."""
    world = make_world(cfg.n_families, cfg.per_family, seed, cfg.n_match)
    train = [torch.tensor(s) for ss in world.seqs for s in ss[: -cfg.n_val]]
    val = [torch.tensor(s) for ss in world.seqs for s in ss[-cfg.n_val :]]
    counts = torch.bincount(torch.cat(train), minlength=20).float()
    pi = counts / counts.sum()  # insertion distribution = training amino-acid frequencies (code: structured π)
    return {"world": world, "train": train, "val": val, "pi": pi, "n_val_res": sum(len(v) for v in val)}


def scisor_config(cfg: Cfg, lr: float) -> SCISORConfig:
    return SCISORConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4, d_cond=32, t_max=cfg.t_max, lr=lr)


def train_model(name: str, cfg: Cfg, data: dict, seed: int, lr: float, init: dict | None = None):
    """Build model ``name`` and train it with AdamW until its own validation loss stops improving (``fit``).
    SCISOR: held-out diffusion term of −ELBO per residue (fixed noise draws); AR: held-out NLL per residue; MLM:
    held-out masked cross-entropy (fixed masks). Returns (model, fit record)."""
    train, val, pi, n_res = data["train"], data["val"], data["pi"], data["n_val_res"]
    torch.manual_seed(seed)

    def batch_of(g):
        return [train[i] for i in torch.randint(len(train), (cfg.batch,), generator=g)]

    if name == "scisor":
        scfg = scisor_config(cfg, lr)
        model = Denoiser(scfg)
        if init is not None:
            model.load_state_dict(init)

        def val_fn():  # the same noisy draws at every evaluation
            g = torch.Generator().manual_seed(10_000 + seed)
            return float(elbo_diffusion_term(model, val, pi, g, n_mc=cfg.val_mc).sum()) / n_res

        def loss_fn(g):
            return loss_from_batch(model, make_batch(batch_of(g), scfg, pi, g))

    elif name in ("ar", "mlm"):
        model = SeqLM(name, d_model=cfg.d_model, n_layers=cfg.n_layers)
        if name == "ar":

            def val_fn():
                with torch.no_grad():
                    return float(-model.log_prob(val).sum()) / n_res

            def loss_fn(g):
                return -model.log_prob(batch_of(g)) / 50.0  # per-sequence NLL scaled to ~per-residue size

        else:

            def val_fn():
                with torch.no_grad():
                    return float(model.masked_loss(val, torch.Generator().manual_seed(20_000 + seed)).mean())

            def loss_fn(g):
                return model.masked_loss(batch_of(g), g)

    else:
        raise ValueError(f"unknown model {name!r}; expected one of {MODELS}")
    rec = fit(model, loss_fn, val_fn, lr=lr, max_steps=cfg.max_steps, eval_every=cfg.eval_every,
              patience=cfg.patience, seed=seed)  # fmt: skip
    return model, rec


# ---------------------------------------------------------------- the run


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


def _hmm_greedy(fam, seq: np.ndarray, n_del: int) -> np.ndarray:
    """The true model as shrinker: AR-greedy with the exact family likelihood (delete the residue whose removal
    leaves the most likely sequence). Returns the kept original indices."""
    kept = np.arange(len(seq))
    for _ in range(n_del):
        x = seq[kept]
        j = int(np.argmax(fam.log_likelihood([np.delete(x, i) for i in range(len(x))])))
        kept = np.delete(kept, j)
    return kept


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0 = time.time()
    data = setup(cfg, seed)
    world, pi = data["world"], data["pi"]
    out: dict[str, float] = {}

    # ---------------------------------------------------------------- the three models, each to early stopping
    untrained = Denoiser(scisor_config(cfg, cfg.lr_scisor)).eval()
    models = {}
    for m, lr in (("scisor", cfg.lr_scisor), ("ar", cfg.lr_ar), ("mlm", cfg.lr_mlm)):
        t1 = time.time()
        init = untrained.state_dict() if m == "scisor" else None
        models[m], rec = train_model(m, cfg, data, seed, lr, init=init)
        out[f"steps_{m}"] = float(rec["steps"])
        out[f"capped_{m}"] = float(rec["capped"])
        ctx.log(f"seed {seed}: {m} (lr {lr:g}) stopped at step {rec['steps']}{' (CAP)' if rec['capped'] else ''}, "
                f"best val {rec['best_val']:.4f} at step {rec['best_step']} ({time.time() - t1:.0f} s)")  # fmt: skip
        if m == "scisor":
            out["val_elbo_scisor"] = rec["best_val"]
    scisor, ar, mlm = models["scisor"], models["ar"], models["mlm"]
    t_train = time.time() - t0

    # ---------------------------------------------------------------- deletion-effect benchmark
    rng = np.random.default_rng([seed, 101])
    names = (*MODELS, "untrained")
    rho = {f"{k}_{m}": [] for k in ("single", "multi") for m in names}
    rho["single_bayes"] = []
    log_pi = np.log(pi.numpy())
    for fam in world.families:
        for _ in range(cfg.n_wt):
            wt = fam.sample(rng)[0]
            var = _variants(len(wt), cfg.n_multi, rng)
            muts = [np.delete(wt, list(v)) for v in var]
            truth = fam.log_likelihood(muts) - fam.log_likelihood([wt])[0]  # exact Δ log p (forward algorithm)
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
            # the Bayes-optimal denoiser at M = 1: q*(i | X) ∝ p(X \ i) · π(x_i), so its score is truth + log π(x_i)
            rho["single_bayes"].append(_rho(truth[:ns] + log_pi[wt], truth[:ns]))
    for k, v in rho.items():
        out[f"rho_{k}"] = float(np.mean(v))
    t_score = time.time() - t0 - t_train

    # ---------------------------------------------------------------- shrinking long members
    keep = {m: [] for m in SHRINKERS}
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
                "hmm": _hmm_greedy(fam, seq, n_del),
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
            if got <= 2:
                examples.append(
                    {
                        "family": f,
                        "seq": seq.tolist(),
                        "motif": motif.tolist(),
                        "inserted": ins.tolist(),
                        "kept": {m: k.tolist() for m, k in res.items()},
                        "motifs_kept": {m: bool(fam.motifs_present(seq[k])) for m, k in res.items()},
                    }
                )
    for m in keep:
        out[f"keep_{m}"] = float(np.mean(keep[m]))
        out[f"llres_{m}"] = float(np.mean(ll[m]))
    out["seconds"] = time.time() - t0
    ctx.log(f"seed {seed}: train {t_train:.0f} s, scoring {t_score:.0f} s, shrinking "
            f"{out['seconds'] - t_train - t_score:.0f} s")  # fmt: skip
    if hasattr(ctx, "save_artifact"):  # shrunk examples per seed: the figure's material
        ctx.save_artifact(f"shrink_examples_seed{seed}.json", examples)
    ctx.log(
        f"seed {seed}: rho single scisor {out['rho_single_scisor']:.3f} ar {out['rho_single_ar']:.3f} mlm "
        f"{out['rho_single_mlm']:.3f} untrained {out['rho_single_untrained']:.3f} bayes {out['rho_single_bayes']:.3f}"
        f"; keep " + " ".join(f"{m} {out[f'keep_{m}']:.2f}" for m in SHRINKERS) + f" ({out['seconds']:.0f} s)"
    )
    return out


# ---------------------------------------------------------------- figures


def _bars(per_seed, cfg):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for ax, key, title in ((axes[0], "rho_single", "single deletions"), (axes[1], "rho_multi", "multi deletions")):
        names = (*MODELS, "untrained", "bayes") if key == "rho_single" else (*MODELS, "untrained")
        vals = [[s[f"{key}_{m}"] for s in per_seed.values() if f"{key}_{m}" in s] for m in names]
        ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="C0")
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_title(f"Spearman ρ vs true effect: {title}", fontsize=9)
    vals = [[s[f"keep_{m}"] for s in per_seed.values() if f"keep_{m}" in s] for m in SHRINKERS]
    axes[2].bar(range(len(SHRINKERS)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color="C2")
    axes[2].set_xticks(range(len(SHRINKERS)), SHRINKERS, fontsize=8)
    axes[2].set_title(f"motifs kept after shrinking by {cfg.shrink_frac:.0%}", fontsize=9)
    fig.suptitle("SCISOR on profile-HMM families (mean ± sd over seeds)", fontsize=10)
    fig.tight_layout()
    return fig


def _sequences(example: dict, title: str):
    """One long member and what each shrinker kept: motif residues red, truly inserted residues grey, deleted blank."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from iclr26.science.scisor.world import AMINO

    seq, motif, ins = example["seq"], example["motif"], example["inserted"]
    rows = [("original", list(range(len(seq))), True)] + [
        (m, example["kept"][m], example["motifs_kept"][m]) for m in SHRINKERS if m in example["kept"]
    ]
    fig, ax = plt.subplots(figsize=(max(8, 0.13 * len(seq) + 1.5), 0.42 * len(rows) + 0.9))
    for r, (name, kept, ok) in enumerate(rows):
        y = len(rows) - 1 - r
        kept = set(kept)
        for i, a in enumerate(seq):
            if i not in kept:
                continue
            color = "#d62728" if motif[i] else ("#bbbbbb" if ins[i] else "#9ecae1")
            ax.add_patch(Rectangle((i, y + 0.1), 0.95, 0.8, color=color, lw=0))
            ax.text(i + 0.47, y + 0.5, AMINO[a], ha="center", va="center", fontsize=5, family="monospace")
        ax.text(-1, y + 0.5, f"{name} ({'motifs kept' if ok else 'motif lost'})", ha="right", va="center", fontsize=8)
    ax.set_xlim(-1, len(seq))
    ax.set_ylim(0, len(rows))
    ax.axis("off")
    ax.set_title(title + "  (red: motif residue, grey: truly inserted, blue: other; blank: deleted)", fontsize=8)
    fig.tight_layout()
    return fig


def plots(run_dir, per_seed, cfg):
    import json
    from pathlib import Path

    figs = [("scisor_scores_and_shrinking", _bars(per_seed, cfg))]
    first = min(per_seed) if per_seed else None
    path = Path(run_dir) / "artifacts" / f"shrink_examples_seed{first}.json"
    if path.exists():
        examples = json.loads(path.read_text())
        for k, ex in enumerate(examples[:2]):
            figs.append(
                (
                    f"shrunk_sequences_{k}",
                    _sequences(ex, f"seed {first}, family {ex['family']}: shrunk by {cfg.shrink_frac:.0%}"),
                )
            )
    return figs
