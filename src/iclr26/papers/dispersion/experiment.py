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
    knn_lm_mix,
    knn_neighbours,
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


def _layer_corr(p, x) -> list[float]:
    """Per-segment Pearson r of log PPL with each block's dispersion (index 0 = the first block)."""
    return [float(np.corrcoef(np.log(p), x[:, layer])[0, 1]) for layer in range(1, x.shape[1])]


def _correlations(cfg: DispersionConfig, per_domain: dict, tag: str, m: dict) -> list[float]:
    """The correlation metrics of one model (``tag`` "real" or "untrained") over the same segments."""
    for dom, (ppl, disp) in per_domain.items():
        m[f"r_{tag}_{dom}"] = binned_pearson(ppl, disp[:, -1], cfg.n_bins)
    m[f"r_{tag}_mean"] = float(np.mean([m[f"r_{tag}_{d}"] for d in per_domain]))
    # Per-layer correlations within each domain, then averaged over domains: pooling domains would mix domain
    # identity (code is both low-perplexity and low-dispersion) into the depth comparison.
    layer_r = np.mean([_layer_corr(p, x) for p, x in per_domain.values()], axis=0).tolist()
    early = max(0, round(cfg.early_layer_frac * len(layer_r)) - 1)
    m[f"r_{tag}_last"], m[f"r_{tag}_early"] = layer_r[-1], layer_r[early]
    return layer_r


def _domain_stats(model, segments: dict) -> dict:
    per_domain = {}
    for dom, ids in segments.items():
        stats_ = [segment_stats(model, ids[i : i + 8]) for i in range(0, len(ids), 8)]
        per_domain[dom] = (np.concatenate([s["ppl"] for s in stats_]), np.concatenate([s["disp"] for s in stats_]))
    return per_domain


