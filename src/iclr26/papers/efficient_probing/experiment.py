"""The efficient-probing reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import math

import numpy as np
import torch

from iclr26.core.threads import torch_threads
from iclr26.core.tuning import tune_on_grid
from iclr26.probing.efficient_probing import PROBES, ProbeTrainConfig, make_probe, probe_accuracy, train_probe
from iclr26.probing.efficient_probing.vit import MAEConfig, TinyViT, ViTConfig, extract_tokens, pretrain_mae

from . import FLOOR_PROBES, Cfg

# --- generated images ---------------------------------------------------------------------------------------------

# ten glyph classes as indicator functions on [-1, 1]² (u → right, v → down)
_GLYPHS = (
    lambda u, v: np.maximum(abs(u), abs(v)) <= 0.8,  # filled square
    lambda u, v: (np.maximum(abs(u), abs(v)) <= 0.9) & (np.maximum(abs(u), abs(v)) >= 0.5),  # square outline
    lambda u, v: u**2 + v**2 <= 0.8,  # disk
    lambda u, v: (u**2 + v**2 <= 0.95) & (u**2 + v**2 >= 0.35),  # ring
    lambda u, v: ((abs(u) <= 0.25) | (abs(v) <= 0.25)) & (np.maximum(abs(u), abs(v)) <= 0.9),  # plus
    lambda u, v: (abs(u - v) <= 0.35) | (abs(u + v) <= 0.35),  # X
    lambda u, v: (v <= 0.8) & (abs(u) <= (v + 0.9) / 1.7 * 0.9),  # triangle
    lambda u, v: (abs(abs(v) - 0.55) <= 0.25) & (abs(u) <= 0.85),  # "="
    lambda u, v: ((u <= -0.35) & (abs(v) <= 0.9)) | ((v >= 0.45) & (abs(u) <= 0.9)),  # L
    lambda u, v: ((v <= -0.45) & (abs(u) <= 0.9)) | ((abs(u) <= 0.25) & (abs(v) <= 0.9)),  # T
)


def _raster(k: int, size: int) -> np.ndarray:
    """Glyph k rasterised at size×size pixels with 4×4 super-sampling (anti-aliased)."""
    t = (np.arange(size * 4) + 0.5) / (size * 4) * 2 - 1
    u, v = np.meshgrid(t, t)
    return _GLYPHS[k](u, v).astype(np.float32).reshape(size, 4, size, 4).mean((1, 3))


def _canvas(rng: np.random.Generator, size: int) -> np.ndarray:
    """Noisy background with 3–6 small distractor blobs (1–3 px), unrelated to the class."""
    img = rng.normal(0.0, 0.08, (size, size)).astype(np.float32)
    for _ in range(rng.integers(3, 7)):
        h, w = rng.integers(1, 4, 2)
        y, x = rng.integers(0, size - h), rng.integers(0, size - w)
        img[y : y + h, x : x + w] = np.maximum(img[y : y + h, x : x + w], rng.uniform(0.4, 1.0))
    return img


def _paste(img: np.ndarray, obj: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = obj.shape
    y, x = rng.integers(0, img.shape[0] - h + 1), rng.integers(0, img.shape[1] - w + 1)
    img[y : y + h, x : x + w] = np.maximum(img[y : y + h, x : x + w], obj)
    return img


def glyph_images(n: int, seed: int, size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """n images (n, 1, size, size) with one random glyph (class label) at a random position, and the labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(_GLYPHS), n)
    imgs = np.stack(
        [_paste(_canvas(rng, size), _raster(k, int(rng.integers(6, 9))) * rng.uniform(0.7, 1.0), rng) for k in labels]
    )
    return torch.from_numpy(imgs)[:, None], torch.from_numpy(labels).long()


