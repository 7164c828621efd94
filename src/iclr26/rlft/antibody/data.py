"""Batches of (prompt, answer) token ids with the loss on the answer only, and Antibody's paired refusal view.

`encode_pair` turns text into one such feature with any HF tokenizer (prompt and refusal use the same prompt, as the
official data module does); `PairedCollator` pads features into the dict the trainers read: ``input_ids``,
``attention_mask``, ``labels`` and, when present, ``refusal_input_ids`` / ``refusal_attention_mask`` /
``refusal_labels`` and ``is_harmful`` (logged only, never used by the method).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .losses import IGNORE


def pad_pairs(pairs: Sequence[tuple[Sequence[int], Sequence[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded batch of prompt + answer with labels -100 on the prompt and the padding."""
    if not pairs:
        raise ValueError("pad_pairs needs at least one (prompt, answer) pair")
    seqs = [list(p) + list(a) for p, a in pairs]
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    labels = torch.full((len(seqs), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, ((p, a), s) in enumerate(zip(pairs, seqs, strict=True)):
        if not len(a):
            raise ValueError(f"pair {i} has an empty answer; the loss needs at least one answer token")
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
        labels[i, len(p) : len(s)] = torch.tensor(list(a))
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def encode_pair(tokenizer, prompt: str, answer: str, refusal: str | None = None, is_harmful: bool | None = None):
    """One feature for `PairedCollator` from text (the answer ends with the tokenizer's eos)."""
    p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    feat = {"prompt_ids": p, "answer_ids": tokenizer(answer, add_special_tokens=False)["input_ids"] + eos}
    if refusal is not None:
        feat["refusal_ids"] = tokenizer(refusal, add_special_tokens=False)["input_ids"] + eos
    if is_harmful is not None:
        feat["is_harmful"] = int(is_harmful)
    return feat


class PairedCollator:
    """Collates features ``{"prompt_ids", "answer_ids"[, "refusal_ids", "is_harmful"]}`` into a training batch."""

    def __init__(self, pad_token_id: int):
        self.pad = pad_token_id

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        out = pad_pairs([(f["prompt_ids"], f["answer_ids"]) for f in features], self.pad)
        if all("refusal_ids" in f for f in features):
            ref = pad_pairs([(f["prompt_ids"], f["refusal_ids"]) for f in features], self.pad)
            out.update({f"refusal_{k}": v for k, v in ref.items()})
        if all("is_harmful" in f for f in features):
            out["is_harmful"] = torch.tensor([int(f["is_harmful"]) for f in features])
        return out


def split_views(inputs: dict) -> tuple[dict, dict | None, torch.Tensor | None]:
    """(answer view, refusal view or None, is_harmful or None) of a collated batch."""
    main = {k: v for k, v in inputs.items() if not k.startswith("refusal_") and k != "is_harmful"}
    ref = {k[len("refusal_") :]: v for k, v in inputs.items() if k.startswith("refusal_")} or None
    return main, ref, inputs.get("is_harmful")