def _real_model_part(cfg: DispersionConfig, seed: int, ctx, m: dict) -> dict:
    model, tok = zoo.load(ctx.model or cfg.real_model)  # --model: any local HF causal LM
    rng = random.Random(seed)
    segments = {}
    for dom in cfg.domains:
        docs = list(load_domain(dom))
        rng.shuffle(docs)
        segments[dom] = _segments(tok, docs, cfg.segments_per_domain, cfg.seg_len, rng)
    per_domain = _domain_stats(model, segments)
    for dom, (ppl, disp) in per_domain.items():
        m[f"ppl_real_{dom}"] = float(np.median(ppl))
        m[f"disp_real_{dom}"] = float(disp[:, -1].mean())
    layer_r = _correlations(cfg, per_domain, "real", m)
    for dom in cfg.domains:
        ctx.log(f"real {dom}: r = {m[f'r_real_{dom}']:.3f}, median PPL {m[f'ppl_real_{dom}']:.1f}")
    ppl = np.concatenate([p for p, _ in per_domain.values()])
    disp = np.concatenate([x for _, x in per_domain.values()])
    m["r_real_pooled"] = binned_pearson(ppl, disp[:, -1], cfg.n_bins)
    m["r_real_last_pooled"] = _layer_corr(ppl, disp)[-1]
    # testbed: the model models this text at all (nats below a uniform guess over its vocabulary)
    m["lm_gain_real"] = float(np.log(len(tok)) - np.mean(np.log(ppl)))
    early = max(0, round(cfg.early_layer_frac * len(layer_r)) - 1)
    # negative control: the same architecture, untrained (seeded initialisation), on the same segments. Whatever
    # correlation the text alone produces (repetitive segments, domain structure), it shows here too.
    if cfg.untrained_control:
        from transformers import AutoModelForCausalLM

        torch.manual_seed(seed)
        untrained = AutoModelForCausalLM.from_config(model.config, dtype=torch.float32).eval()
        _correlations(cfg, _domain_stats(untrained, segments), "untrained", m)
        ctx.log(f"untrained control: r mean {m['r_untrained_mean']:.3f}, last {m['r_untrained_last']:.3f}, "
                f"early {m['r_untrained_early']:.3f}")  # fmt: skip
        del untrained
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
    m["tiny_logppl_range"] = float(ppl.max() - ppl.min())  # testbed: the points span a range of perplexities
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
        # the same care for both keys: λ and the softmax temperature tuned per key on the first half of the
        # evaluation tokens (the temperature grid is relative to the key's own median nearest-neighbour distance,
        # plus Khandelwal et al.'s T = 1), evaluated on the second half
        dist, idx = knn_neighbours(store[key], q[key], cfg.knn_k)
        scale = float(dist[:half, 0].median().clamp_min(1e-6))
        temps = sorted({1.0, *(c * scale for c in (0.1, 0.3, 1.0, 3.0, 10.0))})
        best = max(
            ((lam, t) for lam in (0.05, 0.1, 0.25, 0.4, 0.6) for t in temps),
            key=lambda g: knn_lm_mix(dist[:half], idx[:half], store_next, q_next[:half], q_lp[:half], *g).mean(),
        )
        lp = knn_lm_mix(dist[half:], idx[half:], store_next, q_next[half:], q_lp[half:], *best)
        res[key].update(lam=best[0], temperature=best[1] / scale, ppl=float(torch.exp(-lp.mean())))
    m["lm_ppl_knn_eval"] = float(torch.exp(-q_lp[half:].mean()))
    for key, short in (("attn_out", "attn"), ("mlp_out", "ffn")):
        m[f"knn_ppl_{short}"], m[f"disp_key_{short}"] = res[key]["ppl"], res[key]["disp"]
    hi, lo = sorted(res, key=lambda k: -res[k]["disp"])
    m["knn_choice_gain"] = res[lo]["ppl"] - res[hi]["ppl"]
    # headroom: the datastore helps with the better key, and the two keys differ (there is something to choose)
    m["knn_best_gain"] = m["lm_ppl_knn_eval"] - min(m["knn_ppl_attn"], m["knn_ppl_ffn"])
    m["knn_key_spread"] = abs(m["knn_ppl_attn"] - m["knn_ppl_ffn"])
    m["disp_key_spread"] = abs(m["disp_key_attn"] - m["disp_key_ffn"])  # the criterion separates the keys
    ctx.log(f"kNN-LM: {res}")
    return m


def _push_train(cfg, seed, blocks_a, blocks_b, lam, mode, vocab):
    """One push-away training run (λ = 0: the baseline); returns the model and its measured budget."""
    torch.manual_seed(seed)
    model = __import__("transformers").AutoModelForCausalLM.from_config(
        tiny_config("llama", vocab_size=vocab, d_model=cfg.push_d_model, n_layers=2, n_heads=4, max_len=cfg.tiny_seq)
    )
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.push_lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    gen = torch.Generator().manual_seed(seed)
    push = PushAway(PushAwayConfig(lam=lam, mode=mode), generator=torch.Generator().manual_seed(seed + 7))
    model.train()
    with push.track(model):  # records the last block's output (before the final norm) on every forward pass
        budget = _push_loop(cfg, model, opt, sched, gen, push, blocks_a, blocks_b)
    return model.eval(), budget


def _push_loop(cfg, model, opt, sched, gen, push, blocks_a, blocks_b) -> dict[str, int]:
    steps = tokens = 0
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
        out = model(input_ids=ids, labels=ids)
        loss = out.loss + push(model, ids, None, out, domain_of_row=dom)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        steps, tokens = steps + 1, tokens + ids.numel()
    return {"steps": steps, "tokens": tokens}


@torch.no_grad()
def _test_ppl_disp(model, blocks) -> tuple[float, float]:
    s = segment_stats(model, blocks)
    # dispersion of the vectors the push-away term acts on: the last block's output before the final norm
    return float(np.exp(np.log(s["ppl"]).mean())), float(block_dispersion(model, blocks, -1).mean())


