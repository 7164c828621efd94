"""The configuration every locate-then-edit editor shares, and the mapping of a paper's layers onto another depth."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass
class EditConfig:
    """Fields every locate-then-edit editor shares. Subclasses redeclare them with their paper's defaults."""

    layers: tuple[int, ...] | None = field(
        default=None,
        metadata={"help": "MLP layers to edit; None = the paper's layers mapped onto this model by relative depth"},
    )
    v_num_grad_steps: int = field(default=20, metadata={"help": "Adam steps to optimise the target δ"})
    v_lr: float = field(default=0.5, metadata={"help": "Adam learning rate for δ"})
    v_weight_decay: float = field(default=0.5, metadata={"help": "weight on ||δ||² / ||h||² in the δ objective"})
    clamp_norm_factor: float = field(default=4.0, metadata={"help": "||δ|| ≤ factor · ||h|| after every step"})
    kl_factor: float = field(
        default=0.0625, metadata={"help": "weight of the KL 'essence' term on the '{} is a' prompt"}
    )
    context_templates: tuple[tuple[int, int], ...] = field(
        default=((5, 10), (10, 10)),
        metadata={
            "help": "random prefixes as (length in tokens, how many), sampled from the model; k* and δ average "
            "over them"
        },
    )
    stats_n_tokens: int = field(
        default=100_000, metadata={"help": "tokens of the corpus used for the key covariance E[k kᵀ] (bounds its cost)"}
    )
    stats_max_len: int = field(default=128, metadata={"help": "tokens per corpus chunk for the covariance pass"})
    seed: int = field(default=0, metadata={"help": "seed for prefix sampling"})

    def __post_init__(self):
        if self.layers is not None:
            self.layers = _layer_tuple(self.layers, type(self).__name__)
        _check(self, "v_num_grad_steps", self.v_num_grad_steps >= 0, "≥ 0")
        _check(self, "v_lr", self.v_lr > 0, "> 0")
        _check(self, "v_weight_decay", self.v_weight_decay >= 0, "≥ 0")
        _check(self, "clamp_norm_factor", self.clamp_norm_factor > 0, "> 0")
        _check(self, "kl_factor", self.kl_factor >= 0, "≥ 0")
        _check(self, "stats_n_tokens", self.stats_n_tokens >= 1, "≥ 1")
        _check(self, "stats_max_len", self.stats_max_len >= 2, "≥ 2")
        self.context_templates = tuple(tuple(int(v) for v in x) for x in self.context_templates)
        if any(len(x) != 2 or x[0] < 1 or x[1] < 0 for x in self.context_templates):
            raise ValueError(f"context_templates must be ((length ≥ 1, count ≥ 0), ...), got {self.context_templates}")

    def default_layer_fractions(self) -> tuple[float, float]:
        """(first, last) edit layer as a fraction of depth in the paper's model; subclasses override."""
        return (17 / 47, 17 / 47)


def _layer_tuple(layers, owner: str) -> tuple[int, ...]:
    """``layers`` as a tuple of ints; a bare int, a string, floats, bools or an empty sequence are errors."""
    hint = "give a tuple of layer indices, e.g. layers=(10,) or layers=(8, 9, 10), or None for the paper's layers"
    if isinstance(layers, (str, bytes)) or not isinstance(layers, (list, tuple, range)):
        raise ValueError(f"{owner}.layers must be a tuple of ints or None, got {layers!r}; {hint}")
    out = []
    for x in layers:
        if isinstance(x, bool) or not isinstance(x, int):
            try:
                import numpy as np

                ok = isinstance(x, np.integer)
            except ImportError:  # pragma: no cover
                ok = False
            if not ok:
                raise ValueError(f"{owner}.layers must hold ints, got {x!r} in {layers!r}; {hint}")
        out.append(int(x))
    if not out:
        raise ValueError(f"{owner}.layers must be None or a non-empty tuple of layer indices; {hint}")
    return tuple(out)


def _check(cfg, name: str, ok: bool, rng: str) -> None:
    if not ok:
        raise ValueError(f"{type(cfg).__name__}.{name}={getattr(cfg, name)!r} is out of range: must be {rng}")


def scaled_layers(n_layers: int, lo_frac: float, hi_frac: float, min_count: int = 1) -> tuple[int, ...]:
    """The paper's layer range (as fractions of depth, 0 = first block, 1 = last) on a model with ``n_layers``.

    The last block is never chosen (an edit at the subject's token needs a later attention layer to reach the
    prediction), so at most ``n_layers − 1`` layers are returned."""
    top = max(0, n_layers - 2)
    lo, hi = min(round(lo_frac * (n_layers - 1)), top), min(round(hi_frac * (n_layers - 1)), top)
    while hi - lo + 1 < min(min_count, top + 1):
        lo, hi = (lo - 1, hi) if lo > 0 else (lo, hi + 1)
    return tuple(range(lo, hi + 1))


def config_summary(cfg) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
