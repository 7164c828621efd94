"""Training: the base flow policy by flow matching, and REMAC's LoRA fine-tuning (arXiv:2601.20130, §3).

REMAC fine-tunes a frozen pretrained flow policy v_pi with LoRA (through `peft`, on every linear layer of the
mixer: input projection, token and channel MLPs, output head, as the official code) so that it generates the rest of
a chunk consistently with a committed prefix of d actions:

1. Prefix masking (§3.2): d ~ U{0, ..., d_max} per example, m_d^tau = 1[tau >= d]; the mask is an input (the prefix
   bit, see `policy.py`) and the flow loss covers only tau >= d:
   L_m = sum_tau m_d^tau rho(u^_tau - u_tau) / max(1, sum_tau m_d^tau), rho = squared error (paper) or the
   Charbonnier penalty sqrt(r^2 + 1e-6) (official code, our default).
2. Self-conditioned curriculum (§3.3): the interpolant is built from A^ = gamma A + sg((1 - gamma) A~) with A~ a
   sample of the frozen base (LoRA off, 5 Euler steps from noise) and gamma ~ Bernoulli(sigma), sigma held at
   `sigma_start` for a fraction `hold` of training, then linear to `sigma_end`; the target stays u = A - eps.
3. Residual alignment (§3.3): L_Delta = sum_tau || m (u - u~) - m (u^ - u~) ||^2 / max(1, sum m), u~ the base's
   prediction at the same input. Note (u - u~) - (u^ - u~) = u - u^: L_Delta is the squared masked flow error. With the
   paper's squared L_m it duplicates L_m exactly (a factor 2 on the loss, nothing under Adam); it adds a distinct
   term only next to the code's Charbonnier L_m. We keep both forms (`penalty`) and test the identity.

Total: L = lambda_m L_m + lambda_Delta L_Delta (paper: 0.01 each). After training, `merge` folds LoRA into the
weights (peft `merge_and_unload`): the merged policy has the base's architecture and inference cost.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .policy import FlowChunkPolicy, prefix_mask
from .sampling import sample_flow

LORA_TARGETS = ["in_proj", "token_in", "token_out", "channel_in", "channel_out", "out_proj"]


@dataclass(frozen=True)
class FlowTrainConfig:
    max_steps: int = field(default=4000, metadata={"help": "largest number of Adam steps (ours)"})
    batch: int = field(default=128, metadata={"help": "batch size (ours)"})
    lr: float = field(default=1e-3, metadata={"help": "AdamW learning rate, cosine decay (ours)"})
    weight_decay: float = field(default=1e-4, metadata={"help": "AdamW weight decay (ours)"})
    eval_every: int = field(default=250, metadata={"help": "steps between validation losses (ours)"})
    patience: int = field(default=4, metadata={"help": "evaluations without improvement before stopping (ours)"})

    def __post_init__(self):
        if min(self.max_steps, self.batch, self.eval_every, self.patience) < 1 or self.lr <= 0:
            raise ValueError("FlowTrainConfig: max_steps, batch, eval_every, patience must be >= 1 and lr > 0")


@dataclass(frozen=True)
class REMACConfig:
    masking: bool = field(default=True, metadata={"help": "delay-conditioned prefix masking (§3.2)"})
    curriculum: bool = field(default=True, metadata={"help": "self-conditioned curriculum (§3.3)"})
    delta: bool = field(default=True, metadata={"help": "residual-alignment loss L_Delta (§3.3)"})
    d_max: int = field(default=4, metadata={"help": "training delays d ~ U{0..d_max} (official code: 4)"})
    lambda_m: float = field(default=0.01, metadata={"help": "weight of L_m (paper: 0.01)"})
    lambda_delta: float = field(default=0.01, metadata={"help": "weight of L_Delta (paper: 0.01)"})
    penalty: str = field(default="charbonnier", metadata={"help": "rho of L_m: 'charbonnier' (code) or 'l2' (paper)"})
    sigma_start: float = field(default=1.0, metadata={"help": "curriculum P(ground truth) at start (code: 1.0)"})
    sigma_end: float = field(default=0.0, metadata={"help": "curriculum P(ground truth) at end (code: mostly 0.0)"})
    hold: float = field(default=0.15, metadata={"help": "fraction of training held at sigma_start (code: 0.1-0.35)"})
    self_steps: int = field(default=5, metadata={"help": "Euler steps of the base's own samples A~ (code: 5)"})
    lora: str = field(
        default="input_bit",
        metadata={
            "help": "'input_bit' (ours: the mask as an input column, merge exact) or 'gated' (the official "
            "mask-gated LoRA with a mask projection; cannot be merged, see gated.py)"
        },
    )
    lambda_keep: float = field(
        default=0.0,
        metadata={"help": "weight of the code's keep term on the prefix (official: 0.01; ours 0 by default)"},
    )
    prefix_input: str = field(
        default="noisy",
        metadata={
            "help": "prefix positions of the training input: 'noisy' "
            "interpolant (paper, code) or 'clean' A^ (ours: as at inference, where it is clamped)"
        },
    )
    rank: int = field(default=4, metadata={"help": "LoRA rank (Kinetix code: 4; real pi0: 8)"})
    alpha: float = field(default=8.0, metadata={"help": "LoRA alpha (Kinetix code: 8)"})
    dropout: float = field(default=0.1, metadata={"help": "LoRA dropout (Kinetix code: 0.1)"})
    lr: float = field(default=3e-4, metadata={"help": "Adam LR (code: swept {1e-5, 3e-5, 1e-4, 3e-4} per task)"})
    steps: int = field(default=1500, metadata={"help": "fine-tuning steps (code: 32 epochs; ours)"})
    batch: int = field(default=128, metadata={"help": "batch size (ours)"})

    def __post_init__(self):
        if self.prefix_input not in ("noisy", "clean"):
            raise ValueError(f"REMACConfig.prefix_input must be 'noisy' or 'clean', got {self.prefix_input!r}")
        if self.lora not in ("input_bit", "gated"):
            raise ValueError(f"REMACConfig.lora must be 'input_bit' or 'gated', got {self.lora!r}")
        if self.lambda_keep < 0 or self.lambda_m < 0 or self.lambda_delta < 0:
            raise ValueError("REMACConfig: lambda_m, lambda_delta, lambda_keep must be >= 0")
        if self.penalty not in ("charbonnier", "l2"):
            raise ValueError(f"REMACConfig.penalty must be 'charbonnier' or 'l2', got {self.penalty!r}")
        for name in ("sigma_start", "sigma_end", "hold", "dropout"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"REMACConfig.{name} must lie in [0, 1], got {getattr(self, name)!r}")
        if min(self.rank, self.steps, self.batch, self.self_steps) < 1 or self.d_max < 0 or self.lr <= 0:
            raise ValueError("REMACConfig: rank, steps, batch, self_steps must be >= 1, d_max >= 0, lr > 0")


def flow_loss(policy, obs: torch.Tensor, a: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Conditional flow matching: x_s = (1 - s) eps + s A, u = A - eps, mean squared error of v(o, x_s, s)."""
    s = torch.rand(a.shape[0], generator=gen)
    eps = torch.randn(a.shape, generator=gen)
    x = (1 - s)[:, None, None] * eps + s[:, None, None] * a
    return ((policy(obs, x, s) - (a - eps)) ** 2).mean()


