"""The micro reasoner of the VTA reproduction: a tiny llama with the exact word tokenizer, pre-trained once (cached) on
prompt + analyst-completion texts of a separate market seed — the stand-in for the paper's instruction-tuned LLM, so
that each seed's SFT and Time-GRPO start from a model that already writes the format."""

from __future__ import annotations

import dataclasses
import math
import random
import time

import torch
from transformers import AutoModelForCausalLM

from iclr26.core.cache import cached_folder
from iclr26.core.paths import trained_cache_dir
from iclr26.lm.tiny import tiny_model
from iclr26.lm.train import pad_batch
from iclr26.rlft.abstention import exact_word_tokenizer

from .data import build, vocabulary

BASE_SEED = 10_000  # market seed of the base texts, disjoint from every reproduction seed's market


def tokenizer():
    return exact_word_tokenizer(vocabulary())


def fresh(cfg, tok, seed: int = 0):
    m = tiny_model("llama", seed=seed, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4,
                   max_len=96)  # fmt: skip
    m.config.pad_token_id = tok.pad_token_id
    m.config.eos_token_id = m.generation_config.eos_token_id = tok.eos_token_id
    m.generation_config.pad_token_id = tok.pad_token_id
    m.generation_config.bos_token_id = None
    return m


def clone(model, cfg, tok):
    """A fresh copy (not `copy.deepcopy`: TRL patches `forward` on the instance it trains)."""
    new = fresh(cfg, tok)
    new.load_state_dict(model.state_dict())
    return new.eval()


def base_reasoner(cfg, tok, progress: bool = True) -> tuple[torch.nn.Module, float]:
    """The cached base reasoner (trained on first use, under a lock) and the seconds spent training it now."""
    key = f"vta-base-d{cfg.d_model}-l{cfg.n_layers}-s{cfg.base_steps}-n{cfg.base_stocks}-v1"
    folder = trained_cache_dir() / "zoo" / key
    built = []

    def build_into(tmp):
        t0 = time.time()
        model = fresh(cfg, tok)
        base_cfg = dataclasses.replace(cfg, n_stocks=cfg.base_stocks, oracle_paths=1)
        splits = build(base_cfg, BASE_SEED)
        texts = [p + c for s in splits.values() for p, c in zip(s.prompts, s.sft)]
        _train(model, tok, texts, cfg.base_steps, progress)
        model.save_pretrained(tmp)
        built.append(time.time() - t0)
        return {"seconds": built[0], "steps": cfg.base_steps}

    cached_folder(folder, f"the VTA base reasoner {key}", build_into)  # verified by digest, rebuilt if damaged
    spent = built[0] if built else 0.0
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.generation_config = fresh(cfg, tok).generation_config
    return model.eval(), spent


def _train(model, tok, texts, steps: int, progress: bool, batch_size: int = 64, lr: float = 3e-3, warmup: int = 50):
    """Next-token training on ``texts + <eos>`` (no BOS: TRL's trainers add none with this tokenizer)."""
    from tqdm.auto import tqdm

    data = [x + [tok.eos_token_id] for x in tok(list(texts), add_special_tokens=False)["input_ids"]]
    rng = random.Random(BASE_SEED)
    torch.manual_seed(BASE_SEED)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98))

    def lr_at(step):  # linear warm-up, cosine decay to 10 %
        if step < warmup:
            return (step + 1) / warmup
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    with torch.enable_grad():
        for _ in tqdm(range(steps), desc="vta base reasoner", disable=not progress, leave=False):
            ids, mask = pad_batch([data[rng.randrange(len(data))] for _ in range(batch_size)], tok.pad_token_id)
            loss = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
    model.eval()
