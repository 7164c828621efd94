"""The Python examples of README.md and docs/ run, so that a documented call cannot drift from the code.

Every ```python block of a page runs in order, in one namespace per page. Real models are swapped for a micro model
(``zoo.load("smollm2-135m")`` and other trained zoo models load ``facts-micro-llama``, which trains in seconds), so
the examples must work on any supported model: no hard-coded layer 20, no undefined data. A block preceded by an HTML
comment ``<!-- example: not run (reason) -->`` is skipped; the reason is shown here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(<!-- example: not run[^>]*-->\s*)?```python\n(.*?)```", re.S)
MICRO = "facts-micro-llama"


def blocks(page: Path) -> list[str]:
    return [code for skip, code in BLOCK.findall(page.read_text(encoding="utf-8")) if not skip]


@pytest.fixture
def micro_models(monkeypatch):
    import iclr26.lm as lm
    from iclr26.lm import loading, zoo

    real_load = zoo.load

    def load(name, *args, **kwargs):
        if name.startswith("facts-micro") or name.startswith("text-micro"):
            return real_load(name, *args, **kwargs)
        return real_load(MICRO, progress=False)

    monkeypatch.setattr(zoo, "load", load)
    monkeypatch.setattr(loading, "load_smollm2", lambda *a, **k: real_load(MICRO, progress=False))
    monkeypatch.setattr(loading, "load_model", lambda *a, **k: real_load(MICRO, progress=False))
    monkeypatch.setattr(lm, "load_model", lambda *a, **k: real_load(MICRO, progress=False))
    return load


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_examples_run(page, micro_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks(page)):
        try:
            exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{page.relative_to(ROOT)}, python block {i} fails: {exc!r}") from exc
