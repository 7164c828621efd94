"""Measuring eviction for real: cache sizes, prefill time, decode time per token, peak memory; and prefill replay.

- :func:`cache_lengths` / :func:`cache_bytes` read the tensors of a ``DynamicCache`` after compression, so a press that
  only masks (keeps the tensors at full length) is caught.
- :func:`timed_generate` runs the normal ``model.generate`` path under a press and reports time to first token
  (prefill), decode seconds per token, KV bytes, and peak memory (``torch.cuda.max_memory_allocated`` on a GPU; on a CPU
  the peak resident-set growth sampled from ``/proc/self/statm`` every millisecond).
- :func:`record_prefill` + :func:`compress_record` replay one full-cache prefill under many presses. kvpress compresses
  each layer's cache *after* that layer's attention has run, so the hidden states of the prefill do not depend on the
  press; applying ``press.compress`` to the recorded (hidden states, keys, values) of each layer gives exactly the cache
  that ``with press(model): model(prompt)`` would leave (tested), at the price of one prefill for all methods.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from .common import AdapterHooks


def cache_lengths(cache) -> list[int]:
    """Stored sequence length of every layer (the KV tensors' size along the token axis)."""
    return [int(layer.keys.shape[-2]) for layer in cache.layers]


def cache_bytes(cache) -> int:
    return sum(layer.keys.numel() * layer.keys.element_size() * 2 for layer in cache.layers)


class _RecordHooks(AdapterHooks):
    def __init__(self):
        self.layers: dict[int, tuple] = {}

    def post_init_from_model(self, model):
        pass

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        keep = {k: kwargs[k] for k in ("position_embeddings", "cache_position") if k in kwargs}
        self.layers[module.layer_idx] = (module, hidden_states, keep)
        return keys, values


@dataclass
class PrefillRecord:
    """One full-cache prefill: the model, the cache, last logits, and each layer's (module, hidden states, kwargs)."""

    model: torch.nn.Module
    cache: DynamicCache
    logits: torch.Tensor
    layers: dict = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        return cache_lengths(self.cache)[0]


@torch.no_grad()
def record_prefill(model, input_ids: torch.Tensor) -> PrefillRecord:
    rec = _RecordHooks()
    cache = DynamicCache()
    with rec(model):
        out = model(input_ids=input_ids, past_key_values=cache, use_cache=True)
    return PrefillRecord(model, cache, out.logits[:, -1], rec.layers)


@torch.no_grad()
def compress_record(record: PrefillRecord, press) -> DynamicCache:
    """The cache ``press`` would leave after the recorded prefill (``None`` press: a copy of the full cache)."""
    if press is not None:
        press.post_init_from_model(record.model)
    new = DynamicCache()
    for i, layer in enumerate(record.cache.layers):
        keys, values = layer.keys, layer.values
        if press is not None:
            module, hidden, kw = record.layers[i]
            keys, values = press.compress(module, hidden, keys, values, None, {**kw, "hidden_states": hidden})
        new.update(keys.clone(), values.clone(), i)
    return new


@torch.no_grad()
def continue_from(model, cache, start: int, tokens: torch.Tensor) -> torch.Tensor:
    """Feed ``tokens`` (``[1, n]``) at positions ``start …`` after a (possibly compressed) cache; returns logits."""
    pos = torch.arange(start, start + tokens.shape[1]).unsqueeze(0)
    return model(
        input_ids=tokens, past_key_values=cache, position_ids=pos, cache_position=pos[0], use_cache=True
    ).logits


class _PeakRSS:
    """Peak growth of the resident set size while the block runs (sampled every ``interval`` seconds)."""

    def __init__(self, interval: float = 0.001):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def _rss(self) -> int:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * self._page
        except OSError:
            return 0

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss() - self.base)
            time.sleep(self.interval)

    def __enter__(self):
        self.base = self._rss()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self._rss() - self.base)


class _Clock:
    """A generate() streamer that only timestamps: put() is called with the prompt, then after every new token."""

    def __init__(self, cuda: bool):
        self.cuda, self.times = cuda, []

    def put(self, value):
        if self.cuda:
            torch.cuda.synchronize()
        self.times.append(time.perf_counter())

    def end(self):
        pass


@torch.no_grad()
def timed_generate(model, input_ids: torch.Tensor, press=None, max_new_tokens: int = 16, repeats: int = 1) -> dict:
    """Prefill and greedy decode through ``model.generate`` under ``press``; checks the cache really shrank.

    Timestamps come from a streamer called after every generated token: prefill_s is the time to the first token
    (prefill + scoring + eviction), decode_s_per_token the mean time of the following tokens (best of ``repeats``).
    Also returns kv_bytes and cache_len after prefill (layer 0), the final cache length, and peak_mem_bytes (CUDA peak
    allocation, or CPU peak RSS growth).
    """
    if max_new_tokens < 2:
        raise ValueError(f"max_new_tokens must be ≥ 2 to time decoding, got {max_new_tokens}")
    kw = dict(do_sample=False, pad_token_id=model.config.pad_token_id or 0, eos_token_id=None)
    ctx = press(model) if press is not None else _null()
    prefill, decode, peak = [], [], 0
    cuda = input_ids.is_cuda
    with ctx:
        for _ in range(repeats):
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            cache, clock = DynamicCache(), _Clock(cuda)
            with _PeakRSS() as rss:
                model.generate(
                    input_ids,
                    max_new_tokens=max_new_tokens,
                    min_new_tokens=max_new_tokens,
                    past_key_values=cache,
                    streamer=clock,
                    **kw,
                )
            t = clock.times
            prefill.append(t[1] - t[0])
            decode.append((t[-1] - t[1]) / (len(t) - 2))
            peak = max(peak, torch.cuda.max_memory_allocated() if cuda else rss.peak)
    lens = cache_lengths(cache)
    n_new = len(clock.times) - 1
    return {
        "prefill_s": min(prefill),
        "decode_s_per_token": min(decode),
        "kv_bytes": cache_bytes(cache) * (lens[0] - n_new + 1) // lens[0],  # KV after prefill
        "cache_len": lens[0] - n_new + 1,
        "cache_len_final": lens[0],
        "n_layers": len(lens),
        "peak_mem_bytes": peak,
    }


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
