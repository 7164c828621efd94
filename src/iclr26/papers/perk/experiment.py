"""The PERK reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import time

import numpy as np
import torch

from iclr26.core.locks import file_lock
from iclr26.core.paths import cache_dir
from iclr26.core.threads import run_threads
from iclr26.latent.perk import FTICR, PERK, Example, FTICRConfig, PERKConfig, icr_prompts, qa_batch
from iclr26.latent.perk.measure import peak_memory_bytes, wall_seconds
from iclr26.probing.tuning import tune_on_grid
from iclr26.worlds.perk import TASKS, KVWorld

from . import Cfg

# ------------------------------------------------------------------------------------------------- the base LM


def _base(cfg: Cfg):
    """The pre-trained tiny llama (cached; trained once, shared by the seeds) and its tokenizer."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from iclr26.lm.tiny import tiny_config
    from iclr26.lm.tokenizer import build_word_tokenizer
    from iclr26.lm.train import TrainConfig, train_lm

    w = KVWorld(cfg.sents_per_seg)
    max_seg = max(cfg.test_segs)
    max_len = (w.seg_tokens + 1) * max_seg + 64  # the window fits the longest test context + question
    spec = dict(d=cfg.d_model, L=cfg.n_layers, steps=cfg.pretrain_steps, bs=cfg.pretrain_batch, spp=cfg.sents_per_seg,
                max_seg=max_seg, v=3)  # fmt: skip
    key = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]
    out = cache_dir() / "zoo" / f"perk-base-{key}"
    if not (out / "done").exists():
        with file_lock(out.with_name(out.name + ".lock"), "the PERK base model"):
            if not (out / "done").exists():
                tok = build_word_tokenizer(w.vocabulary_texts())
                torch.manual_seed(0)
                mcfg = tiny_config("llama", vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4,
                                   n_kv_heads=2, max_len=max_len)  # fmt: skip
                model = AutoModelForCausalLM.from_config(mcfg, dtype=torch.float32)
                texts = w.pretrain_texts(20_000, max_seg, seed=12345)
                tc = TrainConfig(steps=cfg.pretrain_steps, batch_size=cfg.pretrain_batch, lr=3e-3, warmup=50,
                                 seq_len=max_len)  # fmt: skip
                losses = train_lm(model, tok, texts, tc, desc="PERK base LM")
                out.mkdir(parents=True, exist_ok=True)
                model.save_pretrained(out)
                tok.save_pretrained(out / "tokenizer")
                (out / "done").write_text(json.dumps({"final_loss": float(np.mean(losses[-50:])), **spec}))
    tok = PreTrainedTokenizerFast.from_pretrained(out / "tokenizer")
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    return model, tok, json.loads((out / "done").read_text())


def _ex(c) -> Example:
    return Example(list(c.segments), list(c.questions), list(c.answers))


# ------------------------------------------------------------------------------------------------- evaluation


def _perk_correct(perk: PERK, c, encode: bool = True, adapter: bool = True) -> list[bool]:
    phi = perk.encode(list(c.segments)) if encode else None
    return perk.exact_match(list(c.questions), list(c.answers), phi, adapter=adapter)


def _acc(fn, contexts) -> float:
    right = [x for c in contexts for x in fn(c)]
    return float(np.mean(right))


def _evaluate(name: str, fn, test: dict, cfg: Cfg, m: dict) -> None:
    """Accuracy by length and task, means, and by needle-position quartile over lengths > training."""
    per_pos = [[] for _ in range(4)]
    for L in cfg.test_segs:
        accs = []
        for t in TASKS:
            res = [(fn(c), c.positions) for c in test[(t, L)]]
            acc = float(np.mean([x for r, _ in res for x in r]))
            m[f"{name}_acc_{t}_L{L}"] = acc
            accs.append(acc)
            if cfg.train_segs < L:
                for r, pos in res:
                    for x, p in zip(r, pos):
                        per_pos[min(3, int(p * 4))].append(x)
        m[f"{name}_acc_L{L}"] = float(np.mean(accs))
    m[f"{name}_acc"] = float(np.mean([m[f"{name}_acc_L{L}"] for L in cfg.test_segs]))
    for t in TASKS:
        m[f"{name}_acc_{t}"] = float(np.mean([m[f"{name}_acc_{t}_L{L}"] for L in cfg.test_segs]))
    m[f"{name}_acc_Ltrain"] = m[f"{name}_acc_L{cfg.train_segs}"]
    m[f"{name}_drop"] = m[f"{name}_acc_Ltrain"] - m[f"{name}_acc_L{max(cfg.test_segs)}"]
    q = [float(np.mean(p)) if p else float("nan") for p in per_pos]
    for i, v in enumerate(q):
        m[f"{name}_pos_q{i}"] = v
    m[f"{name}_pos_spread"] = float(np.nanmax(q) - np.nanmin(q))


