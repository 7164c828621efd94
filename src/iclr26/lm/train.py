"""A small causal-LM pretraining loop (AdamW, warm-up + cosine decay, progress bar).

Two ways to batch text:

- ``sentences``: each text is one example (BOS + tokens + EOS, right-padded; loss on real tokens only), as for a
  fact world where every sentence is a fact;
- ``stream``: all texts tokenised, concatenated with EOS between them and cut into ``seq_len`` blocks, as for prose.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm


@dataclass
class TrainConfig:
    steps: int = field(default=1000, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=32, metadata={"help": "examples (sentences or blocks) per step"})
    lr: float = field(default=3e-3, metadata={"help": "peak AdamW learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    warmup: int = field(default=50, metadata={"help": "linear warm-up steps before the cosine decay"})
    seq_len: int = field(default=64, metadata={"help": "block length in stream mode; max length in sentences mode"})
    mode: str = field(default="sentences", metadata={"help": "'sentences' or 'stream'"})
    grad_clip: float = field(default=1.0, metadata={"help": "gradient-norm clip"})
    seed: int = 0

    def __post_init__(self):
        if self.mode not in ("sentences", "stream"):
            raise ValueError(f"TrainConfig.mode must be 'sentences' or 'stream', got {self.mode!r}")
        for name in ("steps", "batch_size", "seq_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"TrainConfig.lr must be > 0, got {self.lr}")


def encode_sentences(tok, texts: Sequence[str], max_len: int) -> list[list[int]]:
    ids = tok(list(texts), add_special_tokens=False)["input_ids"]
    return [[tok.bos_token_id, *x[: max_len - 2], tok.eos_token_id] for x in ids]


def encode_stream(tok, texts: Sequence[str], seq_len: int) -> torch.Tensor:
    flat: list[int] = []
    for x in tok(list(texts), add_special_tokens=False)["input_ids"]:
        flat.extend(x)
        if tok.eos_token_id is not None:
            flat.append(tok.eos_token_id)
    n = len(flat) // seq_len
    if n == 0:
        raise ValueError(f"not enough text for one block of {seq_len} tokens ({len(flat)} tokens)")
    return torch.tensor(flat[: n * seq_len]).view(n, seq_len)


def pad_batch(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def lm_loss(model, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean next-token cross-entropy over real (unmasked) target tokens."""
    labels = ids.clone()
    if mask is not None:
        labels[mask == 0] = -100
    return model(input_ids=ids, attention_mask=mask, labels=labels).loss


def train_lm(
    model,
    tok,
    texts: Sequence[str],
    cfg: TrainConfig,
    extra_loss: Callable | None = None,
    callback: Callable[[int, float], None] | None = None,
    progress: bool = True,
    desc: str = "pretrain",
) -> list[float]:
    """Train ``model`` on ``texts``; returns the loss per step. ``extra_loss(model, ids, mask, out)`` is added.

    Gradients are enabled inside, so training also works where the caller switched autograd off
    (``torch.set_grad_enabled(False)``, common in interpretability notebooks).
    """
    with torch.enable_grad():
        return _train_lm(model, tok, texts, cfg, extra_loss, callback, progress, desc)


def _train_lm(model, tok, texts, cfg, extra_loss, callback, progress, desc) -> list[float]:
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    if cfg.mode == "sentences":
        data = encode_sentences(tok, texts, cfg.seq_len)
    else:
        blocks = encode_stream(tok, texts, cfg.seq_len)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))

    def lr_at(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    losses = []
    bar = tqdm(range(cfg.steps), desc=desc, disable=not progress, leave=False)
    for step in bar:
        if cfg.mode == "sentences":
            ids, mask = pad_batch([data[rng.randrange(len(data))] for _ in range(cfg.batch_size)], tok.pad_token_id)
        else:
            idx = torch.tensor([rng.randrange(len(blocks)) for _ in range(cfg.batch_size)])
            ids, mask = blocks[idx], None
        labels = ids.clone()
        if mask is not None:
            labels[mask == 0] = -100
        out = model(input_ids=ids, attention_mask=mask, labels=labels, output_hidden_states=extra_loss is not None)
        loss = out.loss
        if extra_loss is not None:
            loss = loss + extra_loss(model, ids, mask, out)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(out.loss.item())
        if step % 20 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if callback is not None:
            callback(step, losses[-1])
    model.eval()
    return losses
