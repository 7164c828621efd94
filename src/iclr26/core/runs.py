"""Run folders and the reproduction harness.

`runs/<slug>/<scale>-<key>/` (the key hashes the paper, scale, config, model and the paper's VERSION) holds

    config.json         the paper's config at this scale, the model, the seeds, the overrides
    env.json            versions, platform, git commit, code fingerprint, start time
    seeds/seed-N.json   metrics of one seed with its own environment, written as soon as that seed finishes
    metrics.json        per seed and aggregated (mean, std, n, failed), with each metric's protocol
    verdicts.json       the computed verdict of every claim, wall time, peak memory, commit (written last: its
                        presence marks the folder complete)
    log.txt             what the run printed through `ctx.log`, appended as it goes
    plots/*.png         figures made by the paper module

Every file but the log is written atomically (temporary file + `os.replace`), so an interrupted run leaves no
half-written file and a rerun resumes from the finished seeds. A seed measured by other code (its stored code
fingerprint differs) is rerun, never mixed in; a complete folder made by other code is reported as stale.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .claims import RULE, aggregate
from .config import apply_overrides
from .errors import UserError, unwritable
from .figures import save_figures
from .folders import SCALES, code_of
from .gates import evaluate
from .jsonio import _jsonable, append_log, atomic_write_json, config_hash, read_json
from .registry import PaperCard, get_paper
from .seeding import peak_rss_mb, seed_everything
from .threads import default_threads


def cpu_model() -> str:
    """The processor's model name (Linux: /proc/cpuinfo), else what the platform module says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def environment() -> dict:
    from .provenance import git_commit

    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu_model(),
        "git_commit": git_commit(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # the threads a reproduction computes with: another count changes the order of floating-point sums, and a
        # long training can then end elsewhere (spwood's quick verdicts moved between 1 and 2 threads)
        "iclr26_threads": default_threads(),
    }
    for mod in ("torch", "transformers", "numpy", "scipy", "sklearn", "kvpress", "peft", "trl", "e3nn"):
        m = sys.modules.get(mod)
        if m is not None:
            env[mod] = getattr(m, "__version__", "?")
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        env["device"] = "cuda" if torch.cuda.is_available() else "cpu"
        env["torch_threads"] = torch.get_num_threads()
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
    # the seeds this invocation computes, in order (this one among them): a seed may prepare cached work that a later
    # one needs (braingfm's pre-training units), so that workers that would idle at the end share it
    seeds: tuple[int, ...] = ()
    _log: list[str] = field(default_factory=list)

    def log(self, msg: str) -> None:
        """Print a line (unless quiet) and append it to the run's log.txt at once, so an interrupted run keeps it."""
        line = f"[{self.slug} seed {self.seed}] {msg}"
        self._log.append(line)
        append_log(self.run_dir, line)
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
    stale: bool = False  # a complete folder made by other code than the current checkout's
    info: dict = field(default_factory=dict)  # what verdicts.json records besides the claims

    def to_dict(self) -> dict:
        return {
            "slug": self.card.slug,
            "run_dir": str(self.run_dir),
            "skipped": self.skipped,
            "stale": self.stale,
            "seconds": self.seconds,
            "per_seed": {str(k): v for k, v in self.per_seed.items()},
            "aggregate": self.aggregate,
            "claims": self.verdicts,
            **{k: v for k, v in self.info.items() if k not in ("claims", "seconds")},
        }


def validate_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    """Seeds as a tuple of distinct non-negative integers; anything else is a clear error."""
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) and not (isinstance(s, float) and s.is_integer()):
            raise UserError(f"seeds are non-negative integers; got {s!r}")
        out.append(int(s))
    if not out:
        raise UserError("give at least one seed, e.g. --seeds 0,1,2")
    if any(s < 0 for s in out):
        raise UserError(f"seeds are non-negative integers; got {', '.join(str(s) for s in out if s < 0)}")
    dup = sorted({s for s in out if out.count(s) > 1})
    if dup:
        raise UserError(
            f"seed {', '.join(map(str, dup))} is given more than once: a repeated seed runs once and would be counted "
            "several times in the verdict. Give distinct seeds, e.g. --seeds 0,1,2"
        )
    return tuple(out)


def run_dir_for(slug: str, scale: str, cfg: Any, model: str | None, out: str | Path = "runs", version: int = 1) -> Path:
    config = {"slug": slug, "scale": scale, "config": cfg, "model": model}
    if version != 1:  # version 1 keeps the keys of folders made before papers had versions
        config["version"] = version
    return Path(out) / slug / f"{scale}-{config_hash(config)}"


