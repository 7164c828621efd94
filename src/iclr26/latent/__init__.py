"""Test-time latent computation on a frozen or adapted causal LM: LTPO (latent thought policy optimisation) and PERK
(parameter-efficient reasoning over long contexts by encoding them into a LoRA adapter at test time).

``from iclr26.latent import LTPO, PERK`` resolves lazily, so that importing the package stays light.
"""

_LAZY = {"LTPO": "ltpo", "LTPOConfig": "ltpo", "PERK": "perk", "PERKConfig": "perk"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
