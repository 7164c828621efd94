"""Finetuning a compressed student by knowledge distillation from the floating-point teacher (MBOK §4).

Loss (the paper says "KD from the FP16 teacher"; the exact form is not stated, ours is OneBit's):

    L = KL(p_teacher ‖ p_student)  +  γ · mean_l MSE(LN(h_l^student), LN(h_l^teacher))

over next-token distributions and the (parameter-free layer-normalised) hidden states of every block. The Boolean
kernels are updated by :class:`BooleanOptimizer` (bit flips, no latent weights); every other trainable tensor of the
student (scalings ``a_k, b_k``, norms, biases; for the OneBit baseline also its latent weights) by AdamW. Embeddings
and the head stay frozen.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from iclr26.core.stopping import EarlyStopping

from .baselines import OneBitLinear, QATLinear
from .config import MBOKConfig
from .model import boolean_layers
from .optim import BooleanOptimizer


def kd_loss(student_out, teacher_out, gamma: float = 1.0) -> torch.Tensor:
    """KL(teacher ‖ student) per token + γ × mean over layers of the MSE between normalised hidden states."""
    s_logp = F.log_softmax(student_out.logits.float(), -1)
    t_logp = F.log_softmax(teacher_out.logits.float(), -1)
    kl = (t_logp.exp() * (t_logp - s_logp)).sum(-1).mean()
    if gamma == 0 or student_out.hidden_states is None:
        return kl
    hs, ht = student_out.hidden_states[1:], teacher_out.hidden_states[1:]
    mse = sum(F.mse_loss(F.layer_norm(a, a.shape[-1:]), F.layer_norm(b, b.shape[-1:])) for a, b in zip(hs, ht))
    return kl + gamma * mse / len(hs)


def trainable_fp_params(student: nn.Module) -> list[nn.Parameter]:
    """Every parameter but embeddings (token and position) and the head: those stay frozen (not stated; ours)."""
    frozen = {id(p) for m in student.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    head = student.get_output_embeddings() if hasattr(student, "get_output_embeddings") else None
    if head is not None:
        frozen.update(id(p) for p in head.parameters())
    return [p for p in student.parameters() if id(p) not in frozen]


def state_bytes(fp_opt: torch.optim.Optimizer | None, bool_opt: BooleanOptimizer | None, latent=()) -> dict:
    """Measured optimiser memory: bytes of every tensor the optimisers keep between steps (+ latent weights)."""
    fp = 0
    if fp_opt is not None:
        for st in fp_opt.state.values():
            fp += sum(t.nbytes for t in st.values() if torch.is_tensor(t) and t.dim() > 0)
    boolean = sum(t.nbytes for t in bool_opt.state_tensors()) if bool_opt is not None else 0
    return {"fp_state": fp, "boolean_state": boolean, "latent": sum(t.nbytes for t in latent)}


def distill(
    student: nn.Module,
    teacher: nn.Module,
    blocks: torch.Tensor,
    cfg: MBOKConfig,
    boolean: bool = True,
    progress: bool = True,
    desc: str = "MBOK finetune",
    evaluate: Callable[[nn.Module], float] | None = None,
    eval_every: int = 25,
    patience: int = 3,
    min_steps: int = 0,
) -> dict:
    """Finetune ``student`` towards ``teacher`` on token blocks ``[N, T]`` for at most ``cfg.steps`` steps.

    ``boolean=True``: Boolean kernels (``cfg.kernels``) by bit flips + AdamW on the rest (MBOK). ``boolean=False``:
    AdamW on every trainable tensor (latent-weight QAT baselines such as OneBit). Returns losses, flip rates and
    the measured optimiser-state bytes.

    Early stopping (ours; the paper does not say how long it finetunes): with ``evaluate`` (a score of the student,
    lower is better, e.g. validation perplexity), the student is scored before the first step and every
    ``eval_every`` steps; training stops after ``patience`` scores without improvement, never before ``min_steps``,
    and the best-scoring state (signs included) is restored. ``info`` then holds ``val``, ``best_step``, ``steps_run``.
    """
    if blocks.dim() != 2 or len(blocks) == 0:
        raise ValueError(f"distill expects token blocks [N, T] with N ≥ 1, got shape {tuple(blocks.shape)}")
    if evaluate is not None and (eval_every < 1 or patience < 1 or min_steps < 0):
        raise ValueError(f"distill: eval_every and patience must be ≥ 1 and min_steps ≥ 0, got {eval_every}, "
                         f"{patience}, {min_steps}")  # fmt: skip
    stop = None if evaluate is None else _EarlyStop(student, evaluate, eval_every, patience, min_steps)
    with torch.enable_grad():
        return _distill(student, teacher, blocks, cfg, boolean, progress, desc, stop)


class _EarlyStop:
    """Scores the student every ``eval_every`` steps (lower is better); the rule is ``core.stopping.EarlyStopping``."""

    def __init__(self, student, evaluate, eval_every, patience, min_steps):
        self.student, self.evaluate, self.every = student, evaluate, eval_every
        self.rule = EarlyStopping(patience, min_steps, higher_is_better=False)
        self.check(0)

    def check(self, step: int) -> bool:
        """Score after ``step`` steps; True when training should stop."""
        was_training = self.student.training
        self.student.eval()
        score = float(self.evaluate(self.student))
        self.student.train(was_training)
        snapshot = lambda: {k: v.detach().clone() for k, v in self.student.state_dict().items()}  # noqa: E731
        return self.rule.update(step, score, snapshot)

    def restore(self) -> dict:
        self.student.load_state_dict(self.rule.state)
        return {"val": self.rule.scores, "best_step": self.rule.best_step}


def _distill(student, teacher, blocks, cfg, boolean, progress, desc, stop=None) -> dict:
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    bool_opt = None
    if boolean:
        layers = [m for _, m in boolean_layers(student)]
        dtype = getattr(torch, cfg.accum_dtype)
        bool_opt = BooleanOptimizer(layers, cfg.boolean_lr, cfg.kernels, dtype, cfg.normalize)
    params = trainable_fp_params(student)
    for p in student.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    fp_opt = torch.optim.AdamW(params, lr=cfg.fp_lr, weight_decay=0.0) if params else None
    sched = None
    if fp_opt is not None:  # cosine decay to 10 % (ours)
        sched = torch.optim.lr_scheduler.LambdaLR(
            fp_opt, lambda s: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / max(1, cfg.steps)))
        )
    student.train()
    losses, flips = [], []
    bar = tqdm(range(cfg.steps), desc=desc, disable=not progress, leave=False)
    for step in bar:
        idx = torch.tensor([rng.randrange(len(blocks)) for _ in range(cfg.batch_size)])
        ids = blocks[idx]
        with torch.no_grad():
            t_out = teacher(input_ids=ids, output_hidden_states=cfg.gamma > 0)
        s_out = student(input_ids=ids, output_hidden_states=cfg.gamma > 0)
        loss = kd_loss(s_out, t_out, cfg.gamma)
        if fp_opt is not None:
            fp_opt.zero_grad(set_to_none=True)
        loss.backward()
        if fp_opt is not None:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            fp_opt.step()
            sched.step()
        if bool_opt is not None:
            bool_opt.step()
            flips.append(bool_opt.flip_rate())
        losses.append(float(loss.detach()))
        if step % 10 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if stop is not None and (step + 1) % stop.every == 0 and stop.check(step + 1):
            break
    stopped = {} if stop is None else {**stop.restore(), "steps_run": len(losses)}
    student.eval()
    latent = [m.weight for m in student.modules() if isinstance(m, (OneBitLinear, QATLinear))]
    mem = state_bytes(fp_opt, bool_opt, latent=latent)  # latent FP weights: OneBit-style baselines only
    n_bool = bool_opt.n_trained() if bool_opt is not None else 0
    if bool_opt is not None:
        bool_opt.release()
    for p in student.parameters():
        p.requires_grad_(False)
    return {"losses": losses, "flip_rates": flips, "memory": mem, "n_boolean_trained": n_bool, **stopped}
