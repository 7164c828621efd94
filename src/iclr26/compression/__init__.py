"""Weight compression of causal LMs: MBOK (multiple Boolean kernels per linear layer), with the RTN/GPTQ-style
baselines of its reproduction.

``from iclr26.compression import MultiBooleanLinear, quantize_model`` resolves lazily.
"""

_LAZY = {"MultiBooleanLinear": "mbok", "MBOKConfig": "mbok", "quantize_model": "mbok"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
