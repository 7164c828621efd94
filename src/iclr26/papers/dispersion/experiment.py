"""Representation dispersion predicts perplexity (Li, Li, Livescu, Zhou; ICLR 2026).

Paper: https://arxiv.org/abs/2506.24106. Claims tested here:

1. On a real pretrained LM (SmolLM2-135M-Instruct) and real text of four domains (Wikipedia, news, Python's manual,
   standard-library code), segment dispersion correlates strongly and negatively with segment perplexity
   (binned Pearson r, the paper's protocol), and more strongly in deep layers than early ones.
2. Across tiny models of the zoo (three sizes × training checkpoints) lower held-out perplexity goes with higher
   dispersion.
3. kNN-LM: of the last layer's attention-output and FFN-output keys, the more dispersed one gives the lower kNN-LM
   perplexity.
4. The push-away auxiliary term raises dispersion and lowers test perplexity (cross-domain Wikipedia + code).

Not reproducible here: the LLaMA/Qwen/OLMo/GPT-2 numbers (weights not available), ARC/MMLU/MATH accuracy prediction.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..core.claims import Check, Claim
from ..lenses.dispersion import PushAway, PushAwayConfig, binned_pearson, dispersion, knn_lm_logprobs, segment_stats
from ..lm import zoo
from ..lm.hooks import capture
from ..lm.tiny import tiny_config
from ..lm.train import encode_stream
from ..worlds.text import load_domain, test_split, train_split

ACCEPTS_MODEL = True  # --model replaces the real model of claim 1


@dataclass(frozen=True)
class DispersionConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    real_model: str = "smollm2-135m"
    domains: tuple[str, ...] = ("wikipedia", "news", "python_manual", "code")
    segments_per_domain: int = 24  # paper: 100,000 WikiText segments; scaled down
    seg_len: int = 128  # paper: 512 tokens; scaled down
    n_bins: int = 8  # paper: 20 PPL bins over 100k segments; 8 equal-count bins over our segments
    early_layer_frac: float = 0.25  # "early" layer for the depth claim: a quarter of the way up
    tiny_sizes: tuple[int, ...] = (32, 64, 96)  # d_model of the three tiny zoo models
    tiny_steps: int = 300
    tiny_checkpoints: tuple[int, ...] = (30, 100, 200)  # plus the final model
    tiny_vocab: int = 512  # BPE vocabulary of the tiny models
    tiny_domains: tuple[str, ...] = ("wikipedia", "news", "python_manual")
    max_docs: int = 60  # documents per domain the tiny models train on
    tiny_eval_segments: int = 48
    tiny_seq: int = 64
    knn_store_blocks: int = 300  # datastore = blocks × tiny_seq training tokens
    knn_eval_blocks: int = 40
    knn_k: int = 64  # dossier's CPU plan (kNN-LM default is 1024)
    push_steps: int = 250
    push_d_model: int = 48
    push_domains: tuple[str, str] = ("wikipedia", "code")  # paper: Wiki + Python code
    push_lr: float = 3e-3  # paper: 5e-4 / 7e-4 for GPT-2 small; tiny models need more
    push_lam_single: float = 0.1  # paper's λ for single-domain
    push_lam_cross: float = 0.01  # paper's λ for cross-domain
    push_batch: int = 16


CONFIGS = {
    "smoke": DispersionConfig(
        seeds=(0, 1),
        domains=("news", "python_manual"),
        segments_per_domain=16,
        seg_len=32,
        n_bins=4,
        tiny_sizes=(16, 32),
        tiny_steps=40,
        tiny_checkpoints=(20,),
        tiny_eval_segments=8,
        tiny_seq=32,
        max_docs=10,
        knn_store_blocks=40,
        knn_eval_blocks=8,
        knn_k=16,
        push_steps=20,
        push_d_model=16,
        push_batch=4,
    ),
    "quick": DispersionConfig(),
    "full": DispersionConfig(
        seeds=(0, 1, 2, 3, 4),
        segments_per_domain=128,
        seg_len=256,
        n_bins=20,
        tiny_steps=2000,
        tiny_vocab=2048,
        tiny_sizes=(32, 64, 128),
        max_docs=10_000,
        push_steps=1000,
        push_d_model=64,
        tiny_checkpoints=(100, 300, 600, 1200),
        tiny_eval_segments=128,
        knn_store_blocks=2000,
        knn_eval_blocks=200,
        knn_k=1024,
    ),
}

CLAIMS = [
    Claim(
        "ppl-correlation",
        "Dispersion correlates strongly and negatively with perplexity on a real LM across domains (r < −0.5)",
        (Check("r_real_mean", "<", -0.5),),
        paper="Pearson r ≈ −0.62 … −0.92 (LLaMA-3.2 1B/3B/8B, Phi, Mistral, Qwen; WikiText, news, abstracts)",
    ),
    Claim(
        "depth",
        "The correlation is stronger (more negative) in deep layers than in early layers",
        (Check("r_real_last", "<", "r_real_early"),),
        paper="correlation strengthens with depth (LLaMA-3.2-1B, per-layer curves)",
    ),
    Claim(
        "models",
        "Across tiny models and checkpoints, lower held-out perplexity goes with higher dispersion (r < −0.5)",
        (Check("r_tiny_models", "<", -0.5),),
        paper="dispersion tracks 30 OLMo-7B checkpoints (correlation > 0.90); bigger models more dispersed",
    ),
    Claim(
        "knn-key",
        "The more dispersed kNN-LM key (attention vs FFN output) gives the lower kNN-LM perplexity",
        (Check("knn_choice_gain", ">", 0.0),),
        paper="attention output more dispersed and the better key (GPT2-Medium 0.66 vs 0.19, GPT2-Large, DistilGPT2)",
    ),
    Claim(
        "push-away",
        "The push-away term raises dispersion and lowers test perplexity in the cross-domain setting",
        (Check("ppl_cross_push", "<", "ppl_cross_base"), Check("disp_cross_push", ">", "disp_cross_base")),
        paper="GPT-2 small, Wiki + Python: test PPL 175.7 → 150.2 at step 1000 (λ = 0.01)",
    ),
    Claim(
        "push-away-single",
        "The push-away term lowers test perplexity in the single-domain setting",
        (Check("ppl_single_push", "<", "ppl_single_base"),),
        paper="GPT-2 small, single domain: 83.0 → 82.0 at step 1000 (λ = 0.1), about 1%",
    ),
]

METRICS = {
    "r_real_mean": "binned Pearson r (equal-count PPL bins) between segment PPL and last-layer dispersion, "
    "mean over domains, real model",
    "r_real_pooled": "binned Pearson r over the segments of all domains pooled, real model",
    "r_real_last": "per-segment Pearson r (log PPL vs dispersion) at the last layer, within each domain, averaged",
    "r_real_early": "the same at the layer a quarter of the way up",
    "r_real_last_pooled": "per-segment Pearson r at the last layer over all domains pooled (domain-confounded)",
    "r_tiny_models": "Pearson r over (size, checkpoint) points: held-out PPL vs mean last-layer dispersion",
    "r_tiny_segments": "binned Pearson r between segment PPL and dispersion, largest final tiny model",
    "knn_choice_gain": "kNN-LM PPL with the less dispersed key minus with the more dispersed key (λ tuned per key)",
    "ppl_cross_push": "test PPL (Wikipedia + code) after training with push-away λ = 0.01",
    "ppl_single_push": "test PPL (Wikipedia) after training with push-away λ = 0.1",
}


def _segments(tok, docs, n: int, seg_len: int, rng: random.Random) -> torch.Tensor:
    """``n`` random windows of ``seg_len`` tokens (BOS first) from the concatenated documents."""
    flat: list[int] = []
    for d in docs:
        flat.extend(tok(d, add_special_tokens=False)["input_ids"])
        if len(flat) > 400 * seg_len + n * seg_len:
            break
    if len(flat) <= seg_len:
        raise ValueError(f"not enough text for a {seg_len}-token segment")
    starts = [rng.randrange(len(flat) - seg_len) for _ in range(n)]
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    return torch.tensor([[bos, *flat[s : s + seg_len - 1]] for s in starts])


def _real_model_part(cfg: DispersionConfig, seed: int, ctx, m: dict) -> dict:
    model, tok = zoo.load(ctx.model or cfg.real_model)  # --model: any local HF causal LM
    rng = random.Random(seed)
    per_domain = {}
    all_ppl, all_disp = [], []
    for dom in cfg.domains:
        docs = list(load_domain(dom))
        rng.shuffle(docs)
        ids = _segments(tok, docs, cfg.segments_per_domain, cfg.seg_len, rng)
        stats_ = [segment_stats(model, ids[i : i + 8]) for i in range(0, len(ids), 8)]
        ppl = np.concatenate([s["ppl"] for s in stats_])
        disp = np.concatenate([s["disp"] for s in stats_])  # [N, L+1]
        per_domain[dom] = (ppl, disp)
        all_ppl.append(ppl)
        all_disp.append(disp)
        m[f"r_real_{dom}"] = binned_pearson(ppl, disp[:, -1], cfg.n_bins)
        m[f"ppl_real_{dom}"] = float(np.median(ppl))
        m[f"disp_real_{dom}"] = float(disp[:, -1].mean())
        ctx.log(f"real {dom}: r = {m[f'r_real_{dom}']:.3f}, median PPL {m[f'ppl_real_{dom}']:.1f}")
    ppl, disp = np.concatenate(all_ppl), np.concatenate(all_disp)
    m["r_real_mean"] = float(np.mean([m[f"r_real_{d}"] for d in cfg.domains]))
    m["r_real_pooled"] = binned_pearson(ppl, disp[:, -1], cfg.n_bins)

    # Per-layer correlations within each domain, then averaged over domains: pooling domains would mix domain
    # identity (code is both low-perplexity and low-dispersion) into the depth comparison.
    def layer_corr(p, x):
        return [float(np.corrcoef(np.log(p), x[:, layer])[0, 1]) for layer in range(1, x.shape[1])]

    layer_r = np.mean([layer_corr(p, x) for p, x in per_domain.values()], axis=0).tolist()
    early = max(0, round(cfg.early_layer_frac * len(layer_r)) - 1)
    m["r_real_last"], m["r_real_early"] = layer_r[-1], layer_r[early]
    m["r_real_last_pooled"] = layer_corr(ppl, disp)[-1]
    ctx.save_artifact(f"real_layers_seed{seed}", {"layer_r": layer_r, "early_index": early})
    ctx.save_artifact(
        f"real_segments_seed{seed}",
        {d: {"ppl": p.tolist(), "disp": x[:, -1].tolist()} for d, (p, x) in per_domain.items()},
    )
    return m


def _tiny_spec(cfg: DispersionConfig, d: int) -> zoo.ZooSpec:
    return zoo.register(
        zoo.ZooSpec(
            f"text-tiny-d{d}-{cfg.tiny_steps}",
            "llama",
            model=dict(d_model=d, n_layers=2, n_heads=4, max_len=cfg.tiny_seq),
            world="text",
            world_kwargs=dict(domains=list(cfg.tiny_domains), vocab_size=cfg.tiny_vocab, max_docs=cfg.max_docs),
            train=dict(steps=cfg.tiny_steps, batch_size=16, lr=3e-3, warmup=30, seq_len=cfg.tiny_seq),
            checkpoints=tuple(cfg.tiny_checkpoints),
            description="tiny llama on real prose, for dispersion",
        )
    )


def _eval_blocks(tok, cfg, seed, n_blocks) -> torch.Tensor:
    docs = [d for dom in cfg.tiny_domains for d in test_split(load_domain(dom))[: max(4, cfg.max_docs // 5)]]
    blocks = encode_stream(tok, docs, cfg.tiny_seq)
    g = torch.Generator().manual_seed(seed)
    return blocks[torch.randperm(len(blocks), generator=g)[:n_blocks]]


def _tiny_models_part(cfg: DispersionConfig, seed: int, ctx, m: dict) -> dict:
    points = []
    for d in cfg.tiny_sizes:
        spec = _tiny_spec(cfg, d)
        for ck in (*cfg.tiny_checkpoints, None):
            model, tok = zoo.load(spec.name, seed=seed, checkpoint=ck)
            ids = _eval_blocks(tok, cfg, seed, cfg.tiny_eval_segments)
            s = segment_stats(model, ids)
            points.append(
                {
                    "d_model": d,
                    "step": ck or cfg.tiny_steps,
                    "ppl": float(np.exp(np.log(s["ppl"]).mean())),
                    "disp": float(s["disp"][:, -1].mean()),
                }
            )
            if d == cfg.tiny_sizes[-1] and ck is None:
                n_bins = max(2, min(cfg.n_bins, len(s["ppl"]) // 2))
                m["r_tiny_segments"] = binned_pearson(s["ppl"], s["disp"][:, -1], n_bins)
    ppl = np.log([p["ppl"] for p in points])
    disp = np.array([p["disp"] for p in points])
    m["r_tiny_models"] = float(np.corrcoef(ppl, disp)[0, 1])
    ctx.save_artifact(f"tiny_points_seed{seed}", points)
    ctx.log(f"tiny models: r(log PPL, dispersion) over {len(points)} points = {m['r_tiny_models']:.3f}")
    return m


@torch.no_grad()
def _knn_part(cfg: DispersionConfig, seed: int, ctx, m: dict) -> dict:
    spec = _tiny_spec(cfg, cfg.tiny_sizes[-1])
    model, tok = zoo.load(spec.name, seed=seed)
    last = model.config.num_hidden_layers - 1
    docs = [d for dom in cfg.tiny_domains for d in train_split(load_domain(dom))[: cfg.max_docs]]
    g = torch.Generator().manual_seed(seed)
    train = encode_stream(tok, docs, cfg.tiny_seq)
    train = train[torch.randperm(len(train), generator=g)[: cfg.knn_store_blocks]]
    test = _eval_blocks(tok, cfg, seed + 1000, cfg.knn_eval_blocks)

    def feats(ids):
        with capture(model, [("attn_out", last), ("mlp_out", last)]) as acts:
            logits = model(input_ids=ids).logits.float()
        lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
        keys = {k: acts[(k, last)][:, :-1].reshape(-1, acts[(k, last)].shape[-1]) for k in ("attn_out", "mlp_out")}
        return keys, ids[:, 1:].reshape(-1), lp.reshape(-1)

    store, store_next, _ = feats(train)
    q, q_next, q_lp = feats(test)
    half = len(q_next) // 2
    res = {}
    for key in ("attn_out", "mlp_out"):
        # dispersion of the key on a few segments, as the paper does to choose without exhaustive search
        res[key] = {
            "disp": float(
                np.mean(
                    [
                        dispersion(store[key][i * (cfg.tiny_seq - 1) : (i + 1) * (cfg.tiny_seq - 1)]).item()
                        for i in range(min(20, cfg.knn_store_blocks))
                    ]
                )
            )
        }
        best = None
        for lam in (0.05, 0.1, 0.25, 0.4, 0.6):  # λ tuned on the first half, evaluated on the second
            lp = knn_lm_logprobs(store[key], store_next, q[key][:half], q_next[:half], q_lp[:half], cfg.knn_k, lam)
            if best is None or lp.mean() > best[1]:
                best = (lam, lp.mean())
        lp = knn_lm_logprobs(store[key], store_next, q[key][half:], q_next[half:], q_lp[half:], cfg.knn_k, best[0])
        res[key].update(lam=best[0], ppl=float(torch.exp(-lp.mean())))
    m["lm_ppl_knn_eval"] = float(torch.exp(-q_lp[half:].mean()))
    for key, short in (("attn_out", "attn"), ("mlp_out", "ffn")):
        m[f"knn_ppl_{short}"], m[f"disp_key_{short}"] = res[key]["ppl"], res[key]["disp"]
    hi, lo = sorted(res, key=lambda k: -res[k]["disp"])
    m["knn_choice_gain"] = res[lo]["ppl"] - res[hi]["ppl"]
    ctx.log(f"kNN-LM: {res}")
    return m


def _push_train(cfg, seed, blocks_a, blocks_b, lam, mode, vocab):
    torch.manual_seed(seed)
    model = __import__("transformers").AutoModelForCausalLM.from_config(
        tiny_config("llama", vocab_size=vocab, d_model=cfg.push_d_model, n_layers=2, n_heads=4, max_len=cfg.tiny_seq)
    )
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.push_lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    gen = torch.Generator().manual_seed(seed)
    push = PushAway(PushAwayConfig(lam=lam, mode=mode), generator=torch.Generator().manual_seed(seed + 7))
    rng = random.Random(seed)
    model.train()
    for _ in range(cfg.push_steps):
        if blocks_b is None:
            ids, dom = blocks_a[torch.randint(len(blocks_a), (cfg.push_batch,), generator=gen)], None
        else:  # half of each batch from each domain
            h = cfg.push_batch // 2
            ids = torch.cat(
                [
                    blocks_a[torch.randint(len(blocks_a), (h,), generator=gen)],
                    blocks_b[torch.randint(len(blocks_b), (cfg.push_batch - h,), generator=gen)],
                ]
            )
            dom = torch.tensor([0] * h + [1] * (cfg.push_batch - h))
        out = model(input_ids=ids, labels=ids, output_hidden_states=True)
        loss = out.loss + push(model, ids, None, out, domain_of_row=dom)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    rng.random()
    return model.eval()


@torch.no_grad()
def _test_ppl_disp(model, blocks) -> tuple[float, float]:
    s = segment_stats(model, blocks)
    return float(np.exp(np.log(s["ppl"]).mean())), float(s["disp"][:, -2].mean())


def _push_part(cfg: DispersionConfig, seed: int, ctx, m: dict) -> dict:
    _, tok = zoo.load(_tiny_spec(cfg, cfg.tiny_sizes[0]).name, seed=seed)  # the zoo's BPE tokenizer of this seed
    wiki, code = (load_domain(d) for d in cfg.push_domains)
    n, k = cfg.max_docs, max(4, cfg.max_docs // 5)
    tr_w, te_w = (encode_stream(tok, x, cfg.tiny_seq) for x in (train_split(wiki)[:n], test_split(wiki)[:k]))
    tr_c, te_c = (encode_stream(tok, x, cfg.tiny_seq) for x in (train_split(code)[:n], test_split(code)[:k]))
    te_w, te_c = te_w[:64], te_c[:64]
    for name, lam, mode, b in (
        ("single_base", 0.0, "single", None),
        ("single_push", cfg.push_lam_single, "single", None),
        ("cross_base", 0.0, "cross", tr_c),
        ("cross_push", cfg.push_lam_cross, "cross", tr_c),
    ):
        model = _push_train(cfg, seed, tr_w, b, lam, mode, len(tok))
        test = te_w if b is None else torch.cat([te_w[:32], te_c[:32]])
        m[f"ppl_{name}"], m[f"disp_{name}"] = _test_ppl_disp(model, test)
        ctx.log(f"push-away {name}: test PPL {m[f'ppl_{name}']:.1f}, dispersion {m[f'disp_{name}']:.3f}")
    return m


def run(cfg: DispersionConfig, seed: int, ctx) -> dict[str, float]:
    m: dict[str, float] = {}
    for part in (_real_model_part, _tiny_models_part, _knn_part, _push_part):
        t0 = time.perf_counter()
        part(cfg, seed, ctx, m)
        m[f"seconds{part.__name__.removesuffix('_part')}"] = time.perf_counter() - t0
    return m


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    figs = []
    seed = sorted(per_seed)[0]
    seg = run_dir / "artifacts" / f"real_segments_seed{seed}.json"
    if seg.exists():
        data = json.loads(seg.read_text())
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for dom, v in data.items():
            ax.scatter(v["ppl"], v["disp"], s=10, label=dom, alpha=0.7)
        ax.set_xscale("log")
        ax.set_xlabel("segment perplexity (log)")
        ax.set_ylabel("last-layer dispersion")
        ax.set_title(f"real model, seed {seed}")
        ax.legend(fontsize=7)
        figs.append(("real_ppl_vs_dispersion", fig))
    lay = run_dir / "artifacts" / f"real_layers_seed{seed}.json"
    if lay.exists():
        r = json.loads(lay.read_text())["layer_r"]
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(range(1, len(r) + 1), r, marker="o")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xlabel("layer")
        ax.set_ylabel("Pearson r (log PPL, dispersion), mean over domains")
        ax.set_title("correlation by depth")
        figs.append(("layer_correlation", fig))
    pts = run_dir / "artifacts" / f"tiny_points_seed{seed}.json"
    if pts.exists():
        p = json.loads(pts.read_text())
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for d in sorted({x["d_model"] for x in p}):
            q = sorted((x for x in p if x["d_model"] == d), key=lambda x: x["step"])
            ax.plot([x["ppl"] for x in q], [x["disp"] for x in q], marker="o", label=f"d={d}")
        ax.set_xscale("log")
        ax.set_xlabel("held-out perplexity (log)")
        ax.set_ylabel("mean dispersion")
        ax.set_title("tiny models along training")
        ax.legend(fontsize=7)
        figs.append(("tiny_models", fig))
    return figs
