"""Quantised-return answers for a small word-level reasoner (our miniature of the paper's numeric answers).

The paper's LLM writes the next H standardised closes as decimals. A micro reasoner with a closed vocabulary writes
each step as a return bin instead: the word ``r+3`` means a cumulative return of +3 quanta (3 x 0.5 %) over the last
observed close. ``to_target`` maps the bins back to standardised closes, (last * (1 + k q) - mu) / sd, so the reward
and every metric are computed in the paper's units (MSE on standardised prices).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .reward import answer_block

_BIN = re.compile(r"r(0|[+-][0-9]+)")


@dataclass(frozen=True)
class ReturnBins:
    quantum: float = field(default=0.005, metadata={"help": "return per bin (ours: 0.5 %)"})
    max_bin: int = field(default=20, metadata={"help": "bins run from -max_bin to +max_bin (ours: +-10 %)"})

    def __post_init__(self):
        if self.quantum <= 0 or self.max_bin < 1:
            raise ValueError(f"ReturnBins needs quantum > 0 and max_bin >= 1, got {self.quantum!r}, {self.max_bin!r}")

    @property
    def words(self) -> list[str]:
        return [self.word(k) for k in range(-self.max_bin, self.max_bin + 1)]

    def word(self, k: int) -> str:
        return f"r{k:+d}" if k else "r0"

    def bin_of(self, ret: float) -> int:
        """Nearest bin of a cumulative return, clipped to the range."""
        return max(-self.max_bin, min(self.max_bin, round(ret / self.quantum)))

    def parse(self, text: str) -> list[float] | None:
        """Returns (as fractions) of the bin words in the answer block; None if a word is not a bin."""
        block = answer_block(text)
        if block is None:
            return None
        words = block.split()
        if not words or not all(_BIN.fullmatch(w) for w in words):
            return None
        return [int(w[1:]) * self.quantum for w in words]

    @staticmethod
    def to_target(values, row) -> list[float]:
        """Returns -> standardised closes with the window's ``last`` close and scaler ``mu`` / ``sd``."""
        return [(row["last"] * (1.0 + r) - row["mu"]) / row["sd"] for r in values]
