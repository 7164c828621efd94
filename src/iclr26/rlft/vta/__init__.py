"""VTA, *Verbal Technical Analysis* (Koa et al., ICLR 2026, https://arxiv.org/abs/2511.08616; code
https://github.com/chen-jan/VTA): Time-GRPO for a reasoner that writes technical-analysis rationales and numeric
forecasts, and a time-series forecaster conditioned on the reasoner's output with classifier-free guidance.

- `annotate`: TA indicators (the `ta` package) and the official text annotation of a window;
- `reward`: `TimeGRPOReward` (inverse-MSE correctness + think / answer / xml format terms) for `GRPOTrainer`;
- `trainer`: `time_grpo_trainer`, `sft_trainer` and the official configs on TRL;
- `forecaster`: `ConditionalForecaster` (backbone + reasoning-conditioned alignment layer, CFG), `DLinear`, `fit`;
- `bins`: quantised-return answers for a word-level reasoner;
- `text`: prompt rows of a price frame for a real LLM, the official answer layout for SFT targets, generation.
"""

from .annotate import annotate_window, indicator_states, indicators
from .bins import ReturnBins
from .forecaster import AlignmentLayer, ConditionalForecaster, DLinear, ForecasterConfig, RevINMLP, fit, path_stats
from .reward import TimeGRPOReward, group_advantages, parse_answer, xml_count
from .text import answer_text, generate, trend_rationale, window_rows
from .trainer import SYSTEM, grpo_config, grpo_dataset, sft_config, sft_dataset, sft_trainer, time_grpo_trainer

__all__ = [
    "SYSTEM",
    "AlignmentLayer",
    "ConditionalForecaster",
    "DLinear",
    "ForecasterConfig",
    "ReturnBins",
    "RevINMLP",
    "TimeGRPOReward",
    "annotate_window",
    "answer_text",
    "generate",
    "fit",
    "grpo_config",
    "grpo_dataset",
    "group_advantages",
    "indicator_states",
    "indicators",
    "parse_answer",
    "path_stats",
    "sft_config",
    "sft_dataset",
    "sft_trainer",
    "time_grpo_trainer",
    "trend_rationale",
    "window_rows",
    "xml_count",
]
