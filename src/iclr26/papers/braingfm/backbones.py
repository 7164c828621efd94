"""The reproduction's data and its pre-trained backbones, each backbone a cached unit that any seed's worker can build.

Pre-training is most of a seed's time (two BrainGFM-tiny backbones, "multi" and "single", about 360 of 465 s at quick
scale). Each backbone depends only on its seed, the pre-training fields of the config and the code that makes it, so it
is built once under a file lock and saved to ``trained_cache_dir()/braingfm``: a rerun loads it, and a worker that has
finished its own seed's backbones builds those of a seed still waiting for a worker (`prepare`), so three seeds on two
workers end together instead of in two rounds. A unit computed in another process is the same tensor for tensor:
the world, the corpus draws, the initial state and the pre-training all start from the seed (same thread count:
the cache folder is per thread count).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import torch

from iclr26.core.paths import trained_cache_dir
from iclr26.core.units import cached_unit
from iclr26.science.braingfm import BrainGFM, BrainGFMConfig, GraphSet, PretrainConfig, encode_text, graph_set, pretrain
from iclr26.science.braingfm.world import BrainWorld

from . import Cfg

PRETRAIN_TEXT = "resting-state functional connectivity of a subject"  # [T/D] of unlabelled graphs (ours)
N_MAX = 48
_FIELDS = ("n_timepoints", "n_pretrain", "n_pretrain_val", "meta_disorders", "target_atlas", "pretrain_steps",
           "pretrain_schedule_steps", "pretrain_batch")  # fmt: skip


class Data:
    """Draws subjects of one world and turns them into graph sets per atlas."""

    def __init__(self, world: BrainWorld, rng):
        self.world, self.rng = world, rng
        self.names = [a for a, _, _ in world.atlases]

    def graphs(self, n: int, disorder, atlases=None, share: float = 0.5) -> dict[str, GraphSet]:
        s = self.world.subjects(n, disorder, self.rng, patient_share=share)
        return {a: graph_set(s["series"][a], self.names.index(a), s["y"], n_max=N_MAX)
                for a in (atlases or self.names)}  # fmt: skip

    def fc(self, n: int, disorder, atlas: str):
        """z-scored FC upper triangles (the graphs' node features) of ``n`` new subjects, and their labels."""
        g = self.graphs(n, disorder, [atlas])[atlas]
        return upper(g), g.y.numpy()


def upper(gs: GraphSet) -> np.ndarray:
    k = int(gs.n[0])
    iu = np.triu_indices(k, 1)
    return np.stack([gs.x[i, :k, :k].numpy()[iu] for i in range(len(gs))])


def variants(cfg: Cfg) -> dict[str, str]:
    """Backbone name -> pre-training mode ("single" pre-trains on the target atlas only, the others on all)."""
    out = {"multi": "gcl+gmae", "single": "gcl+gmae"}
    if cfg.ablations:
        out.update({"multi_gcl": "gcl", "multi_gmae": "gmae"})
    return out


def world_and_corpora(cfg: Cfg, seed: int):
    """The seed's world, its data stream (the pre-training corpora are its first draws: a seed's fine-tuning data
    follow them) and the corpora {"multi", "single"} with their validation sets."""
    world = BrainWorld(seed=seed, n_timepoints=cfg.n_timepoints)
    data = Data(world, np.random.default_rng(seed))
    pre = data.graphs(cfg.n_pretrain, list(cfg.meta_disorders))
    pre_val = data.graphs(cfg.n_pretrain_val, list(cfg.meta_disorders))
    corpora = {"multi": GraphSet.cat(list(pre.values())), "single": pre[cfg.target_atlas]}
    vals = {"multi": GraphSet.cat(list(pre_val.values())), "single": pre_val[cfg.target_atlas]}
    return world, data, corpora, vals


def initial_backbone(cfg: Cfg, seed: int, n_atlases: int) -> BrainGFM:
    """One initial state for every arm of a seed (scratch and the starting point of every pre-training)."""
    bcfg = BrainGFMConfig(n_max=N_MAX, n_atlases=n_atlases, text_dim=encode_text([PRETRAIN_TEXT]).shape[1])
    torch.manual_seed(1000 + seed)
    return BrainGFM(bcfg)


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """Hash of the code a backbone depends on: a change to any of it makes new units instead of reusing stale ones."""
    import iclr26.science.braingfm as sci
    import iclr26.science.braingfm.world as world_mod

    folder = Path(sci.__file__).parent
    files = [*sorted(folder.glob("*.py")), Path(world_mod.__file__), Path(__file__)]
    return hashlib.sha1(b"".join(f.read_bytes() for f in files)).hexdigest()[:12]


def unit_path(cfg: Cfg, seed: int, name: str) -> Path:
    text = hashlib.sha1(encode_text([PRETRAIN_TEXT]).numpy().tobytes()).hexdigest()[:12]  # the text encoder's output
    spec = {"seed": seed, "name": name, "code": _code_digest(), "text": text, **{k: getattr(cfg, k) for k in _FIELDS}}
    spec = json.dumps(spec, sort_keys=True, default=list)
    return trained_cache_dir() / "braingfm" / f"s{seed}-{name}-{hashlib.sha1(spec.encode()).hexdigest()[:12]}.pt"


def _build(cfg: Cfg, seed: int, name: str) -> dict:
    _, data, corpora, vals = world_and_corpora(cfg, seed)
    corpus = "single" if name == "single" else "multi"
    bb = copy.deepcopy(initial_backbone(cfg, seed, len(data.names)))
    pcfg = PretrainConfig(mode=variants(cfg)[name], max_steps=cfg.pretrain_steps, batch=cfg.pretrain_batch,
                          schedule_steps=min(cfg.pretrain_schedule_steps, cfg.pretrain_steps))  # fmt: skip
    info = pretrain(bb, corpora[corpus], vals[corpus], encode_text([PRETRAIN_TEXT]), pcfg, seed=seed)
    return {"state": bb.state_dict(), "steps": info["steps"], "best_val": info["best_val"],
            "graphs": len(corpora[corpus])}  # fmt: skip


def backbone_unit(cfg: Cfg, seed: int, name: str, wait: bool = True, log=None) -> dict | None:
    """The pre-trained backbone ``name`` of ``seed`` ({"state", "steps", "best_val", "graphs"}), built under a file
    lock on first use and stored through ``iclr26.core.cache`` (atomic write, content digest verified when read, a
    damaged unit moved aside and rebuilt; loaded with ``weights_only=True``). ``wait=False``: build it only if no
    other process is building it (else return None)."""
    return cached_unit(unit_path(cfg, seed, name), lambda: _build(cfg, seed, name),
                       f"pre-trained backbone {name} of seed {seed}", wait=wait, log=log)  # fmt: skip


def backbones(cfg: Cfg, seed: int, log=None) -> dict[str, dict]:
    """This seed's backbone units: first those no other process is building, then the rest (waiting for them)."""
    out = {}
    for name in variants(cfg):
        if (u := backbone_unit(cfg, seed, name, wait=False, log=log)) is not None:
            out[name] = u
    for name in variants(cfg):
        if name not in out:
            out[name] = backbone_unit(cfg, seed, name, log=log)
    return {name: out[name] for name in variants(cfg)}


def prepare(cfg: Cfg, seed: int, seeds: tuple[int, ...], log=None) -> None:
    """Build the units of the seeds after ``seed`` in ``seeds`` that nobody builds yet (work for a worker that would
    otherwise idle at the end of the run); units another process holds are skipped."""
    for later in seeds[seeds.index(seed) + 1 :] if seed in seeds else ():
        for name in variants(cfg):
            if not unit_path(cfg, later, name).exists():
                backbone_unit(cfg, later, name, wait=False, log=log)
