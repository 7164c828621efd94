"""VTA's reasoner training on TRL: SFT on reasoning traces (`SFTTrainer`) and Time-GRPO (`GRPOTrainer` with the
inverse-MSE + format rewards of `TimeGRPOReward`). Works on any HF causal LM, full fine-tuning or LoRA (peft).

`grpo_config` / `sft_config` default to the released scripts' values (``grpo/stage1_train_grpo.py``,
``grpo/stage2_train_sft.py``), with the TRL defaults of the time made explicit (beta 0.04, clip 0.2, std-scaled group
advantages, the original per-sequence GRPO loss); any TRL field can be overridden by keyword.
"""

from __future__ import annotations

from pathlib import Path

from .reward import TimeGRPOReward

# Our paraphrase of the released system prompt (reason about the annotated window, then answer with H values).
SYSTEM = (
    "You are a stock prediction assistant. You are given a 10-day series of standardised closing prices with "
    "statistics and technical indicators. Reason about the data and predict the next 10 closing prices. Answer as "
    "<think>\n...\n</think>\n<answer>\n[value1, ..., value10]\n</answer>"
)


def grpo_dataset(items, conversational: bool = False, system: str = SYSTEM, extra_columns=()):
    """Prompt dataset for `GRPOTrainer`: items need ``prompt`` and ``target`` (the true H values) and any
    ``extra_columns`` the reward's ``to_target`` reads."""
    from datasets import Dataset

    if not items:
        raise ValueError("grpo_dataset needs at least one item")
    get = (lambda x, k: x[k]) if isinstance(items[0], dict) else getattr

    def prompt(x):
        p = get(x, "prompt")
        return [{"role": "system", "content": system}, {"role": "user", "content": p}] if conversational else p

    cols = {"prompt": [prompt(x) for x in items], "target": [list(get(x, "target")) for x in items]}
    for c in extra_columns:
        cols[c] = [get(x, c) for x in items]
    return Dataset.from_dict(cols)


def sft_dataset(prompts, completions):
    """Prompt-completion dataset for `SFTTrainer` (loss on the completion only)."""
    from datasets import Dataset

    if len(prompts) != len(completions) or not prompts:
        raise ValueError(f"need as many prompts as completions (> 0), got {len(prompts)} and {len(completions)}")
    return Dataset.from_dict({"prompt": list(prompts), "completion": list(completions)})


def grpo_config(output_dir: str, **overrides):
    """TRL `GRPOConfig` with the official stage-1/3 values: lr 5e-6, AdamW (0.9, 0.99), weight decay 0.1, warm-up
    ratio 0.1, cosine schedule, 4 prompts x G = 4 generations per device, gradient accumulation 2, 500 / 500 prompt /
    completion tokens; TRL defaults then in force: beta 0.04, epsilon 0.2, one iteration per batch, std-scaled
    group advantages, per-sequence ('grpo') loss normalisation. No checkpoints or reports unless overridden."""
    from trl import GRPOConfig

    kw = dict(output_dir=output_dir, learning_rate=5e-6, adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.1,
              warmup_ratio=0.1, lr_scheduler_type="cosine", per_device_train_batch_size=4,
              gradient_accumulation_steps=2, num_generations=4, max_completion_length=500, beta=0.04, epsilon=0.2,
              loss_type="grpo", scale_rewards="group", save_strategy="no", report_to="none",
              logging_steps=1)  # fmt: skip
    kw.update(overrides)
    return GRPOConfig(**kw)


def sft_config(output_dir: str, **overrides):
    """TRL `SFTConfig` with the official stage-2 values: lr 2e-4, 2 epochs, completion-only loss."""
    from trl import SFTConfig

    kw = dict(output_dir=output_dir, learning_rate=2e-4, num_train_epochs=2, completion_only_loss=True,
              save_strategy="no", report_to="none", logging_steps=10)  # fmt: skip
    kw.update(overrides)
    return SFTConfig(**kw)


def sft_trainer(model, tokenizer, train_dataset, args=None, peft_config=None, **kwargs):
    """An `SFTTrainer` on reasoning traces (call ``.train()``)."""
    from trl import SFTTrainer

    return SFTTrainer(model=model, args=args or sft_config("vta-sft"), train_dataset=train_dataset,
                      processing_class=tokenizer, peft_config=peft_config, **kwargs)  # fmt: skip


def _is_peft(model) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def time_grpo_trainer(model, tokenizer, train_dataset, args=None, reward: TimeGRPOReward | None = None,
                      peft_config=None, **kwargs):  # fmt: skip
    """Time-GRPO: a `GRPOTrainer` whose rewards are the official four terms (think format, answer format, inverse
    MSE, xml count). The KL reference is the policy *as passed* (e.g. the SFT reasoner): TRL reloads the reference
    from ``config._name_or_path``, so for an in-memory model the weights are saved first / copied in."""
    from trl import GRPOTrainer

    reward = reward or TimeGRPOReward()
    need = {reward.target_column, *reward.row_columns} - set(train_dataset.column_names)
    if need:
        raise ValueError(f"the Time-GRPO dataset lacks the columns {sorted(need)}; got {train_dataset.column_names}")
    args = args or grpo_config("vta-grpo")
    # (a PEFT model keeps its own reference: TRL copies its trained adapter as the frozen "ref" adapter)
    in_memory = not isinstance(model, str) and args.beta != 0.0 and peft_config is None and not _is_peft(model)
    name = str(getattr(model.config, "_name_or_path", "") or "")
    if in_memory and not (name and Path(name).is_dir()):  # Path("") is ".", a directory: test the name first
        ref_dir = Path(args.output_dir) / "reference-policy"
        model.save_pretrained(ref_dir)
        model.config._name_or_path = str(ref_dir)
    trainer = GRPOTrainer(model=model, reward_funcs=reward.reward_funcs, args=args, train_dataset=train_dataset,
                          processing_class=tokenizer, peft_config=peft_config, **kwargs)  # fmt: skip
    if in_memory and trainer.ref_model is not None:
        ref = trainer.accelerator.unwrap_model(trainer.ref_model)
        ref.load_state_dict(trainer.accelerator.unwrap_model(trainer.model).state_dict())
    return trainer
