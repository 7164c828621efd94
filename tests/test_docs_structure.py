"""Docs pages read as references with one structure, name their card's VERSION, and no file of the repository holds an
absolute path of a machine (home, root, work or temporary folders) outside code that builds temporary folders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iclr26.core import docs
from iclr26.core.registry import PAPERS

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|tmp|Users|mnt/data|scratch)/[\w.-]")


@pytest.mark.parametrize("slug", list(PAPERS))
def test_every_docs_page_has_the_one_structure_and_names_its_cards_version(slug):
    assert docs.structure_problems(slug) == []


def _files():
    for folder in ("src", "tests", "benchmarks", "docs", ".ci"):
        for p in (ROOT / folder).rglob("*"):
            text_file = p.suffix in (".py", ".md", ".txt", ".toml", ".cfg", ".json", ".sh", "")
            if p.is_file() and text_file and "egg-info" not in str(p):
                yield p
    yield from (ROOT / n for n in ("README.md", "Makefile", "pyproject.toml"))


def test_no_absolute_machine_paths_in_the_repository():
    hits = []
    for p in _files():
        if p.name == "test_docs_structure.py" or "__pycache__" in p.parts:
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if MACHINE_PATH.search(line) and "tempfile" not in line and "tmp_path" not in line:
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert hits == []


def test_the_path_scan_finds_a_planted_path():
    assert MACHINE_PATH.search("see /work/runs/dike/quick-1234 for the run")
    assert MACHINE_PATH.search("cached at /root/.cache/iclr26")
    assert not MACHINE_PATH.search("docs/papers/dike.md and src/iclr26/core")
