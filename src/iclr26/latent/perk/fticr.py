"""FT-ICR, PERK's main baseline: fine-tuning for in-context reasoning (paper §4, "FT-ICR").

The same base model is fine-tuned on (context + question -> answer) with the whole context in the prompt, and
answers at test time with the context in the prompt. The model's window must fit the longest test context (fair
capacity: it is not truncated). Full fine-tuning by default (the strongest variant at small scale), or a LoRA of the
same rank as PERK's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .config import FTICRConfig
from .loop import fit
from .model import DEFAULT_TARGETS, Example, qa_batch


def icr_prompts(ex: Example) -> list[str]:
    """Context followed by each question (segments joined by spaces)."""
    ctx = ex.context if isinstance(ex.context, str) else " ".join(ex.context)
    return [f"{ctx} {q}" for q in ex.questions]


class FTICR:
    """Fine-tune ``model`` in place on context + question -> answer (pass a copy to keep the original)."""

    def __init__(self, model, tokenizer, config: FTICRConfig | None = None):
        self.cfg = config or FTICRConfig()
        self.tok = tokenizer
        if self.cfg.full:
            self.model = model
            for p in self.model.parameters():
                p.requires_grad_(True)
        else:
            from peft import LoraConfig, get_peft_model

            targets = DEFAULT_TARGETS.get(model.config.model_type)
            if targets is None:
                raise ValueError(f"no default LoRA targets for model type {model.config.model_type!r}")
            self.model = get_peft_model(model, LoraConfig(r=self.cfg.lora_rank, target_modules=list(targets)))
        self.model.eval()

    def loss(self, ex: Example) -> torch.Tensor:
        ids, mask, labels = qa_batch(self.tok, icr_prompts(ex), ex.answers)
        logits = self.model(input_ids=ids, attention_mask=mask).logits
        return torch.nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1).to(torch.promote_types(logits.dtype, torch.float32)),
            labels[:, 1:].flatten(),
            ignore_index=-100,
        )

    @torch.no_grad()
    def exact_match(self, ex: Example, batch_size: int = 16) -> list[bool]:
        out = []
        prompts = icr_prompts(ex)
        for i in range(0, len(prompts), batch_size):
            ids, mask, labels = qa_batch(self.tok, prompts[i : i + batch_size], ex.answers[i : i + batch_size])
            pred, tgt = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].argmax(-1), labels[:, 1:]
            out += [bool(((pred[j] == tgt[j]) | (tgt[j] == -100)).all()) for j in range(len(pred))]
        return out

    def train(
        self,
        sample: Callable[[int], Sequence[Example]],
        steps: int,
        validate: Callable[[], float] | None = None,
        eval_every: int = 50,
        patience: int = 4,
        progress: bool = True,
        min_steps: int = 0,
    ) -> dict:
        """AdamW with warm-up and cosine decay; early stopping on ``validate`` (higher is better), best state kept,
        not before ``min_steps``."""
        c = self.cfg
        params = [p for p in self.model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=c.lr, weight_decay=c.weight_decay, betas=(0.9, 0.95))
        return fit(params, opt, self.loss, sample, steps, c.warmup, c.max_grad_norm, validate, eval_every, patience,
                   progress, desc="FT-ICR", min_steps=min_steps)  # fmt: skip
