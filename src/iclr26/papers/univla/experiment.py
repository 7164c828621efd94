"""The UniVLA reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import time

import numpy as np

from iclr26.core.threads import run_threads
from iclr26.embodied.univla import (
    EpisodeTokens,
    FastActionTokenizer,
    FastConfig,
    ModelConfig,
    PatchVQ,
    TrainSpec,
    UnifiedVLA,
    UnifiedVocab,
    UniVLAPolicy,
    corrupted,
    evaluate,
    evaluate_loss,
    make_sampler,
    policy_items,
    rollout_batch,
    train,
    video_items,
)
from iclr26.embodied.univla.world import WORDS, ToyTableEnv, expert_episode

from . import CORRUPT, POST_TASK, Cfg

TEXT_LEN = 17  # three subtasks of five words joined by two "then"


def _episodes(seeds, n_subtasks, embodiment="target"):
    return [expert_episode(int(s), n_subtasks, embodiment) for s in seeds]


def _noop(embodiment: str) -> np.ndarray:
    return ToyTableEnv(1, embodiment=embodiment).from_target_action(np.array([0.0, 0.0, -1.0]))


class _Setup:
    """Everything a seed shares across arms: data, tokenisers, vocabulary."""

    def __init__(self, cfg: Cfg, seed: int):
        b = 1_000_000 * (seed + 1)  # disjoint layout seeds per split
        self.cfg, self.seed = cfg, seed
        n_max = max(cfg.n_few, cfg.n_many)
        self.train_eps = {n: _episodes(range(b + 10_000 * n, b + 10_000 * n + n_max), n) for n in (1, 3)}
        self.val_eps = _episodes(range(b + 50_000, b + 50_000 + cfg.n_val), 1)
        self.val_eps += _episodes(range(b + 60_000, b + 60_000 + cfg.n_val), 3)
        half = cfg.n_post // 2
        post = _episodes(range(b + 100_000, b + 100_000 + half), 1, "other")
        post += _episodes(range(b + 200_000, b + 200_000 + cfg.n_post - half), 3, "other")
        self.eval_seeds = {n: range(b + 300_000 * n, b + 300_000 * n + cfg.n_eval) for n in (1, 3)}
        held = _episodes(range(b + 400_000, b + 400_000 + cfg.n_heldout), 3, "other")  # held-out videos
        frames = np.concatenate([e["frames"] for e in post + self.train_eps[1] + self.train_eps[3]])
        self.vq = PatchVQ(patch=4, codebook=cfg.codebook, seed=seed).fit(frames)
        self.fast = FastActionTokenizer(FastConfig(chunk=cfg.chunk))
        self.vocab = UnifiedVocab(WORDS, len(self.vq.centres), self.fast.n_tokens)
        tok = lambda eps: EpisodeTokens(eps, self.vq, self.fast, self.vocab, TEXT_LEN)  # noqa: E731
        self.post = tok(post)
        self.heldout = video_items(tok(held), "world_model", cfg.n_frames, cfg.stride)  # true instructions
        self.val = policy_items(tok(self.val_eps), _noop("target"))
        self.train_tok = {k: tok(self.train_eps[1][:k] + self.train_eps[3][:k]) for k in {cfg.n_few, cfg.n_many}}
        self.mcfg = ModelConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads)

    def model(self, encoder: bool = False) -> UnifiedVLA:
        vr = (self.vocab.vision0, self.vocab.action0)
        n_patches = int(self.post.codes[0].shape[1])
        return UnifiedVLA(self.vocab.size, vr, self.mcfg, patch_dim=48 if encoder else None,
                          n_patches=n_patches if self.cfg.patch_pos else None, seed=self.seed)  # fmt: skip

    def policy(self, model) -> UniVLAPolicy:
        return UniVLAPolicy(model, self.vq, self.fast, self.vocab, TEXT_LEN, _noop("target"))


def _spec(cfg: Cfg, steps: int) -> TrainSpec:
    return TrainSpec(steps=steps, batch=cfg.batch, lr=cfg.lr, eval_every=cfg.eval_every, patience=cfg.patience,
                     decay_patience=cfg.decay_patience)  # fmt: skip


def post_train(s: _Setup, arm: str, ctx):
    """Stage 1 (none for "none" / "encoder"): post-training on the other robot's corpus with the arm's sequences
    (the controls: the same world-model sequences with junk vision codes or shuffled instructions)."""
    enc = arm == "encoder"
    model = s.model(encoder=enc)
    if POST_TASK[arm] is None:
        return model, 0.0
    t0 = time.time()
    data = corrupted(s.post, CORRUPT[arm], seed=s.seed + 11) if arm in CORRUPT else s.post
    sampler = make_sampler(data, POST_TASK[arm], _noop("other"), s.cfg.n_frames, s.cfg.stride)
    log = train(model, sampler, _spec(s.cfg, s.cfg.post_steps), seed=s.seed, desc=f"post {arm}", quiet=ctx.quiet)
    ctx.log(f"seed {s.seed}: post-training {arm}: {log['steps']} steps, loss {log['last_loss']:.3f}")
    return model, time.time() - t0


def finetune(s: _Setup, model, n_demos: int, arm: str, ctx) -> dict:
    """Stage 2: policy fine-tuning (action-token loss, early stopping on validation demos), then closed-loop eval."""
    t0 = time.time()
    sampler = make_sampler(s.train_tok[n_demos], "policy", _noop("target"))
    log = train(model, sampler, _spec(s.cfg, s.cfg.ft_steps), seed=s.seed + 1, val=s.val, desc=f"finetune {arm}",
                quiet=ctx.quiet)  # fmt: skip
    pol = s.policy(model)
    out = {"ft_steps": float(log["steps"]), "ft_capped": float(log["capped"]), "val_loss": log["best_val"],
           "ft_seconds": time.time() - t0}  # fmt: skip
    for n, name in ((1, "short"), (3, "long")):
        r = evaluate(pol, n, s.eval_seeds[n])
        out[f"{name}_success"], out[f"{name}_completed"] = r["success"], r["completed"]
    if s.seed == s.cfg.seeds[0] and arm in ("none", "world_model") and hasattr(ctx, "artifact_path"):
        ep = rollout_batch(pol, [ToyTableEnv(3)], [s.eval_seeds[3][0]], keep_frames=True)[0]  # a frame strip
        np.savez_compressed(ctx.artifact_path(f"rollout_{arm}_{n_demos}.npz"), frames=ep["frames"],
                            completed=ep["completed"])  # fmt: skip
    out["long_progress"] = out["long_completed"] / 3  # share of the chain's subgoals done (CALVIN length / 3)
    out["avg_success"] = (out["short_success"] + out["long_success"]) / 2
    out["avg_progress"] = (out["short_success"] + out["long_progress"]) / 2
    return out


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    s = _Setup(cfg, seed)
    m["codebook_used"] = float(len(s.vq.centres))
    for n, name in ((1, "short"), (3, "long")):  # the testbed: the expert solves every task
        eps = _episodes(s.eval_seeds[n], n)
        m[f"expert_{name}_success"] = float(np.mean([e["success"] for e in eps]))
    ctx.log(f"seed {seed}: data + tokenisers {time.time() - t0:.1f}s; {len(s.vq.centres)} vision codes")
    m["untrained_short_success"] = evaluate(s.policy(s.model()), 1, s.eval_seeds[1])["success"]  # control
    runs = [(arm, cfg.n_few, "few") for arm in cfg.arms] + [(arm, cfg.n_many, "many") for arm in cfg.many_arms]
    runs += [(arm, 0, "post") for arm in cfg.post_only]
    posted = {}
    for arm, n_demos, regime in runs:
        if arm not in posted or regime != "many":
            model, secs = post_train(s, arm, ctx)
            if POST_TASK[arm] == "world_model":  # held-out next-frame loss of the world model (true instructions)
                m[f"{arm}_vision_loss"] = evaluate_loss(model, s.heldout)
            if regime == "few" and arm in cfg.many_arms:
                posted[arm] = {k: v.clone() for k, v in model.state_dict().items()}
            m[f"{arm}_post_seconds"] = secs
            if regime == "post":
                continue
        else:
            model = s.model(encoder=arm == "encoder")
            model.load_state_dict(posted[arm])
        r = finetune(s, model, n_demos, arm, ctx)
        for k, v in r.items():
            m[f"{arm}_{regime}_{k}"] = v
        ctx.log(
            f"seed {seed}: {arm:12s} {regime:4s} short {r['short_success']:.2f} long {r['long_success']:.2f} "
            f"(completed {r['long_completed']:.2f}/3), {r['ft_steps']:.0f} ft steps{' (CAP)' * bool(r['ft_capped'])}, "
            f"val {r['val_loss']:.3f}, {r['ft_seconds']:.1f}s"
        )
    for arm in cfg.arms:
        if arm != "world_model":
            m[f"wm_minus_{arm}_few"] = m["world_model_few_avg_progress"] - m[f"{arm}_few_avg_progress"]
    m["gain_short_few"] = m["world_model_few_short_success"] - m["none_few_short_success"]
    m["gain_long_few"] = m["world_model_few_long_progress"] - m["none_few_long_progress"]
    m["gain_avg_few"] = m["world_model_few_avg_progress"] - m["none_few_avg_progress"]
    if {"none", "world_model"} <= set(cfg.many_arms):
        m["gain_avg_many"] = m["world_model_many_avg_progress"] - m["none_many_avg_progress"]
    m["seconds"] = time.time() - t0
    return m


def plots(run_dir, per_seed, cfg):
    """Success per arm (few demos; short / long), and a frame strip of the world-model policy on a long task."""
    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    fig, ax = plt.subplots(figsize=(8, 3.2))
    x = np.arange(len(cfg.arms))
    for name, off in (("short", -0.2), ("long", 0.2)):
        ys = [[s[f"{a}_few_{name}_success"] for s in seeds if f"{a}_few_{name}_success" in s] for a in cfg.arms]
        ax.bar(x + off, [np.mean(y) for y in ys], 0.4, yerr=[np.std(y) for y in ys], label=f"{name} tasks")
    ax.set_xticks(x, [a.replace("_", "\n") for a in cfg.arms], fontsize=8)
    ax.set_ylabel(f"success ({cfg.n_few} demos per family)"), ax.set_ylim(0, 1.05), ax.legend(fontsize=8)
    fig.tight_layout()
    out = [("success_by_arm", fig), ("expert_long_task", _strip(expert_episode(12345, 3)))]
    from pathlib import Path

    for arm in ("none", "world_model"):
        f = Path(run_dir) / "artifacts" / f"rollout_{arm}_{cfg.n_few}.npz"
        if f.exists():
            d = np.load(f)
            ep = {"frames": d["frames"], "instruction": f"{arm}, {cfg.n_few} demos: {int(d['completed'])}/3 done"}
            out.append((f"rollout_{arm}_few", _strip(ep)))
    return out


def _strip(ep: dict, panels: int = 10):
    """A frame strip of a rollout (at most ``panels`` evenly spaced frames), titled by its instruction."""
    import matplotlib.pyplot as plt

    n = len(ep["frames"])
    idx = sorted({int(round(v)) for v in np.linspace(0, n - 1, min(panels, n))})
    fig, axes = plt.subplots(1, len(idx), figsize=(1.1 * len(idx), 1.6))
    for ax, t in zip(np.atleast_1d(axes), idx):
        ax.imshow(ep["frames"][t], interpolation="nearest"), ax.set_axis_off(), ax.set_title(f"t={t}", fontsize=7)
    fig.suptitle(ep["instruction"], fontsize=8)
    fig.tight_layout()
    return fig
