"""The dispersion reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import random
import time

import numpy as np
import torch

from ...lenses.dispersion import (
    PushAway,
    PushAwayConfig,
    binned_pearson,
    block_dispersion,
    dispersion,
    knn_lm_logprobs,
    segment_stats,
)
from ...lm import zoo
from ...lm.hooks import capture
from ...lm.tiny import tiny_config
from ...lm.train import encode_stream
from ...worlds.text import load_domain, test_split, train_split
from . import DispersionConfig


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
    with push.track(model):  # records the last block's output (before the final norm) on every forward pass
        _push_loop(cfg, model, opt, sched, gen, push, blocks_a, blocks_b)
    rng.random()
    return model.eval()


def _push_loop(cfg, model, opt, sched, gen, push, blocks_a, blocks_b):
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


@torch.no_grad()
def _test_ppl_disp(model, blocks) -> tuple[float, float]:
    s = segment_stats(model, blocks)
    # dispersion of the vectors the push-away term acts on: the last block's output before the final norm
    return float(np.exp(np.log(s["ppl"]).mean())), float(block_dispersion(model, blocks, -1).mean())


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
