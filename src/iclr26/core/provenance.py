"""What code produced a run: a fingerprint of the source files a paper's reproduction imports, and the git commit.

The fingerprint hashes the paper's card and experiment and, transitively, every ``iclr26`` module they import
(found by reading import statements, so nothing heavy is imported), leaving out the harness itself (claims, run
folders, report, registry, command line), which does not change what a paper measures. Files are hashed as syntax
trees without docstrings: editing a comment, a docstring or the formatting does not make a run stale. A run folder
stores it per seed, so seeds measured by different code are never mixed silently, and a complete run made by other
code is flagged as stale.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # src/iclr26
HARNESS = {
    "iclr26.cli",
    "iclr26.core.claims",
    "iclr26.core.runs",
    "iclr26.core.report",
    "iclr26.core.registry",
    "iclr26.core.cards",
    "iclr26.core.errors",
    "iclr26.core.provenance",
    "iclr26.core.config",
    "iclr26.core.locks",
    "iclr26.core.gates",
    "iclr26.core.folders",
    "iclr26.core.jsonio",
    "iclr26.core.figures",
    "iclr26.core.results",
    "iclr26.core.docs",
    "iclr26.core.cache",
    "iclr26.core.flock",
    "iclr26.core.cluster",
    "iclr26.core.units",
    "iclr26.core",
}


def _file(module: str) -> Path | None:
    parts = module.split(".")[1:]
    base = ROOT.joinpath(*parts)
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(module: str, path: Path) -> set[str]:
    is_pkg = path.name == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)  # `from pkg import submodule`
    out = set()
    for name in found:
        if name == "iclr26" or name.startswith("iclr26."):
            parts = name.split(".")
            out.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))  # parents' __init__ run too
    return out


def source_files(*modules: str) -> list[Path]:
    """Every iclr26 source file the given modules import, transitively, except the harness's own."""
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        mod = todo.pop()
        if mod in seen or mod in HARNESS:
            continue
        path = _file(mod)
        if path is None:
            continue
        seen[mod] = path
        todo.extend(_imports(mod, path) - set(seen))
    return sorted(set(seen.values()))


# What a paper's card declares about its claims, not about what a run measures: the claims and their gates, the metric
# protocols, expected times. A change to these re-decides the verdicts on the stored metrics instead of making the run
# stale (verdicts are computed from the metrics whenever a run folder is read).
CARD_DATA = frozenset({"CLAIMS", "METRICS", "EXPECTED_SECONDS", "HEADLINE", "MODEL_NOTE", "TABLE_METRICS"})


def _is_card(path: Path) -> bool:
    try:
        rel = path.resolve().relative_to(ROOT).parts
    except ValueError:  # a file outside the package
        return False
    return len(rel) == 3 and rel[0] == "papers" and rel[2] == "__init__.py"


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _strip_card_data(tree: ast.Module) -> None:
    """Drop a card's top-level statements that only declare claims and metric docs (see CARD_DATA), the imports of
    the claim classes, and the helper functions nothing else uses."""

    def declares(stmt) -> bool:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "iclr26.core.claims":
            return True
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            return any(_names(t) & CARD_DATA for t in targets)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):  # METRICS.update(...)
            return bool(_names(stmt.value.func) & CARD_DATA)
        return False

    body = [s for s in tree.body if not declares(s)]
    while True:  # private helpers (`def _claims(): ...`) that only the dropped statements used
        unused = [
            s
            for s in body
            if isinstance(s, ast.FunctionDef)
            and s.name.startswith("_")
            and not any(s.name in _names(o) for o in body if o is not s)
        ]
        if not unused:
            break
        body = [s for s in body if s not in unused]
    tree.body = body or [ast.Pass()]


def normalised_source(path: Path) -> bytes:
    """What a file *does*: its syntax tree without docstrings, so comments, docstrings and formatting never change a
    fingerprint (a file that does not parse is taken byte for byte); a paper's card without its claim declarations."""
    text = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text.encode()
    if _is_card(path):
        _strip_card_data(tree)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree).encode()


def code_fingerprint(*modules: str) -> str:
    """A short hash of the source files that `modules` import (see the module docstring)."""
    h = hashlib.sha256()
    for path in source_files(*modules):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(normalised_source(path))
    return h.hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The checkout's commit, with "+dirty" when tracked files differ from it; None outside a git checkout."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return rev.stdout.strip()[:12] + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
