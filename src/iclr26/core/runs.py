"""Run folders and the reproduction harness.

`runs/<slug>/<scale>-<config hash>/` holds

    config.json     the paper's config at this scale, the model, the seeds
    env.json        versions, platform, git commit, start time
    seeds/seed-N.json   metrics of one seed, written as soon as that seed finishes (a rerun resumes from here)
    metrics.json    per seed and aggregated (mean, std, n), with each metric's protocol
    verdicts.json   the computed verdict of every claim (written last: its presence marks the folder complete)
    log.txt         what the run printed through `ctx.log`
    plots/*.png     figures made by the paper module

Every file is written atomically (temporary file + `os.replace`), so an interrupted run leaves no half-written file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .claims import RULE, aggregate, verdict
from .registry import PaperCard, get_paper
from .seeding import seed_everything

SCALES = ("smoke", "quick", "full")


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; run folders are meant to be shared and read
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy / torch scalars
        return obj.item()
    return obj


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, sort_keys=True, allow_nan=True) + "\n")


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def config_hash(config: dict) -> str:
    blob = json.dumps(_jsonable(config), sort_keys=True).encode()
    return hashlib.sha1(blob).hexdigest()[:8]


def _git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except Exception:
        return None


def environment() -> dict:
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "git_commit": _git_commit(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    for mod in ("torch", "transformers", "numpy", "scipy", "sklearn", "kvpress", "peft", "trl", "e3nn"):
        m = sys.modules.get(mod)
        if m is not None:
            env[mod] = getattr(m, "__version__", "?")
    try:
        import torch

        env["torch"] = torch.__version__
        env["device"] = "cuda" if torch.cuda.is_available() else "cpu"
        env["torch_threads"] = torch.get_num_threads()
    except ImportError:
        env["device"] = "cpu"
    return env


@dataclass
class RunContext:
    """What a paper's `run(cfg, seed, ctx)` gets besides its config: where to write, how to log, the model."""

    slug: str
    scale: str
    seed: int
    run_dir: Path
    model: str | None = None
    quiet: bool = False
    _log: list[str] = field(default_factory=list)

    def log(self, msg: str) -> None:
        line = f"[{self.slug} seed {self.seed}] {msg}"
        self._log.append(line)
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def artifact_path(self, name: str) -> Path:
        p = self.run_dir / "artifacts" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def save_artifact(self, name: str, obj: Any) -> Path:
        """Save a JSON artifact (curves, tables) for plots and the report."""
        p = self.artifact_path(name if name.endswith(".json") else name + ".json")
        atomic_write_json(p, obj)
        return p


@dataclass
class RunResult:
    card: PaperCard
    run_dir: Path
    per_seed: dict[int, dict[str, float]]
    aggregate: dict[str, dict[str, float]]
    verdicts: list[dict]
    skipped: bool = False
    seconds: float = 0.0


def run_dir_for(slug: str, scale: str, cfg: Any, model: str | None, out: str | Path = "runs") -> Path:
    config = {"slug": slug, "scale": scale, "config": cfg, "model": model}
    return Path(out) / slug / f"{scale}-{config_hash(config)}"


