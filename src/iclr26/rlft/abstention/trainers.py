"""The two training stages of the paper on TRL: CoT-SFT with `SFTTrainer`, then GRPO with `GRPOTrainer` and the
abstention-aware reward. Works on any HF causal LM (a tiny word-level policy or a real chat model, full fine-tuning
or LoRA through peft).

`sft_config` / `grpo_config` return TRL configs whose defaults are the released scripts' values (paper §4 / code:
`scripts/train/llm_cot_sft.py`, `scripts/train/llm_rl.py`); any TRL field can be overridden by keyword.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from .reward import AbstentionReward

# Our paraphrase of the released scripts' system instruction (think, then answer; "No Answer" when none is correct).
SYSTEM = (
    "Answer the question from the given information. First reason step by step, then give the answer in at most "
    "80 words. If no answer is correct, answer No Answer. Put the reasoning inside <think> </think> and the answer "
    "inside <answer> </answer>."
)


def uses_chat(tokenizer) -> bool:
    """Whether to give this tokenizer's model chat prompts (``conversational=True``): it has a chat template."""
    return bool(getattr(tokenizer, "chat_template", None))


def _field(x, name):
    return x[name] if isinstance(x, dict) else getattr(x, name)


def _prompt(x, conversational: bool, system: str):
    p = _field(x, "prompt")
    if not conversational:
        return p
    return [{"role": "system", "content": system}, {"role": "user", "content": p}]


def sft_dataset(items: Sequence, conversational: bool = False, system: str = SYSTEM):
    """Prompt-completion dataset for `SFTTrainer` (loss on the completion only): items need ``prompt``, ``rationale``.

    ``conversational=True`` wraps the prompt as system + user messages and the rationale as the assistant turn
    (the chat template of the model is then applied by TRL, as in the paper)."""
    from datasets import Dataset

    if not items:
        raise ValueError("sft_dataset needs at least one item")
    prompts = [_prompt(x, conversational, system) for x in items]
    completions = [
        [{"role": "assistant", "content": _field(x, "rationale")}] if conversational else _field(x, "rationale")
        for x in items
    ]
    return Dataset.from_dict({"prompt": prompts, "completion": completions})


def grpo_dataset(items: Sequence, conversational: bool = False, system: str = SYSTEM):
    """Prompt dataset for `GRPOTrainer` with the gold ``answer`` column the reward reads (items need ``prompt``,
    ``answer``)."""
    from datasets import Dataset

    if not items:
        raise ValueError("grpo_dataset needs at least one item")
    return Dataset.from_dict(
        {"prompt": [_prompt(x, conversational, system) for x in items], "answer": [_field(x, "answer") for x in items]}
    )


def sft_config(output_dir: str, **overrides):
    """TRL `SFTConfig` with the CoT-SFT script's values: lr 1e-5, weight decay 0.01, 1 epoch, batch 4, max length
    1024, completion-only loss. No checkpoints or reports unless overridden."""
    from trl import SFTConfig

    kw = dict(
        output_dir=output_dir,
        learning_rate=1e-5,
        weight_decay=0.01,
        num_train_epochs=1,
        per_device_train_batch_size=4,
        max_length=1024,
        completion_only_loss=True,
        save_strategy="no",
        report_to="none",
        logging_steps=10,
    )
    kw.update(overrides)
    return SFTConfig(**kw)


def grpo_config(output_dir: str, **overrides):
    """TRL `GRPOConfig` with the RL script's values: lr 1e-5, weight decay 0.01, 3 epochs, batch 8 completions,
    G = 4 generations per prompt, completions <= 256 tokens, beta = 0.01, Dr.GRPO loss without reward scaling
    (advantage r_i - mean_j r_j), temperature 1 (TRL default)."""
    from trl import GRPOConfig

    kw = dict(
        output_dir=output_dir,
        learning_rate=1e-5,
        weight_decay=0.01,
        num_train_epochs=3,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=256,
        beta=0.01,
        loss_type="dr_grpo",
        scale_rewards="none",
        temperature=1.0,
        save_strategy="no",
        report_to="none",
        logging_steps=10,
    )
    kw.update(overrides)
    return GRPOConfig(**kw)


def cot_sft_trainer(model, tokenizer, train_dataset, args=None, peft_config=None, **kwargs):
    """Stage 1: an `SFTTrainer` on CoT rationales (call ``.train()``)."""
    from trl import SFTTrainer

    args = args or sft_config("sft-out")
    return SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        **kwargs,
    )


def abstention_grpo_trainer(
    model, tokenizer, train_dataset, args=None, reward: AbstentionReward | None = None, peft_config=None, **kwargs
):
    """Stage 2: a `GRPOTrainer` whose reward functions are the abstention-aware ``[format, answer]`` pair.

    The KL reference is the policy *as passed* (the paper: the CoT-SFT model). TRL builds its reference model by
    reloading ``model.config._name_or_path``, which for a model fine-tuned in memory (our stage 1) is the checkpoint
    *before* fine-tuning; so the passed weights are copied into the reference here (or saved first when that path
    cannot be loaded). With LoRA the reference is the adapter-disabled model, as in TRL.
    """
    from trl import GRPOTrainer

    reward = reward or AbstentionReward()
    if reward.answer_column not in train_dataset.column_names:
        raise ValueError(
            f"the GRPO dataset needs the gold-answer column {reward.answer_column!r}; got {train_dataset.column_names}"
        )
    args = args or grpo_config("grpo-out")
    in_memory = not isinstance(model, str) and args.beta != 0.0 and peft_config is None
    name = str(getattr(model.config, "_name_or_path", "") or "")
    if in_memory and not (name and Path(name).is_dir()):  # Path("") is ".", a directory: test the name first
        ref_dir = Path(args.output_dir) / "reference-policy"
        model.save_pretrained(ref_dir)
        model.config._name_or_path = str(ref_dir)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward.reward_funcs,
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        **kwargs,
    )
    if in_memory and trainer.ref_model is not None:
        ref = trainer.accelerator.unwrap_model(trainer.ref_model)
        ref.load_state_dict(trainer.accelerator.unwrap_model(trainer.model).state_dict())
    return trainer


@torch.no_grad()
def generate(
    model, tokenizer, prompts: Sequence, max_new_tokens: int = 256, batch_size: int = 32, do_sample: bool = False
) -> list[str]:
    """Completions for ``prompts`` (strings, or message lists rendered by the chat template), greedy by default
    (the evaluation protocol). Generation stops at the tokenizer's EOS or at the model's own end token(s) from its
    generation config (as TRL's GRPO rollouts do): the SmolLM2 tokenizer converted from GGUF names <|im_start|> as
    EOS while the model ends its turn with <|im_end|>."""
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    eos = [tokenizer.eos_token_id, model.generation_config.eos_token_id]  # the tokenizer's and the model's end token
    eos = list(dict.fromkeys(i for e in eos for i in (e if isinstance(e, list) else [e]) if i is not None))
    was_training = model.training
    model.eval()
    out: list[str] = []
    try:
        for i in range(0, len(prompts), batch_size):
            chunk = prompts[i : i + batch_size]
            if not isinstance(chunk[0], str):
                chunk = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in chunk]
            enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
            ids = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=do_sample,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=eos,
            )
            out += tokenizer.batch_decode(ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
        model.train(was_training)
    return out