def train_flow(policy: FlowChunkPolicy, obs, chunks, val_obs, val_chunks, cfg: FlowTrainConfig, seed: int,
               log=None) -> dict:  # fmt: skip
    """Train the base policy; early stopping on the validation flow loss (fixed noise), best weights restored."""
    gen, vgen = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)
    obs, chunks = torch.as_tensor(obs), torch.as_tensor(chunks)
    vo, va = torch.as_tensor(val_obs), torch.as_tensor(val_chunks)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.max_steps)
    best, best_state, bad, step = math.inf, None, 0, 0
    for step in tqdm(range(1, cfg.max_steps + 1), desc="base flow policy", leave=False, mininterval=5):
        idx = torch.randint(0, len(obs), (cfg.batch,), generator=gen)
        loss = flow_loss(policy, obs[idx], chunks[idx], gen)
        opt.zero_grad(), loss.backward(), opt.step(), sched.step()
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            with torch.no_grad():
                vgen.manual_seed(seed + 1)
                val = float(flow_loss(policy, vo, va, vgen))
            if val < best - 1e-4:
                best, best_state, bad = val, copy.deepcopy(policy.state_dict()), 0
            else:
                bad += 1
            if log:
                log(f"base step {step}: val flow loss {val:.4f}")
            if bad >= cfg.patience:
                break
    if best_state is not None:
        policy.load_state_dict(best_state)
    return {"val_loss": best, "steps": step}


