"""Uni-Walker: lifelong embodied navigation with DE-LoRA (Wang et al., ICLR 2026, https://arxiv.org/abs/2603.06073).

Modules: `delora` (the shared-A / per-task-B layer, KIS, SSC, ESOC), `retrieval` (TAKA), `methods` (Uni-Walker, the
baselines Seq-FT, O-LoRA, SD-LoRA, HydraLoRA and joint LoRA, and the independent-LoRA ceiling, as learners),
`lifelong` (trainer, rollouts, forgetting), `policy` (a small navigation policy with a thought head, the NSCoT
analogue).
"""

from .baselines import HydraLoRALinear, OLoRALinear, SDLoRALinear
from .delora import DELoRALinear, esoc_penalty, inject, kis_init, ssc_penalty
from .lifelong import TrainConfig, forgetting, rollout, train_task
from .methods import HydraLoRA, IndependentLoRA, OLoRA, PeftLoRA, SDLoRA, UniWalker, UniWalkerConfig
from .policy import TARGETS, NavPolicy, PolicyConfig, to_batch
from .retrieval import TaskRetriever

__all__ = [
    "DELoRALinear",
    "HydraLoRA",
    "HydraLoRALinear",
    "IndependentLoRA",
    "NavPolicy",
    "OLoRA",
    "OLoRALinear",
    "PeftLoRA",
    "PolicyConfig",
    "SDLoRA",
    "SDLoRALinear",
    "TARGETS",
    "TaskRetriever",
    "TrainConfig",
    "UniWalker",
    "UniWalkerConfig",
    "esoc_penalty",
    "forgetting",
    "inject",
    "kis_init",
    "rollout",
    "ssc_penalty",
    "to_batch",
    "train_task",
]
