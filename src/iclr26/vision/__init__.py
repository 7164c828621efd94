"""Vision and 3D: methods on images, point clouds and 3D scenes (issue 18).

Light on purpose: the subpackages load on first use, so `import iclr26.vision` imports nothing heavy.

- `iclr26.vision.pgllm`: PGLLM, kNN-graph in-context guidance and label propagation for two-stage 3D LLM pipelines.
- `iclr26.vision.spwood`: SPWOOD, sparse partial weakly-supervised oriented object detection (sparse focal loss,
  orientation self-supervision, per-level GMM pseudo-label filtering, mean teacher; torch rotated IoU / NMS / mAP).
- `iclr26.vision.gs_perception`: perception-aware Gaussian splatting (perception-stability and object-visibility
  losses on a pure-torch 2D Gaussian splatting fitter; EWA projection for 3D Gaussians).
- `iclr26.vision.wint3r`: WinT3R, windowed streaming 3D reconstruction with a persistent state and a camera-token pool.
"""

from __future__ import annotations

import importlib

_SUBPACKAGES = ("pgllm", "spwood", "gs_perception", "wint3r")
_EXPORTS = {  # name -> subpackage
    "PGLLM": "pgllm",
    "PGLLMConfig": "pgllm",
    "SPWOODConfig": "spwood",
    "train_spwood": "spwood",
    "GaussianScene": "gs_perception",
    "PerceptionLoss": "gs_perception",
    "WinT3R": "wint3r",
    "WinT3RConfig": "wint3r",
}


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_SUBPACKAGES, *_EXPORTS])


__all__ = [*_SUBPACKAGES, *_EXPORTS]
