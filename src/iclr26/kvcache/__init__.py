"""KV-cache eviction as kvpress presses: ReST-KV, the standard baselines under one budget interface, measurement.

``with ReSTKVPress(compression_ratio=0.75)(model): model.generate(...)`` evicts 75% of every layer's and head's cache
after the prefill; ``make_press(name, budget=64)`` builds any method of the ReST-KV reproduction by name.
"""

from .baselines import METHODS, AccumulatedAttentionPress, BudgetPress, make_press
from .measure import cache_bytes, cache_lengths, compress_record, record_prefill, timed_generate
from .restkv import ReSTKVPress, lor_scores

__all__ = [
    "METHODS",
    "AccumulatedAttentionPress",
    "BudgetPress",
    "ReSTKVPress",
    "cache_bytes",
    "cache_lengths",
    "compress_record",
    "lor_scores",
    "make_press",
    "record_prefill",
    "timed_generate",
]
