"""The mindtransformer reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from iclr26.lenses.mindtransformer.blockstates import STATES, state_dims, word_states
from iclr26.lenses.mindtransformer.encoding import EncodingConfig, encode, encode_combined, hrf_design, prepare_run
from iclr26.lenses.mindtransformer.world import Region, VoxelWorld, n_scans_for, word_timings

from . import _SUFFIXES, MODE2_INPUTS, Cfg

EQUIV = {
    "pre_attn_norm": "per_head_q",
    "per_head_q": "pre_attn_norm",
    "per_head_context_vector": "attn_output",
    "attn_output": "per_head_context_vector",
}


MODE2_REGIONS = ("auditory_q_rope", "attention", "association_ffn")  # regions driven by a state other than the pivot
REAL_MODEL = "smollm2-135m"  # the real model's default; `iclr26 run mindtransformer --model X` replaces it


def _regions(early: int, late: int, n: int, n_noise: int | None = None) -> list[Region]:
    return [
        Region("auditory_q_rope", "per_head_q_rope", early, n),  # position-dependent generator
        Region("content_q", "per_head_q", early, n),  # same content, no position
        Region("k_rope", "per_head_k_rope", early, n),
        Region("attention", "attn_output", late, n),
        Region("association_ffn", "ffn_activated_state", late, n),
        Region("hidden", "input_hidden_state", late, n),
        Region("noise", None, 0, n if n_noise is None else n_noise),  # sets the floor, and the RoPE control
    ]


@functools.lru_cache(maxsize=4)
def _stimulus(kind: str, model_name: str, n_runs: int, words_per_run: int) -> tuple[tuple[str, ...], ...]:
    """The fixed story: ``n_runs`` runs of words (the same for every seed, as the story is in the paper)."""
    rng = np.random.default_rng(1234)
    if kind == "tiny":
        from iclr26.lm import zoo
        from iclr26.lm.tokenizer import words_of

        sents = zoo.world_of(model_name, 0).sentences()
        words: list[str] = []
        while len(words) < n_runs * words_per_run:
            words.extend(w for w, _ in words_of(sents[int(rng.integers(len(sents)))]))
    else:
        from iclr26.worlds.text import load_domain

        words = " ".join(load_domain("wikipedia")[:40]).split()
    words = words[: n_runs * words_per_run]
    if len(words) < n_runs * words_per_run:
        raise ValueError(f"not enough text for {n_runs} runs of {words_per_run} words")
    return tuple(tuple(words[i * words_per_run : (i + 1) * words_per_run]) for i in range(n_runs))


@functools.lru_cache(maxsize=4)
def _features(kind: str, model_name: str, layers: tuple[int, ...], n_runs: int, words_per_run: int):
    """Word-level states of every run (computed once per process: the stimulus does not depend on the seed)."""
    from transformers.utils import logging as hf_logging

    from iclr26.lm import zoo

    hf_logging.disable_progress_bar()
    model, tok = zoo.load(model_name)
    runs = _stimulus(kind, model_name, n_runs, words_per_run)
    limit = model.config.max_position_embeddings
    max_tokens, context = (limit, limit // 4) if limit < 256 else (min(limit, 1024), 64)
    feats: dict[tuple[str, int], list[np.ndarray]] = {}
    for words in runs:
        for key, x in word_states(model, tok, list(words), layers, STATES, max_tokens, context).items():
            feats.setdefault(key, []).append(x)
    dims = state_dims(model)
    return feats, dims, dict(model.config.to_dict())


def analyse(feats, dims, cfg: Cfg, layers: tuple[int, int], seed: int, ctx, tag: str) -> dict[str, float]:
    """Synthetic brain from ``feats`` → Mode 1 for all states → metrics (and Mode 2 per region)."""
    enc = EncodingConfig(tr=cfg.tr, trim=cfg.trim)
    early, late = layers
    timings = [
        word_timings(len(f), seed * 1000 + i, gap=cfg.word_gap) for i, f in enumerate(feats["per_head_q", early])
    ]
    onsets, offsets = [t[0] for t in timings], [t[1] for t in timings]
    world = VoxelWorld(
        feats,
        onsets,
        offsets,
        _regions(early, late, cfg.voxels_per_region, cfg.noise_voxels),
        cfg.tr,
        cfg.k_features,
        cfg.rho,
        seed=seed,
    )
    y = [prepare_run(r, cfg.trim) for r in world.responses()]
    designs = [hrf_design(on, off, n_scans_for(off, cfg.tr), cfg.tr, enc.hrf) for on, off in zip(onsets, offsets)]
    x = {key: [prepare_run(d @ f, cfg.trim) for d, f in zip(designs, runs)] for key, runs in feats.items()}
    from tqdm.auto import tqdm

    r = {key: encode(x[key], y, enc.alphas)["r"] for key in tqdm(sorted(x), desc=f"mode 1 {tag}", leave=False)}
    gens = world.generator_of
    noise = np.array([g[0] is None for g in gens])
    best_any = np.max(np.stack(list(r.values())), axis=0)
    floor = float(np.quantile(best_any[noise], 0.95))
    win, hit, hit_eq, above = [], [], [], []
    per_region: dict[str, list[int]] = {}
    for v, (state, layer) in enumerate(gens):
        if state is None:
            continue
        scores = np.array([r[s, layer][v] for s in STATES])
        w = STATES[int(np.argmax(scores))]
        ok = scores.max() > floor
        above.append(ok)
        if ok:
            hit.append(w == state)
            hit_eq.append(w == state or (EQUIV.get(w) == state and _square(dims, w, state)))
            per_region.setdefault(world.regions[world.region_of[v]].name, []).append(STATES.index(w))
        win.append(w)
    generated = [reg for reg in world.regions if reg.state is not None]
    # a region is recovered when its most frequent winner (voxels above the floor) is its generator
    recovered = [
        reg.name in per_region and STATES[np.bincount(per_region[reg.name]).argmax()] == reg.state for reg in generated
    ]
    m = {
        "region_acc": float(np.mean(recovered)),
        "winner_acc": float(np.mean(hit)) if hit else float("nan"),
        "winner_acc_equiv": float(np.mean(hit_eq)) if hit_eq else float("nan"),
        "frac_above_floor": float(np.mean(above)),
        "noise_floor": floor,
        "mode1_best_r": float(np.mean(best_any[~noise])),
    }
    if cfg.shifted_control:
        m |= _shifted_control(x, y, enc, world, tag)
    for name, (a, b) in {"pos": ("auditory_q_rope", "q"), "content": ("content_q", "q"), "k": ("k_rope", "k")}.items():
        mask = world.mask(a)
        m[f"rope_gain_{name}"] = float(np.mean(r[f"per_head_{b}_rope", early][mask] - r[f"per_head_{b}", early][mask]))
    # negative control of the RoPE contrast: voxels driven by nothing
    m["rope_gain_noise"] = float(np.mean(r["per_head_q_rope", early][noise] - r["per_head_q", early][noise]))
    budget_devs = []

    def mode2(reg):
        mask = world.mask(reg)
        layer = next(rg.layer for rg in world.regions if rg.name == reg)
        xs = {s: x[s, layer] for s in (*MODE2_INPUTS, "input_hidden_state")}
        res = encode_combined(xs, [yy[:, mask] for yy in y], MODE2_INPUTS, "input_hidden_state", enc.alphas)
        ctx.save_artifact(f"mode2_selected_{tag}_{reg}_seed{seed}", res["selected"])
        budget_devs.append(abs(sum(res["selected"].values()) / dims["input_hidden_state"] - 1.0))
        return res["r"], r["input_hidden_state", layer][mask], r[world.regions[names.index(reg)].state, layer][mask]

    names = [rg.name for rg in world.regions]
    if cfg.mode2:
        m2, hid, _ = zip(*(mode2(reg) for reg in MODE2_REGIONS))
        m["mode2_r"], m["hidden_r"] = float(np.mean(np.concatenate(m2))), float(np.mean(np.concatenate(hid)))
    # headroom of Mode 2: the generator's own Mode-1 model on the same voxels (Mode 1 only, so always measured)
    m["oracle_r"] = float(
        np.mean(np.concatenate([r[rg.state, rg.layer][world.mask(rg.name)] for rg in world.regions
                                if rg.name in MODE2_REGIONS]))
    )  # fmt: skip
    if cfg.mode2_control:  # negative control: Mode 2 where the hidden state itself drives the voxels
        m2_c, hid_c, _ = mode2("hidden")
        m["mode2_r_ctrl"], m["hidden_r_ctrl"] = float(np.mean(m2_c)), float(np.mean(hid_c))
    if budget_devs:
        m["mode2_budget_dev"] = float(max(budget_devs))  # kept features vs the pivot's width, worst region
    ctx.save_artifact(
        f"winners_{tag}_seed{seed}",
        {reg: np.bincount(idx, minlength=len(STATES)).tolist() for reg, idx in per_region.items()} | {"states": STATES},
    )
    ctx.log(f"{tag}: " + ", ".join(f"{k}={v:.3f}" for k, v in m.items()))
    return {f"{k}_{tag}": v for k, v in m.items()}


def _shifted_control(x, y, enc, world: VoxelWorld, tag: str) -> dict[str, float]:
    """Negative control of the recovery claims: Mode 1 with every run's regressors circularly shifted by half the run
    (the classic circular-shift null: the stimulus no longer aligned with the responses, its autocorrelation kept);
    winners over all generated voxels, with no noise floor."""
    from tqdm.auto import tqdm

    rolled = {k: [np.roll(f, len(f) // 2, axis=0) for f in runs] for k, runs in x.items()}
    r = {k: encode(rolled[k], y, enc.alphas)["r"] for k in tqdm(sorted(rolled), desc=f"shifted {tag}", leave=False)}
    hit, per_region = [], {}
    for v, (state, layer) in enumerate(world.generator_of):
        if state is None:
            continue
        w = int(np.argmax([r[s, layer][v] for s in STATES]))
        hit.append(STATES[w] == state)
        per_region.setdefault(world.region_of[v], []).append(w)
    rec = [STATES[np.bincount(per_region[i]).argmax()] == world.regions[i].state for i in per_region]
    return {"winner_acc_shifted": float(np.mean(hit)), "region_acc_shifted": float(np.mean(rec))}


def _square(dims: dict[str, int], a: str, b: str) -> bool:
    """pre_attn_norm→q is W_Q (square iff q width = d); context→attn_output is W_O (square iff widths agree)."""
    return dims[a] == dims[b]


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    out: dict[str, float] = {}
    feats, dims, _ = _features("tiny", cfg.tiny_model, cfg.tiny_layers, cfg.n_runs, cfg.tiny_words_per_run)
    out |= analyse(feats, dims, cfg, cfg.tiny_layers, seed, ctx, "tiny")
    if cfg.smollm2:
        # the real model: SmolLM2-135M, or `--model` (any local HF causal LM with rotary embeddings)
        name = getattr(ctx, "model", None) or REAL_MODEL
        feats, dims, _ = _features("smol", name, cfg.smol_layers, cfg.n_runs, cfg.smol_words_per_run)
        out |= analyse(feats, dims, cfg, cfg.smol_layers, seed, ctx, "smollm2")
    return out


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    figs = []
    for tag in _SUFFIXES:
        files = sorted((run_dir / "artifacts").glob(f"winners_{tag}_seed*.json"))
        if not files:
            continue
        tab = json.loads(files[0].read_text())
        states = tab.pop("states")
        regions = list(tab)
        mat = np.array([np.array(tab[g]) / max(1, sum(tab[g])) for g in regions])
        fig, ax = plt.subplots(figsize=(10, 0.5 * len(regions) + 2))
        im = ax.imshow(mat, aspect="auto", cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(states)), states, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(regions)), regions)
        ax.set_title(f"Mode-1 winner state per synthetic region ({tag}, first seed)")
        fig.colorbar(im, ax=ax, label="fraction of voxels above the noise floor")
        fig.tight_layout()
        figs.append((f"winners_{tag}", fig))
    return figs
