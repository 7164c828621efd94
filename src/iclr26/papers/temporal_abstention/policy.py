"""The micro base policy of the reproduction: a tiny llama with the world's exact tokenizer, pre-trained once (cached)
on prompt + rationale texts of a separate world seed with a small share of unanswerables (a CoT warm start standing in
for the paper's instruct model)."""

from __future__ import annotations

import time

import torch
from transformers import AutoModelForCausalLM

from iclr26.core.cache import cached_folder
from iclr26.core.paths import trained_cache_dir
from iclr26.lm.tiny import tiny_model
from iclr26.lm.train import TrainConfig
from iclr26.rlft.abstention import exact_word_tokenizer
from iclr26.rlft.abstention.world import make_temporal_qa, short_rationale, vocabulary

BASE_SEED = 10_000  # world seed of the base texts, disjoint from every reproduction seed's data


def tokenizer():
    return exact_word_tokenizer(vocabulary())


def _fresh(cfg, tok, seed: int = 0):
    m = tiny_model("llama", seed=seed, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers,
                   n_heads=4, max_len=192)  # fmt: skip
    m.config.pad_token_id = tok.pad_token_id
    m.config.eos_token_id = m.generation_config.eos_token_id = tok.eos_token_id
    m.generation_config.pad_token_id = tok.pad_token_id
    m.generation_config.bos_token_id = None
    return m


def untrained_policy(cfg, tok, seed: int):
    """Control: the same architecture, random weights (the start of CoT-SFT when there is no base)."""
    return _fresh(cfg, tok, seed)


def start_policy(cfg, tok, base, seed: int):
    """Where a seed's CoT-SFT starts: the shared base, or (``base_steps == 0``) the seed's own random init."""
    return base if cfg.base_steps else untrained_policy(cfg, tok, seed)


def base_policy(cfg, tok, progress: bool = True) -> tuple[torch.nn.Module, float]:
    """The cached base policy (trained on first use, under a lock) and the seconds spent training it now; with
    ``cfg.base_steps == 0`` there is none (CoT-SFT starts from a random init, see `start_policy`)."""
    if not cfg.base_steps:
        return _fresh(cfg, tok), 0.0
    key = f"abstention-base-d{cfg.d_model}-l{cfg.n_layers}-s{cfg.base_steps}-n{cfg.base_items}"
    key += f"-u{cfg.base_unanswerable:g}" + ("-short" if cfg.short_rationales else "") + "-v1"
    folder = trained_cache_dir() / "zoo" / key
    built = []

    def build_into(tmp):
        t0 = time.time()
        model = _fresh(cfg, tok)
        items = make_temporal_qa(cfg.base_items, unanswerable_frac=cfg.base_unanswerable, seed=BASE_SEED)
        texts = [it.prompt + (short_rationale(it.rationale) if cfg.short_rationales else it.rationale)
                 for it in items]  # fmt: skip
        tc = TrainConfig(steps=cfg.base_steps, batch_size=32, lr=3e-3, warmup=50, seq_len=192, seed=BASE_SEED)
        _train_exact(model, tok, texts, tc, progress)
        model.save_pretrained(tmp)
        built.append(time.time() - t0)
        return {"seconds": built[0], "steps": cfg.base_steps}

    cached_folder(folder, f"the temporal-abstention base policy {key}", build_into)  # digest-verified
    spent = built[0] if built else 0.0
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.generation_config = _fresh(cfg, tok).generation_config
    return model.eval(), spent


def _train_exact(model, tok, texts, tc, progress):
    """Next-token training on ``texts + <eos>`` without a BOS token (TRL's trainers add none with this tokenizer)."""
    import math
    import random

    from tqdm.auto import tqdm

    from iclr26.lm.train import pad_batch

    data = [x + [tok.eos_token_id] for x in tok(list(texts), add_special_tokens=False)["input_ids"]]
    rng = random.Random(tc.seed)
    torch.manual_seed(tc.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=(0.9, 0.98))

    def lr_at(step):  # linear warm-up, cosine decay to 10 %
        if step < tc.warmup:
            return (step + 1) / tc.warmup
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - tc.warmup) / max(1, tc.steps - tc.warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    with torch.enable_grad():
        for _ in tqdm(range(tc.steps), desc="abstention base", disable=not progress, leave=False):
            ids, mask = pad_batch([data[rng.randrange(len(data))] for _ in range(tc.batch_size)], tok.pad_token_id)
            labels = ids.masked_fill(mask == 0, -100)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
    model.eval()
