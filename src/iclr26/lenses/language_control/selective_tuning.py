"""Selective fine-tuning of chosen transformer layers with a masked loss (LinguaMap's language-control fix).

LinguaMap (Ben Tamo et al., ICLR 2026, https://arxiv.org/abs/2601.20009) finds that the output language is decided in
the last few layers, after the cross-lingual similarity of hidden states drops. It therefore fine-tunes only the last
``k`` blocks ``θ_S`` (1–2 layers, 3–5 % of the parameters) and freezes the rest ``θ_{-S}``. The loss is the causal-LM
negative log-likelihood restricted by a token mask that is 1 on question/reasoning/answer tokens (Q, R, A) and 0 on
the preamble and instruction (P, I), which act as frozen context:

    L_masked = − Σ_i m_i log P(y_i | y_<i; θ_S)          (normalised by Σ_i m_i)

``strategy`` picks ``S``: the last ``k`` blocks (the paper), the first ``k`` or ``k`` random blocks (the paper's
ablations) or everything (full fine-tuning). Frozen parameters get no gradient and are never touched by the optimiser.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from iclr26.lm.adapters import ModelAdapter

STRATEGIES = ("last", "first", "random", "all")


@dataclass
class SelectiveTuningConfig:
    strategy: str = field(default="last", metadata={"help": "which blocks to train: last | first | random | all (§4)"})
    k: int = field(default=2, metadata={"help": "number of blocks trained (paper: 2 for Qwen-3-32B, 1 for Bloom)"})
    epochs: int = field(default=5, metadata={"help": "passes over the fine-tuning set (paper: 5)"})
    lr: float = field(
        default=5e-5, metadata={"help": "AdamW learning rate; not stated, our choice (a common SFT value)"}
    )
    batch_size: int = field(default=16, metadata={"help": "examples per step; not stated, our choice"})
    train_final_norm: bool = field(
        default=True, metadata={"help": "train the final norm with the last block; not stated, our choice"}
    )
    train_lm_head: bool = field(default=False, metadata={"help": "train the unembedding; not stated, frozen by us"})
    seed: int = field(default=0, metadata={"help": "seed of the random-layer choice and of batch order"})

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"SelectiveTuningConfig.strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.k < 1:
            raise ValueError(f"SelectiveTuningConfig.k must be ≥ 1, got {self.k}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("SelectiveTuningConfig.epochs and batch_size must be ≥ 1")
        if not self.lr > 0:
            raise ValueError(f"SelectiveTuningConfig.lr must be > 0, got {self.lr}")


def select_layers(n_layers: int, strategy: str, k: int, seed: int = 0) -> list[int]:
    """The block indices ``S`` a strategy trains."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "all":
        return list(range(n_layers))
    if not 1 <= k <= n_layers:
        raise ValueError(f"k must be in 1..{n_layers} (the model's number of layers), got {k}")
    if strategy == "last":
        return list(range(n_layers - k, n_layers))
    if strategy == "first":
        return list(range(k))
    return sorted(random.Random(seed).sample(range(n_layers), k))


def _unique(params) -> list[torch.nn.Parameter]:
    seen, out = set(), []
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out


def freeze_except(
    model, layers: Sequence[int], train_final_norm: bool = True, train_lm_head: bool = False, train_all: bool = False
) -> float:
    """Set ``requires_grad`` so only ``layers`` (and optionally the final norm / head) train; returns the fraction.

    Tied parameters (e.g. an lm_head tied to the embedding) are counted once.
    """
    ad = ModelAdapter(model)
    params = _unique(model.parameters())
    for p in params:
        p.requires_grad_(train_all)
    if not train_all:
        for layer in layers:
            for p in ad.block(layer).parameters():
                p.requires_grad_(True)
        if train_final_norm:
            for p in ad.final_norm.parameters():
                p.requires_grad_(True)
        if train_lm_head:
            for p in ad.lm_head.parameters():
                p.requires_grad_(True)
    return trainable_fraction(model)