def run_paper(
    slug: str,
    scale: str = "quick",
    seeds: Sequence[int] | None = None,
    model: str | None = None,
    out: str | Path = "runs",
    force: bool = False,
    quiet: bool = False,
) -> RunResult:
    """Run the reproduction of `slug` at `scale` over `seeds`, resuming an interrupted run, and compute verdicts."""
    card = get_paper(slug)
    mod = card.module()
    if mod is None:
        raise LookupError(
            f"paper {card.slug!r} has no reproduction yet (status: not yet). "
            f"Papers with one: {', '.join(c.slug for c in _reproducible())}."
        )
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    cfg = mod.CONFIGS[scale]
    if model is not None and not getattr(mod, "ACCEPTS_MODEL", False):
        raise ValueError(
            f"paper {card.slug!r} does not take --model (its reproduction does not run on an LM you choose)"
        )
    if seeds is None:
        seeds = tuple(getattr(cfg, "seeds", (0, 1, 2)))
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("give at least one seed, e.g. --seeds 0,1,2")
    run_dir = run_dir_for(card.slug, scale, cfg, model, out)
    verdict_file = run_dir / "verdicts.json"
    if verdict_file.exists() and not force:
        done = read_json(verdict_file)
        if tuple(done.get("seeds", ())) == seeds:
            metrics = read_json(run_dir / "metrics.json")
            per_seed = {int(k): v for k, v in metrics["per_seed"].items()}
            return RunResult(card, run_dir, per_seed, metrics["aggregate"], done["claims"], skipped=True)
    t0 = time.time()
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        run_dir / "config.json",
        {"slug": card.slug, "scale": scale, "config": cfg, "model": model, "seeds": list(seeds)},
    )
    atomic_write_json(run_dir / "env.json", environment())
    per_seed: dict[int, dict[str, float]] = {}
    logs: list[str] = []
    for seed in seeds:
        seed_file = run_dir / "seeds" / f"seed-{seed}.json"
        if seed_file.exists() and not force:
            per_seed[seed] = read_json(seed_file)["metrics"]
            logs.append(f"[{card.slug} seed {seed}] resumed from {seed_file}")
            continue
        ctx = RunContext(card.slug, scale, seed, run_dir, model=model, quiet=quiet)
        seed_everything(seed)
        ts = time.time()
        metrics = mod.run(cfg, seed, ctx)
        metrics = {k: float(v) for k, v in _jsonable(metrics).items()}
        logs.extend(ctx._log)
        atomic_write_json(seed_file, {"seed": seed, "metrics": metrics, "seconds": time.time() - ts})
        per_seed[seed] = metrics
    values = [per_seed[s] for s in seeds]
    agg = aggregate(values)
    protocols = getattr(mod, "METRICS", {})
    atomic_write_json(
        run_dir / "metrics.json",
        {"per_seed": {str(s): per_seed[s] for s in seeds}, "aggregate": agg, "protocols": protocols},
    )
    if hasattr(mod, "plots"):
        try:
            from .report import save_figures

            save_figures(run_dir, mod.plots(run_dir, per_seed, cfg))
        except Exception as exc:  # a broken plot must not lose the measurements
            logs.append(f"plotting failed: {exc!r}")
    claims = [verdict(c, values).to_dict() for c in mod.CLAIMS]
    seconds = time.time() - t0
    prev = (run_dir / "log.txt").read_text() if (run_dir / "log.txt").exists() else ""
    atomic_write_text(run_dir / "log.txt", prev + "\n".join(logs) + f"\nfinished in {seconds:.1f} s\n")
    atomic_write_json(verdict_file, {"seeds": list(seeds), "rule": RULE, "claims": claims, "seconds": seconds})
    return RunResult(card, run_dir, per_seed, agg, claims, seconds=seconds)


def _reproducible():
    from .registry import reproducible

    return reproducible()


def completed_runs(out: str | Path = "runs") -> list[Path]:
    """Every complete run folder under `out`."""
    root = Path(out)
    if not root.exists():
        return []
    return sorted(p.parent for p in root.glob("*/*/verdicts.json"))


def latest_run(slug: str, out: str | Path = "runs") -> Path | None:
    """The run folder that speaks for `slug`: the largest scale, then the newest."""
    runs = [p for p in completed_runs(out) if p.parent.name == slug]
    if not runs:
        return None

    def key(p: Path):
        scale = p.name.split("-", 1)[0]
        return (SCALES.index(scale) if scale in SCALES else -1, (p / "verdicts.json").stat().st_mtime)

    return max(runs, key=key)


def status_of(slug: str, out: str | Path = "runs") -> str:
    """not yet / method / reproduced / partial / not reproduced / inconclusive, from the latest run."""
    card = get_paper(slug)
    if not card.has_reproduction:
        return "not yet"
    run = latest_run(card.slug, out)
    if run is None:
        return "method"
    verdicts = [c["verdict"] for c in read_json(run / "verdicts.json")["claims"]]
    return summarise(verdicts)


def summarise(verdicts: list[str]) -> str:
    if verdicts and all(v == "reproduced" for v in verdicts):
        return "reproduced"
    if any(v == "reproduced" for v in verdicts):
        return "partial"
    if any(v == "not reproduced" for v in verdicts):
        return "not reproduced"
    return "inconclusive"
