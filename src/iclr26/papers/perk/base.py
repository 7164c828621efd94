"""The PERK reproduction's base LM: a tiny Qwen2-style model trained once (cached, shared by the seeds), with one
first-layer head initialised as a previous-token head.

VERSION 6 (default, ``base_lm_only``): trained **only as a language model on the world's text** — documents of
1 .. ``train_segs`` segments followed by a recap that restates their items (``K V .``, ``K K' .``) in random order,
uniform causal-LM loss on every token, early stopping on the held-out LM loss. The question word ``ask`` and the
question-answer format never appear, so neither arm starts from a model trained on FT-ICR's format: FT-ICR and PERK
learn the task from the same number of task contexts (the budget gate). Up to VERSION 5 the base went through an
answer-focused instruction phase on FT-ICR's exact format (``base_lm_only=False`` restores it)."""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import torch

from iclr26.core.cache import cached_folder
from iclr26.core.paths import trained_cache_dir
from iclr26.latent.perk import Example, icr_prompts, qa_batch
from iclr26.latent.perk.world import TASKS, KVWorld

from . import Cfg


def _instruct_batch(w: KVWorld, tok, cfg: Cfg, rng: random.Random):
    """One instruction batch: contexts of one random length (1 .. ``_base_max_segs``) followed by all their questions
    with answers, in random order (``... ask K V ask K2 V2``); weight 1 on answer tokens, ``base_lm_weight`` on the
    context's tokens (causal-LM loss: the base stays a language model of the world's text), 0 on the questions.
    A share ``base_repeat`` of the contexts is repeated verbatim before the questions (weight 1 on the repeat)."""
    n_seg, rows = rng.randint(1, _base_max_segs(cfg)), []
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


def _lm_batch(w: KVWorld, tok, cfg: Cfg, rng: random.Random):
    """One language-model batch of the world's text: contexts of one random length (1 .. ``_base_max_segs``), each
    followed by a recap restating its items in random order (natural text mentions a fact again; the recap is what
    makes a language model learn to copy, the induction pattern); weight 1 on every token."""
    n_seg, rows = rng.randint(1, _base_max_segs(cfg)), []
    for _ in range(cfg.base_batch):
        c = w.sample(rng.choice(TASKS) if n_seg >= 2 else "hop1", n_seg, rng)
        items = [" ".join(s.split()[i : i + 3]) for s in c.segments for i in range(0, len(s.split()), 3)]
        items = [it for it in items if it.split()[0] in w.keys]  # the item sentences, not the filler
        rng.shuffle(items)
        ids = [tok.bos_token_id] + tok(c.text + " " + " ".join(items), add_special_tokens=False)["input_ids"]
        rows.append((ids, [1.0] * len(ids)))
    n = max(len(r) for r, _ in rows)
    ids, wt = torch.full((len(rows), n), tok.pad_token_id, dtype=torch.long), torch.zeros(len(rows), n)
    mask = torch.zeros_like(ids)
    for i, (r, wr) in enumerate(rows):
        ids[i, : len(r)], wt[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), torch.tensor(wr), 1
    return ids, wt, mask


def _base_max_segs(cfg: Cfg) -> int:
    """The longest context of the base's instruction phase: the training length (VERSION 4, the paper's protocol:
    train short, test long), or the longest test length with ``base_long`` (VERSION <= 3)."""
    return max(cfg.test_segs) if cfg.base_long else cfg.train_segs


def _weighted_lm_loss(model, batch) -> torch.Tensor:
    ids, wt, mask = batch
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
    return (ce * wt[:, 1:].flatten()).sum() / wt[:, 1:].sum()


@torch.no_grad()
def icr_acc(model, tok, contexts) -> float:
    """Exact match with the context in the prompt (one question per prompt), as FT-ICR answers."""
    right = []
    for c in contexts:
        ids, mask, labels = qa_batch(tok, icr_prompts(to_example(c)), list(c.answers))
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