def digit_images(seed: int, test_fraction: float, size: int = 32, n: int | None = None):
    """scikit-learn's 1,797 digits (8×8) pasted at random on cluttered canvases, split into train and test."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed + 10_000)
    pick = rng.permutation(len(digits.target))[: n or len(digits.target)]
    imgs = np.stack([_paste(_canvas(rng, size), d / 16.0, rng) for d in digits.images[pick].astype(np.float32)])
    x, y = torch.from_numpy(imgs)[:, None], torch.from_numpy(digits.target[pick]).long()
    perm = torch.from_numpy(rng.permutation(len(x)))
    n_test = int(round(test_fraction * len(x)))
    return (x[perm[n_test:]], y[perm[n_test:]]), (x[perm[:n_test]], y[perm[:n_test]])


# --- the reproduction ---------------------------------------------------------------------------------------------


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with torch_threads():  # ICLR26_THREADS, default 1: small matrices gain little from more threads on a shared CPU
        return _run(cfg, seed, ctx)


def _fit_probe(name: str, cfg: Cfg, tokens: torch.Tensor, labels: torch.Tensor, seed: int):
    """Train `name` per LR on 80 % of the training split and keep the best on the other 20 %; the LR grid starts at
    `cfg.lr_grid` and is extended (×/÷ the grid's ratio) while the best LR is on an edge (`tune_on_grid`)."""
    kwargs = {"ep": {"num_queries": cfg.ep_queries}, "aim": {"num_heads": cfg.attn_heads}}.get(name, {})
    if name == "mhca":
        kwargs = {"num_heads": cfg.attn_heads}
    perm = torch.randperm(len(tokens), generator=torch.Generator().manual_seed(seed))
    n_val = max(2, len(tokens) // 5)
    val, fit = perm[:n_val], perm[n_val:]

    def evaluate(lr):
        recipe = ProbeTrainConfig(
            epochs=cfg.probe_epochs, warmup_epochs=cfg.probe_epochs // 10, batch_size=cfg.probe_batch, lr=lr, seed=seed
        )
        torch.manual_seed(seed)
        probe = make_probe(name, cfg.dim, 10, **kwargs)
        losses = train_probe(probe, tokens[fit], labels[fit], recipe)
        return probe_accuracy(probe, tokens[val], labels[val]), (probe, losses)

    res = tune_on_grid(evaluate, cfg.lr_grid, max_extensions=cfg.lr_extensions)
    return res.score, res.best, res.payload[0], res.payload[1], res.at_edge, len(res.grid)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    from tqdm.auto import tqdm

    g_train = glyph_images(cfg.n_glyph_train, seed * 7 + 1, cfg.image_size)
    g_test = glyph_images(cfg.n_glyph_test, seed * 7 + 2, cfg.image_size)
    d_train, d_test = digit_images(seed, cfg.digit_test_fraction, cfg.image_size, cfg.n_digits)
    vit = ViTConfig(image_size=cfg.image_size, dim=cfg.dim, depth=cfg.depth, heads=cfg.heads)
    unlabelled = torch.cat([g_train[0], d_train[0]])  # MAE sees training images only, without labels
    # raw-pixel targets: per-patch normalisation (MAE's default) would turn our noise-only background patches into
    # unit-variance noise targets, and the encoder learns nothing (measured: loss stuck at 0.94)
    mae = MAEConfig(epochs=cfg.mae_epochs, norm_pix_loss=False)
    ctx.log(f"MAE pre-training on {len(unlabelled)} unlabelled images, {cfg.mae_epochs} epochs")
    encoder, curve = pretrain_mae(unlabelled, vit, mae, seed=seed, progress=True)
    metrics: dict[str, float] = {"mae_final_loss": curve[-1]}
    curves = {"mae_loss": curve}
    # the floor: the same architecture never trained (same seed's initialisation), probed the same way
    torch.manual_seed(seed)
    random_encoder = TinyViT(vit).eval()
    edges = []
    for ds, (train, test) in {"glyphs": (g_train, g_test), "digits": (d_train, d_test)}.items():
        for enc_name, enc, names in (("", encoder, PROBES), ("_random", random_encoder, FLOOR_PROBES)):
            tok_train, tok_test = extract_tokens(enc, train[0]), extract_tokens(enc, test[0])
            for name in tqdm(names, desc=f"probes on {ds}{enc_name}", leave=False):
                _, lr, probe, losses, at_edge, n_lr = _fit_probe(name, cfg, tok_train, train[1], seed)
                edges.append(at_edge)
                metrics[f"lr_candidates_{name}_{ds}{enc_name}"] = float(n_lr)
                curves[f"{name}_{ds}{enc_name}_train_loss"] = losses
                metrics[f"acc_{name}_{ds}{enc_name}"] = probe_accuracy(probe, tok_test, test[1])
                metrics[f"log10_lr_{name}_{ds}{enc_name}"] = math.log10(lr)
                metrics[f"params_{name}"] = probe.num_parameters()
            ctx.log(", ".join(f"{p} {metrics[f'acc_{p}_{ds}{enc_name}']:.1f}" for p in names) + f" ({ds}{enc_name})")
        for sfx in ("", "_random"):
            lp = max(metrics[f"acc_lp_cls_{ds}{sfx}"], metrics[f"acc_lp_gap_{ds}{sfx}"])
            metrics[f"ep_gain_{ds}{sfx}"] = metrics[f"acc_ep_{ds}{sfx}"] - lp
        metrics[f"acc_best_attentive_{ds}"] = max(
            metrics[f"acc_{p}_{ds}"] for p in ("aim", "mhca", "simpool", "abmilp")
        )
    metrics["lr_at_edge_frac"] = float(sum(edges) / len(edges))
    ctx.save_artifact("curves", curves)
    return metrics


def plots(run_dir, per_seed, cfg):
    """Accuracy against probe parameters (mean ± std over seeds), one panel per task."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=False)
    for ax, ds in zip(axes, ("glyphs", "digits")):
        for p in PROBES:
            acc = np.array([m[f"acc_{p}_{ds}"] for m in per_seed.values()])
            n = np.mean([m[f"params_{p}"] for m in per_seed.values()])
            ax.errorbar(n, acc.mean(), yerr=acc.std(ddof=1) if len(acc) > 1 else 0, fmt="o", capsize=3)
            ax.annotate(p, (n, acc.mean()), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("trainable probe parameters")
        ax.set_ylabel("top-1 test accuracy (%)")
        ax.set_title(f"frozen MAE ViT, {ds}")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return [("accuracy_vs_params", fig)]
