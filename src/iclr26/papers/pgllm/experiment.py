"""The PGLLM reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import json
import time
import tracemalloc

import numpy as np

from iclr26.core.threads import run_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.vision.pgllm import (
    PGLLM,
    Captioner,
    CaptionScorer,
    LikelihoodReader,
    PGLLMConfig,
    argmax_random_ties,
    encode,
    knn_graph,
    label_propagation,
    ood_metrics,
    predict_logits,
    random_graph,
    scores_from_proba,
    train_pointnet,
)
from iclr26.vision.pgllm.standins import SYNONYMS
from iclr26.vision.pgllm.world import CLASSES, make_set, ood_splits

from . import Cfg

_LM = {}


class _Set:
    """One transductive evaluation set: features, captions, labels; caches graphs and the reader's probabilities."""

    def __init__(self, feats, caps, labels, reader, steps, seed):
        self.feats, self.caps, self.labels, self.reader = feats, caps, labels, reader
        self.steps, self.seed = steps, seed
        self.splits = ood_splits(3, seed)
        self._graphs, self._proba = {}, {}

    def graph(self, k: int, kind: str):
        if (k, kind) not in self._graphs:
            w = knn_graph(self.feats, k)
            self._graphs[(k, kind)] = random_graph(w, self.seed) if kind == "rand" else w
        return self._graphs[(k, kind)]

    def proba(self, k: int, guidance: str | None):
        """Reader probabilities for prompts with no neighbours (None), graph ('graph'), plain nearest ('dnn') or
        random-graph ('rand') neighbours."""
        key = (k if guidance else 0, guidance)
        if key not in self._proba:
            kind = "rand" if guidance == "rand" else "knn"
            cfg = PGLLMConfig(k=k, guidance=bool(guidance), symmetric_retrieval=guidance != "dnn", style=self.style)
            pg = PGLLM(cfg, graph=self.graph(k, kind)).fit(self.feats, self.caps)
            self._proba[key] = self.reader.proba(pg.prompts("cls", CLASSES))
        return self._proba[key]

    style = "scores"

    def evaluate(self, k, alpha, guidance, prop, graph_kind="knn", hard=True):
        """(accuracy, mean AUROC, mean FPR95) of one arm."""
        p = self.proba(k, guidance)
        w = self.graph(k, graph_kind)

        def refine(s):
            return label_propagation(s, w, alpha, self.steps) if prop else s

        s = refine(scores_from_proba(p, "cls", hard=hard, seed=self.seed))
        acc = float((argmax_random_ties(s, self.seed) == self.labels).mean())
        ood = [ood_metrics(refine(scores_from_proba(p, "ood", ids, hard, self.seed)), np.isin(self.labels, ids))
               for ids in self.splits]  # fmt: skip
        return acc, float(np.mean([o[0] for o in ood])), float(np.mean([o[1] for o in ood]))


ARM_SPEC = {  # arm: (guidance, propagation, graph)
    "iso": (None, False, "knn"),
    "dnn": ("dnn", False, "knn"),
    "guide": ("graph", False, "knn"),
    "lp": (None, True, "knn"),
    "both": ("graph", True, "knn"),
}


def knn_vote(pred, w, n_classes: int, seed: int = 0) -> np.ndarray:
    """Each sample's class by majority over its own predicted class and those of its graph neighbours (the rows of
    ``w``, unweighted), ties broken at random: the encoder's own kNN classifier, a baseline for guidance."""
    onehot = np.eye(n_classes)[np.asarray(pred)]
    return argmax_random_ties(onehot + (w > 0).astype(float) @ onehot, seed)


def _tune(val: _Set, arm: str, metric: int, cfg: Cfg) -> tuple[int, float]:
    """K and α of an arm by the validation metric (0 accuracy, 1 AUROC): K by `tune_on_grid`, each K scored with its
    own best α (α/(1-α) by `tune_on_grid` on a log grid; α = 0.5 when the arm does not propagate)."""
    g, prop, kind = ARM_SPEC[arm]
    if arm == "iso":
        return 1, 0.5

    def best_alpha(k: int):
        if not prop:
            return val.evaluate(k, 0.5, g, prop, kind)[metric], 0.5
        r = tune_on_grid(lambda r: (val.evaluate(k, r / (1 + r), g, prop, kind)[metric], None), cfg.ratio_grid)
        return r.score, r.best / (1 + r.best)

    res = tune_on_grid(lambda k: best_alpha(int(k)), cfg.k_grid, lower=1, integer=True)
    return int(res.best), float(res.payload)


