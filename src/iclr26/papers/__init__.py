"""One package per seed paper that has a reproduction, named by its slug ('-' → '_').

``papers/<mod>/__init__.py`` is the paper's *card*. It imports nothing heavy (no torch, numpy or field package), so
that ``iclr26 show`` and ``list`` stay fast, and defines:

- ``CONFIGS``: ``{"smoke": cfg, "quick": cfg, "full": cfg}``, one config dataclass per scale (with ``seeds``);
- ``CLAIMS``: a list of :class:`iclr26.core.Claim`, the paper's claims as checks on measured metrics;
- ``METRICS``: ``{metric name: protocol}``, how each metric is measured;
- ``VERSION`` (bumped when the method or protocol changes; it enters the run key) and ``EXPECTED_SECONDS`` per scale;
- ``ACCEPTS_MODEL = True`` when ``--model`` replaces the real LM (the run reads ``ctx.model``), else a ``MODEL_NOTE``
  saying why not.

``papers/<mod>/experiment.py`` holds ``run(cfg, seed, ctx) -> dict[str, float]`` (one seed of the reproduction) and
optionally ``plots(run_dir, per_seed, cfg) -> [(name, Figure)]``; the harness imports it only to run.
"""
