"""One module per seed paper that has a reproduction, named by its slug ('-' → '_').

A paper module defines:

- ``CONFIGS``: ``{"smoke": cfg, "quick": cfg, "full": cfg}``, one config dataclass per scale (with ``seeds``);
- ``CLAIMS``: a list of :class:`iclr26.core.Claim`, the paper's claims as checks on measured metrics;
- ``METRICS``: ``{metric name: protocol}``, how each metric is measured;
- ``run(cfg, seed, ctx) -> dict[str, float]``: one seed of the reproduction;
- optionally ``plots(run_dir, per_seed, cfg) -> [(name, Figure)]`` and ``ACCEPTS_MODEL = True`` for ``--model``.
"""
