"""The code fingerprint follows what the code does, not how it is written."""

from pathlib import Path

from iclr26.core.provenance import code_fingerprint, normalised_source


def _src(tmp_path: Path, text: str) -> bytes:
    p = tmp_path / "m.py"
    p.write_text(text, encoding="utf-8")
    return normalised_source(p)


def test_comments_docstrings_and_formatting_do_not_count(tmp_path):
    base = _src(tmp_path, 'def f(x):\n    """Doc."""\n    return x + 1\n')
    assert _src(tmp_path, "def f(x):  # a comment\n    return (x +\n            1)\n") == base
    assert _src(tmp_path, '"""Module doc."""\n\ndef f(x):\n    return x + 1\n') == base
    assert _src(tmp_path, '"""Module doc."""\n\ndef f(x):\n    """Other doc."""\n    return x + 1\n') == base


def test_a_code_change_counts(tmp_path):
    base = _src(tmp_path, "def f(x):\n    return x + 1\n")
    assert _src(tmp_path, "def f(x):\n    return x + 2\n") != base
    assert _src(tmp_path, "X = 0.1  # note\n") != _src(tmp_path, "X = 0.2  # note\n")


def test_fingerprint_of_a_paper_is_stable():
    assert code_fingerprint("iclr26.papers.mas2") == code_fingerprint("iclr26.papers.mas2")
    assert code_fingerprint("iclr26.papers.mas2") != code_fingerprint("iclr26.papers.dike")


def test_a_cards_claims_do_not_enter_the_fingerprint_but_its_configs_do():
    """Claims, gates and metric docs are re-decided on stored metrics; what a run measures (configs) counts."""
    import ast

    from iclr26.core.provenance import _strip_card_data

    base = """
from dataclasses import dataclass
from iclr26.core.claims import Check, Claim

@dataclass(frozen=True)
class Cfg:
    n: int = {n}

CONFIGS = {{"quick": Cfg()}}
VERSION = 2

def _claims():
    return [Claim("a", "a", (Check("x", ">", {margin}),))]

def public_helper():
    return 1

CLAIMS = _claims()
METRICS = {{"x": "{doc}"}}
METRICS.update({{"y": "y"}})
EXPECTED_SECONDS = {{"quick": {secs}}}
"""

    def fp(**kw):
        tree = ast.parse(base.format(**{"n": 3, "margin": 0.1, "doc": "x", "secs": 10, **kw}))
        _strip_card_data(tree)
        return ast.dump(tree)

    assert fp() == fp(margin=0.5) == fp(doc="another protocol") == fp(secs=99)
    assert fp() != fp(n=4)  # a config changes what is measured
    assert "public_helper" in fp() and "_claims" not in fp() and "VERSION" in fp()
