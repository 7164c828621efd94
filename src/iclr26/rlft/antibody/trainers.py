"""HF `Trainer` subclasses of the official code's four trainers, on the update rules of `updates`.

`AntibodyAlignmentTrainer` (stage 1) and `BoosterAlignmentTrainer` train on the alignment set and draw a second batch
from a harmful set each step; `WeightedSFTTrainer` (stage 2) fine-tunes on user data with likelihood-ratio weights;
`LisaTrainer` fine-tunes on user data, alternating with alignment batches. Batches come from `PairedCollator`
(features ``prompt_ids``/``answer_ids``/``refusal_ids``). Works with any HF causal LM, full or peft-LoRA (only
parameters with ``requires_grad`` are updated and perturbed). ``gradient_accumulation_steps`` must be 1 (the rules
set the gradient of a whole step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch.utils.data import DataLoader, RandomSampler
from transformers import Trainer, TrainingArguments

from .data import PairedCollator, split_views
from .losses import EMA, likelihood_ratio_weights
from .updates import Lisa, antibody_alignment_gradient, apply, booster_gradient, weighted_finetune_gradient


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _common(args: TrainingArguments, name: str) -> None:
    if args.gradient_accumulation_steps != 1:
        raise ValueError(f"{name}.gradient_accumulation_steps must be 1, got {args.gradient_accumulation_steps!r}")
    args.remove_unused_columns = False  # keep the refusal_* and is_harmful columns


@dataclass
class AntibodyAlignmentConfig(TrainingArguments):
    """Stage 1 (defaults: released script `antibody_alignment_finetune.sh`, lr 5e-4, wd 0.1, 20 epochs, batch 16)."""

    alpha: float = field(default=0.1, metadata={"help": "perturbation radius of the simulated attack (paper: 0.1)"})
    eta_lambda: float = field(default=5.0, metadata={"help": "eta in lambda_t = max(eta - cos(g_a, d), 0) (paper: 5)"})
    lambda2: float = field(default=0.05, metadata={"help": "weight of the perturbed-refusal loss (paper: 0.05)"})
    ema_momentum: float = field(default=0.99, metadata={"help": "EMA momentum of lambda_t (scripts: 0.99)"})

    def __post_init__(self):
        super().__post_init__()
        _common(self, "AntibodyAlignmentConfig")
        if not (_finite(self.alpha) and self.alpha > 0 and _finite(self.eta_lambda) and self.eta_lambda >= 0
                and _finite(self.lambda2) and self.lambda2 >= 0):  # fmt: skip
            raise ValueError(
                "AntibodyAlignmentConfig: alpha must be a finite number > 0, eta_lambda and lambda2 finite and >= 0; "
                f"got {self.alpha!r}, {self.eta_lambda!r}, {self.lambda2!r}"
            )
        if not 0 <= self.ema_momentum < 1:
            raise ValueError(f"AntibodyAlignmentConfig.ema_momentum must be in [0, 1), got {self.ema_momentum!r}")


@dataclass
class BoosterConfig(TrainingArguments):
    """Booster alignment (Huang et al. ICLR 2025; official scripts: lambda 5, alpha 0.1)."""

    lam: float = field(default=5.0, metadata={"help": "lambda, weight of the harmful-loss sharpness (Booster: 5)"})
    alpha: float = field(default=0.1, metadata={"help": "perturbation radius (Booster: 0.1)"})

    def __post_init__(self):
        super().__post_init__()
        _common(self, "BoosterConfig")
        if not (_finite(self.lam) and self.lam >= 0 and _finite(self.alpha) and self.alpha > 0):
            raise ValueError(f"BoosterConfig: lam must be >= 0 and alpha > 0, got {self.lam!r}, {self.alpha!r}")


@dataclass
class WeightedSFTConfig(TrainingArguments):
    """Stage 2 (defaults: released script, lr 1e-5, 10% warm-up, wd 0.1, 20 epochs, batch 16)."""

    tau: float = field(default=1.0, metadata={"help": "softmax temperature of the weights (paper: 1)"})
    random_weights: bool = field(
        default=False, metadata={"help": "control: permute the weights randomly within the batch (not in the paper)"}
    )

    def __post_init__(self):
        super().__post_init__()
        _common(self, "WeightedSFTConfig")
        if not (_finite(self.tau) and self.tau > 0):
            raise ValueError(f"WeightedSFTConfig.tau must be a finite number > 0, got {self.tau!r}")


@dataclass
class LisaConfig(TrainingArguments):
    """Lisa fine-tuning (Huang et al. NeurIPS 2024; official scripts: rho 1, 100 alignment / 900 fine-tuning steps)."""

    rho: float = field(default=1.0, metadata={"help": "proximal strength rho (Lisa scripts: 1)"})
    alignment_steps: int = field(default=100, metadata={"help": "steps per alignment state (Lisa scripts: 100)"})
    finetune_steps: int = field(default=900, metadata={"help": "steps per fine-tuning state (Lisa scripts: 900)"})
    proximal_warmup: float = field(
        default=0.1, metadata={"help": "share of the total steps before the proximal term starts (official: 0.1)"}
    )

    def __post_init__(self):
        super().__post_init__()
        _common(self, "LisaConfig")
        bad_rho = not (_finite(self.rho) and self.rho >= 0)
        if bad_rho or self.alignment_steps < 0 or self.finetune_steps < 1 or not 0 <= self.proximal_warmup <= 1:
            raise ValueError(
                "LisaConfig: rho >= 0, alignment_steps >= 0, finetune_steps >= 1, proximal_warmup in [0,1]"
            )


def _local(trainer: Trainer, model):
    """The bare model under `accelerate launch`: the gradients here are taken with `torch.autograd.grad`, which DDP's
    all-reduce hooks never see, so they are averaged over the processes explicitly (`_mean_over_processes`)."""
    return trainer.accelerator.unwrap_model(model)


def _mean_over_processes(trainer: Trainer, grads: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Average a gradient over the processes (DDP's rule) so that every rank takes the same step; a no-op alone."""
    if trainer.accelerator.num_processes == 1:
        return grads
    return {k: trainer.accelerator.reduce(v.contiguous(), reduction="mean") for k, v in grads.items()}