def _lm():
    if "m" not in _LM:
        from iclr26.lm import zoo

        _LM["m"] = zoo.load("smollm2-135m")
    return _LM["m"]


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m, nc = time.time(), {}, len(CLASSES)
    xp, yp = make_set(cfg.n_pre, 1000 * seed + 1, 0.0, cfg.n_points)
    xv, yv = make_set(cfg.n_val, 1000 * seed + 2, cfg.shift, cfg.n_points)
    xt, yt = make_set(cfg.n_test, 1000 * seed + 3, cfg.shift, cfg.n_points)
    enc, info = train_pointnet(xp, yp, nc, seed=seed, log=ctx.log)
    cap = Captioner(enc, CLASSES)
    cp, cv, ct = cap(xp, 10 * seed + 1), cap(xv, 10 * seed + 2), cap(xt, 10 * seed + 3)
    scorer = CaptionScorer(nc).fit(cp, yp)
    fv, ft = encode(enc, xv), encode(enc, xt)
    val, test = _Set(fv, cv, yv, scorer, cfg.steps, seed), _Set(ft, ct, yt, scorer, cfg.steps, seed)

    # testbed: the encoder works, the graph carries class information (vs a random graph), captions leave room
    m["enc_val_acc"] = info["val_acc"]
    logits = predict_logits(enc, xt)
    m["enc_test_acc"] = float((logits.argmax(1) == yt).mean())
    words = [c.split()[-1] for c in ct]
    m["caption_acc"] = float(np.mean([w in (CLASSES[y], SYNONYMS[CLASSES[y]]) for w, y in zip(words, yt)]))
    for name, kind in (("graph_purity", "knn"), ("rand_purity", "rand")):
        e = test.graph(3, kind).tocoo()
        m[name] = float((yt[e.row] == yt[e.col]).mean())
    msp = []
    for ids in test.splits:
        z = logits[:, list(ids)]
        p = np.exp(z - z.max(1, keepdims=True))
        msp.append(ood_metrics((p / p.sum(1, keepdims=True)).max(1), np.isin(yt, ids))[0])
    m["msp_auroc"] = float(np.mean(msp))
    # what the testbed itself supplies (the captioner's class word comes from this encoder): its argmax and a kNN vote
    # of it over the same feature graph, K tuned on validation like every arm's
    pred_v, pred_t = predict_logits(enc, xv).argmax(1), logits.argmax(1)
    r = tune_on_grid(lambda k: (float((knn_vote(pred_v, knn_graph(fv, int(k)), nc, seed) == yv).mean()), None),
                     cfg.k_grid, lower=1, integer=True)  # fmt: skip
    m["k_enc_knn"] = float(r.best)
    m["acc_enc_knn"] = float((knn_vote(pred_t, knn_graph(ft, int(r.best)), nc, seed) == yt).mean())

    # every arm tuned on validation (recognition by accuracy, OOD by AUROC), then measured on test
    chosen = {}
    for arm, (g, prop, kind) in ARM_SPEC.items():
        kc, ac = _tune(val, arm, 0, cfg)
        ko, ao = _tune(val, arm, 1, cfg)
        chosen[arm] = (kc, ac, ko, ao)
        m[f"acc_{arm}"] = test.evaluate(kc, ac, g, prop, kind)[0]
        _, m[f"auroc_{arm}"], m[f"fpr95_{arm}"] = test.evaluate(ko, ao, g, prop, kind)
        if arm in ("guide", "lp", "both"):  # control: the same arm on a random graph with the same K and α
            gr = "rand" if g else None
            m[f"acc_rand_{arm}"] = test.evaluate(kc, ac, gr, prop, "rand")[0]
            _, m[f"auroc_rand_{arm}"], m[f"fpr95_rand_{arm}"] = test.evaluate(ko, ao, gr, prop, "rand")
    m["k_guide"], m["k_both"] = float(chosen["guide"][0]), float(chosen["both"][0])
    m["alpha_lp"], m["alpha_both"] = chosen["lp"][1], chosen["both"][1]
    ctx.log("chosen (K, α) recognition / OOD: " + ", ".join(f"{a} {c[0]},{c[1]:.2f} / {c[2]},{c[3]:.2f}"
                                                              for a, c in chosen.items()))  # fmt: skip
    m["acc_iso_soft"], m["auroc_iso_soft"], _ = test.evaluate(3, 0.5, None, False, hard=False)
    m["acc_both_soft"], m["auroc_both_soft"], _ = test.evaluate(3, 0.5, "graph", True, hard=False)

    # sparse support: the same K and α on n_sparse shapes per class
    sub = np.concatenate([np.flatnonzero(yt == c)[: cfg.n_sparse] for c in range(nc)])
    sp = _Set(ft[sub], [ct[i] for i in sub], yt[sub], scorer, cfg.steps, seed)
    kc, ac = chosen["both"][:2]
    m["gain_full"] = m["acc_both"] - m["acc_iso"]
    m["gain_sparse"] = sp.evaluate(kc, ac, "graph", True)[0] - sp.evaluate(kc, ac, None, False)[0]

    if cfg.smollm:
        m.update(_smollm_arm(cfg, seed, ft, ct, yt, chosen, ctx))
    ctx.save_artifact(f"graph_seed{seed}", _graph_artifact(test, chosen["both"][:2], cfg))
    ctx.log(
        f"seed {seed}: encoder {m['enc_val_acc']:.3f} (test {m['enc_test_acc']:.3f}), captions {m['caption_acc']:.3f}, "
        f"purity {m['graph_purity']:.3f} vs random {m['rand_purity']:.3f}; acc iso {m['acc_iso']:.3f} guide "
        f"{m['acc_guide']:.3f} lp {m['acc_lp']:.3f} both {m['acc_both']:.3f} (random graph {m['acc_rand_both']:.3f}); "
        f"AUROC iso {m['auroc_iso']:.3f} lp {m['auroc_lp']:.3f} both {m['auroc_both']:.3f}, FPR95 iso "
        f"{m['fpr95_iso']:.3f} lp {m['fpr95_lp']:.3f}; {time.time() - t0:.1f}s"
    )
    return m


