"""PERK's inner loop: a differentiable optimiser over a dict of LoRA tensors, written with ``torch.func``.

Test-time learning (paper §3, Eq. inner) writes the context into the LoRA parameters phi by K steps of causal-LM
loss on the context segments, encoded as one batch (positions restart in every segment):

    phi_{k+1} = phi_k - alpha_{k,l} * u_k,      u_k = AdamW(grad_phi L_in(phi_k; C))   (or u_k = grad, "sgd")

with one learned rate alpha_{k,l} per inner step k and LoRA tensor l (MAML++'s LSLR, the paper code's ``dyna_lr``).

Truncated unrolling (paper §3.2): the outer loss is back-propagated through the whole chain phi_0 -> phi_K, but
only the last T steps keep second-order terms (``create_graph``); in the first K - T steps the inner gradient is
detached (a constant), as the official code's ``grad_callback`` does before ``unroll_start``. Memory then holds T
unrolled graphs, not K.
"""

from __future__ import annotations

import torch
from torch.func import functional_call

from .config import PERKConfig


def clm_loss(model, params: dict[str, torch.Tensor], ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Eq. L_in: mean next-token cross-entropy over the real tokens of a batch of segments, with LoRA tensors
    ``params`` (a functional call: the module's own tensors are not touched)."""
    logits = functional_call(model, params, args=(), kwargs={"input_ids": ids, "attention_mask": mask}).logits
    tgt = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].flatten(0, 1).to(torch.promote_types(logits.dtype, torch.float32)),
        tgt.flatten(),
        ignore_index=-100,
    )


def answer_loss(model, params, ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. L_out: mean cross-entropy of the answer tokens (``labels`` is -100 elsewhere) given the question only."""
    logits = functional_call(model, params, args=(), kwargs={"input_ids": ids, "attention_mask": mask}).logits
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].flatten(0, 1).to(torch.promote_types(logits.dtype, torch.float32)),
        labels[:, 1:].flatten(),
        ignore_index=-100,
    )


def inner_loop(
    model,
    phi0: dict[str, torch.Tensor],
    lrs: torch.Tensor,
    ids: torch.Tensor,
    mask: torch.Tensor,
    cfg: PERKConfig,
    track: bool = False,
    replay: list[list[torch.Tensor]] | None = None,
) -> tuple[dict[str, torch.Tensor], list[float], list[list[torch.Tensor]]]:
    """Run K inner steps from ``phi0`` with per-step, per-tensor rates ``lrs`` [K, n_tensors].

    ``track=False`` (test time): every step is detached, nothing of the graph survives a step.
    ``track=True`` (meta-training): the result is a differentiable function of ``phi0`` and ``lrs``; the last
    ``cfg.unroll_last`` steps keep second-order terms, earlier ones use detached (constant) inner gradients.
    ``replay``: gradients to use instead of computing them in the first-order steps (to check the truncated gradient
    by finite differences: the truncated gradient is the exact gradient of the loop with those gradients frozen).

    Returns (phi_K, inner loss before each step, the detached inner gradients of the first-order steps).
    """
    names = list(phi0)
    K, T = cfg.inner_steps, (cfg.unroll_last if track else 0)
    if lrs.shape != (K, len(names)):
        raise ValueError(f"lrs must have shape (inner_steps={K}, n_tensors={len(names)}), got {tuple(lrs.shape)}")
    b1, b2 = cfg.inner_betas
    if track:  # tensors that are not leaves of the outer graph still need inner gradients
        phi = {n: p if p.requires_grad else p.detach().requires_grad_(True) for n, p in phi0.items()}
    else:
        phi = {n: p.detach().requires_grad_(True) for n, p in phi0.items()}
    m = {n: torch.zeros_like(p) for n, p in phi.items()}
    v = {n: torch.zeros_like(p) for n, p in phi.items()}
    losses, frozen = [], []
    with torch.enable_grad():
        for k in range(K):
            second = k >= K - T  # Eq. truncation: only the last T steps are differentiated to second order
            if replay is not None and not second and k < len(replay):
                grads = replay[k]
                losses.append(float("nan"))
            else:
                loss = clm_loss(model, phi, ids, mask)
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"PERK inner loop: the loss is {float(loss)} at inner step {k} (diverged): lower "
                        "PERKConfig.inner_lr (or the meta-learned rates) and check the inputs"
                    )
                g = torch.autograd.grad(loss, [phi[n] for n in names], create_graph=second, allow_unused=True)
                grads = [torch.zeros_like(phi[n]) if gi is None else gi for n, gi in zip(names, g)]
                if not second:
                    grads = [gi.detach() for gi in grads]
                    frozen.append(grads)
                losses.append(float(loss.detach()))
            new = {}
            for i, n in enumerate(names):
                gi, lr = grads[i], lrs[k, i]
                if cfg.inner_optimizer == "adam":  # differentiable AdamW (torch.optim.AdamW's update, bias-corrected)
                    m[n] = b1 * m[n] + (1 - b1) * gi
                    v[n] = b2 * v[n] + (1 - b2) * gi * gi
                    mhat, vhat = m[n] / (1 - b1 ** (k + 1)), v[n] / (1 - b2 ** (k + 1))
                    # sqrt(v + eps^2) instead of sqrt(v) + eps: equal where it matters, and differentiable at v = 0
                    # (LoRA's A gets an all-zero first gradient while B = 0; sqrt'(0) would give NaN second-order terms)
                    upd = mhat / (vhat + cfg.inner_eps**2).sqrt() + cfg.inner_weight_decay * phi[n]
                else:
                    upd = gi + cfg.inner_weight_decay * phi[n]
                new[n] = phi[n] - lr * upd  # Eq. inner: phi_{k+1} = phi_k - alpha_{k,l} u_k
            if not track:
                new = {n: p.detach().requires_grad_(True) for n, p in new.items()}
                m = {n: t.detach() for n, t in m.items()}
                v = {n: t.detach() for n, t in v.items()}
            phi = new
    if not track:
        phi = {n: p.detach() for n, p in phi.items()}
    return phi, losses, frozen
