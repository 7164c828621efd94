"""Greedy accuracy of a real LM on the arithmetic world (the real-LM half of the ReMix reproduction and the docs'
"Use it on your model" example)."""

from __future__ import annotations

import numpy as np
import torch

from .world import chat_prompt, first_int_reward


@torch.no_grad()
def greedy_accuracy(
    model, tok, problems, chat: bool | None = None, batch_size: int = 32, max_new_tokens: int = 8
) -> float:
    """Greedy accuracy of a real LM on arithmetic ``problems`` (reward `first_int_reward`), asked as chat questions
    when the tokenizer has a chat template (``chat=None``: decide from the tokenizer). Generation stops at the
    tokenizer's and the model's end tokens (a GGUF-converted tokenizer may name another EOS than the model's)."""
    chat = bool(getattr(tok, "chat_template", None)) if chat is None else chat
    was = model.training
    model.eval()
    side, tok.padding_side = tok.padding_side, "left"
    eos = [tok.eos_token_id, model.generation_config.eos_token_id]
    eos = list(dict.fromkeys(i for e in eos for i in (e if isinstance(e, list) else [e]) if i is not None))
    hits = []
    try:
        for i in range(0, len(problems), batch_size):
            chunk = problems[i : i + batch_size]
            texts = [chat_prompt(p, chat) for p in chunk]
            if chat:
                texts = [tok.apply_chat_template(t, tokenize=False, add_generation_prompt=True) for t in texts]
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=not chat)
            out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id,
                                 eos_token_id=eos or None)  # fmt: skip
            done = tok.batch_decode(out[:, enc["input_ids"].size(1) :], skip_special_tokens=True)
            hits += [first_int_reward(c, p) for c, p in zip(done, chunk, strict=True)]
    finally:
        tok.padding_side = side
        model.train(was)
    return float(np.mean(hits))
