"""Activation hooks as context managers: capture or replace activations at any layer and token position.

Hook points (per layer ``i``):

- ``resid_pre``: the residual stream entering block ``i``;
- ``resid``: the residual stream leaving block ``i`` (= ``hidden_states[i + 1]`` of HF's ``output_hidden_states``,
  except for the last block, whose HF entry has the final norm applied);
- ``attn_out``: the attention sub-layer's output, before it is added to the residual stream;
- ``mlp_key``: the input of the MLP output (down) projection, i.e. the "key" that ROME-style editors write against;
- ``mlp_out``: the MLP sub-layer's output, before it is added to the residual stream.

Hooks are registered on entry and always removed in ``finally``, also when the body raises.

    with capture(model, [("resid", 3), ("mlp_key", 2)]) as acts:
        model(**batch)
    acts["resid", 3]            # [batch, seq, d]

    with intervene(model, {("mlp_out", 2): lambda a: a * 0}):
        model(**batch)          # the MLP of layer 2 is ablated
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager

import torch

from .adapters import ModelAdapter

POINTS = ("resid_pre", "resid", "attn_out", "mlp_key", "mlp_out")
Point = tuple[str, int]


def _module_and_kind(ad: ModelAdapter, point: str, layer: int):
    """(module, 'pre' | 'post') to hook for a point."""
    if point == "resid_pre":
        return ad.block(layer), "pre"
    if point == "resid":
        return ad.block(layer), "post"
    if point == "attn_out":
        return ad.attn(layer), "post"
    if point == "mlp_key":
        return ad.mlp_out(layer), "pre"
    if point == "mlp_out":
        return ad.mlp(layer), "post"
    raise ValueError(f"unknown hook point {point!r}; choose one of {', '.join(POINTS)}")


def _first(x):
    return x[0] if isinstance(x, tuple) else x


def _with_first(x, new):
    return (new, *x[1:]) if isinstance(x, tuple) else new


def _register(ad: ModelAdapter, point: str, layer: int, fn: Callable[[torch.Tensor], torch.Tensor | None]):
    """Register ``fn`` on a point. ``fn`` gets the activation; if it returns a tensor, that replaces it."""
    module, kind = _module_and_kind(ad, point, layer)
    if kind == "pre":

        def pre_hook(mod, args, kwargs):
            if args:
                new = fn(args[0])
                if new is not None:
                    return (new, *args[1:]), kwargs
            elif "hidden_states" in kwargs:
                new = fn(kwargs["hidden_states"])
                if new is not None:
                    kwargs = {**kwargs, "hidden_states": new}
                    return args, kwargs
            return None

        return module.register_forward_pre_hook(pre_hook, with_kwargs=True)

    def post_hook(mod, args, output):
        new = fn(_first(output))
        return None if new is None else _with_first(output, new)

    return module.register_forward_hook(post_hook)


@contextmanager
def hooked(model, hooks: dict[Point, Callable[[torch.Tensor], torch.Tensor | None]]):
    """Register several raw hooks ``{(point, layer): fn}``; removed on exit."""
    ad = ModelAdapter(model)
    handles = []
    try:
        for (point, layer), fn in hooks.items():
            handles.append(_register(ad, point, layer, fn))
        yield
    finally:
        for h in handles:
            h.remove()


@contextmanager
def capture(model, points: Iterable[Point], detach: bool = True):
    """Record activations at ``points``; yields a dict filled by every forward pass (last pass wins)."""
    store: dict[Point, torch.Tensor] = {}

    def make(p: Point):
        def fn(a: torch.Tensor):
            store[p] = a.detach() if detach else a
            return None

        return fn

    with hooked(model, {tuple(p): make(tuple(p)) for p in points}):
        yield store


@contextmanager
def intervene(model, edits: dict[Point, Callable[[torch.Tensor], torch.Tensor]]):
    """Replace activations: ``edits[(point, layer)](activation) -> new activation`` (same shape)."""

    def wrap(p, f):
        def fn(a):
            new = f(a)
            if new.shape != a.shape:
                raise ValueError(f"replacement at {p} has shape {tuple(new.shape)}, expected {tuple(a.shape)}")
            return new

        return fn

    with hooked(model, {tuple(p): wrap(p, f) for p, f in edits.items()}):
        yield


def set_at(value: torch.Tensor, positions: int | Sequence[int] | None = None, add: bool = False):
    """An edit function that writes (or adds) ``value`` at token ``positions`` (all positions if None)."""

    def fn(a: torch.Tensor) -> torch.Tensor:
        a = a.clone()
        v = value.to(a.dtype)
        idx = slice(None) if positions is None else positions
        if add:
            a[:, idx] = a[:, idx] + v
        else:
            a[:, idx] = v
        return a

    return fn


@contextmanager
def replace(model, point: str, layer: int, value: torch.Tensor, positions=None, add: bool = False):
    """Convenience: write ``value`` into ``(point, layer)`` at ``positions``."""
    with intervene(model, {(point, layer): set_at(value, positions, add)}):
        yield