def load_base(cfg: Cfg, ctx=None):
    """The tiny Qwen2-style model that PERK and FT-ICR both start from (cached; trained once, shared by the seeds): an
    answer-focused instruction phase on the world's contexts of every length up to the training length (VERSION 4;
    up to the longest test length with ``base_long``; the window fits the longest test context either way), loss on
    the answers plus a small causal-LM loss on the context, AdamW with warm-up + cosine, early stopping when the
    validation accuracy of reading the context plateaus (best state kept), at most ``base_steps`` steps."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from iclr26.latent.perk.loop import fit
    from iclr26.lm.tiny import tiny_config
    from iclr26.lm.tokenizer import build_word_tokenizer

    w = KVWorld(cfg.sents_per_seg, cfg.n_keys, cfg.n_keys)
    max_seg = max(cfg.test_segs)
    twice = cfg.base_repeat > 0 or cfg.base_lm_only  # a repeated context (or one with its recap) is up to twice as long
    ctx_len = (w.seg_tokens + 1) * max_seg * (2 if twice else 1)
    max_len = ctx_len + 6 * max_seg + 16  # the window fits the longest context + questions (learned positions: gpt2)
    spec = dict(arch=cfg.arch, d=cfg.d_model, L=cfg.n_layers, H=cfg.n_heads, steps=cfg.base_steps, bs=cfg.base_batch,
                lr=cfg.base_lr, lmw=cfg.base_lm_weight, spp=cfg.sents_per_seg, keys=cfg.n_keys, max_seg=max_seg,
                pat=cfg.base_patience, rep=cfg.base_repeat, prev=cfg.base_prev_head, v=4)  # fmt: skip
    if not cfg.base_long:  # VERSION 4: contexts up to the training length only (the key of older bases unchanged)
        spec.update(train_max=cfg.train_segs)
    if cfg.base_lm_only:  # VERSION 6: a language model of the world's text only
        spec.update(lm_only=True, v=6)
    key = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]
    out = trained_cache_dir() / "zoo" / f"perk-base-{key}"

    def build(tmp):  # digest-verified folder: a damaged or half-built base is moved aside and rebuilt
        tok = build_word_tokenizer(w.vocabulary_texts())
        torch.manual_seed(0)
        mcfg = tiny_config(cfg.arch, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers,
                           n_heads=cfg.n_heads, max_len=max_len)  # fmt: skip
        model = AutoModelForCausalLM.from_config(mcfg, dtype=torch.float32)
        if cfg.base_prev_head:
            previous_token_head(model)
        rng, vrng = random.Random(12345), random.Random(54321)
        val_lens = sorted({2, cfg.train_segs, _base_max_segs(cfg)})
        val = [w.sample(t, L, vrng) for t in TASKS for L in val_lens for _ in range(4)]
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.base_lr, weight_decay=0.01, betas=(0.9, 0.98))

        lm_val = [_lm_batch(w, tok, cfg, vrng) for _ in range(4)]
        batch = _lm_batch if cfg.base_lm_only else _instruct_batch

        def validate():  # LM-only: minus the held-out LM loss; instruction phase: reading accuracy
            model.eval()
            with torch.no_grad():
                score = (-float(np.mean([_weighted_lm_loss(model, b).item() for b in lm_val]))
                         if cfg.base_lm_only else icr_acc(model, tok, val))  # fmt: skip
            model.train()
            return score

        model.train()
        hist = fit(list(model.parameters()), opt, lambda b: _weighted_lm_loss(model, b),
                   lambda step: [batch(w, tok, cfg, rng)], cfg.base_steps, 0.02, 1.0, validate,
                   cfg.base_eval_every, cfg.base_patience, progress=not getattr(ctx, "quiet", True),
                   desc="PERK base LM")  # fmt: skip
        model.eval()
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp / "tokenizer")
        info = dict(best_step=hist["best_step"], steps_run=len(hist["loss"]), val=hist["val"],
                    final_loss=float(np.mean(hist["loss"][-50:])), seconds=hist["seconds"], **spec)  # fmt: skip
        return info

    info = cached_folder(out, "the PERK base model", build, record="done")
    tok = PreTrainedTokenizerFast.from_pretrained(out / "tokenizer")
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    return model, tok, {**info, "key": out.name}


def to_example(c) -> Example:
    return Example(list(c.segments), list(c.questions), list(c.answers))
