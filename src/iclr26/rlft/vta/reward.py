"""Time-GRPO's rewards (VTA, Koa et al., ICLR 2026, https://arxiv.org/abs/2511.08616; official code
https://github.com/chen-jan/VTA, ``grpo/grpo_utils.py``) as TRL reward functions.

Idea. The reasoner writes ``<think>…</think>`` then ``<answer>`` with the next H values ``</answer>``; GRPO is driven
by an inverse-MSE reward on those values plus format shaping. Per completion the four official terms are summed:

    correctness   r = a / (1 + b * MSE(pred_1..H, true_1..H))     (a = 5, b = 10; 0 when the answer does not parse
                                                                   into exactly H numbers)
    think format  0.5 if ``<think>.*?</think>\\s*<answer>.*?</answer>`` occurs
    answer format 1.0 for exactly H numbers, else max(0, 1 - |n - H| / H) (0 when nothing parses)
    xml count     0.125 for each of "<think>\\n", "\\n</think>\\n", "\\n<answer>\\n", "\\n</answer>" found exactly once

The answer's numbers are read by ``parse`` (default: the official ``[v1, …, vH]`` list of floats) and mapped into the
target's units by ``to_target(values, row)`` (default: identity; ``row`` holds the dataset's extra columns for that
completion, e.g. the last close and the scaler of a window when the answer is written as quantised returns).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

THINK_RE = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)
LIST_RE = re.compile(r"\[(.*?)\]", re.DOTALL)


def completion_text(completion) -> str:
    """A TRL completion as text (plain string or conversational ``[{"role", "content"}]``)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[0], dict):
        return completion[0]["content"]
    raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


def answer_block(text: str) -> str | None:
    """The text between the last ``<answer>`` and the following ``</answer>`` (official ``extract_xml_answer``)."""
    if "<answer>" not in text or "</answer>" not in text:
        return None
    return text.split("<answer>")[-1].split("</answer>")[0].strip()


def parse_answer(text: str) -> list[float] | None:
    """The official answer format: the numbers of the first ``[v1, v2, …]`` list in the answer block (any count)."""
    block = answer_block(text)
    m = None if block is None else LIST_RE.search(block)
    if m is None:
        return None
    try:
        return [float(v.strip()) for v in m.group(1).split(",")]
    except ValueError:
        return None


def mse(pred: Sequence[float], true: Sequence[float]) -> float:
    if len(pred) != len(true):
        raise ValueError(f"pred and true must have the same length, got {len(pred)} and {len(true)}")
    return sum((p - t) ** 2 for p, t in zip(pred, true)) / len(true)


def xml_count(text: str) -> float:
    """Official ``count_xml``: 0.125 per layout marker present exactly once."""
    marks = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")
    return 0.125 * sum(text.count(m) == 1 for m in marks)


