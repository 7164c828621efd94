"""One update of each method as a gradient on the trainable parameters: Antibody's two stages, Booster, Lisa.

Every function takes ``loss_fn(model, batch) -> scalar`` (default: HF's mean token CE, `lm_loss`) so the same rule
runs on a causal LM, a LoRA-wrapped one (only tensors with ``requires_grad`` move) or a two-parameter toy. Gradients
are returned as ``{name: tensor}``; `apply` writes them into ``.grad`` for any torch optimizer.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import torch

from .losses import EMA, antibody_lambda_raw, grad_norm, lm_loss, trainable, weighted_lm_loss

LossFn = Callable[[torch.nn.Module, dict], torch.Tensor]


def gradients(model, batch, loss_fn: LossFn = lm_loss) -> tuple[float, dict[str, torch.Tensor]]:
    """Loss value and its gradient with respect to every trainable parameter."""
    params = trainable(model)
    loss = loss_fn(model, batch)
    gs = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    return float(loss.detach()), {
        k: (g if g is not None else torch.zeros_like(p)) for (k, p), g in zip(params.items(), gs, strict=True)
    }


def apply(model, grads: dict[str, torch.Tensor]) -> None:
    """Write ``grads`` into ``.grad`` (replacing what was there) so that ``optimizer.step()`` follows them."""
    for k, p in trainable(model).items():
        p.grad = grads[k].detach().clone()


@contextmanager
def perturbed(model, direction: dict[str, torch.Tensor], step: float):
    """Temporarily theta <- theta + step * direction; the original tensors are restored exactly on exit (a cheaper
    equivalent of the official code's deep copy)."""
    params = trainable(model)
    saved = {k: p.detach().clone() for k, p in params.items()}
    with torch.no_grad():
        for k, p in params.items():
            p.add_(direction[k], alpha=step)
    try:
        yield model
    finally:
        with torch.no_grad():
            for k, p in params.items():
                p.copy_(saved[k])


def attack_direction(g_harm: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The simulated attacker's normalised step -g_h / (||g_h|| + 1e-7) (official code's epsilon)."""
    n = float(grad_norm(g_harm)) + 1e-7
    return {k: -v / n for k, v in g_harm.items()}


def sharpness_gradient(model, harm_batch, alpha: float, loss_fn: LossFn = lm_loss, refusal_batch=None):
    """d = g_h(theta) - g_h(theta_p) with theta_p = theta - alpha g_h/||g_h||: the first-order gradient of the
    harmful-loss sharpness L_h(theta) - L_h(theta_p) (theta_p's dependence on theta dropped, as in both papers' code).

    With ``refusal_batch`` also returns g_r = grad L_refusal(theta_p) (Antibody's perturbed-refusal term)."""
    l_h, g_h = gradients(model, harm_batch, loss_fn)
    with perturbed(model, attack_direction(g_h), alpha):
        l_p, g_p = gradients(model, harm_batch, loss_fn)
        l_r, g_r = gradients(model, refusal_batch, loss_fn) if refusal_batch is not None else (float("nan"), None)
    d = {k: g_h[k] - g_p[k] for k in g_h}
    return d, g_r, {"harmful_loss": l_h, "perturbed_loss": l_p, "refusal_loss": l_r}


def booster_gradient(model, align_batch, harm_batch, lam: float, alpha: float, loss_fn: LossFn = lm_loss):
    """Booster (Huang et al., ICLR 2025, Eq. 3): g = grad L_align + lambda * (g_h(theta) - g_h(theta_p))."""
    d, _, info = sharpness_gradient(model, harm_batch, alpha, loss_fn)
    l_a, g_a = gradients(model, align_batch, loss_fn)
    info["align_loss"] = l_a
    return {k: g_a[k] + lam * d[k] for k in g_a}, info


def antibody_alignment_gradient(
    model,
    align_batch,
    harm_batch,
    refusal_batch,
    ema: EMA,
    eta: float,
    lambda2: float,
    alpha: float,
    loss_fn: LossFn = lm_loss,
):
    """Antibody stage 1 (paper §4.1, official `AntibodyAlignmentTrainer`):
    g = g_align + lambda_t (g_h - g_p) + lambda_2 g_refusal(theta_p), lambda_t = EMA(max(eta - cos(g_align, d), 0)).
    ``refusal_batch`` pairs each harmful prompt of ``harm_batch`` with its refusal."""
    d, g_r, info = sharpness_gradient(model, harm_batch, alpha, loss_fn, refusal_batch if lambda2 else None)
    l_a, g_a = gradients(model, align_batch, loss_fn)
    raw = antibody_lambda_raw(g_a, d, eta)
    lam = ema.update(raw)
    out = {k: g_a[k] + lam * d[k] + (lambda2 * g_r[k] if g_r is not None else 0.0) for k in g_a}
    info.update(align_loss=l_a, lambda_raw=raw, lambda_t=lam)
    return out, info


def weighted_finetune_gradient(model, batch, weights: torch.Tensor, loss_fn=weighted_lm_loss):
    """Antibody stage 2: gradient of the likelihood-ratio-weighted loss (weights from `likelihood_ratio_weights`)."""
    params = trainable(model)
    loss = loss_fn(model, batch, weights)
    gs = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    return {k: (g if g is not None else torch.zeros_like(p)) for (k, p), g in zip(params.items(), gs, strict=True)}, {
        "loss": float(loss.detach())
    }


class Lisa:
    """Lisa's Bi-State Optimization (Huang et al., NeurIPS 2024, Alg. 1; official `LisaTrainer`).

    Training alternates ``align_steps`` steps on alignment data with ``ft_steps`` steps on user data. On leaving a
    state the current weights become that state's anchor; each step's loss adds the proximal term
    rho/2 ||theta - anchor of the other state||^2 once more than ``warmup_steps`` steps were taken (official code:
    10% of the total, because the term slows early convergence).
    """

    ALIGN, FT = "alignment", "finetune"

    def __init__(self, model, rho: float, align_steps: int, ft_steps: int, warmup_steps: int = 0):
        if not 0 <= rho < float("inf") or align_steps < 0 or ft_steps < 1 or warmup_steps < 0:
            raise ValueError(
                f"Lisa needs rho >= 0, align_steps >= 0, ft_steps >= 1, warmup_steps >= 0; got rho={rho!r}, "
                f"align_steps={align_steps!r}, ft_steps={ft_steps!r}, warmup_steps={warmup_steps!r}"
            )
        self.rho, self.align_steps, self.ft_steps, self.warmup = rho, align_steps, ft_steps, warmup_steps
        snap = {k: p.detach().clone() for k, p in trainable(model).items()}
        self.anchor = {self.ALIGN: snap, self.FT: {k: v.clone() for k, v in snap.items()}}
        self.status = self.ALIGN if align_steps > 0 else self.FT
        self.clock = self.steps = 0

    def next_status(self, model) -> str:
        """The state of the coming step (switches, storing the anchor of the state left, when its steps are done)."""
        limit = self.align_steps if self.status == self.ALIGN else self.ft_steps
        if self.steps and self.clock >= limit and self.align_steps > 0:
            self.anchor[self.status] = {k: p.detach().clone() for k, p in trainable(model).items()}
            self.status = self.FT if self.status == self.ALIGN else self.ALIGN
            self.clock = 0
        return self.status

    def proximal(self, model) -> torch.Tensor:
        other = self.anchor[self.FT if self.status == self.ALIGN else self.ALIGN]
        return self.rho / 2 * sum(((p - other[k]) ** 2).sum() for k, p in trainable(model).items())

    def loss(self, model, batch, loss_fn: LossFn = lm_loss) -> torch.Tensor:
        """This step's loss: the state's data loss plus the proximal term (after the warm-up)."""
        loss = loss_fn(model, batch)
        if self.rho > 0 and self.steps > self.warmup:
            loss = loss + self.proximal(model)
        self.steps += 1
        self.clock += 1
        return loss

    def gradient(self, model, batch, loss_fn: LossFn = lm_loss):
        params = trainable(model)
        loss = self.loss(model, batch, loss_fn)
        gs = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
        return {k: (g if g is not None else torch.zeros_like(p)) for (k, p), g in zip(params.items(), gs, strict=True)}
