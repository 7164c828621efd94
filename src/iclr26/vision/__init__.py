"""Vision and 3D: methods on images, point clouds and 3D scenes (issue 18).

Light on purpose: the subpackages load on first use, so `import iclr26.vision` imports nothing heavy.

- `iclr26.vision.pgllm`: PGLLM, kNN-graph in-context guidance and label propagation for two-stage 3D LLM pipelines.
"""

from __future__ import annotations

import importlib

_SUBPACKAGES = ("pgllm",)
_EXPORTS = {"PGLLM": "pgllm", "PGLLMConfig": "pgllm"}  # name -> subpackage


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_SUBPACKAGES, *_EXPORTS])


__all__ = [*_SUBPACKAGES, *_EXPORTS]
