"""The tiny long-context model of the restkv reproduction: its training curriculum (``TRAIN_PHASES`` of the card) and
its cache under the zoo folder."""

from __future__ import annotations

import hashlib
import json
import math
import random
import time

import torch
from tqdm.auto import tqdm

from iclr26.kvcache.restkv.world import SyntheticLongCtx

from ...core.cache import cached_folder
from ...core.paths import trained_cache_dir
from . import TINY_MODEL, TINY_RECIPE, TRAIN_FILLER_WEIGHT, TRAIN_LR, TRAIN_PHASES


def _train_sequence(world, tok, rng, length, density=(0.2, 0.5)):
    """Token ids of one training text (``<bos>`` + :meth:`SyntheticLongCtx.training_segments`) and its answer mask
    (1 exactly on the tokens of the answers)."""
    segments = world.training_segments(length, rng, density)
    pieces = tok([piece for piece, _ in segments], add_special_tokens=False)["input_ids"]
    ids, ans = [tok.bos_token_id], [0]
    for x, (_, flag) in zip(pieces, segments):
        ids += x
        ans += [int(flag)] * len(x)
    return ids, ans


def _batch(world, tok, rng, n, length, density=(0.2, 0.5)):
    """(ids, answer mask, padding mask) of ``n`` training texts, right-padded."""
    seqs = [_train_sequence(world, tok, rng, length, density) for _ in range(n)]
    m = max(len(s) for s, _ in seqs)
    x = torch.zeros(n, m, dtype=torch.long)
    am, pm = torch.zeros(n, m), torch.zeros(n, m)
    for i, (s, a) in enumerate(seqs):
        x[i, : len(s)], am[i, : len(s)], pm[i, : len(s)] = torch.tensor(s), torch.tensor(a, dtype=torch.float), 1
    return x, am, pm


def _copy_batch(vocab, rng, n, half, bos):
    """Random token sequences of length ``half`` repeated once; the answer mask covers the repeat."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    r = torch.randint(4, vocab, (n, half), generator=g)  # ids 0–3 are the special tokens
    x = torch.cat([torch.full((n, 1), bos), r, r], 1)
    am = torch.cat([torch.zeros(n, half + 1), torch.ones(n, half)], 1)
    return x, am, torch.ones_like(am)


def encode_tiny(tok, ex):
    return tok(ex.prompt)["input_ids"], tok(ex.answer, add_special_tokens=False)["input_ids"]


def _train_tiny(model, world, tok, rng, progress):
    """The curriculum of TRAIN_PHASES; returns the answer-token accuracy of the last 50 task steps."""
    total = sum(p.steps for p in TRAIN_PHASES)
    opt = torch.optim.AdamW(model.parameters(), lr=TRAIN_LR["peak"], betas=(0.9, 0.98), weight_decay=0.01)
    warm, tail = TRAIN_LR["warmup"], TRAIN_LR["decay_steps"]

    def lr(s):
        if s < warm:
            return (s + 1) / warm
        return 1.0 if s < total - tail else 0.1 + 0.45 * (1 + math.cos(math.pi * (s - total + tail) / tail))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr)
    model.train()
    bar = tqdm(total=total, desc="train longctx-tiny", disable=not progress, leave=False)
    hits: list[float] = []
    for phase in TRAIN_PHASES:
        for _ in range(phase.steps):
            if rng.random() < phase.copy_frac:
                half = rng.choice(phase.lengths) if phase.copy_frac == 1.0 else 64
                x, am, pm = _copy_batch(len(tok), rng, max(1, phase.tokens // (2 * half)), half, tok.bos_token_id)
                task = False
            else:
                n = rng.choice(phase.lengths)
                x, am, pm = _batch(world, tok, rng, max(1, phase.tokens // n), n, phase.density)
                task = True
            logits = model(input_ids=x, attention_mask=pm.long()).logits[:, :-1]
            ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
            w = pm[:, 1:] * TRAIN_FILLER_WEIGHT + am[:, 1:]  # answer tokens weigh 1 + the filler weight
            loss = (ce * w).sum() / w.sum()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            if task:
                mask = am[:, 1:] > 0
                hits = [*hits[-49:], float((logits.argmax(-1)[mask] == x[:, 1:][mask]).float().mean())]
                bar.set_postfix(answer_acc=f"{_mean(hits):.2f}", refresh=False)
            bar.update()
    bar.close()
    model.eval()
    return _mean(hits)


def tiny_longctx_model(trained: bool = True, seed: int = 0, progress: bool = True):
    """(model, tokenizer, world) of the tiny long-context model, trained by TRAIN_PHASES (``trained=False``: random
    init, for smoke runs). Cached under the zoo folder with the training time; the key covers the architecture, the
    recipe and the world's vocabulary, so changing any of them retrains."""
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from ...lm.tiny import tiny_config
    from ...lm.tokenizer import build_word_tokenizer

    world = SyntheticLongCtx(seed=0)
    tok = build_word_tokenizer(world.vocabulary_texts())
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(vocab_size=len(tok), **TINY_MODEL))
    if not trained:
        return model.eval(), tok, world
    out = _tiny_dir(world, seed)

    def build_into(tmp):
        t0 = time.time()
        acc = _train_tiny(model, world, tok, random.Random(seed), progress)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp / "tokenizer")
        return {"train_s": time.time() - t0, "threads": torch.get_num_threads(), "final_answer_acc": acc}

    cached_folder(out, "the tiny long-context model", build_into, record="train.json", quiet=not progress)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    tok = PreTrainedTokenizerFast.from_pretrained(out / "tokenizer")
    return model.eval(), tok, world


def _tiny_dir(world, seed):
    spec = [TINY_RECIPE, world.vocabulary_texts()]
    key = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]
    return trained_cache_dir() / "zoo" / f"longctx-tiny-s{seed}-{key}"


def tiny_train_info(seed: int = 0) -> dict:
    """The cached tiny model's training record (seconds, threads, final answer accuracy), or {} if not trained yet."""
    f = _tiny_dir(SyntheticLongCtx(seed=0), seed) / "train.json"
    return json.loads(f.read_text()) if f.exists() else {}


def _mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")