# ------------------------------------------------------------------------------------------------- run


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    base, tok, info = _base(cfg)
    w = KVWorld(cfg.sents_per_seg)
    rng_val, rng_test = random.Random(10_000 + seed), random.Random(20_000 + seed)
    val = [w.sample(t, cfg.train_segs, rng_val) for t in TASKS for _ in range(cfg.n_val)]
    test = {(t, L): [w.sample(t, L, rng_test) for _ in range(cfg.n_test)] for L in cfg.test_segs for t in TASKS}

    def sample(k: int):  # training batches, disjoint random stream per seed
        def draw(step):
            r = random.Random(hash((seed, step, 7)) & 0xFFFFFFFF)
            return [_ex(w.sample(r.choice(TASKS), cfg.train_segs, r)) for _ in range(k)]

        return draw

    pcfg = dict(seg_len=w.seg_tokens + 1, lora_rank=cfg.lora_rank, inner_steps=cfg.inner_steps,
                unroll_last=cfg.unroll_last)  # fmt: skip

    # -- control: the base model, no adapter and no context (the floor)
    floor = PERK(copy.deepcopy(base), tok, PERKConfig(**pcfg))
    m["noadapter_acc"] = _acc(lambda c: _perk_correct(floor, c, encode=False, adapter=False),
                              [c for t in TASKS for c in test[(t, cfg.train_segs)]])  # fmt: skip

    # -- control: PERK's inner loop from peft's init, no meta-training; inner lr tuned on validation
    def untrained(lr):
        p = PERK(copy.deepcopy(base), tok, PERKConfig(**pcfg, inner_lr=lr))
        return _acc(lambda c: _perk_correct(p, c), val), p

    g = tune_on_grid(untrained, cfg.inner_lr_grid, max_extensions=cfg.max_extensions + 1)
    m["untrained_inner_lr"] = g.best
    ctx.log(f"untrained init: inner lr {g.best:g} (val {[f'{k:g}:{v:.3f}' for k, v in g.scores.items()]})")
    _evaluate("untrained", lambda c: _perk_correct(g.payload, c), test, cfg, m)

    # -- PERK: meta-trained init and inner lrs (initial inner lr = the control's), outer lr tuned on validation
    def meta(lr):
        p = PERK(copy.deepcopy(base), tok, PERKConfig(**pcfg, inner_lr=g.best, outer_lr=lr))
        h = p.meta_train(
            sample(cfg.meta_batch),
            cfg.meta_steps,
            lambda: _acc(lambda c: _perk_correct(p, c), val),
            eval_every=cfg.eval_every,
            patience=cfg.patience,
            progress=not getattr(ctx, "quiet", True),
        )
        return max(h["val"]), (p, h)

    gp = tune_on_grid(meta, cfg.outer_lr_grid, max_extensions=cfg.max_extensions)
    perk, hist = gp.payload
    m["perk_outer_lr"], m["perk_meta_steps"] = gp.best, float(hist["best_step"])
    ctx.log(f"PERK: outer lr {gp.best:g} (val {[f'{k:g}:{v:.3f}' for k, v in gp.scores.items()]}), best step "
            f"{hist['best_step']}, {hist['seconds']:.0f}s, lrs now {perk.lrs().mean().item():.2e}")  # fmt: skip
    _evaluate("perk", lambda c: _perk_correct(perk, c), test, cfg, m)

    # -- FT-ICR: full fine-tuning with the context in the prompt; lr tuned on validation
    def icr(lr):
        f = FTICR(copy.deepcopy(base), tok, FTICRConfig(lr=lr))
        h = f.train(
            sample(cfg.icr_batch),
            cfg.icr_steps,
            lambda: _acc(lambda c: f.exact_match(_ex(c)), val),
            eval_every=cfg.eval_every,
            patience=cfg.patience,
            progress=not getattr(ctx, "quiet", True),
        )
        return max(h["val"]), (f, h)

    gi = tune_on_grid(icr, cfg.icr_lr_grid, max_extensions=cfg.max_extensions)
    fticr, ihist = gi.payload
    m["icr_lr"], m["icr_steps"] = gi.best, float(ihist["best_step"])
    ctx.log(f"FT-ICR: lr {gi.best:g} (val {[f'{k:g}:{v:.3f}' for k, v in gi.scores.items()]}), best step "
            f"{ihist['best_step']}, {ihist['seconds']:.0f}s")  # fmt: skip
    _evaluate("fticr", lambda c: fticr.exact_match(_ex(c)), test, cfg, m)

    # -- measured cost of answering one question: PERK (encode + answer) vs prompting with the context
    for L in cfg.test_segs:
        c = test[("hop1", L)][0]
        q, a = [c.questions[0]], [c.answers[0]]
        ids, mask, _ = qa_batch(tok, icr_prompts(_ex(c))[:1], a)

        def perk_call(q=q, a=a, c=c):
            return perk.exact_match(q, a, perk.encode(list(c.segments)))

        def icr_call(ids=ids, mask=mask):
            with torch.no_grad():
                return fticr.model(input_ids=ids, attention_mask=mask).logits

        m[f"perk_mem_L{L}"], m[f"icr_mem_L{L}"] = (
            peak_memory_bytes(perk_call) / 2**20,
            peak_memory_bytes(icr_call) / 2**20,
        )
        m[f"perk_time_L{L}"], m[f"icr_time_L{L}"] = wall_seconds(perk_call), wall_seconds(icr_call)
    lo, hi = cfg.train_segs, max(cfg.test_segs)
    m["perk_mem_growth"] = m[f"perk_mem_L{hi}"] / m[f"perk_mem_L{lo}"]
    m["icr_mem_growth"] = m[f"icr_mem_L{hi}"] / m[f"icr_mem_L{lo}"]

    if cfg.smollm2:
        m.update(_smollm2(cfg, seed, ctx))
    ctx.log(
        f"seed {seed}: acc train-length PERK {m['perk_acc_Ltrain']:.3f} FT-ICR {m['fticr_acc_Ltrain']:.3f} untrained "
        f"{m['untrained_acc_Ltrain']:.3f} floor {m['noadapter_acc']:.3f}; by length PERK "
        f"{[round(m[f'perk_acc_L{L}'], 3) for L in cfg.test_segs]} FT-ICR "
        f"{[round(m[f'fticr_acc_L{L}'], 3) for L in cfg.test_segs]}; mem growth PERK {m['perk_mem_growth']:.2f} "
        f"prompt {m['icr_mem_growth']:.2f}; {time.time() - t0:.0f}s"
    )
    return m