@dataclass
class TimeGRPOReward:
    """The four official reward terms; ``reward_funcs`` plugs into ``GRPOTrainer(reward_funcs=...)``."""

    horizon: int = field(default=10, metadata={"help": "forecast length H (paper: 10 days)"})
    a: float = field(default=5.0, metadata={"help": "numerator of the inverse-MSE reward (code: 5)"})
    b: float = field(default=10.0, metadata={"help": "MSE multiplier of the inverse-MSE reward (code: 10)"})
    think_bonus: float = field(default=0.5, metadata={"help": "think-format reward (code: 0.5)"})
    answer_bonus: float = field(default=1.0, metadata={"help": "answer-format reward for exactly H numbers (code: 1)"})
    xml_bonus: float = field(default=0.125, metadata={"help": "per-marker xml-count reward (code: 0.125)"})
    target_column: str = field(default="target", metadata={"help": "dataset column with the true H values"})
    parse: Callable[[str], list[float] | None] = field(default=parse_answer, metadata={"help": "answer -> numbers"})
    to_target: Callable | None = field(default=None, metadata={"help": "(values, row) -> values in target units"})
    row_columns: tuple[str, ...] = field(default=(), metadata={"help": "extra dataset columns passed to to_target"})

    def __post_init__(self):
        if self.horizon < 1:
            raise ValueError(f"TimeGRPOReward.horizon must be >= 1, got {self.horizon!r}")
        if self.a <= 0 or self.b <= 0:
            raise ValueError(f"TimeGRPOReward.a and .b must be > 0, got a={self.a!r}, b={self.b!r}")

    # --- per-text terms (also usable outside TRL) -------------------------------------------------------------------
    def forecast(self, text: str, row: dict | None = None) -> list[float] | None:
        """The completion's H values in target units, or None when it does not parse into exactly H numbers."""
        vals = self.parse(text)
        if vals is None or len(vals) != self.horizon:
            return None
        return list(self.to_target(vals, row or {})) if self.to_target else vals

    def correctness(self, text: str, true: Sequence[float], row: dict | None = None) -> float:
        pred = self.forecast(text, row)
        if pred is None:
            return 0.0
        return self.a / (1.0 + self.b * mse(pred, list(true)))  # the inverse-MSE reward

    def think_format(self, text: str) -> float:
        return self.think_bonus if THINK_RE.search(text) else 0.0

    def answer_format(self, text: str) -> float:
        vals = self.parse(text)
        if not vals:
            return 0.0
        return self.answer_bonus * max(0.0, 1.0 - abs(len(vals) - self.horizon) / self.horizon)

    def xml(self, text: str) -> float:
        return self.xml_bonus / 0.125 * xml_count(text)

    def total(self, text: str, true: Sequence[float], row: dict | None = None) -> float:
        return self.correctness(text, true, row) + self.think_format(text) + self.answer_format(text) + self.xml(text)

    # --- TRL reward functions ---------------------------------------------------------------------------------------
    @property
    def reward_funcs(self) -> list[Callable]:
        """``[think_format, answer_format, correctness, xmlcount]`` in the official order; TRL sums them."""

        def rows(n, kwargs):
            return [{c: kwargs[c][i] for c in self.row_columns} for i in range(n)]

        def correctness_reward(prompts, completions, **kwargs):
            if self.target_column not in kwargs:
                raise ValueError(f"the GRPO dataset needs the column {self.target_column!r} with the true values")
            texts = [completion_text(c) for c in completions]
            return [self.correctness(t, y, r) for t, y, r in zip(texts, kwargs[self.target_column],
                                                                  rows(len(texts), kwargs))]  # fmt: skip

        def think_format_reward(prompts, completions, **kwargs):
            return [self.think_format(completion_text(c)) for c in completions]

        def answer_format_reward(prompts, completions, **kwargs):
            return [self.answer_format(completion_text(c)) for c in completions]

        def xmlcount_reward(prompts, completions, **kwargs):
            return [self.xml(completion_text(c)) for c in completions]

        return [think_format_reward, answer_format_reward, correctness_reward, xmlcount_reward]


def group_advantages(rewards: Sequence[float], group_size: int, eps: float = 1e-4, scale: bool = True) -> list[float]:
    """GRPO's group-relative advantage, as TRL computes it: A_i = (r_i - mean_G r) / (std_G r + eps) with the
    unbiased (n - 1) standard deviation over the G completions of the same prompt (``scale=False``: no division)."""
    if group_size < 2 or len(rewards) % group_size:
        raise ValueError(f"need group_size >= 2 dividing len(rewards)={len(rewards)}, got {group_size!r}")
    out = []
    for g in range(0, len(rewards), group_size):
        grp = list(rewards[g : g + group_size])
        m = sum(grp) / group_size
        sd = (sum((r - m) ** 2 for r in grp) / (group_size - 1)) ** 0.5
        out += [(r - m) / (sd + eps) if scale else r - m for r in grp]
    return out
