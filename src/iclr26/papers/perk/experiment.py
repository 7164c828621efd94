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


def _instruct_batch(w: KVWorld, tok, cfg: Cfg, rng: random.Random):
    """One instruction batch: contexts of one random length (1..longest test) followed by all their questions with
    answers, in random order (``... ask K V ask K2 V2``); weight 1 on answer tokens, ``base_lm_weight`` on the
    context's tokens (causal-LM loss: the base stays a language model of the world's text), 0 on the questions.
    A share ``base_repeat`` of the contexts is repeated verbatim before the questions (weight 1 on the repeat)."""
    n_seg, rows = rng.randint(1, max(cfg.test_segs)), []
    for _ in range(cfg.base_batch):
        c = w.sample(rng.choice(TASKS) if n_seg >= 2 else "hop1", n_seg, rng)
        ids = [tok.bos_token_id] + tok(c.text, add_special_tokens=False)["input_ids"]
        wts = [cfg.base_lm_weight] * len(ids)
        if rng.random() < cfg.base_repeat:  # the context repeated verbatim: a dense signal for the induction circuit
            ids, wts = ids + ids[1:], wts + [1.0] * (len(ids) - 1)
        qa = list(zip(c.questions, c.answers))
        rng.shuffle(qa)
        for q, a in qa:
            qi, ai = (
                tok(" " + q, add_special_tokens=False)["input_ids"],
                tok(" " + a, add_special_tokens=False)["input_ids"],
            )
            ids, wts = ids + qi + ai, wts + [0.0] * len(qi) + [1.0] * len(ai)
        rows.append((ids, wts))
    n = max(len(r) for r, _ in rows)
    ids, wt = torch.full((len(rows), n), tok.pad_token_id, dtype=torch.long), torch.zeros(len(rows), n)
    mask = torch.zeros_like(ids)
    for i, (r, wr) in enumerate(rows):
        ids[i, : len(r)], wt[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), torch.tensor(wr), 1
    return ids, wt, mask


def _weighted_lm_loss(model, batch) -> torch.Tensor:
    ids, wt, mask = batch
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
    return (ce * wt[:, 1:].flatten()).sum() / wt[:, 1:].sum()


@torch.no_grad()
def _icr_acc(model, tok, contexts) -> float:
    """Exact match with the context in the prompt (one question per prompt), as FT-ICR answers."""
    right = []
    for c in contexts:
        ids, mask, labels = qa_batch(tok, icr_prompts(_ex(c)), list(c.answers))
        pred, tgt = model(input_ids=ids, attention_mask=mask).logits[:, :-1].argmax(-1), labels[:, 1:]
        right += [bool(((pred[j] == tgt[j]) | (tgt[j] == -100)).all()) for j in range(len(pred))]
    return float(np.mean(right))


def previous_token_head(model, layer: int = 0, head: int = 0, strength: float = 40.0, min_freq: float = 0.05) -> None:
    """Initialise one attention head as a previous-token head: content-independent query and key (zero weights, the
    q/k biases of Qwen2-style attention) whose rotary phases differ by one position, so that the score
    ``sum_f strength * cos(theta_f * (m - n - 1))`` over the rotary frequencies theta_f >= ``min_freq`` peaks at the
    previous token (n = m - 1). Only an initialisation: every weight is trained afterwards. A structural prior that
    spares a tiny model the long plateau before the induction circuit (previous-token head + copying head) forms."""
    attn = model.model.layers[layer].self_attn
    hd = attn.head_dim
    if attn.q_proj.bias is None or attn.k_proj.bias is None:
        raise ValueError(f"{model.config.model_type!r} has no q/k biases: use a qwen2 base for the previous-token init")
    if model.config.num_key_value_heads != model.config.num_attention_heads:
        raise ValueError("the previous-token init needs one key head per query head (no grouped-query attention)")
    theta = model.model.rotary_emb.inv_freq.float()  # [hd/2], rotary pairs (f, f + hd/2)
    amp = (theta >= min_freq).float() * strength**0.5
    q = torch.cat([amp, torch.zeros_like(amp)])  # q_f = a (real)
    k = torch.cat([amp * theta.cos(), amp * theta.sin()])  # k_f = a e^{i theta_f}: Re[q conj(k) e^{i theta (m-n)}]
    sl = slice(head * hd, (head + 1) * hd)
    with torch.no_grad():
        attn.q_proj.weight[sl] = 0.0
        attn.k_proj.weight[sl] = 0.0
        attn.q_proj.bias[sl] = q
        attn.k_proj.bias[sl] = k


