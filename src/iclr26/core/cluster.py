"""Past one machine: the seeds of a reproduction as Ray tasks (``iclr26 run/reproduce --cluster ADDRESS``).

Ray is the engine (an optional extra: ``pip install 'iclr26[cluster]'``); this module only maps the harness onto it:

- every (paper, seed) is one task with ``num_cpus = ICLR26_THREADS``, computed from its own seed exactly as a local
  worker computes it (so the metrics equal a local run's with the same seeds and thread count);
- a task runs in a temporary run folder on its node and returns that folder's files (the seed's record, its log lines,
  its artifacts); the driver writes them into the real run folder as each task finishes, so **run folders need no
  shared filesystem**, an interrupted run keeps its finished seeds and a rerun resumes from them;
- work that seeds share (a pretrained base, a tuning) goes through the project's cache folder: an experiment that
  defines ``shared(cfg)`` gets it run as a task of its own, once per cluster, before its seeds (they depend on it);
  other shared work is built by the first seed that needs it under the cache's file lock while the others wait.
  On a multi-node cluster ``ICLR26_CACHE`` must name a folder every node mounts (NFS); on one machine
  (``--cluster local``) it is the local cache;
- a task whose worker dies is retried once by Ray (``max_retries``); a seed that fails for good is reported with its
  paper and seed, and the finished seeds are kept.

``--cluster local`` starts a local Ray instance with this machine's cores; any other value is a Ray address
(``ray://host:10001`` or ``auto``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import UserError

_RETRIES = 1  # a killed worker's task runs once more before the seed is reported as failed
# tests: a path here makes the first task that finds no file at it create it and kill its worker (a node failure)
_CRASH_ONCE = "ICLR26_CLUSTER_CRASH_ONCE"


class ClusterError(UserError):
    """A seed failed on the cluster for good (its error, or its worker died twice); the finished seeds are kept."""


_FORWARD = ("ICLR26_THREADS", "ICLR26_CACHE", "ICLR26_SLOW", "TOKENIZERS_PARALLELISM", _CRASH_ONCE)


def require_ray():
    try:
        import ray
    except ImportError:
        raise UserError("--cluster needs Ray, which is not installed: pip install 'iclr26[cluster]'") from None
    return ray


def connect(address: str, num_cpus: int | None = None):
    """Join (or, for ``local``, start) a Ray cluster; the workers inherit the harness's environment variables."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    env = {k: os.environ[k] for k in _FORWARD if k in os.environ}
    env.setdefault("ICLR26_JOBS", "1")  # inside a task, seeds are never split further
    runtime_env = {"env_vars": env}
    if address == "local":
        ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                 runtime_env=runtime_env, configure_logging=False)  # fmt: skip
    else:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False, configure_logging=False)
    return ray


def _pack(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _seed_task(fn: Callable, args: tuple, _shared_done: bool = True) -> dict:
    """One seed on a cluster node: computed in a temporary run folder whose files come back to the driver (Ray starts
    it only once ``_shared_done``, the paper's shared task, has finished)."""
    slug, scale, cfg, seed, model, _run_dir, code, version, quiet, todo = args
    marker = os.environ.get(_CRASH_ONCE)
    if marker and not os.path.exists(marker):
        Path(marker).write_text(f"{slug} seed {seed}")
        os._exit(1)  # the worker process dies, as on a lost node
    tmp = Path(tempfile.mkdtemp(prefix=f"iclr26-{slug}-seed{seed}-"))
    try:
        metrics = fn(slug, scale, cfg, seed, model, str(tmp), code, version, True, todo)
        return {"metrics": metrics, "files": _pack(tmp)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _shared_task(slug: str, cfg) -> bool:
    from .registry import get_paper
    from .threads import run_threads

    exp = get_paper(slug).experiment()
    with run_threads():
        exp.shared(cfg)
    return True


def unpack(run_dir: Path, files: dict[str, bytes]) -> None:
    """Write a finished task's files into the run folder (atomically; its log lines are appended to log.txt)."""
    from .jsonio import append_log, atomic_write_text

    for rel, data in files.items():
        if rel == "log.txt":
            for line in data.decode("utf-8").splitlines():
                append_log(run_dir, line)
            continue
        target = run_dir / rel
        if rel.endswith((".json", ".txt", ".md", ".csv")):
            atomic_write_text(target, data.decode("utf-8"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)


def run_seeds(fn: Callable, calls: Sequence[tuple], address: str, threads: int, done: Callable[[int, dict], None],
              shared: tuple | None = None) -> list[dict]:  # fmt: skip
    """Submit ``fn(*call)`` (the harness's ``run_seed``) for every call as a Ray task, after the paper's shared task
    if any; ``done(i, result)`` runs in the driver as each finishes. Returns the results in call order; raises a clear
    error naming the first seed that failed."""
    ray = connect(address)
    seed_fn = ray.remote(num_cpus=threads, max_retries=_RETRIES)(_seed_task)
    deps = []
    if shared is not None:
        deps = [ray.remote(num_cpus=threads, max_retries=_RETRIES)(_shared_task).remote(*shared)]
    refs = [seed_fn.remote(fn, args, *deps) for args in calls]
    index = {ref: i for i, ref in enumerate(refs)}
    results: list = [None] * len(refs)
    pending, failure = list(refs), None
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            i = index[ready[0]]
            try:
                results[i] = ray.get(ready[0])
            except Exception as exc:  # a seed's error or a worker that died twice: keep the others
                if failure is None:
                    failure = (calls[i], exc)
                continue
            done(i, results[i])
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    if failure is not None:
        (slug, *_rest), exc = failure
        seed = failure[0][3]
        cause = getattr(exc, "cause", None) or exc
        raise ClusterError(f"{slug} seed {seed} failed on the cluster ({type(cause).__name__}: {cause}); the "
                           "finished seeds are kept: rerun the same command to resume") from exc  # fmt: skip
    return results


def shutdown() -> None:
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()
