"""`MixPolicyBuffer`: the replay of the last N policies' rollouts that TRL's `GRPOTrainer` does not have.

A stored rollout batch is the dict `GRPOTrainer._generate_and_score_completions` returns (prompt / completion ids and
masks, group-normalised advantages) plus ``old_per_token_logps``: the behaviour policy's log-probs, fixed at generation
time. Batches are kept whole per iteration (groups stay intact, as GRPO's advantages need) and replayed group by group:
an iteration i ~ uniform over the window (nu in the paper), then a uniformly drawn prompt group of it.
"""

from __future__ import annotations

from collections import deque

import torch
import torch.nn.functional as F

# Keys of a rollout batch: how each is padded when batches of different widths are concatenated.
LEFT_PADDED = ("prompt_ids", "prompt_mask")
RIGHT_PADDED = (
    "completion_ids", "completion_mask", "old_per_token_logps", "snapshot_per_token_logps", "ref_per_token_logps",
    "prev_per_token_logps", "tool_mask",
)  # fmt: skip
PER_ROW = ("advantages",)


def cat_batches(batches: list[dict], pad_token_id: int) -> dict:
    """Concatenate rollout batches along the rows, padding prompts on the left and completions on the right."""
    keys = set(batches[0])
    for b in batches[1:]:
        if set(b) != keys:
            raise ValueError(f"cannot mix rollout batches with different fields: {sorted(keys)} vs {sorted(b)}")
    out = {}
    for k in keys:
        xs = [b[k] for b in batches]
        if k in LEFT_PADDED or k in RIGHT_PADDED:
            width = max(x.size(1) for x in xs)
            fill = pad_token_id if k in ("prompt_ids", "completion_ids") else 0
            pads = [(width - x.size(1), 0) if k in LEFT_PADDED else (0, width - x.size(1)) for x in xs]
            out[k] = torch.cat([F.pad(x, p, value=fill) for x, p in zip(xs, pads, strict=True)])
        elif k in PER_ROW:
            out[k] = torch.cat(xs)
        else:
            raise ValueError(f"ReMix cannot replay rollout field {k!r} (text-only rollouts are supported)")
    return out


def take_rows(batch: dict, rows: torch.Tensor) -> dict:
    return {k: v[rows] for k, v in batch.items()}


class MixPolicyBuffer:
    """Rollout batches of the last ``window`` iterations, replayed as whole groups of ``num_generations`` rows."""

    def __init__(self, window: int, num_generations: int, seed: int = 0):
        if window < 0 or num_generations < 1:
            raise ValueError(f"window must be >= 0 and num_generations >= 1, got {window!r}, {num_generations!r}")
        self.window, self.num_generations = window, num_generations
        self._batches: deque[tuple[int, dict]] = deque(maxlen=max(window, 1))
        self._gen = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self._batches) if self.window else 0

    def add(self, iteration: int, batch: dict) -> None:
        """Store one iteration's fresh rollouts (detached; must hold ``old_per_token_logps``)."""
        if "old_per_token_logps" not in batch:
            raise ValueError("a replayed batch needs its behaviour log-probs: 'old_per_token_logps' is missing")
        if batch["completion_ids"].size(0) % self.num_generations:
            raise ValueError("a stored batch must hold whole groups of num_generations rollouts")
        if self.window:
            self._batches.append((iteration, {k: v.detach() for k, v in batch.items() if k in _STORED}))

    def clear(self) -> None:
        self._batches.clear()

    def iterations(self) -> list[int]:
        return [i for i, _ in self._batches] if self.window else []

    def sample(self, n_groups: int) -> tuple[list[dict], list[int]]:
        """``n_groups`` groups, each from an iteration drawn uniformly from the window; returns (groups, iterations)."""
        if n_groups and not len(self):
            raise ValueError("cannot sample from an empty replay buffer")
        G, out, its = self.num_generations, [], []
        for _ in range(n_groups):
            it, b = self._batches[int(torch.randint(len(self._batches), (1,), generator=self._gen))]
            g = int(torch.randint(b["completion_ids"].size(0) // G, (1,), generator=self._gen))
            out.append(take_rows(b, torch.arange(g * G, (g + 1) * G)))
            its.append(it)
        return out, its


# What is kept: tokens, masks, advantages and behaviour log-probs (and the base's log-probs while the base is fixed).
_STORED = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "old_per_token_logps",
           "ref_per_token_logps", "tool_mask")  # fmt: skip