def with_lora(base: FlowChunkPolicy, cfg: REMACConfig):
    """A LoRA copy of `base` (base weights frozen, LoRA B = 0 so it starts equal to the base): peft LoRA on every
    mixer linear layer (``cfg.lora='input_bit'``), or the official mask-gated form (``'gated'``, `GatedLoRAPolicy`)."""
    if cfg.lora == "gated":
        from .gated import GatedLoRAPolicy

        return GatedLoRAPolicy(base, cfg.rank, cfg.alpha, cfg.dropout)
    from peft import LoraConfig, get_peft_model

    lcfg = LoraConfig(r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=LORA_TARGETS)
    return get_peft_model(copy.deepcopy(base), lcfg)


def merge(peft_model) -> FlowChunkPolicy:
    """Fold LoRA into the base weights (W <- W + alpha / r * B A); returns a plain `FlowChunkPolicy`. A mask-gated
    model (`GatedLoRAPolicy`) cannot be merged: a TypeError says so."""
    return copy.deepcopy(peft_model).merge_and_unload().eval()


def sigma_schedule(step: int, total: int, cfg: REMACConfig) -> float:
    """Curriculum P(ground truth): `sigma_start` for a fraction `hold` of training, then linear to `sigma_end`
    (the official piecewise schedule, kind 3, without its warm-up)."""
    frac = min(max((step / max(total, 1) - cfg.hold) / max(1e-9, 1 - cfg.hold), 0.0), 1.0)
    return cfg.sigma_start + (cfg.sigma_end - cfg.sigma_start) * frac


def _rho(r: torch.Tensor, penalty: str) -> torch.Tensor:
    return torch.sqrt(r * r + 1e-6) if penalty == "charbonnier" else r * r


def masked_flow_loss(u_hat: torch.Tensor, u: torch.Tensor, m: torch.Tensor, penalty: str = "l2") -> torch.Tensor:
    """Eq. L_m: mean over the batch of sum_tau m^tau rho(u^_tau - u_tau) / max(1, sum_tau m^tau)."""
    den = m.sum(dim=(1, 2)).clamp(min=1.0)
    return ((_rho(u_hat - u, penalty) * m).sum(dim=(1, 2)) / den).mean()


