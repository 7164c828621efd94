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
