"""Every TRL / HF-Trainer trainer of the library under `accelerate launch`: the ranks see different data and end with
identical parameters that moved.

    accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no \
        benchmarks/accelerate_check.py --out check.json
    (on a CPU-only machine `--multi_gpu` starts two gloo processes)

Per trainer, the same seeded micro llama on every process: temporal abstention's CoT-SFT and abstention GRPO
(`iclr26.rlft.abstention`), VTA's SFT and Time-GRPO (`iclr26.rlft.vta`), MLR's GRPO arm (TRL's `GRPOTrainer`, as its
bench builds it), ReMix (`ReMixTrainer`), and Antibody's three HF trainers (stage 1, stage 2, and the Booster and Lisa
baselines). What a rank trained on is read where the data enters: the rows of token ids of every forward pass with
gradients (SFT and Trainer-based) or the prompts handed to the reward functions (GRPO). Rank 0 writes, per trainer,
the rows each rank saw, whether the parameters agree across ranks to 1e-6, and whether they changed.
MLR's Step-DPO is a plain PyTorch loop, not a Trainer: it runs in one process and is not part of this check.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import torch
from accelerate.utils import gather_object
from transformers.utils import logging as hf_logging

from iclr26.lm.tiny import tiny_model
from iclr26.rlft.abstention import exact_word_tokenizer
from iclr26.rlft.abstention.world import make_temporal_qa, vocabulary

SEEN: list[str] = []  # what this process trained on (rows of ids, or reward prompts)


def _model(tok):
    model = tiny_model("llama", seed=0, vocab_size=len(tok), d_model=32, n_layers=1, n_heads=2, max_len=256)
    model.config.pad_token_id = model.generation_config.pad_token_id = tok.pad_token_id
    model.config.eos_token_id = model.generation_config.eos_token_id = tok.eos_token_id

    def record(module, args):
        if torch.is_grad_enabled() and args:
            SEEN.extend(" ".join(map(str, row.tolist())) for row in args[0])

    model.get_input_embeddings().register_forward_pre_hook(record)
    return model


def _flat(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def _common(tmp: str, name: str) -> dict:
    return dict(output_dir=f"{tmp}/{name}", report_to="none", save_strategy="no", disable_tqdm=True, use_cpu=True,
                logging_steps=1000, seed=0)  # fmt: skip


def _grpo_kw(tmp: str, name: str) -> dict:
    return _common(tmp, name) | dict(per_device_train_batch_size=4, num_generations=4, max_completion_length=12,
                                     learning_rate=3e-3, beta=0.01, max_steps=4, temperature=1.0)  # fmt: skip


def _recorded(fn):
    def reward(prompts=None, completions=None, **kw):  # TRL passes every argument by keyword
        SEEN.extend(p if isinstance(p, str) else json.dumps(p) for p in prompts)
        return fn(prompts=prompts, completions=completions, **kw)

    reward.__name__ = getattr(fn, "__name__", "reward")
    return reward


def _abstention(tmp: str):
    from iclr26.rlft.abstention import AbstentionReward
    from iclr26.rlft.abstention.trainers import (
        abstention_grpo_trainer,
        cot_sft_trainer,
        grpo_config,
        grpo_dataset,
        sft_config,
        sft_dataset,
    )

    tok = exact_word_tokenizer(vocabulary())
    items = make_temporal_qa(32, seed=0)
    model = _model(tok)
    sft = cot_sft_trainer(model, tok, sft_dataset(items), args=sft_config(**_common(tmp, "ta-sft"), max_steps=4,
                          learning_rate=3e-3, per_device_train_batch_size=4, max_length=256))  # fmt: skip
    yield "abstention-sft", sft, model
    reward = AbstentionReward()
    reward.format_reward = _recorded(reward.format_reward)
    args = grpo_config(**_grpo_kw(tmp, "ta-grpo"), loss_type="dr_grpo", scale_rewards="none")
    yield "abstention-grpo", abstention_grpo_trainer(model, tok, grpo_dataset(items), args=args, reward=reward), model


def _vta(tmp: str):
    from iclr26.rlft.vta import TimeGRPOReward
    from iclr26.rlft.vta.trainer import (
        grpo_config,
        grpo_dataset,
        sft_config,
        sft_dataset,
        sft_trainer,
        time_grpo_trainer,
    )

    words = ["<think>", "</think>", "<answer>", "</answer>", "up", "down", "price", "next", *map(str, range(10))]
    tok = exact_word_tokenizer(words)
    prompts = [f"price {i // 10} {i % 10} next" for i in range(32)]  # 32 distinct prompts
    targets = [[float((i + k) % 10) for k in range(3)] for i in range(32)]
    comps = [f"<think>\nup\n</think>\n<answer>\n{' '.join(str(int(v)) for v in t)}\n</answer>" for t in targets]
    model = _model(tok)
    args = sft_config(**_common(tmp, "vta-sft"), max_steps=4, learning_rate=3e-3, per_device_train_batch_size=4)
    yield "vta-sft", sft_trainer(model, tok, sft_dataset(prompts, comps), args=args), model
    reward = TimeGRPOReward(horizon=3)
    funcs = list(reward.reward_funcs)
    funcs[0] = _recorded(funcs[0])
    reward = _Funcs(reward, funcs)
    args = grpo_config(**_grpo_kw(tmp, "vta-grpo"), gradient_accumulation_steps=1)
    ds = grpo_dataset([{"prompt": p, "target": t} for p, t in zip(prompts, targets)])
    yield "vta-grpo", time_grpo_trainer(model, tok, ds, args=args, reward=reward), model


class _Funcs:
    """A Time-GRPO reward whose first function also records the prompts (the others unchanged)."""

    def __init__(self, reward, funcs):
        self._r, self.reward_funcs = reward, funcs

    def __getattr__(self, name):
        return getattr(self._r, name)


def _grpo_plain(tmp: str, name: str, trainer_cls, config_cls, **extra):
    from datasets import Dataset

    tok = exact_word_tokenizer(vocabulary())
    items = make_temporal_qa(32, seed=1)
    model = _model(tok)
    path = f"{tmp}/{name}-init"
    model.save_pretrained(path)
    tok.save_pretrained(path)

    def reward(prompts=None, completions=None, **kw):  # dense: the share of completion words found in the prompt
        return [sum(w in p for w in c.split()) / max(1, len(c.split())) for p, c in zip(prompts, completions)]

    args = config_cls(**_grpo_kw(tmp, name), **extra)
    ds = Dataset.from_dict({"prompt": [x.prompt for x in items]})
    tr = trainer_cls(model=path, reward_funcs=_recorded(reward), args=args, train_dataset=ds, processing_class=tok)
    tr.accelerator.unwrap_model(tr.model).get_input_embeddings()._forward_pre_hooks.clear()
    return tr


def _mlr(tmp: str):
    from trl import GRPOConfig, GRPOTrainer

    tr = _grpo_plain(tmp, "mlr-grpo", GRPOTrainer, GRPOConfig)
    yield "mlr-grpo", tr, tr.accelerator.unwrap_model(tr.model)


def _remix(tmp: str):
    from iclr26.rlft.remix import ReMixConfig, ReMixTrainer

    tr = _grpo_plain(tmp, "remix", ReMixTrainer, ReMixConfig, reincarnate_at=2, kl_lambda_start=1, kl_lambda_every=1)
    yield "remix", tr, tr.accelerator.unwrap_model(tr.model)


def _antibody(tmp: str):
    from datasets import Dataset

    from iclr26.rlft.antibody.data import PairedCollator, encode_pair
    from iclr26.rlft.antibody.trainers import (
        AntibodyAlignmentConfig,
        AntibodyAlignmentTrainer,
        BoosterAlignmentTrainer,
        BoosterConfig,
        LisaConfig,
        LisaTrainer,
        WeightedSFTConfig,
        WeightedSFTTrainer,
    )

    tok = exact_word_tokenizer(vocabulary())
    items = make_temporal_qa(48, seed=2)
    feats = [encode_pair(tok, x.prompt, x.answer, refusal="No Answer", is_harmful=i % 2) for i, x in enumerate(items)]
    align, harm = Dataset.from_list(feats[:24]), Dataset.from_list(feats[24:])
    kw = _common(tmp, "antibody") | dict(max_steps=3, per_device_train_batch_size=4, learning_rate=3e-3,
                                         remove_unused_columns=False)  # fmt: skip
    collate = PairedCollator(tok.pad_token_id)
    arms = [
        ("antibody-stage1", AntibodyAlignmentTrainer, AntibodyAlignmentConfig, {"harmful_dataset": harm}),
        ("antibody-booster", BoosterAlignmentTrainer, BoosterConfig, {"harmful_dataset": harm}),
        ("antibody-lisa", LisaTrainer, LisaConfig, {"alignment_dataset": harm}),
        ("antibody-stage2", WeightedSFTTrainer, WeightedSFTConfig, {}),
    ]
    for name, trainer_cls, config_cls, aux in arms:
        extra = {"alignment_steps": 1, "finetune_steps": 2} if config_cls is LisaConfig else {}
        model = _model(tok)
        args = config_cls(**kw, **extra)
        yield name, trainer_cls(model=model, args=args, train_dataset=align, data_collator=collate, **aux), model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="accelerate_check.json")
    ap.add_argument("--only", default="", help="comma-separated trainer groups: abstention,vta,mlr,remix,antibody")
    a = ap.parse_args()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(1)
    groups = {"abstention": _abstention, "vta": _vta, "mlr": _mlr, "remix": _remix, "antibody": _antibody}
    chosen = [g for g in (a.only.split(",") if a.only else groups) if g]
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for g in chosen:
            for name, trainer, model in groups[g](tmp):
                SEEN.clear()
                before = _flat(model)
                trainer.train()
                after = _flat(model)
                seen = gather_object([sorted(set(SEEN))])
                params = trainer.accelerator.gather(after.unsqueeze(0))
                report[name] = {
                    "processes": trainer.accelerator.num_processes,
                    "rows_per_rank": [len(s) for s in seen],
                    "shared_rows": len(set(seen[0]).intersection(*map(set, seen[1:]))) if len(seen) > 1 else None,
                    "params_equal": bool(all(torch.allclose(params[0], p, atol=1e-6) for p in params[1:])),
                    "params_changed": bool((after - before).abs().max() > 0),
                }
    if int(os.environ.get("RANK", 0)) == 0:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)
        for name, r in report.items():
            print(name, r, flush=True)


if __name__ == "__main__":
    main()