# ------------------------------------------------------------------------------------------------- SmolLM2

_SMOL: dict = {}
_PLANTS = ["marble", "falcon", "orchid", "lantern", "glacier", "saffron", "compass", "violin", "harbor", "thistle"]


def _smollm2(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    """One Wikipedia passage with a planted cloze fact, encoded by K inner steps from peft's init (no meta-training)."""
    from iclr26.lm import zoo
    from iclr26.lm.scoring import target_logprobs
    from iclr26.worlds.text import test_split, wikipedia

    if "perk" not in _SMOL:
        model, tok = zoo.load("smollm2-135m")
        pc = PERKConfig(seg_len=cfg.smol_tokens + 16, inner_steps=cfg.smol_steps, unroll_last=0, lora_rank=8,
                        inner_lr=cfg.smol_lr, inner_weight_decay=0.0)  # fmt: skip
        _SMOL["perk"] = PERK(model, tok, pc)
    perk = _SMOL["perk"]
    tok = perk.tok
    rng = random.Random(seed)
    doc = rng.choice([d for d in test_split(wikipedia()) if len(d.split()) > 300])
    words = doc.split()
    start = rng.randrange(0, len(words) - 200)
    ids = tok(" ".join(words[start : start + 200]), add_special_tokens=False)["input_ids"][: cfg.smol_tokens]
    planted, other = rng.sample(_PLANTS, 2)
    cloze = "The password of the archive is"
    passage = tok.decode(ids[: len(ids) // 2]) + f" {cloze} {planted}. " + tok.decode(ids[len(ids) // 2 :])

    def logp(ans, phi):
        with perk.adapted(phi) if phi is not None else perk.no_adapter():
            return float(target_logprobs(perk.model, tok, [cloze], [ans])[0])

    before = {a: logp(a, None) for a in (planted, other)}
    t = time.time()
    phi = perk.encode([passage])
    enc_s = time.time() - t
    after = {a: logp(a, phi) for a in (planted, other)}
    em_before = perk.answer(cloze, None, 3)  # phi_0 = peft's init (B = 0): the base model's own continuation
    em_after = perk.answer(cloze, phi, 3)
    ctx.log(
        f"SmolLM2: planted {planted!r}: log p {before[planted]:.2f} -> {after[planted]:.2f}; other {other!r}: "
        f"{before[other]:.2f} -> {after[other]:.2f}; greedy {em_before!r} -> {em_after!r}; encode {enc_s:.1f}s"
    )
    return {
        "smol_gain_planted": after[planted] - before[planted],
        "smol_gain_other": after[other] - before[other],
        "smol_em_before": float(em_before.lower().startswith(planted)),
        "smol_em_after": float(em_after.lower().startswith(planted)),
        "smol_encode_s": enc_s,
    }


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for name, style in (("perk", "-o"), ("fticr", "--s"), ("untrained", ":^")):
        ys = [[s[f"{name}_acc_L{L}"] for s in seeds if f"{name}_acc_L{L}" in s] for L in cfg.test_segs]
        axes[0].errorbar(cfg.test_segs, [np.mean(y) for y in ys], yerr=[np.std(y) for y in ys], fmt=style, label=name)
        ps = [[s[f"{name}_pos_q{q}"] for s in seeds if f"{name}_pos_q{q}" in s] for q in range(4)]
        axes[1].errorbar(range(4), [np.nanmean(p) for p in ps], yerr=[np.nanstd(p) for p in ps], fmt=style, label=name)
    axes[0].set_xlabel("context length (segments)"), axes[0].set_ylabel("exact match"), axes[0].set_ylim(0, 1.02)
    axes[1].set_xlabel("needle position quartile (lengths > training)"), axes[1].set_ylim(0, 1.02)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return [("accuracy_by_length_and_position", fig)]