def trainable_fraction(model) -> float:
    params = _unique(model.parameters())
    return sum(p.numel() for p in params if p.requires_grad) / sum(p.numel() for p in params)


def masked_lm_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, loss_mask: torch.Tensor):
    """``−Σ m_i log P(y_i | y_<i) / Σ m_i``; ``loss_mask[b, i] = 1`` where token ``i`` is supervised (Q, R, A)."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), input_ids[:, 1:], reduction="none")
    m = (loss_mask[:, 1:] * attention_mask[:, 1:]).float()
    if m.sum() == 0:
        raise ValueError("the loss mask selects no tokens: mark the Q/R/A tokens with 1")
    return (nll * m).sum() / m.sum()


def encode_parts(tok, examples: Sequence[tuple[str, str]], max_len: int = 512):
    """``(context, supervised)`` text pairs → ids, attention mask and loss mask (0 on BOS + context, 1 after).

    The context holds the P and I parts, the supervised text the Q, R and A parts; an EOS closes the example.
    """
    seqs, masks = [], []
    for ctx, sup in examples:
        a = tok(ctx, add_special_tokens=False)["input_ids"] if ctx else []
        b = tok(sup, add_special_tokens=False)["input_ids"]
        if not b:
            raise ValueError(f"empty supervised part in example {ctx!r} / {sup!r}")
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
        eos = [tok.eos_token_id] if tok.eos_token_id is not None else []
        ids = (bos + a + b + eos)[:max_len]
        seqs.append(ids)
        masks.append(([0] * (len(bos) + len(a)) + [1] * (len(b) + len(eos)))[:max_len])
    n = max(map(len, seqs))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.full((len(seqs), n), pad, dtype=torch.long)
    att = torch.zeros_like(ids)
    lm = torch.zeros_like(ids)
    for i, (s, m) in enumerate(zip(seqs, masks)):
        ids[i, : len(s)] = torch.tensor(s)
        att[i, : len(s)] = 1
        lm[i, : len(m)] = torch.tensor(m)
    return ids, att, lm


@dataclass
class SelectiveTuningResult:
    layers: list[int]
    trainable_fraction: float
    n_trainable: int
    losses: list[float]


def selective_finetune(
    model, tok, examples: Sequence[tuple[str, str]], cfg: SelectiveTuningConfig | None = None, progress: bool = True
) -> SelectiveTuningResult:
    """Fine-tune ``model`` in place on ``(context, supervised)`` pairs, training only the selected blocks.

    Gradients are enabled inside, so this works where the caller switched autograd off globally.
    """
    with torch.enable_grad():
        return _selective_finetune(model, tok, examples, cfg, progress)


def _selective_finetune(model, tok, examples, cfg, progress) -> SelectiveTuningResult:
    cfg = cfg or SelectiveTuningConfig()
    if not examples:
        raise ValueError("no fine-tuning examples given")
    ad = ModelAdapter(model)
    layers = select_layers(ad.n_layers, cfg.strategy, cfg.k, cfg.seed)
    frac = freeze_except(model, layers, cfg.train_final_norm, cfg.train_lm_head, train_all=cfg.strategy == "all")
    trainable = [p for p in _unique(model.parameters()) if p.requires_grad]
    ids, att, lm = encode_parts(tok, examples)
    opt = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=0.0)
    steps = cfg.epochs * math.ceil(len(examples) / cfg.batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)))  # cosine
    gen = torch.Generator().manual_seed(cfg.seed)
    model.train()
    losses = []
    bar = tqdm(total=steps, desc=f"tune {cfg.strategy}-{cfg.k}", disable=not progress, leave=False)
    for _ in range(cfg.epochs):
        order = torch.randperm(len(examples), generator=gen)
        for i in range(0, len(order), cfg.batch_size):
            b = order[i : i + cfg.batch_size]
            n = int(att[b].sum(1).max())
            loss = masked_lm_loss(model, ids[b, :n], att[b, :n], lm[b, :n])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update(1)
    bar.close()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(True)
    return SelectiveTuningResult(layers, frac, sum(p.numel() for p in trainable), losses)