def _base(cfg: Cfg, ctx=None):
    """The tiny llama that PERK and FT-ICR both start from (cached; trained once, shared by the seeds): an
    answer-focused instruction phase on the world's contexts of every length up to the longest test context (loss on
    the answers plus a small causal-LM loss on the context), AdamW with warm-up + cosine, early stopping when the
    validation accuracy of reading the context plateaus (best state kept), at most ``base_steps`` steps."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from iclr26.latent.perk.loop import fit
    from iclr26.lm.tiny import tiny_config
    from iclr26.lm.tokenizer import build_word_tokenizer

    w = KVWorld(cfg.sents_per_seg, cfg.n_keys, cfg.n_keys)
    max_seg = max(cfg.test_segs)
    ctx_len = (w.seg_tokens + 1) * max_seg * (2 if cfg.base_repeat > 0 else 1)  # a repeated context is twice as long
    max_len = ctx_len + 6 * max_seg + 16  # the window fits the longest context + questions (learned positions: gpt2)
    spec = dict(arch=cfg.arch, d=cfg.d_model, L=cfg.n_layers, H=cfg.n_heads, steps=cfg.base_steps, bs=cfg.base_batch,
                lr=cfg.base_lr, lmw=cfg.base_lm_weight, spp=cfg.sents_per_seg, keys=cfg.n_keys, max_seg=max_seg,
                pat=cfg.base_patience, rep=cfg.base_repeat, prev=cfg.base_prev_head, v=4)  # fmt: skip
    key = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]
    out = cache_dir() / "zoo" / f"perk-base-{key}"
    if not (out / "done").exists():
        with file_lock(out.with_name(out.name + ".lock"), "the PERK base model"):
            if not (out / "done").exists():
                tok = build_word_tokenizer(w.vocabulary_texts())
                torch.manual_seed(0)
                mcfg = tiny_config(cfg.arch, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers,
                                   n_heads=cfg.n_heads, max_len=max_len)  # fmt: skip
                model = AutoModelForCausalLM.from_config(mcfg, dtype=torch.float32)
                if cfg.base_prev_head:
                    previous_token_head(model)
                rng, vrng = random.Random(12345), random.Random(54321)
                val = [w.sample(t, L, vrng) for t in TASKS for L in sorted({2, cfg.train_segs, max_seg}) for _ in
                       range(4)]  # fmt: skip
                opt = torch.optim.AdamW(model.parameters(), lr=cfg.base_lr, weight_decay=0.01, betas=(0.9, 0.98))

                def validate():
                    model.eval()
                    acc = _icr_acc(model, tok, val)
                    model.train()
                    return acc

                model.train()
                hist = fit(list(model.parameters()), opt, lambda b: _weighted_lm_loss(model, b),
                           lambda step: [_instruct_batch(w, tok, cfg, rng)], cfg.base_steps, 0.02, 1.0, validate,
                           cfg.base_eval_every, cfg.base_patience, progress=not getattr(ctx, "quiet", True),
                           desc="PERK base LM")  # fmt: skip
                model.eval()
                out.mkdir(parents=True, exist_ok=True)
                model.save_pretrained(out)
                tok.save_pretrained(out / "tokenizer")
                info = dict(best_step=hist["best_step"], steps_run=len(hist["loss"]), val=hist["val"],
                            final_loss=float(np.mean(hist["loss"][-50:])), seconds=hist["seconds"], **spec)  # fmt: skip
                (out / "done").write_text(json.dumps(info))
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
    m[f"{name}_acc_hop1_Ltrain"] = m[f"{name}_acc_hop1_L{cfg.train_segs}"]
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
    base, tok, info = _base(cfg, ctx)
    ctx.log(
        f"base: instruction phase {info['steps_run']} steps (best {info['best_step']}), validation reading accuracy "
        f"{max(info['val']):.3f}, {info['seconds']:.0f}s"
    )
    w = KVWorld(cfg.sents_per_seg, cfg.n_keys, cfg.n_keys)
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
    m["base_icr_acc_Ltrain"] = _icr_acc(base, tok, [c for t in TASKS for c in test[(t, cfg.train_segs)]])
    m["base_steps_run"] = float(info["steps_run"])

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
