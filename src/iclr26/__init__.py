"""iclr26: faithful, runnable implementations of ICLR 2026 methods with honest small-scale reproductions.

Layers (imports point down only): ``cli`` → ``papers/<slug>/`` (the reproductions) → the field packages
(``editing``, ``kvcache``, ``lenses``, ``latent``, ``compression``, ``rlft``, ``agents``, ``embodied``, ``vision``,
``probing``, ``theory``, ``science``; one subpackage per paper, its world beside it) → ``lm`` and ``worlds`` → ``core``.
"""

from ._moved import install as _install_moved_aliases

_install_moved_aliases()