def resolve(slug: str, scale: str, model: str | None, overrides: dict | None):
    """(card, card module, config) for a run, with every user error checked before anything runs."""
    card = get_paper(slug)
    mod = card.module()
    if mod is None:
        raise UserError(
            f"paper {card.slug!r} has no reproduction yet (status: not yet). "
            f"Papers with one: {', '.join(c.slug for c in _reproducible())}."
        )
    if scale not in SCALES:
        raise UserError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    if model is not None and not getattr(mod, "ACCEPTS_MODEL", False):
        why = getattr(mod, "MODEL_NOTE", "its reproduction does not run on an LM you choose")
        raise UserError(f"paper {card.slug!r} does not take --model: {why}")
    cfg = apply_overrides(mod.CONFIGS[scale], overrides or {})
    from .config import check_config

    check_config(card.experiment(), cfg, overrides or {}, f"{card.slug} {scale}")
    return card, mod, cfg


def run_paper(
    slug: str,
    scale: str = "quick",
    seeds: Sequence[int] | None = None,
    model: str | None = None,
    out: str | Path = "runs",
    force: bool = False,
    quiet: bool = False,
    overrides: dict[str, str] | None = None,
    jobs: int | None = None,
    cluster: str | None = None,
) -> RunResult:
    """Run the reproduction of `slug` at `scale` over `seeds`, resuming an interrupted run, and compute verdicts.

    `out` is the root of the run folders; `overrides` ({field: text}) change config fields and so the run key;
    `jobs` seeds are computed at once in worker processes (default `ICLR26_JOBS`, see `core.parallel`); `cluster`
    (a Ray address or "local") computes every seed as a Ray task instead (see `core.cluster`).
    """
    card, mod, cfg = resolve(slug, scale, model, overrides)
    seeds = validate_seeds(tuple(getattr(cfg, "seeds", (0, 1, 2))) if seeds is None else seeds)
    version = int(getattr(mod, "VERSION", 1))
    run_dir = run_dir_for(card.slug, scale, cfg, model, out, version)
    from .locks import file_lock

    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable(run_dir, exc) from exc
    with file_lock(run_dir / ".lock", f"the run folder {run_dir}", quiet=quiet):
        return _run_locked(card, mod, cfg, scale, seeds, model, run_dir, version, force, quiet, overrides or {}, jobs,
                           cluster)  # fmt: skip


def _run_locked(card, mod, cfg, scale, seeds, model, run_dir, version, force, quiet, overrides, jobs,
                cluster=None) -> RunResult:  # fmt: skip
    code = code_of(card)
    verdict_file = run_dir / "verdicts.json"
    if verdict_file.exists() and not force:
        done = read_json(verdict_file)
        if tuple(done.get("seeds", ())) == seeds:
            metrics = read_json(run_dir / "metrics.json")
            per_seed = {int(k): v for k, v in metrics["per_seed"].items()}
            claims = [v.to_dict() for v in evaluate(mod.CLAIMS, [per_seed[s] for s in seeds], cfg)]  # current rule
            res = RunResult(card, run_dir, per_seed, metrics["aggregate"], claims, skipped=True, info=done)
            res.seconds, res.stale = done.get("seconds", 0.0), done.get("code") != code
            return res
    t0, cpu0 = time.time(), time.process_time()
    atomic_write_json(
        run_dir / "config.json",
        {"slug": card.slug, "scale": scale, "config": cfg, "model": model, "seeds": list(seeds),
         "overrides": overrides, "version": version},
    )  # fmt: skip
    env = {**environment(), "code": code, "version": version}
    atomic_write_json(run_dir / "env.json", env)
    append_log(run_dir, f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} run {card.slug} {scale} seeds {list(seeds)}")
    per_seed: dict[int, dict[str, float]] = {}
    todo, resumed = [], []
    for seed in seeds:
        seed_file = run_dir / "seeds" / f"seed-{seed}.json"
        if seed_file.exists() and not force:
            prev = read_json(seed_file)
            if prev.get("env", {}).get("code") == code:
                per_seed[seed] = prev["metrics"]
                append_log(run_dir, f"[{card.slug} seed {seed}] resumed from {seed_file}")
                resumed.append(seed)
                continue
            stale = seed_file.with_name(f"seed-{seed}.code-{prev.get('env', {}).get('code', 'unknown')}.json")
            os.replace(seed_file, stale)  # kept, never mixed in
            append_log(run_dir, f"[{card.slug} seed {seed}] measured by other code: moved to {stale.name}; rerun")
        todo.append(seed)
    calls = [(card.slug, scale, cfg, seed, model, str(run_dir), code, version, quiet, tuple(todo)) for seed in todo]
    exp = card.experiment()
    if cluster and todo:
        from .cluster import run_seeds, unpack

        append_log(run_dir, f"seeds {todo} as Ray tasks on {cluster}, {default_threads()} CPU(s) each")

        def landed(i: int, res: dict) -> None:  # written as each task finishes: an interrupted run keeps them
            unpack(run_dir, res["files"])
            per_seed[todo[i]] = res["metrics"]

        shared = (card.slug, cfg) if hasattr(exp, "shared") else None
        run_seeds(run_seed, calls, cluster, default_threads(), landed, shared)
        jobs = len(todo)
    else:
        from .parallel import default_jobs, run_all

        jobs = default_jobs(len(todo)) if jobs is None else max(1, min(jobs, len(todo) or 1))
        if jobs > 1:
            append_log(run_dir, f"seeds {todo} in {jobs} worker processes of {default_threads()} thread(s) each")
        if hasattr(exp, "shared") and todo:  # work the seeds share, once, before they start
            from .threads import run_threads

            with run_threads():
                exp.shared(cfg)
        for seed, metrics in zip(todo, run_all(run_seed, calls, jobs)):
            per_seed[seed] = metrics
    in_process = not cluster and (jobs == 1 or len(todo) <= 1)
    values = [per_seed[s] for s in seeds]
    agg = aggregate(values)
    atomic_write_json(
        run_dir / "metrics.json",
        {"per_seed": {str(s): per_seed[s] for s in seeds}, "aggregate": agg, "protocols": getattr(mod, "METRICS", {})},
    )
    if hasattr(exp, "plots"):
        try:
            save_figures(run_dir, exp.plots(run_dir, per_seed, cfg))
        except Exception as exc:  # a broken plot must not lose the measurements
            append_log(run_dir, f"plotting failed: {exc!r}")
    claims = [v.to_dict() for v in evaluate(mod.CLAIMS, values, cfg)]  # a misspelt metric name raises here
    seconds = time.time() - t0
    info = {
        "seeds": list(seeds),
        "rule": RULE,
        "claims": claims,
        "seconds": seconds,  # this invocation's wall time: seeds resumed from an earlier one are not in it
        "resumed_seeds": resumed,
        "peak_rss_mb": _peak_of(run_dir, seeds),  # the largest process: this one or a seed's worker
        "cpu_seconds": _cpu_of(run_dir, seeds) + _overhead(time.process_time() - cpu0, run_dir, todo, in_process),
        "jobs": jobs,  # seeds computed at once (worker processes); 1: one after another
        "commit": env.get("git_commit"),
        "code": code,
        "version": version,
        "scale": scale,
    }
    append_log(run_dir, f"finished in {seconds:.1f} s")
    atomic_write_json(run_dir / "verdicts.json", info)
    return RunResult(card, run_dir, per_seed, agg, claims, seconds=seconds, info=info)


