"""The equations of Antibody as tensor functions on any HF causal LM (and, through ``loss_fn``, on any module).

A *batch* is a dict with ``input_ids``, ``attention_mask`` and ``labels`` (prompt and padding positions -100), the
format of HF's causal-LM loss. Every per-sample quantity is over the answer tokens only.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

IGNORE = -100


def per_sample_nll(model, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed token NLL of each sequence's labelled tokens and their count, shapes (B,), (B,)."""
    out = model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"))
    logits = out.logits[:, :-1]
    labels = batch["labels"][:, 1:]
    ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="none", ignore_index=IGNORE)
    mask = labels.ne(IGNORE)
    ce = ce.view(labels.shape) * mask
    return ce.sum(1), mask.sum(1)


def lm_loss(model, batch) -> torch.Tensor:
    """Mean token cross-entropy over the batch's labelled tokens (HF's causal-LM loss)."""
    nll, n = per_sample_nll(model, batch)
    return nll.sum() / n.sum().clamp(min=1)


def weighted_lm_loss(model, batch, weights: torch.Tensor) -> torch.Tensor:
    """Antibody's fine-tuning loss, L = sum_i w_i sum_t CE(i, t) / sum_i w_i N_i (weights detached).

    Equal weights give exactly `lm_loss` (the standard HF mean)."""
    nll, n = per_sample_nll(model, batch)
    if weights.shape != nll.shape:
        raise ValueError(
            f"weights must have one entry per sample, shape {tuple(nll.shape)}; got {tuple(weights.shape)}"
        )
    if not torch.isfinite(weights).all() or (weights < 0).any() or not weights.sum() > 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0; got {weights.tolist()}")
    w = weights.detach().to(nll.dtype)
    return (w * nll).sum() / (w * n).sum().clamp(min=1e-12)


@torch.no_grad()
def likelihood_ratio_scores(model, batch, refusal_batch) -> torch.Tensor:
    """d_i = r_i - c_i: token-averaged NLL of the paired refusal minus that of the user's answer, i.e. the
    token-averaged log-likelihood ratio log pi(y_i|x_i)/|y_i| - log pi(y_r|x_i)/|y_r| (no gradient)."""
    b, r = batch["input_ids"].shape[0], refusal_batch["input_ids"].shape[0]
    if b != r:
        raise ValueError(
            f"refusal_batch holds {r} samples for a batch of {b}: pair every sample with the refusal for its own "
            "prompt (PairedCollator builds both views)"
        )
    c_sum, c_n = per_sample_nll(model, batch)
    r_sum, r_n = per_sample_nll(model, refusal_batch)
    for name, n in (("answer", c_n), ("refusal", r_n)):
        if (n == 0).any():
            raise ValueError(f"sample(s) {(n == 0).nonzero().flatten().tolist()} have no labelled {name} token")
    d = r_sum / r_n - c_sum / c_n
    if not torch.isfinite(d).all():
        raise ValueError(
            f"the log-likelihood ratios are not finite ({d.tolist()}): the model's log-probabilities are NaN/inf "
            "(a diverged model, or logits in a dtype that overflows)"
        )
    return d


def likelihood_ratio_weights(model, batch, refusal_batch, tau: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Stage-2 weights w = softmax(d / tau) across the batch, and the scores d. A sample whose answer the model finds
    less likely than refusing (a harmful one, after alignment) gets a small weight."""
    if not (isinstance(tau, (int, float)) and 0 < tau < float("inf")):
        raise ValueError(f"tau must be a finite number > 0, got {tau!r}")
    d = likelihood_ratio_scores(model, batch, refusal_batch)
    return torch.softmax(d / tau, dim=0), d


# ----- gradient dictionaries (parameters that require grad only: LoRA tensors under peft) ------------------------
def trainable(model) -> dict[str, torch.nn.Parameter]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def grad_norm(g: dict[str, torch.Tensor]) -> torch.Tensor:
    """||g|| over all tensors of a gradient dictionary (accumulated in float64)."""
    return torch.sqrt(sum((v.double() ** 2).sum() for v in g.values()))


def dot(a: dict, b: dict) -> torch.Tensor:
    return sum((a[k].double() * b[k].double()).sum() for k in a)


def cosine(a: dict, b: dict, eps: float = 1e-8) -> torch.Tensor:
    return dot(a, b) / (grad_norm(a) * grad_norm(b) + eps)


def antibody_lambda_raw(g_align: dict, d: dict, eta: float) -> float:
    """lambda_t = max(eta - cos(g_align, d), 0) (official code; the paper's KKT multiplier, Theorem 4.1, normalised).
    Since |cos| <= 1, lambda_t stays within [eta - 1, eta + 1] for eta >= 1 (at the paper's eta = 5: 4 to 6)."""
    if not (isinstance(eta, (int, float)) and 0 <= eta < float("inf")):
        raise ValueError(f"eta must be a finite number >= 0, got {eta!r}")
    c = float(cosine(g_align, d))
    if not math.isfinite(c):
        raise ValueError("cos(g_align, d) is not finite: the alignment or harmful gradient holds NaN/inf")
    return max(eta - c, 0.0)


class EMA:
    """Exponential moving average whose first value initialises it (lambda_t smoothing in the official code)."""

    def __init__(self, momentum: float):
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"EMA momentum must be in [0, 1), got {momentum!r}")
        self.momentum, self.value = momentum, None

    def update(self, x: float) -> float:
        if not math.isfinite(x):
            raise ValueError(f"EMA.update got a non-finite value {x!r}")
        self.value = x if self.value is None else self.momentum * self.value + (1 - self.momentum) * x
        return self.value