class _AuxTrainer(Trainer):
    """A Trainer that also cycles through a second data set (harmful data, or alignment data for Lisa)."""

    def __init__(self, *args, aux_dataset=None, **kwargs):
        if aux_dataset is None or len(aux_dataset) == 0:
            raise ValueError(
                f"{type(self).__name__} needs a non-empty aux data set (harmful_dataset / alignment_dataset)"
            )
        kwargs.setdefault("data_collator", None)
        super().__init__(*args, **kwargs)
        if not isinstance(self.data_collator, PairedCollator):
            raise ValueError("pass data_collator=PairedCollator(tokenizer.pad_token_id)")
        # each process its own aux stream under `accelerate launch` (process 0 keeps the single-process one)
        gen = torch.Generator().manual_seed(self.args.seed + self.accelerator.process_index)
        self._aux = DataLoader(
            aux_dataset,
            batch_size=self.args.per_device_train_batch_size,
            sampler=RandomSampler(aux_dataset, generator=gen),
            collate_fn=self.data_collator,
        )
        self._aux_iter = iter(self._aux)
        self.history: list[dict] = []

    def _next_aux(self) -> dict:
        try:
            batch = next(self._aux_iter)
        except StopIteration:
            self._aux_iter = iter(self._aux)
            batch = next(self._aux_iter)
        return self._prepare_inputs(batch)


class BoosterAlignmentTrainer(_AuxTrainer):
    def __init__(self, *args, harmful_dataset=None, **kwargs):
        super().__init__(*args, aux_dataset=harmful_dataset, **kwargs)

    def training_step(self, model, inputs, num_items_in_batch=None):
        model = _local(self, model)
        model.train()
        align, _, _ = split_views(self._prepare_inputs(inputs))
        harm, _, _ = split_views(self._next_aux())
        g, info = booster_gradient(model, align, harm, self.args.lam, self.args.alpha)
        apply(model, _mean_over_processes(self, g))
        self.history.append(info)
        return torch.tensor(info["align_loss"] + self.args.lam * (info["harmful_loss"] - info["perturbed_loss"]))


class AntibodyAlignmentTrainer(_AuxTrainer):
    """Harmful features need ``refusal_ids`` (the refusal for the same harmful prompt)."""

    def __init__(self, *args, harmful_dataset=None, **kwargs):
        super().__init__(*args, aux_dataset=harmful_dataset, **kwargs)
        self.ema = EMA(self.args.ema_momentum)

    def training_step(self, model, inputs, num_items_in_batch=None):
        model = _local(self, model)
        model.train()
        align, _, _ = split_views(self._prepare_inputs(inputs))
        harm, refusal, _ = split_views(self._next_aux())
        if refusal is None and self.args.lambda2:
            raise ValueError("harmful features need 'refusal_ids' when lambda2 > 0")
        a = self.args
        g, info = antibody_alignment_gradient(model, align, harm, refusal, self.ema, a.eta_lambda, a.lambda2, a.alpha)
        apply(model, _mean_over_processes(self, g))  # λ_t stays per process (from its own batch's gradient)
        self.history.append(info)
        return torch.tensor(info["align_loss"] + info["lambda_t"] * (info["harmful_loss"] - info["perturbed_loss"]))


class WeightedSFTTrainer(Trainer):
    """Features need ``refusal_ids``; ``history`` keeps each step's weights (and ``is_harmful`` when given)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.history: list[dict] = []
        self._gen = torch.Generator().manual_seed(self.args.seed)

    def training_step(self, model, inputs, num_items_in_batch=None):
        model = _local(self, model)
        model.train()  # the official code scores in train mode under no_grad
        main, refusal, flags = split_views(self._prepare_inputs(inputs))
        if refusal is None:
            raise ValueError("WeightedSFTTrainer needs features with 'refusal_ids' (a refusal for every prompt)")
        w, d = likelihood_ratio_weights(model, main, refusal, self.args.tau)
        if self.args.random_weights:
            w = w[torch.randperm(len(w), generator=self._gen)]
        g, info = weighted_finetune_gradient(model, main, w)
        apply(model, _mean_over_processes(self, g))
        self.history.append({"weights": w.tolist(), "scores": d.tolist(), **info} | (
            {"is_harmful": flags.tolist()} if flags is not None else {}))  # fmt: skip
        return torch.tensor(info["loss"])


class LisaTrainer(_AuxTrainer):
    def __init__(self, *args, alignment_dataset=None, **kwargs):
        super().__init__(*args, aux_dataset=alignment_dataset, **kwargs)
        self.lisa = None

    def training_step(self, model, inputs, num_items_in_batch=None):
        model = _local(self, model)
        model.train()
        if self.lisa is None:
            warm = int(self.args.proximal_warmup * self.state.max_steps)
            a = self.args
            self.lisa = Lisa(model, a.rho, a.alignment_steps, a.finetune_steps, warm)
        status = self.lisa.next_status(model)
        batch = self._next_aux() if status == Lisa.ALIGN else self._prepare_inputs(inputs)
        main, _, _ = split_views(batch)
        g = self.lisa.gradient(model, main)
        apply(model, _mean_over_processes(self, g))
        self.history.append({"status": status})
        return torch.tensor(0.0)
