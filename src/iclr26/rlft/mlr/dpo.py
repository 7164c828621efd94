"""SFT of each level and Step-DPO (paper §3.3; repository `SFT_*Level.py`, `stepDPO_*Level.py`).

Step-DPO is DPO on one step given its shared prefix h (TRL's sigmoid loss, summed completion log-probs):

    L = -log sigmoid( beta * [ (log pi(c_w|h) - log pi_ref(c_w|h)) - (log pi(c_l|h) - log pi_ref(c_l|h)) ] )

The prefix and each completion are tokenised separately and concatenated (TRL's DPO tokenisation), so chosen and
rejected share the exact same prefix ids. The reference is the policy at the start of the round: its log-probs are
computed once before training (TRL's ``precompute_ref_log_probs``). The planner's pairs train only the LoRA (adapter
on), the executor's train the backbone (adapter off), as the repository's two DPO scripts do.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm


def encode_parts(tok, parts: list[tuple[str, bool]], eos: bool = True) -> tuple[list[int], list[int]]:
    """ids and loss mask of (text, trained) parts: BOS + parts (+ EOS, trained with the last part)."""
    ids, mask = [tok.bos_token_id] if tok.bos_token_id is not None else [], []
    mask = [0] * len(ids)
    for text, train in parts:
        x = tok(text, add_special_tokens=False)["input_ids"]
        ids, mask = ids + x, mask + [int(train)] * len(x)
    if eos and tok.eos_token_id is not None:
        ids, mask = ids + [tok.eos_token_id], mask + [mask[-1] if mask else 1]
    return ids, mask


def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
    n = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (n - len(r)) for r in rows])


def masked_logps(model, ids: list[list[int]], mask: list[list[int]], pad_id: int, mean: bool = False) -> torch.Tensor:
    """Sum (or mean) of log pi(token) over the masked tokens of each row (right padding)."""
    x, m = _pad(ids, pad_id), _pad(mask, 0).float()
    att = _pad([[1] * len(r) for r in ids], 0)
    logits = model(input_ids=x, attention_mask=att).logits[:, :-1].float()
    lp = torch.gather(F.log_softmax(logits, -1), 2, x[:, 1:, None]).squeeze(-1) * m[:, 1:]
    s = lp.sum(1)
    return s / m[:, 1:].sum(1).clamp(min=1) if mean else s


def completion_logps(model, tok, prefixes: list[str], completions: list[str], mean=False, batch=256) -> torch.Tensor:
    """log pi(completion | prefix) per pair (no grad), prefix and completion tokenised separately."""
    out = []
    with torch.no_grad():
        for i in range(0, len(prefixes), batch):
            enc = [encode_parts(tok, [(p, False), (" " + c, True)], eos=False) for p, c in
                   zip(prefixes[i : i + batch], completions[i : i + batch], strict=True)]  # fmt: skip
            out.append(masked_logps(model, [e[0] for e in enc], [e[1] for e in enc], tok.pad_token_id, mean))
    return torch.cat(out) if out else torch.zeros(0)


def step_dpo_loss(pi_w, pi_l, ref_w, ref_l, beta: float):
    """TRL's sigmoid DPO loss (mean over pairs) and the implicit rewards beta * log(pi / pi_ref).

    The four inputs are per-pair summed log-probabilities of one shape; a NaN/inf input, a shape mismatch or a beta
    that is not a finite positive number is an error (a NaN loss would otherwise train silently)."""
    if not (isinstance(beta, (int, float)) and 0 < beta < float("inf")):
        raise ValueError(f"beta must be a finite number > 0 (DPO's KL strength; TRL: 0.1), got {beta!r}")
    named = {"pi_w": pi_w, "pi_l": pi_l, "ref_w": ref_w, "ref_l": ref_l}
    shapes = {k: tuple(v.shape) for k, v in named.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"the four log-probability tensors must have one shape (one entry per pair), got {shapes}")
    bad = [k for k, v in named.items() if not torch.isfinite(v).all()]
    if bad:
        raise ValueError(
            f"non-finite log-probabilities in {', '.join(bad)}: a NaN/inf log-prob (a diverged model, or -inf from a "
            "token of zero probability) makes the DPO loss NaN"
        )
    delta = (pi_w - ref_w) - (pi_l - ref_l)
    return -F.logsigmoid(beta * delta).mean(), beta * (pi_w - ref_w).detach(), beta * (pi_l - ref_l).detach()


def _trainable(model) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def step_dpo(model, tok, pairs: list[dict], *, beta: float, lr: float, epochs: int, batch_size: int, seed: int = 0,
             progress: bool = False) -> list[float]:  # fmt: skip
    """Train the trainable parameters of ``model`` (in the level context the caller set) on pairs
    {prompt, chosen, rejected}; returns the per-step losses."""
    if not pairs:
        return []
    sides = ("chosen", "rejected")
    enc = [
        tuple(encode_parts(tok, [(p["prompt"], False), (" " + p[k], True)], eos=False) for k in sides) for p in pairs
    ]
    pad = tok.pad_token_id
    was = model.training
    model.eval()
    with torch.no_grad():  # the reference = the policy at the start of the round (precomputed)
        ref = [(masked_logps(model, [w[0]], [w[1]], pad), masked_logps(model, [lo[0]], [lo[1]], pad)) for w, lo in enc]
    model.train()
    opt = torch.optim.AdamW(_trainable(model), lr=lr, weight_decay=0.0)
    rng, losses = random.Random(seed), []
    order = list(range(len(enc)))
    for _ in tqdm(range(epochs), disable=not progress, desc="Step-DPO"):
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            b = order[i : i + batch_size]
            rows = [enc[j][0] for j in b] + [enc[j][1] for j in b]
            lp = masked_logps(model, [r[0] for r in rows], [r[1] for r in rows], pad)
            pw, pl = lp[: len(b)], lp[len(b) :]
            rw = torch.cat([ref[j][0] for j in b])
            rl = torch.cat([ref[j][1] for j in b])
            loss, _, _ = step_dpo_loss(pw, pl, rw, rl, beta)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(_trainable(model), 1.0)
            opt.step()
            losses.append(loss.item())
    model.train(was)
    model.eval()
    return losses


def masked_sft(model, tok, examples: list[list[tuple[str, bool]]], *, lr: float, batch_size: int, max_epochs: int,
               evaluate: Callable[[], float] | None = None, patience: int = 2, seed: int = 0,
               progress: bool = False) -> dict:  # fmt: skip
    """SFT of the trainable parameters on the trained parts of each example, one epoch at a time; with
    ``evaluate`` (a validation score, higher is better) it stops after ``patience`` epochs without improvement and
    restores the best epoch's weights (early stopping). Returns {'epochs', 'best', 'scores', 'steps'}."""
    enc = [encode_parts(tok, ex) for ex in examples]
    params = _trainable(model)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    rng, order, scores, steps = random.Random(seed), list(range(len(enc))), [], 0
    best, best_state, bad = -float("inf"), None, 0
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    for _ in tqdm(range(max_epochs), disable=not progress, desc="SFT"):
        model.train()
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            b = [enc[j] for j in order[i : i + batch_size]]
            x, m = _pad([e[0] for e in b], tok.pad_token_id), _pad([e[1] for e in b], 0)
            att = _pad([[1] * len(e[0]) for e in b], 0)
            labels = x.masked_fill(m == 0, -100)
            loss = model(input_ids=x, attention_mask=att, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            steps += 1
        model.eval()
        if evaluate is None:
            continue
        s = evaluate()
        scores.append(s)
        if s > best:
            best, bad = s, 0
            sd = dict(model.named_parameters())
            best_state = {n: sd[n].detach().clone() for n in names}
        else:
            bad += 1
            if bad >= patience:
                break
    if best_state is not None:
        with torch.no_grad():
            sd = dict(model.named_parameters())
            for n, v in best_state.items():
                sd[n].copy_(v)
    model.eval()
    return {"epochs": len(scores) or max_epochs, "best": best, "scores": scores, "steps": steps}
