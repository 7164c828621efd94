"""Lifelong learners: Uni-Walker (DE-LoRA + KIS + ECAS + SSC + ESOC + NSCoT + TAKA) and its baselines.

Each learner adapts a frozen base policy and answers four calls of the trainer (`lifelong.py`):
``begin_task(t, style, feat)`` (add/freeze adapters), ``trainable()``, ``penalty()`` (regularisers added to the NLL),
``end_task(t, fisher_batches, instr_feats, obs_feats)``; at test ``route(instr, obs)`` picks a task context without
a task id and ``activate(ctx)`` configures the adapters for it. Setting ``oracle_task`` routes every episode to that
task instead (the oracle task-id ceiling; never used by a learner's own numbers).

The baselines run as their own papers do, without a task id: Seq-FT and HydraLoRA share every parameter; O-LoRA sums
all task LoRAs at test; SD-LoRA uses every direction at its current magnitude (magnitudes keep being learnt on later
tasks). `IndependentLoRA` (a fresh LoRA per task, routed by the true task id) is the ceiling: nothing is shared, so
nothing is forgotten, and routing is perfect.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .baselines import HydraLoRALinear, OLoRALinear, SDLoRALinear
from .delora import DELoRALinear, inject, kis_init, ssc_penalty
from .retrieval import TaskRetriever


@dataclass
class UniWalkerConfig:
    r: int = field(default=8, metadata={"help": "LoRA rank (paper §4.1: 16; 8 for our 256-wide MLP)"})
    alpha: float = field(default=16.0, metadata={"help": "LoRA alpha, scaling alpha/r (not stated; 2r as in peft use)"})
    top_k: int = field(default=2, metadata={"help": "experts active per task: new + K-1 co-activated (paper: 2)"})
    threshold: float = field(default=0.5, metadata={"help": "TAKA instruction-similarity mask mu (paper: 0.5)"})
    lambda_ssc: float = field(default=0.1, metadata={"help": "SSC weight (paper: 0.1)"})
    lambda_esoc: float = field(default=0.1, metadata={"help": "ESOC weight (paper: 0.1)"})
    omega: float = field(default=0.9, metadata={"help": "Fisher smoothing (paper: 0.9)"})
    fisher_norm: str = field(
        default="mean",
        metadata={
            "help": "per-task Fisher of A: 'mean' (ours: divided by its mean, so lambda_ssc is scale-free) or 'none' "
            "(the official SSCRegularizer: the raw mean squared gradient)"
        },
    )
    kis_components: int = field(default=3, metadata={"help": "PCA directions in KIS (not stated; our choice)"})
    retrieval: str = field(default="paper", metadata={"help": "TAKA variant: 'paper' or 'code'"})
    kis: bool = True
    ecas: bool = True
    ssc: bool = True
    esoc: bool = True
    nscot: bool = True
    taka: bool = field(default=True, metadata={"help": "False: a random seen task at test (control)"})
    snapshot_a: bool = field(
        default=False,
        metadata={
            "help": "official code: each task keeps its own copy of A "
            "(its LoRA.pt) and a retrieved task runs with it; paper: one A, refined across tasks"
        },
    )

    def __post_init__(self):
        if self.r < 1 or self.alpha <= 0 or self.top_k < 1 or self.kis_components < 1:
            raise ValueError("UniWalkerConfig: need r >= 1, alpha > 0, top_k >= 1, kis_components >= 1")
        if not 0 <= self.omega < 1 or min(self.lambda_ssc, self.lambda_esoc) < 0:
            raise ValueError(f"UniWalkerConfig: omega in [0, 1), lambdas >= 0; got {self.omega!r}")
        if self.fisher_norm not in ("mean", "none"):
            raise ValueError(f"UniWalkerConfig.fisher_norm must be 'mean' or 'none', got {self.fisher_norm!r}")


def _freeze_all(model: nn.Module) -> None:
    for p in model.parameters():
        p.requires_grad_(False)


class Learner:
    """Base class: no routing, no penalty."""

    uses_thought = False
    name = "learner"
    oracle_task: int | None = None  # set: route every episode to this task (oracle task-id routing)

    def setup(self, model: nn.Module, targets) -> None:
        raise NotImplementedError

    def begin_task(self, t: int, style: str, feat: np.ndarray) -> None:
        pass

    def trainable(self) -> list[nn.Parameter]:
        raise NotImplementedError

    def penalty(self) -> torch.Tensor:
        return torch.zeros(())

    def end_task(self, t, fisher_batches, instr_feats, obs_feats) -> None:
        pass

    def route(self, instr, obs) -> list:
        if self.oracle_task is not None:
            return [self.oracle_task] * len(instr)
        return [None] * len(instr)

    def activate(self, ctx) -> None:
        pass


class _Retrieving(Learner):
    def __init__(self, threshold=0.5, mode="paper", rng=None):
        self.retriever = TaskRetriever(threshold=threshold, top_k=1, mode=mode)
        self.rng = rng

    def end_task(self, t, fisher_batches, instr_feats, obs_feats) -> None:
        self.retriever.add_task(t, instr_feats, obs_feats)

    def route(self, instr, obs) -> list:
        if self.oracle_task is not None:
            return [self.oracle_task] * len(instr)
        if self.rng is not None:  # control: a random seen task instead of TAKA
            return [int(self.rng.integers(len(self.retriever.tasks))) for _ in range(len(instr))]
        return [sel[0] for sel in self.retriever.select(instr, obs)]


class PeftLoRA(Learner):
    """One peft LoRA adapter on the targets: Seq-FT (trained task after task) and the joint multi-task upper bound."""

    def __init__(self, r=8, alpha=16.0, name="seqft"):
        self.r, self.alpha, self.name = r, alpha, name

    def setup(self, model, targets) -> None:
        from peft import LoraConfig, inject_adapter_in_model

        _freeze_all(model)
        inject_adapter_in_model(LoraConfig(r=self.r, lora_alpha=self.alpha, target_modules=list(targets)), model)
        self.params = [p for n, p in model.named_parameters() if "lora_" in n]
        for p in self.params:
            p.requires_grad_(True)

    def trainable(self):
        return self.params


class HydraLoRA(Learner):
    def __init__(self, r=8, alpha=16.0, n_heads=4):
        self.r, self.alpha, self.n_heads, self.name = r, alpha, n_heads, "hydra"

    def setup(self, model, targets) -> None:
        _freeze_all(model)
        self.layers = inject(model, targets, lambda b: HydraLoRALinear(b, self.r, self.alpha, self.n_heads))

    def trainable(self):
        return [p for m in self.layers.values() for n, p in m.named_parameters() if not n.startswith("base")]


class OLoRA(Learner):
    """O-LoRA (its paper's inference): one LoRA per task, old ones frozen, the new A orthogonal to the old ones; at
    test every task LoRA is summed (no task id, no routing), so later LoRAs act on earlier tasks' inputs."""

    def __init__(self, r=8, alpha=16.0, lambda_orth=0.5):
        self.r, self.alpha, self.lambda_orth, self.name = r, alpha, lambda_orth, "olora"

    def setup(self, model, targets) -> None:
        _freeze_all(model)
        self.layers = inject(model, targets, lambda b: OLoRALinear(b, self.r, self.alpha))

    def begin_task(self, t, style, feat) -> None:
        self.t = str(t)
        for m in self.layers.values():
            m.add_task(self.t)
            m.active = list(m.lora_A)

    def trainable(self):
        return [p for m in self.layers.values() for p in (m.lora_A[self.t], m.lora_B[self.t])]

    def penalty(self):
        return self.lambda_orth * sum(m.orth_penalty(self.t) for m in self.layers.values())

    def activate(self, ctx) -> None:
        for m in self.layers.values():
            m.active = list(m.lora_A)


class SDLoRA(Learner):
    """SD-LoRA (its paper's inference): frozen unit directions of the finished tasks with magnitudes that keep being
    learnt on later tasks, plus the current LoRA; at test every direction at its current magnitude."""

    def __init__(self, r=8, alpha=16.0):
        self.r, self.alpha, self.name = r, alpha, "sdlora"

    def setup(self, model, targets) -> None:
        _freeze_all(model)
        self.layers = inject(model, targets, lambda b: SDLoRALinear(b, self.r, self.alpha))

    def begin_task(self, t, style, feat) -> None:
        for m in self.layers.values():
            m.start_task()

    def trainable(self):
        return [p for m in self.layers.values() for p in [m.lora_A, m.lora_B, *m.magnitudes]]

    def end_task(self, t, fisher_batches, instr_feats, obs_feats) -> None:
        for m in self.layers.values():
            m.finish_task()

    def activate(self, ctx) -> None:
        for m in self.layers.values():
            m.n_active = len(m.directions)


class IndependentLoRA(Learner):
    """The ceiling: a fresh LoRA per task trained alone on that task (nothing shared), routed by the true task id
    (``oracle_task`` must be set at test). Its scores right after learning and after the last task are equal."""

    def __init__(self, r=8, alpha=16.0):
        self.r, self.alpha, self.name = r, alpha, "indep"

    def setup(self, model, targets) -> None:
        _freeze_all(model)
        self.layers = inject(model, targets, lambda b: OLoRALinear(b, self.r, self.alpha))

    def begin_task(self, t, style, feat) -> None:
        self.t = str(t)
        for m in self.layers.values():
            m.add_task(self.t)
            m.active = [self.t]

    def trainable(self):
        return [p for m in self.layers.values() for p in (m.lora_A[self.t], m.lora_B[self.t])]

    def route(self, instr, obs) -> list:
        if self.oracle_task is None:
            raise RuntimeError("IndependentLoRA routes by the true task id: set learner.oracle_task before a rollout")
        return [self.oracle_task] * len(instr)

    def activate(self, ctx) -> None:
        for m in self.layers.values():
            m.active = [str(ctx)]


class UniWalker(_Retrieving):
    """DE-LoRA with KIS, ECAS, SSC, ESOC and NSCoT; TAKA at test. Switch parts off in `UniWalkerConfig`."""

    def __init__(self, cfg: UniWalkerConfig | None = None, rng=None, name="uw"):
        self.cfg = cfg or UniWalkerConfig()
        super().__init__(self.cfg.threshold, self.cfg.retrieval, rng if not self.cfg.taka else None)
        if not self.cfg.taka and rng is None:
            raise ValueError("UniWalkerConfig.taka=False needs an rng for the random-task control")
        self.name, self.uses_thought = name, self.cfg.nscot
        self.styles: list[str] = []
        self.feats: list[np.ndarray] = []
        self.context: dict[int, list[str]] = {}  # task -> experts active in its training (the new one + ECAS)
        self.fisher: dict[str, torch.Tensor] = {}
        self.a_prev: dict[str, torch.Tensor] = {}
        self.a_snap: dict[int, dict[str, torch.Tensor]] = {}  # snapshot_a: A after each task
        self._old: dict[str, torch.Tensor] = {}  # ESOC: the old experts, flattened and normalised (fixed per task)

    def setup(self, model, targets) -> None:
        _freeze_all(model)
        self.layers = inject(model, targets, lambda b: DELoRALinear(b, self.cfg.r, self.cfg.alpha))

    def begin_task(self, t, style, feat) -> None:
        c = self.cfg
        old = list(range(len(self.styles)))
        # ECAS: co-activate the K-1 old experts whose task-feature means are most similar (frozen)
        co = []
        if c.ecas and old and c.top_k > 1:
            f = np.stack(self.feats)
            sim = f @ feat / (np.linalg.norm(f, axis=1) * np.linalg.norm(feat) + 1e-12)
            co = [str(i) for i in np.argsort(-sim, kind="stable")[: c.top_k - 1]]
        same = [str(i) for i in old if self.styles[i] == style] if c.kis else []
        self.t = str(t)
        if self.a_snap:  # evaluation may have loaded an older task's A (snapshot_a): continue from the latest
            self._load_a(max(self.a_snap))
        for name, m in self.layers.items():
            old_b = [b.detach().flatten() for b in m.experts.values()]
            self._old[name] = torch.stack([b / b.norm().clamp(min=1e-8) for b in old_b]) if old_b else None
            # KIS: inherit from the same-style experts (zero init when there are none)
            init = kis_init([m.experts[i] for i in same], c.kis_components)
            m.freeze_experts(list(m.experts))
            m.add_expert(self.t, init)
            m.set_active([self.t] + co)
        self.context[t] = [self.t] + co
        self.styles.append(style)
        self.feats.append(np.asarray(feat, dtype=np.float64))

    def trainable(self):
        return [p for m in self.layers.values() for p in (m.lora_A, m.experts[self.t])]

    def penalty(self):
        c, loss = self.cfg, torch.zeros(())
        for name, m in self.layers.items():
            if c.ssc and name in self.fisher:  # Eq. SSC: lambda * sum F (A' - A)^2
                loss = loss + c.lambda_ssc * ssc_penalty(m.lora_A, self.a_prev[name], self.fisher[name])
            if c.esoc and self._old.get(name) is not None:  # Eq. ESOC: lambda * sum_i |tr(B~_i^T B~_t)|
                bt = m.experts[self.t].flatten()
                loss = loss + c.lambda_esoc * (self._old[name] @ (bt / bt.norm().clamp(min=1e-8))).abs().sum()
        return loss

    def end_task(self, t, fisher_batches, instr_feats, obs_feats) -> None:
        """Fisher of A on this task's data (mean squared gradient over batches), smoothed; A_prev <- A."""
        if self.cfg.ssc:
            sq = {n: torch.zeros_like(m.lora_A) for n, m in self.layers.items()}
            n_b = 0
            for loss in fisher_batches():
                grads = torch.autograd.grad(loss, [m.lora_A for m in self.layers.values()])
                for (n, _), g in zip(self.layers.items(), grads):
                    sq[n] += g.detach() ** 2
                n_b += 1
            for n, m in self.layers.items():
                f_new = sq[n] / max(n_b, 1)
                if self.cfg.fisher_norm == "mean":  # ours: scale-free (mean 1); "none": the code's raw estimate
                    f_new = f_new / f_new.mean().clamp(min=1e-20)
                om = self.cfg.omega
                # F_A <- omega F_A + (1 - omega) F_new, F_A starting at zero (as the official SSCRegularizer)
                self.fisher[n] = om * self.fisher.get(n, torch.zeros_like(f_new)) + (1 - om) * f_new
                self.a_prev[n] = m.lora_A.detach().clone()
        if self.cfg.snapshot_a:
            self.a_snap[t] = {n: m.lora_A.detach().clone() for n, m in self.layers.items()}
        super().end_task(t, fisher_batches, instr_feats, obs_feats)

    def _load_a(self, t: int) -> None:
        with torch.no_grad():
            for n, m in self.layers.items():
                m.lora_A.copy_(self.a_snap[t][n])

    def activate(self, ctx) -> None:
        experts = self.context[ctx] if ctx is not None else [self.t]
        if ctx is not None and ctx in self.a_snap:
            self._load_a(ctx)
        for m in self.layers.values():
            m.set_active(experts)
