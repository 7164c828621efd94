"""`--set key=value`: override fields of a paper's config dataclass from the command line, with type checks."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import typing

from .errors import UserError


def parse_assignments(items: list[str] | None) -> dict[str, str]:
    """["a=1", "b=x"] -> {"a": "1", "b": "x"}; a clear error for anything else."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set takes key=value (e.g. --set n_edits=10), got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _convert(name: str, text: str, current, annotation):
    kind = type(current)
    try:
        if isinstance(current, bool):
            low = text.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return low in ("true", "1", "yes")
        if isinstance(current, int):
            return int(text)
        if isinstance(current, float):
            return float(text)
        if isinstance(current, str) or (current is None and "str" in str(annotation)):
            return text
        if isinstance(current, (tuple, list)):
            items = json.loads(text) if text.startswith("[") else [t for t in text.split(",") if t.strip()]
            elem = type(current[0]) if current else (int if "int" in str(annotation) else str)
            return kind(elem(x) if not isinstance(x, elem) else x for x in items)
        if current is None:
            return json.loads(text)
    except (ValueError, TypeError, json.JSONDecodeError):
        pass
    else:
        raise UserError(f"--set {name}: cannot override a field of type {kind.__name__} from the command line")
    raise UserError(f"--set {name}={text!r}: expected a value of type {kind.__name__} (current value {current!r})")


def apply_overrides(cfg, overrides: dict[str, str]):
    """A copy of the dataclass `cfg` with `overrides` applied (its __post_init__ checks the ranges)."""
    if not overrides:
        return cfg
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    hints = typing.get_type_hints(type(cfg)) if fields else {}
    changes = {}
    for name, text in overrides.items():
        if name not in fields:
            raise UserError(f"--set {name}: the config has no field {name!r}; its fields: {', '.join(fields)}")
        changes[name] = _convert(name, text, getattr(cfg, name), hints.get(name))
        values = changes[name] if isinstance(changes[name], (tuple, list)) else (changes[name],)
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            now = getattr(cfg, name)
            raise UserError(f"--set {name}={text}: {name} must be a finite number (current value {now!r})")
    try:
        return dataclasses.replace(cfg, **changes)
    except (ValueError, TypeError) as exc:
        empty = [n for n, v in changes.items() if isinstance(v, (tuple, list)) and not v and getattr(cfg, n)]
        hint = f" ({', '.join(empty)}: an empty list; give at least one value, e.g. {empty[0]}=" if empty else ""
        hint += ",".join(map(str, getattr(cfg, empty[0]))) + ")" if empty else ""
        raise UserError(f"--set {_shown(overrides)}: {exc}{hint}") from exc


def _shown(overrides: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in overrides.items())


def _checks_module_hook(experiment):
    """``check_config`` of the paper package's ``checks`` module, when it has one. A check kept there is not imported
    by the experiment, so it stays outside the run's code fingerprint: a check that only refuses bad configs before a
    run starts cannot change what a finished run measured."""
    package = (
        experiment.__name__.rpartition(".")[0] if experiment.__name__.endswith(".experiment") else experiment.__name__
    )
    try:
        if not package or importlib.util.find_spec(package + ".checks") is None:
            return None
    except (ModuleNotFoundError, ValueError):  # a module outside any package (a test's fake paper)
        return None
    return getattr(importlib.import_module(package + ".checks"), "check_config", None)


def check_config(experiment, cfg, overrides: dict[str, str], where: str) -> None:
    """Build and validate every method config the run will build from ``cfg``, in the driver, before any worker, model
    load or cache build starts: ``check_config(cfg)`` of the experiment module or of the paper package's ``checks``
    module (it constructs the method configs, whose ``__post_init__`` checks the ranges, and checks the card's own
    fields). A failure is a one-line error."""
    check = getattr(experiment, "check_config", None) or _checks_module_hook(experiment)
    if check is None:
        return
    try:
        check(cfg)
    except (ValueError, TypeError) as exc:
        head = f"--set {_shown(overrides)}" if overrides else f"the {where} config"
        raise UserError(f"{head}: {exc}") from exc
