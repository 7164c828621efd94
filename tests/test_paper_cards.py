"""Paper cards are light and complete: `iclr26 show` must not pay for torch, and the harness must find what it needs.

Each reproduction is a package `iclr26.papers.<mod>`: the card (`__init__.py`: configs, claims, metrics, expected
times) imports nothing heavy; the experiment (`experiment.py`: `run`, `plots`) is imported only to run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from iclr26.core.registry import reproducible

HEAVY = ("torch", "transformers", "numpy", "sklearn", "scipy", "kvpress", "e3nn")
SCALES = ("smoke", "quick", "full")
CARDS = [c.slug for c in reproducible()]


def _card(slug):
    return next(c for c in reproducible() if c.slug == slug).module()


def test_every_paper_is_a_package_with_a_card_and_an_experiment():
    import importlib.util

    assert len(CARDS) >= 13
    for slug in CARDS:
        name = "iclr26.papers." + slug.replace("-", "_")
        spec = importlib.util.find_spec(name)
        assert spec.submodule_search_locations, f"{name} must be a package (card __init__.py + experiment.py)"
        assert importlib.util.find_spec(name + ".experiment") is not None, f"{name}.experiment is missing"
        assert not hasattr(_card(slug), "run"), f"{name}: `run` belongs in experiment.py, not in the card"


@pytest.mark.parametrize("slug", CARDS)
def test_card_imports_nothing_heavy(slug):
    """A fresh interpreter that imports only the card (and the registry) has none of the heavy packages loaded."""
    mod = "iclr26.papers." + slug.replace("-", "_")
    code = f"import sys, json, {mod}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [], f"{mod} imports heavy packages at module level"


@pytest.mark.parametrize("slug", CARDS)
def test_card_declares_configs_version_times_and_metrics(slug):
    card = _card(slug)
    assert set(card.CONFIGS) == set(SCALES), f"{slug}: CONFIGS must have exactly {SCALES}"
    for scale in SCALES:
        seeds = card.CONFIGS[scale].seeds
        assert len(seeds) >= 1 and all(isinstance(s, int) and s >= 0 for s in seeds), (slug, scale, seeds)
    assert isinstance(card.VERSION, int) and card.VERSION >= 1, f"{slug}: VERSION must be an int >= 1"
    assert set(card.EXPECTED_SECONDS) == set(SCALES), f"{slug}: EXPECTED_SECONDS needs {SCALES}"
    assert all(v > 0 for v in card.EXPECTED_SECONDS.values())
    assert card.EXPECTED_SECONDS["smoke"] < card.EXPECTED_SECONDS["quick"] <= card.EXPECTED_SECONDS["full"]
    named = set()
    for claim in card.CLAIMS:
        for chk in claim.checks:
            named.add(chk.lhs)
            if isinstance(chk.rhs, str):
                named.add(chk.rhs)
    missing = sorted(named - set(card.METRICS))
    assert not missing, f"{slug}: metrics named by claims but not described in METRICS: {missing}"
    accepts = getattr(card, "ACCEPTS_MODEL", False)
    assert accepts or isinstance(getattr(card, "MODEL_NOTE", ""), str)


def test_card_constants_match_the_packages_they_mirror():
    """Cards spell out a few tuples of heavy packages to stay light; they must not drift from the originals."""
    from iclr26.editing.benchmark import SETTINGS
    from iclr26.kvcache import METHODS
    from iclr26.kvcache.restkv.world import TASKS
    from iclr26.lenses.language_control.world import LANGS, SCENARIOS
    from iclr26.papers import dike, efficient_probing, language_control, restkv, suit
    from iclr26.probing.efficient_probing import PROBES

    assert restkv.METHODS == METHODS and restkv.TASKS == TASKS
    assert efficient_probing.PROBES == PROBES
    assert language_control.LANGS == LANGS and language_control.SCENARIOS == SCENARIOS
    assert dike.SETTINGS == SETTINGS and suit.SETTINGS == SETTINGS


def test_show_is_fast_for_an_lm_paper(tmp_path):
    """`iclr26 show dike` (an LM paper) in a fresh interpreter: under 2 s on a quiet machine (4 s allowed here)."""
    code = "import sys; from iclr26.cli import main; sys.exit(main(['show', 'dike']))"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    seconds = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    assert "Claims:" in out.stdout and out.stdout.startswith("dike:")
    assert seconds < 4.0, f"iclr26 show took {seconds:.2f} s"


@pytest.mark.parametrize("slug", CARDS)
def test_every_paper_claim_names_its_gates_or_why_it_has_none(slug):
    """A paper claim's verdict is decided only where the testbed can decide it: it `requires` gates (a testbed check,
    headroom, a control, budget parity, a non-degenerate arm), or it declares `ungated` with the reason (a closed-form
    identity, a deterministic statement). Every card has at least one gate."""
    card = _card(slug)
    bare = [c.id for c in card.CLAIMS if c.role == "claim" and not c.requires and not c.ungated]
    assert not bare, f"{slug}: paper claims with neither gates nor an `ungated` reason: {bare}"
    assert any(c.role != "claim" for c in card.CLAIMS), f"{slug}: no gate at all"
    gated = [c for c in card.CLAIMS if c.role == "claim" and c.requires]
    assert gated, f"{slug}: every paper claim declares itself ungated; a reproduction needs at least one gated claim"
