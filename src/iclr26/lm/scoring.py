"""Scoring helpers shared by every LM method: next-token log-probabilities of targets, greedy answers, perplexity.

A *target* may span several tokens; its log-probability is the sum over its tokens, teacher-forced after the prompt.
Targets are scored with a leading space (" Paris"), as they follow the prompt in running text.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _cat(tok, prompt: str, target: str) -> tuple[list[int], int]:
    p = tok(prompt)["input_ids"]
    full = tok(prompt + " " + target)["input_ids"]
    if full[: len(p)] != p:  # BPE merged across the boundary: fall back to separate encoding
        full = p + tok(" " + target, add_special_tokens=False)["input_ids"]
    return full, len(p)


@torch.no_grad()
def target_logprobs(model, tok, prompts: Sequence[str], targets: Sequence[str], batch_size: int = 64) -> torch.Tensor:
    """log p(target | prompt) summed over the target's tokens, one value per (prompt, target) pair."""
    if len(prompts) != len(targets):
        raise ValueError(f"{len(prompts)} prompts but {len(targets)} targets")
    out = []
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    for i in range(0, len(prompts), batch_size):
        pairs = [_cat(tok, p, t) for p, t in zip(prompts[i : i + batch_size], targets[i : i + batch_size])]
        n = max(len(ids) for ids, _ in pairs)
        ids = torch.full((len(pairs), n), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for j, (seq, _) in enumerate(pairs):
            ids[j, : len(seq)] = torch.tensor(seq)
            mask[j, : len(seq)] = 1
        logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1)
        for j, (seq, start) in enumerate(pairs):
            pos = torch.arange(start, len(seq))
            out.append(logp[j, pos - 1, torch.tensor(seq[start:])].sum())
    return torch.stack(out)


@torch.no_grad()
def next_token_argmax(model, tok, prompts: Sequence[str], batch_size: int = 64) -> list[int]:
    """The greedy next token after each prompt (left context only; right padding handled)."""
    res = []
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    for i in range(0, len(prompts), batch_size):
        enc = [tok(p)["input_ids"] for p in prompts[i : i + batch_size]]
        n = max(map(len, enc))
        ids = torch.full((len(enc), n), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for j, e in enumerate(enc):
            ids[j, : len(e)] = torch.tensor(e)
            mask[j, : len(e)] = 1
        logits = model(input_ids=ids, attention_mask=mask).logits
        last = mask.sum(1) - 1
        res.extend(logits[torch.arange(len(enc)), last].argmax(-1).tolist())
    return res


def greedy_matches(model, tok, prompts: Sequence[str], answers: Sequence[str]) -> list[bool]:
    """Whether the greedy next token is the first token of the answer (exact for one-token answers)."""
    firsts = [_cat(tok, p, a)[0][_cat(tok, p, a)[1]] for p, a in zip(prompts, answers)]
    return [g == f for g, f in zip(next_token_argmax(model, tok, prompts), firsts)]


@torch.no_grad()
def perplexity(model, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-sequence perplexity exp(mean next-token NLL) over real tokens; ids [batch, seq]."""
    logits = model(input_ids=ids, attention_mask=mask).logits.float()
    nll = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    m = torch.ones_like(nll) if mask is None else mask[:, 1:].float()
    return torch.exp((nll * m).sum(1) / m.sum(1))
