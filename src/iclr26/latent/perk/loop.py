"""The outer training loop shared by PERK's meta-training and the FT-ICR baseline: AdamW steps on a batch of examples
with a linear warm-up then cosine decay, gradient clipping, and early stopping on a validation score that keeps the
best state. One loop for both, so that the method and its baseline are trained by the same rule."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from tqdm.auto import tqdm
from transformers import get_cosine_schedule_with_warmup

from iclr26.core.stopping import EarlyStopping


def fit(
    params: Sequence[torch.Tensor],
    opt: torch.optim.Optimizer,
    loss_fn: Callable,
    sample: Callable[[int], Sequence],
    steps: int,
    warmup: float,
    max_grad_norm: float,
    validate: Callable[[], float] | None = None,
    eval_every: int = 50,
    patience: int = 4,
    progress: bool = True,
    desc: str = "train",
    min_steps: int = 0,
) -> dict:
    """``steps`` steps of ``opt`` on the mean of ``loss_fn(example)`` over ``sample(step)``; every ``eval_every`` steps
    ``validate()`` (higher is better): the best state of ``params`` is kept and restored, training stops after
    ``patience`` evaluations without improvement, but never before ``min_steps`` steps (a learner on a plateau must be
    given the time to leave it). Returns the history (loss, val, val_step, best_step, seconds)."""
    params = list(params)
    sched = get_cosine_schedule_with_warmup(opt, max(1, int(warmup * steps)), steps)  # linear warm-up, cosine
    hist = {"loss": [], "val": [], "val_step": [], "best_step": 0, "seconds": 0.0}
    rule, t0 = EarlyStopping(patience, min_steps), time.time()  # higher is better
    bar = tqdm(range(steps), desc=desc, disable=not progress, leave=False)
    for step in bar:
        batch = sample(step)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for ex in batch:
            loss = loss_fn(ex) / len(batch)
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        opt.step()
        sched.step()
        hist["loss"].append(total)
        if validate is not None and ((step + 1) % eval_every == 0 or step + 1 == steps):
            score = validate()
            hist["val"].append(score)
            hist["val_step"].append(step + 1)
            bar.set_postfix(loss=f"{total:.3f}", val=f"{score:.3f}")
            if rule.update(step + 1, score, lambda: [p.detach().clone() for p in params]):
                break
    hist["best_step"] = rule.best_step
    if rule.state is not None:
        with torch.no_grad():
            for p, s in zip(params, rule.state):
                p.copy_(s)
    hist["seconds"] = time.time() - t0
    return hist