def _overhead(driver_cpu: float, run_dir: Path, todo, in_process: bool) -> float:
    """The driver's own CPU time: its total, less the seeds it computed itself (those are counted per seed)."""
    return max(0.0, driver_cpu - _cpu_of(run_dir, todo)) if in_process else driver_cpu


def _cpu_of(run_dir: Path, seeds) -> float:
    total = 0.0
    for seed in seeds:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, UserError):
            total += float(read_json(run_dir / "seeds" / f"seed-{seed}.json").get("cpu_seconds", 0.0))
    return total


def _peak_of(run_dir: Path, seeds) -> float:
    peaks = [peak_rss_mb()]
    for seed in seeds:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            peaks.append(float(read_json(run_dir / "seeds" / f"seed-{seed}.json")["env"]["peak_rss_mb"]))
    return max(peaks)


def run_seed(slug, scale, cfg, seed, model, run_dir, code, version, quiet, todo=()) -> dict[str, float]:
    """Compute one seed from its own seed (in this process or a worker) and write seeds/seed-N.json atomically."""
    from .threads import run_threads

    card, run_dir = get_paper(slug), Path(run_dir)
    ctx = RunContext(card.slug, scale, seed, run_dir, model=model, quiet=quiet, seeds=tuple(todo) or (seed,))
    seed_everything(seed)
    ts, cpu0 = time.time(), time.process_time()
    with run_threads():
        metrics = card.experiment().run(cfg, seed, ctx)
    metrics = {k: float(v) if v is not None else math.nan for k, v in _jsonable(metrics).items()}
    seconds, cpu = time.time() - ts, time.process_time() - cpu0
    seed_env = {**environment(), "code": code, "version": version, "peak_rss_mb": peak_rss_mb()}
    seed_file = run_dir / "seeds" / f"seed-{seed}.json"
    atomic_write_json(seed_file, {"seed": seed, "metrics": metrics, "seconds": seconds, "cpu_seconds": cpu,
                                  "env": seed_env})  # fmt: skip
    append_log(run_dir, f"[{card.slug} seed {seed}] finished in {seconds:.1f} s")
    return metrics


def _reproducible():
    from .registry import reproducible

    return reproducible()