def _smollm_arm(cfg: Cfg, seed: int, ft, ct, yt, chosen, ctx) -> dict[str, float]:
    """SmolLM2-135M as stage 2 on n_slm shapes per class, with the K and α chosen for the trained reader."""
    model, tok = _lm()
    reader = LikelihoodReader(model, tok, CLASSES)
    sub = np.concatenate([np.flatnonzero(yt == c)[: cfg.n_slm] for c in range(len(CLASSES))])
    fs, cs, ys = ft[sub], [ct[i] for i in sub], yt[sub]
    k, alpha = chosen["both"][:2]
    s = _Set(fs, cs, ys, reader, cfg.steps, seed)
    s.style = "choice"
    out = {}
    t = time.perf_counter()
    s.proba(k, None)
    out["slm_seconds_iso"] = time.perf_counter() - t
    # graph + retrieval + propagation, timed and traced on their own
    tracemalloc.start()
    t = time.perf_counter()
    w = knn_graph(fs, k)
    pg = PGLLM(PGLLMConfig(k=k, alpha=alpha, steps=cfg.steps), graph=w).fit(fs, cs)
    _ = [pg.neighbors(i) for i in range(len(cs))]
    _ = pg.refine(np.zeros((len(cs), len(CLASSES))))
    _ = pg.refine(np.zeros(len(cs)))
    out["graph_seconds"] = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    s._graphs[(k, "knn")] = w
    t = time.perf_counter()
    s.proba(k, "graph")
    out["slm_seconds_guide"] = time.perf_counter() - t
    out["slm_prompt_time_ratio"] = out["slm_seconds_guide"] / out["slm_seconds_iso"]
    out["graph_time_frac"] = out["graph_seconds"] / out["slm_seconds_iso"]
    out["graph_mem_frac"] = peak / sum(p.numel() * p.element_size() for p in model.parameters())
    for arm, (g, prop, kind) in ARM_SPEC.items():
        if arm == "dnn":
            continue
        out[f"slm_acc_{arm}"], out[f"slm_auroc_{arm}"], _ = s.evaluate(k, alpha, g, prop, kind, hard=False)
    out["slm_acc_rand_guide"] = s.evaluate(k, alpha, "rand", False, "rand", hard=False)[0]
    ctx.log(f"SmolLM2 ({len(cs)} shapes, K {k}, α {alpha:.2f}): acc iso {out['slm_acc_iso']:.3f} guide "
            f"{out['slm_acc_guide']:.3f} (random {out['slm_acc_rand_guide']:.3f}) lp {out['slm_acc_lp']:.3f} both "
            f"{out['slm_acc_both']:.3f}; AUROC iso {out['slm_auroc_iso']:.3f} lp {out['slm_auroc_lp']:.3f}; LM "
            f"{out['slm_seconds_iso']:.1f}s iso / {out['slm_seconds_guide']:.1f}s guided, graph "
            f"{out['graph_seconds'] * 1e3:.1f} ms, peak {peak / 1e6:.2f} MB")  # fmt: skip
    return out


