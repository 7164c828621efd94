"""Text windows for a real LLM reasoner (VTA, Koa et al., ICLR 2026): prompt rows from a price frame, the official
answer layout for SFT targets, and greedy / sampled generation.

- `window_rows(frame, train_days)`: one row per window, ``{"prompt", "target", "last", "closes", "day"}``: the official
  annotation of
  the L standardised closes (closes standardised with the mean and std of the first ``train_days`` closes, the
  "price_standard" scaler) and the next H standardised closes as ``target`` (the column `TimeGRPOReward` reads);
- `answer_text(values, rationale)`: ``<think>\\n…\\n</think>\\n<answer>\\n[v1, …, vH]\\n</answer>``, the layout the
  official rewards parse (SFT targets: the stage-2 traces);
- `trend_rationale(closes)`: a one-sentence rule reading of a window (last close against the window mean, the slope
  of the last five days) for SFT targets when no reasoning traces exist;
- `generate(model, tok, prompts)`: completions of plain or chat prompts, stopping at the tokenizer's and the model's
  end tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .annotate import WARMUP, annotate_window, indicators


def window_rows(frame, train_days: int, lookback: int = 10, horizon: int = 10, simplified: bool = False,
                days: Sequence[int] | None = None) -> list[dict]:  # fmt: skip
    """Prompt rows of one OHLCV frame (Yahoo columns); ``days`` are the last observed days t (default: every day
    whose indicators are defined and whose H targets exist)."""
    close = np.asarray(frame["Close"], float)
    if not lookback <= train_days <= len(close):
        raise ValueError(f"train_days must be in [{lookback}, {len(close)}], got {train_days!r}")
    mu, sd = close[:train_days].mean(), close[:train_days].std()
    if not np.isfinite(sd) or sd == 0:
        raise ValueError("the first train_days closes are constant or not finite: no standardisation possible")
    z = (close - mu) / sd
    ind = None if simplified else indicators(frame)
    first = lookback - 1 if simplified else max(lookback - 1, WARMUP)
    days = range(first, len(close) - horizon) if days is None else days
    rows = []
    for t in days:
        if not first <= t < len(close) - horizon:
            raise ValueError(f"day {t} has no full window and {horizon} future closes (valid: {first}..)")
        win = z[t - lookback + 1 : t + 1]
        rows.append({"prompt": annotate_window(win, None if simplified else ind.iloc[t - lookback + 1 : t + 1],
                                               simplified=simplified),
                     "target": [float(v) for v in z[t + 1 : t + horizon + 1]], "last": float(z[t]),
                     "closes": [float(v) for v in win], "day": int(t)})  # fmt: skip
    return rows


def answer_text(values: Sequence[float], rationale: str, digits: int = 2) -> str:
    """The official completion layout with ``values`` printed to ``digits`` decimals."""
    vals = ", ".join(f"{v:.{digits}f}" for v in values)
    return f"<think>\n{rationale}\n</think>\n<answer>\n[{vals}]\n</answer>"


def trend_rationale(closes: Sequence[float]) -> str:
    """A one-sentence rule reading of a window (ours: a stand-in for the paper's distilled reasoning traces)."""
    c = np.asarray(closes, float)
    slope = (c[-1] - c[-5]) / 4 if len(c) >= 5 else 0.0
    where = "above" if c[-1] > c.mean() else "below"
    trend = "rising" if slope > 0 else "falling"
    return f"The last close {c[-1]:.2f} is {where} the {len(c)}-day mean {c.mean():.2f} and the series is {trend}."


@torch.no_grad()
def generate(model, tok, prompts: Sequence, max_new_tokens: int = 96, batch_size: int = 16,
             do_sample: bool = False, temperature: float = 1.0) -> list[str]:  # fmt: skip
    """Completions of ``prompts`` (strings, or message lists rendered with the chat template); greedy by default, or
    sampled as TRL's GRPO rollouts are (``temperature``, no top-k / top-p truncation)."""
    side, tok.padding_side = tok.padding_side, "left"
    eos = [tok.eos_token_id, model.generation_config.eos_token_id]
    eos = list(dict.fromkeys(i for e in eos for i in (e if isinstance(e, list) else [e]) if i is not None))
    pad = tok.pad_token_id if tok.pad_token_id is not None else (eos[0] if eos else 0)
    was = model.training
    model.eval()
    out: list[str] = []
    try:
        for i in range(0, len(prompts), batch_size):
            chunk = list(prompts[i : i + batch_size])
            chat = not isinstance(chunk[0], str)
            if chat:
                chunk = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in chunk]
            enc = tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)  # as TRL's rollouts
            kw = dict(do_sample=True, temperature=temperature, top_k=0) if do_sample else dict(do_sample=False)
            ids = model.generate(**enc, max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos or None,
                                 **kw)  # fmt: skip
            out += tok.batch_decode(ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    finally:
        tok.padding_side = side
        model.train(was)
    return out
