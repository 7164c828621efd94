"""The house order, checked: no import circles, imports point down the layers, a paper never imports another paper,
one subpackage per paper in every field, no source file over 400 lines, and old import paths that moved still work (with
a DeprecationWarning) while nothing inside the library uses them."""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "iclr26"
FIELDS = ("editing", "kvcache", "lenses", "latent", "compression", "rlft", "agents", "embodied", "vision", "probing",
          "theory", "science")  # fmt: skip
MAX_LINES = 400


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


MODULES = _modules()


def _imported(mod: str, path: Path, is_pkg: bool) -> set[str]:
    """Every iclr26 module `mod` imports, at the top or inside a function (both make an import circle)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".")[: None if is_pkg else -1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target, *(f"{target}.{a.name}" for a in node.names)]
        else:
            continue
        found.update(n for n in names if n in MODULES and n != mod)
    return found


GRAPH = {m: _imported(m, p, is_pkg) for m, (p, is_pkg) in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycle_finder_finds_a_planted_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_between_the_librarys_modules():
    assert _cycles(GRAPH) == []


def _layer(mod: str) -> int:
    part = mod.split(".")[1] if "." in mod else ""
    if part in ("core", "_moved"):
        return 0
    if part in ("lm", "worlds"):
        return 1
    if part in FIELDS:
        return 2
    if part == "papers":
        return 3
    return 4  # the command line


def test_imports_point_down_the_layers():
    """cli → papers → fields → lm / worlds → core: no module imports a higher layer."""
    up = [(m, d) for m, deps in GRAPH.items() for d in deps if _layer(d) > _layer(m)]
    assert up == []


def _paper_unit(mod: str) -> tuple[str, str] | None:
    """(room, paper) for a module inside a paper's package: papers/<slug>/ or <field>/<paper>/."""
    parts = mod.split(".")
    if len(parts) >= 3 and (parts[1] == "papers" or parts[1] in FIELDS) and MODULES.get(".".join(parts[:3]), (0, 0))[1]:
        return parts[1], parts[2]
    return None


def test_a_paper_never_imports_another_paper():
    """papers/<a>/ never imports papers/<b>/, and a field's paper subpackage never imports a sibling's: what two
    papers share is the field's shared module."""
    bad = []
    for m, deps in GRAPH.items():
        u = _paper_unit(m)
        for d in deps:
            v = _paper_unit(d)
            if u and v and u[0] == v[0] and u != v:
                bad.append((m, d))
    assert bad == []


def test_fields_hold_one_subpackage_per_paper_and_worlds_beside_them():
    """A field's flat modules are shared code; every paper of the registry has its field subpackage (or shares one,
    as the editing baselines do), and worlds/ keeps only the worlds several fields share."""
    flat_worlds = sorted(p.stem for p in (PKG / "worlds").glob("*.py") if p.stem != "__init__")
    assert flat_worlds == ["facts", "text"]
    for field in ("theory", "science"):
        flat = sorted(p.stem for p in (PKG / field).glob("*.py") if p.stem != "__init__")
        assert flat == [], f"{field}/ has flat modules {flat}: put them in the paper's subpackage"


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_no_source_file_over_400_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(SRC)} has {n} lines: split it by responsibility"


def test_old_import_paths_are_aliases_with_a_deprecation_warning():
    from iclr26._moved import MOVED

    assert len(MOVED) >= 40
    for old, new in sorted(MOVED.items())[:: max(1, len(MOVED) // 8)] + [("worlds.aerial", "vision.spwood.world")]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            alias = importlib.import_module(f"iclr26.{old}")
        assert any(issubclass(w.category, DeprecationWarning) and f"iclr26.{new}" in str(w.message) for w in caught)
        real = importlib.import_module(f"iclr26.{new}")
        public = [n for n in vars(real) if not n.startswith("__")][:5]
        assert public and all(getattr(alias, n) is getattr(real, n) for n in public)
    with pytest.raises(AttributeError):
        importlib.import_module("iclr26.worlds.aerial").no_such_name  # noqa: B018


def test_nothing_in_the_library_tests_or_benchmarks_uses_an_old_path():
    from iclr26._moved import MOVED

    roots = [PKG, SRC.parent / "tests", SRC.parent / "benchmarks"]
    users = []
    for root in roots:
        for p in root.rglob("*.py"):
            if p.name in ("_moved.py", "test_architecture.py"):
                continue
            text = p.read_text(encoding="utf-8")
            users += [(str(p), old) for old in MOVED if re.search(rf"iclr26\.{re.escape(old)}(?!\w)", text)]
    assert users == []