def _graph_artifact(test: _Set, kc_ac, cfg: Cfg) -> dict:
    k, alpha = kc_ac
    x = test.feats - test.feats.mean(0)
    xy = x @ np.linalg.svd(x, full_matrices=False)[2][:2].T
    e = test.graph(k, "knn").tocoo()
    pred = {}
    for arm in ("iso", "both"):
        g, prop, _ = ARM_SPEC[arm]
        s = scores_from_proba(test.proba(k, g), "cls", hard=True, seed=test.seed)
        s = label_propagation(s, test.graph(k, "knn"), alpha, cfg.steps) if prop else s
        pred[arm] = argmax_random_ties(s, test.seed).tolist()
    return {"xy": xy.round(4).tolist(), "edges": np.c_[e.row, e.col].tolist(), "labels": test.labels.tolist(),
            "pred": pred, "k": k, "alpha": alpha}  # fmt: skip


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    figs = []
    seed = min(per_seed)
    path = run_dir / "artifacts" / f"graph_seed{seed}.json"
    if path.exists():
        a = json.loads(path.read_text())
        xy, lab = np.array(a["xy"]), np.array(a["labels"])
        fig, axes = plt.subplots(1, 2, figsize=(11, 5))
        for ax, arm, title in ((axes[0], "iso", "isolated"), (axes[1], "both", "PGLLM (guidance + propagation)")):
            for i, j in a["edges"]:
                ax.plot(*xy[[i, j]].T, color="0.85", lw=0.4, zorder=0)
            ok = np.array(a["pred"][arm]) == lab
            ax.scatter(*xy[ok].T, c=lab[ok], cmap="tab20", s=12, vmin=0, vmax=19)
            ax.scatter(*xy[~ok].T, c=lab[~ok], cmap="tab20", s=28, marker="x", vmin=0, vmax=19)
            ax.set_title(f"{title}: accuracy {ok.mean():.3f} (x = wrong)", fontsize=9)
            ax.set_xticks([]), ax.set_yticks([])
        fig.suptitle(f"kNN graph (K = {a['k']}) of the test support, encoder features (PCA), seed {seed}; "
                     "colour = true class", fontsize=9)  # fmt: skip
        fig.tight_layout()
        figs.append(("graph", fig))
    seeds = list(per_seed.values())
    arms = ["iso", "dnn", "guide", "lp", "both", "rand_guide", "rand_lp", "rand_both"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for ax, met in zip(axes, ("acc", "auroc", "fpr95")):
        vals = [[s[f"{met}_{a}"] for s in seeds] for a in arms]
        ax.bar(range(len(arms)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals],
               color=["0.6", "C0", "C0", "C1", "C2", "0.8", "0.8", "0.8"])  # fmt: skip
        ax.set_xticks(range(len(arms)), arms, rotation=40, fontsize=7)
        ax.set_title(f"{met} (hard scores, mean ± sd over seeds)", fontsize=9)
    fig.tight_layout()
    figs.append(("arms", fig))
    return figs