def remac_loss(model, base, obs, a, step: int, cfg: REMACConfig, gen: torch.Generator,
               a_tilde: torch.Tensor | None = None) -> dict[str, torch.Tensor]:  # fmt: skip
    """One batch of the REMAC objective (see module docstring); returns the total and its parts. `a_tilde`: the
    base's own samples for this batch (drawn here, LoRA off, when None)."""
    b, p = a.shape[:2]
    d = torch.randint(0, cfg.d_max + 1, (b,), generator=gen) if cfg.masking else torch.zeros(b, dtype=torch.long)
    m = prefix_mask(d, p)  # 1 on positions to generate
    a_hat = a
    if cfg.curriculum:  # A^ = gamma A + sg((1 - gamma) A~), gamma ~ Bernoulli(sigma)
        if a_tilde is None:
            a_tilde = sample_flow(base, obs, cfg.self_steps, gen)
        gam = (torch.rand(b, 1, 1, generator=gen) < sigma_schedule(step, cfg.steps, cfg)).float()
        a_hat = gam * a + (1 - gam) * a_tilde
    s = torch.rand(b, generator=gen)
    eps = torch.randn(a.shape, generator=gen)
    x = (1 - s)[:, None, None] * eps + s[:, None, None] * a_hat
    if cfg.prefix_input == "clean":  # our variant: the committed prefix enters clean, as it is clamped at inference
        x = m * x + (1 - m) * a_hat
    u = a - eps  # the target stays the ground-truth velocity
    u_hat = model(obs, x, s, d if cfg.masking else None)
    if cfg.masking:
        l_m = masked_flow_loss(u_hat, u, m, cfg.penalty)
    else:  # LoRA-only arm: the plain flow-matching loss on every position
        l_m = ((u_hat - u) ** 2).mean()
    out = {"l_m": l_m, "total": cfg.lambda_m * l_m}
    if cfg.delta or cfg.lambda_keep > 0:
        with torch.no_grad():
            u_base = base(obs, x, s)
    if cfg.delta:
        # Eq. L_Delta: the LoRA correction u^ - u~ must match the residual u - u~ on the generated positions
        l_d = masked_flow_loss((u_hat - u_base) * m, (u - u_base) * m, m, "l2")
        out["l_delta"], out["total"] = l_d, out["total"] + cfg.lambda_delta * l_d
    if cfg.lambda_keep > 0:  # the code's keep term: on the committed prefix the LoRA model stays the base
        l_k = (((u_hat - u_base) ** 2) * (1 - m)).mean()
        out["l_keep"], out["total"] = l_k, out["total"] + cfg.lambda_keep * l_k
    return out


def self_samples(base: FlowChunkPolicy, obs, n_steps: int = 5, seed: int = 0, batch: int = 4096) -> torch.Tensor:
    """One sample A~ of the frozen base per observation (the curriculum's self-generated chunks, drawn once)."""
    gen, obs = torch.Generator().manual_seed(seed), torch.as_tensor(obs)
    return torch.cat([sample_flow(base, obs[i : i + batch], n_steps, gen) for i in range(0, len(obs), batch)])


def finetune(base: FlowChunkPolicy, obs, chunks, cfg: REMACConfig, seed: int, log=None, a_tilde=None):
    """LoRA fine-tuning of a frozen base with the REMAC objective; returns the (unmerged) peft model.

    a_tilde: precomputed self-samples of the base, one per observation (`self_samples`); the official code draws a
    fresh one per batch (what happens when None), which costs `self_steps` extra forward passes per step."""
    gen = torch.Generator().manual_seed(seed)
    base = base.eval()
    model = with_lora(base, cfg)
    model.train()
    obs, chunks = torch.as_tensor(obs), torch.as_tensor(chunks)
    params = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    for step in tqdm(range(cfg.steps), desc="REMAC LoRA", leave=False, mininterval=5):
        idx = torch.randint(0, len(obs), (cfg.batch,), generator=gen)
        at = None if a_tilde is None or not cfg.curriculum else a_tilde[idx]
        loss = remac_loss(model, base, obs[idx], chunks[idx], step, cfg, gen, at)["total"]
        opt.zero_grad(), loss.backward(), opt.step()
    if log:
        log(f"LoRA fine-tune done: {sum(q.numel() for q in params)} trainable parameters")
    return model.eval()


def n_params(module: nn.Module, trainable_only: bool = False) -> int:
    return int(sum(q.numel() for q in module.parameters() if q.requires_grad or not trainable_only))


def to_numpy_chunker(fn):
    """Wrap a torch sampler `fn(obs_t, prev_t, d) -> chunk_t` as a numpy chunker for `execution.run_episode`."""

    def chunker(obs: np.ndarray, prev: np.ndarray | None, d: int) -> np.ndarray:
        prev = None if prev is None else torch.as_tensor(prev, dtype=torch.float32)
        with torch.no_grad():
            out = fn(torch.as_tensor(obs, dtype=torch.float32), prev, d)
        return out.numpy()

    return chunker
