"""The abstention-aware reward of *When Silence Is Golden* (Zhou et al., ICLR 2026, https://arxiv.org/abs/2602.04755),
as TRL reward functions.

Idea. GRPO after a CoT cold start learns to say "No Answer" when the context does not support an answer if the rule
reward pays for it. The total reward (Eq. 2, as in the released `scripts/train/llm_rl.py`) is

    R = R_format + R_answer,
    R_format = 0.5 if the completion is exactly  <think>\\n…\\n</think>\\n\\n<answer>\\n…\\n</answer>  else 0,
    R_answer = 0                          if there is no <answer>\\n…\\n</answer> block            (COMPLETION_REWARD)
             = 1.0 if a == "No Answer"    if the gold is "No Answer" (exact string)               (NO_ANSWER_REWARD)
               else 0                                                                            (FP_FN_REWARD)
             = 0                          if a.lower() == "no answer" but the gold is an answer    (FP_FN_REWARD)
             = ROUGE-L_F(a, g) + EM(a, g) otherwise, EM = 1[a.lower() == g.lower()].

So a correct answer earns up to 2.5, a correct abstention 1.5, and a false abstention only the format bonus.
``AbstentionReward(...).reward_funcs`` plugs into ``GRPOTrainer(reward_funcs=...)``; the gold answer comes from the
dataset column ``answer_column`` (TRL passes every extra dataset column to reward functions as a keyword list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FORMAT_RE = re.compile(r"^<think>\n(.*?)\n</think>\n\n<answer>\n(.*?)\n</answer>$", re.DOTALL)
ANSWER_RE = re.compile(r"<answer>\n(.*?)\n</answer>", re.DOTALL)
NO_ANSWER = "No Answer"


def completion_text(completion) -> str:
    """A TRL completion as text: a plain string, or the content of a conversational ``[{"role", "content"}]``."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[0], dict):
        return completion[0]["content"]
    raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


def extract_answer(text: str) -> str | None:
    """The text inside the first ``<answer>\\n…\\n</answer>`` block, or None."""
    m = ANSWER_RE.search(text)
    return None if m is None else m.group(1)


_ROUGE = None


def rouge_l(pred: str, gold: str) -> float:
    """ROUGE-L F-measure by Google's `rouge_score` (as the official code's `evaluate` wrapper; no stemming)."""
    global _ROUGE
    if _ROUGE is None:
        from rouge_score import rouge_scorer

        _ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    return float(_ROUGE.score(gold, pred)["rougeL"].fmeasure)


@dataclass
class AbstentionReward:
    """Constants of the abstention-aware reward; defaults are the released script's values."""

    format_bonus: float = field(default=0.5, metadata={"help": "R_format for the exact layout (script: 0.5)"})
    abstain_bonus: float = field(default=1.0, metadata={"help": "correct 'No Answer' on an unanswerable (script: 1.0)"})
    wrong_penalty: float = field(
        default=0.0, metadata={"help": "reward of a false abstention or of answering an unanswerable (script: 0)"}
    )
    missing_answer: float = field(default=0.0, metadata={"help": "reward when no <answer> block is found (script: 0)"})
    use_rouge: bool = field(default=True, metadata={"help": "add ROUGE-L F(a, g) on answerables (script: True)"})
    use_em: bool = field(default=True, metadata={"help": "add EM(a, g) on answerables (script: True)"})
    answer_column: str = field(default="answer", metadata={"help": "dataset column with the gold answer"})
    no_answer: str = field(default=NO_ANSWER, metadata={"help": "the abstention string (paper: 'No Answer')"})

    def __post_init__(self):
        for name in ("format_bonus", "abstain_bonus", "wrong_penalty", "missing_answer"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
                raise ValueError(f"AbstentionReward.{name} must be a finite number, got {v!r}")
        for name in ("format_bonus", "abstain_bonus"):
            if getattr(self, name) < 0:
                raise ValueError(f"AbstentionReward.{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.no_answer.strip():
            raise ValueError("AbstentionReward.no_answer must be a non-empty string such as 'No Answer'")

    # R_format
    def format_reward(self, completions, **kwargs) -> list[float]:
        return [self.format_bonus if FORMAT_RE.match(completion_text(c)) else 0.0 for c in completions]

    def answer_value(self, answer: str | None, gold: str) -> float:
        """R_answer for one extracted answer ``answer`` (None: no block) and gold ``gold``."""
        if answer is None:
            return self.missing_answer
        if gold == self.no_answer:  # unanswerable: only the exact abstention string earns the bonus
            return self.abstain_bonus if answer == self.no_answer else self.wrong_penalty
        if answer.lower() == self.no_answer.lower():  # false abstention
            return self.wrong_penalty
        r = rouge_l(answer, gold) if self.use_rouge else 0.0
        return r + (float(answer.lower() == gold.lower()) if self.use_em else 0.0)

    # R_answer
    def answer_reward(self, completions, **kwargs) -> list[float]:
        if self.answer_column not in kwargs:
            raise KeyError(
                f"the reward needs the gold answers in the dataset column {self.answer_column!r}; "
                f"columns passed: {sorted(k for k in kwargs if not k.startswith(('trainer_', 'log_')))}"
            )
        golds = kwargs[self.answer_column]
        if len(golds) != len(completions):
            raise ValueError(
                f"got {len(completions)} completions but {len(golds)} gold answers in {self.answer_column!r}: pass one "
                "gold per completion (TRL repeats each prompt's columns for its G completions)"
            )
        bad = [g for g in golds if not isinstance(g, str)]
        if bad:
            raise TypeError(f"gold answers must be strings (abstention: {self.no_answer!r}), got {bad[:3]!r}")
        return [self.answer_value(extract_answer(completion_text(c)), g) for c, g in zip(completions, golds)]

    def __call__(self, completions, **kwargs) -> list[float]:
        """R = R_format + R_answer (one number per completion)."""
        fmt, ans = self.format_reward(completions), self.answer_reward(completions, **kwargs)
        return [f + a for f, a in zip(fmt, ans, strict=True)]

    @property
    def reward_funcs(self) -> list:
        """``[format_reward, answer_reward]``, as the official script passes them to GRPOTrainer (summed by TRL)."""
        return [self.format_reward, self.answer_reward]


def em_only_reward(format_bonus: float = 0.5) -> AbstentionReward:
    """Control: format + exact match only, no abstention bonus (an abstention never pays)."""
    return AbstentionReward(format_bonus=format_bonus, abstain_bonus=0.0, use_rouge=False)