def _unigram_ppl(train: torch.Tensor, test: torch.Tensor, vocab: int) -> float:
    """Perplexity of an add-one-smoothed unigram model of ``train``'s predicted tokens on ``test``'s (positions ≥ 1,
    as segment_stats scores them; geometric mean over blocks)."""
    counts = torch.bincount(train[:, 1:].reshape(-1), minlength=vocab).double() + 1.0
    logp = torch.log(counts / counts.sum())
    nll = -logp[test[:, 1:]].mean(1)  # per block
    return float(np.exp(nll.mean().item()))


def _push_part(cfg: DispersionConfig, seed: int, ctx, m: dict) -> dict:
    _, tok = zoo.load(_tiny_spec(cfg, cfg.tiny_sizes[0]).name, seed=seed)  # the zoo's BPE tokenizer of this seed
    wiki, code = (load_domain(d) for d in cfg.push_domains)
    n, k = cfg.max_docs, max(4, cfg.max_docs // 5)
    tr_w, te_w = (encode_stream(tok, x, cfg.tiny_seq) for x in (train_split(wiki)[:n], test_split(wiki)[:k]))
    tr_c, te_c = (encode_stream(tok, x, cfg.tiny_seq) for x in (train_split(code)[:n], test_split(code)[:k]))
    te_w, te_c = te_w[:64], te_c[:64]
    arms = (
        ("single_base", 0.0, "single", None),
        ("single_push", cfg.push_lam_single, "single", None),
        ("cross_base", 0.0, "cross", tr_c),
        ("cross_push", cfg.push_lam_cross, "cross", tr_c),
    )
    got = {name: {"ppl": [], "disp": [], "steps": 0, "tokens": 0} for name, *_ in arms}
    # push_replicates paired trainings per seed (initialisation and data order from seed + 1000·r, the same for the
    # arm with and without the term): more replicates per seed is the cheap way to power the small PPL differences
    for r in range(cfg.push_replicates):
        for name, lam, mode, b in arms:
            model, budget = _push_train(cfg, seed + 1000 * r, tr_w, b, lam, mode, len(tok))
            test = te_w if b is None else torch.cat([te_w[:32], te_c[:32]])
            ppl, disp = _test_ppl_disp(model, test)
            got[name]["ppl"].append(ppl)
            got[name]["disp"].append(disp)
            got[name]["steps"] += budget["steps"]
            got[name]["tokens"] += budget["tokens"]
    for name, g in got.items():
        m[f"ppl_{name}"], m[f"disp_{name}"] = float(np.mean(g["ppl"])), float(np.mean(g["disp"]))
        m[f"steps_{name}"], m[f"tokens_{name}"] = float(g["steps"]), float(g["tokens"])
        ctx.log(f"push-away {name}: test PPL {m[f'ppl_{name}']:.1f}, dispersion {m[f'disp_{name}']:.3f}")
    for setting in ("single", "cross"):
        push, base = got[f"{setting}_push"], got[f"{setting}_base"]
        # budget parity: optimizer steps and training tokens of the two arms, as measured
        m[f"budget_dev_{setting}"] = max(abs(push[k] / base[k] - 1.0) for k in ("steps", "tokens"))
        # non-degenerate arm: how much the term raised the dispersion of the vectors it acts on
        m[f"disp_gain_{setting}"] = m[f"disp_{setting}_push"] - m[f"disp_{setting}_base"]
        # testbed: the baseline learned more than token frequencies (nats per token below a unigram model of its
        # training blocks, add-one smoothed, on the same test blocks)
        train = tr_w if setting == "single" else torch.cat([tr_w, tr_c])
        test = te_w if setting == "single" else torch.cat([te_w[:32], te_c[:32]])
        m[f"ppl_{setting}_unigram"] = _unigram_ppl(train, test, len(tok))
        m[f"logppl_gain_{setting}_base"] = float(np.log(m[f"ppl_{setting}_unigram"]) - np.log(m[f"ppl_{setting}_base"]))
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
