"""Evaluation: greedy answers and the two scores of the paper, harmful score (HS) and fine-tune accuracy (FA)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


@torch.no_grad()
def greedy_answers(model, prompts: Sequence[Sequence[int]], max_new: int, eos_id: int, batch_size: int = 512):
    """Greedy continuations of equal-length token prompts (no padding needed), cut after the first ``eos_id``."""
    if not prompts:
        return []
    if len({len(p) for p in prompts}) != 1:
        raise ValueError("greedy_answers takes prompts of one length; group them by length first")
    was = model.training
    model.eval()
    out: list[list[int]] = []
    try:
        for i in range(0, len(prompts), batch_size):
            ids = torch.tensor([list(p) for p in prompts[i : i + batch_size]])
            for _ in range(max_new):
                nxt = model(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)
                ids = torch.cat([ids, nxt], 1)
            for row in ids[:, len(prompts[0]) :].tolist():
                out.append(row[: row.index(eos_id) + 1] if eos_id in row else row)
    finally:
        model.train(was)
    return out


def harmful_score(answers: Sequence, judge: Callable[[Sequence[int]], bool]) -> float:
    """HS: percentage of answers to harmful prompts the judge flags as harmful (paper: a moderation model)."""
    return 100.0 * sum(bool(judge(a)) for a in answers) / max(len(answers), 1)


def finetune_accuracy(answers: Sequence, targets: Sequence) -> float:
    """FA: percentage of exact-match answers on the user task's test set."""
    if len(answers) != len(targets):
        raise ValueError(f"{len(answers)} answers for {len(targets)} targets")
    return 100.0 * sum(list(a) == list(t) for a, t in zip(answers, targets, strict=True)) / max(len(targets), 1)
