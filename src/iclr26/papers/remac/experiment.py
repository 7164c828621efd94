"""The REMAC reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import json
import time

import numpy as np
import torch

from iclr26.core.threads import run_threads
from iclr26.embodied.remac import (
    FlowChunkPolicy,
    FlowTrainConfig,
    MixerConfig,
    REMACConfig,
    chunk_flops,
    finetune,
    merge,
    run_episode,
    sample_flow,
    sample_prefix_preserved,
    sample_rtc,
    self_samples,
    to_numpy_chunker,
    train_flow,
)
from iclr26.embodied.remac.world import (
    ACT_DIM,
    OBS_DIM,
    BatchCatchBall,
    CatchBallConfig,
    demonstrations,
    expert_action,
    expert_chunker,
)

from . import Cfg

CHUNK = 8
LADDER = {  # the paper's ablation ladder (Table 4): each arm adds one component
    "lora": dict(masking=False, curriculum=False, delta=False),
    "mask": dict(masking=True, curriculum=False, delta=False),
    "curr": dict(masking=True, curriculum=True, delta=False),
    "remac": dict(masking=True, curriculum=True, delta=True),
    "remacclean": dict(masking=True, curriculum=True, delta=True, prefix_input="clean"),  # ours, not in the paper
    "remacgated": dict(masking=True, curriculum=True, delta=True, lora="gated", lambda_keep=0.01),  # the paper's form
}
UNMERGED = ("remacgated",)  # cannot be merged: evaluated with their LoRA branches


def _per_step(env, fn) -> float:
    while not env.done:
        env.step(fn(env.obs()))
    return float(env.caught.sum() / (env.landed * env.n))


def _evaluate(chunker, d: int, cfg: Cfg, n: int, env_seed: int, strategy: str = "async", te_k: float = 0.01):
    """Share of balls caught and mean |a_t - a_(t-1)| over n episodes (the same episodes for every arm)."""
    env = BatchCatchBall(n, env_seed)
    _, tr = run_episode(env, chunker, d, cfg.horizon, CHUNK, ACT_DIM, strategy, te_k=te_k, record=True)
    acts = np.stack(tr.actions, axis=1)[..., 0]
    return float(env.caught.sum() / (env.landed * env.n)), float(np.abs(np.diff(acts, axis=1)).mean()), acts


def _chunkers(base, merged: dict, cfg: Cfg, gen: torch.Generator, rtc_beta: float = 5.0):
    n = cfg.flow_steps
    out = {
        "naive": to_numpy_chunker(lambda o, p, d: sample_flow(base, o, n, gen)),
        "rtc": to_numpy_chunker(lambda o, p, d: sample_rtc(base, o, p, d, cfg.horizon, n, rtc_beta, generator=gen)),
    }
    if "lora" in merged:
        out["lora"] = to_numpy_chunker(lambda o, p, d: sample_flow(merged["lora"], o, n, gen))
    for arm in ("mask", "curr", "remac", "remacgated"):
        if arm in merged:
            out[arm] = to_numpy_chunker(lambda o, p, d, m=merged[arm]: sample_prefix_preserved(m, o, p, d, n))
    if "remacclean" in merged:  # trained on noise at the generated positions: sampled from noise
        out["remacclean"] = to_numpy_chunker(
            lambda o, p, d: sample_prefix_preserved(merged["remacclean"], o, p, d, n, init="noise", generator=gen)
        )
    if "remac" in merged:
        out["remacnoise"] = to_numpy_chunker(
            lambda o, p, d: sample_prefix_preserved(merged["remac"], o, p, d, n, init="noise", generator=gen)
        )
    return out


def _tune(make, grid, cfg: Cfg, seed: int, strategy: str, ctx, name: str) -> float:
    """The grid value with the best mean validation success over the delays >= 2, grid extended while an edge wins."""
    grid, scores = sorted(grid), {}
    late = [d for d in cfg.delays if d >= 2][::2] or [max(cfg.delays)]  # d = 2 and 4 at quick
    while True:
        for g in grid:
            if g not in scores:
                ch, k = make(g)
                scores[g] = np.mean([_evaluate(ch, d, cfg, cfg.tune_episodes, 20_000 + seed, strategy, k)[0]
                                     for d in late])  # fmt: skip
        best = max(grid, key=lambda g: scores[g])
        if best == grid[-1] and len(grid) > 1 and scores[best] > scores[grid[-2]] and grid[-1] < 100:
            grid.append(grid[-1] * 2)
        elif best == grid[0] and len(grid) > 1 and scores[best] > scores[grid[1]] and grid[0] > 1e-3:
            grid.insert(0, grid[0] / 2)
        else:
            ctx.log(f"{name} grid {[f'{g:g}:{scores[g]:.3f}' for g in grid]} -> {best:g}")
            return best


def _samplers(base, merged_remac, lora_model, gated, cfg: Cfg, gen):
    """One chunk at batch 1 (the robot's case), d = 2, for every inference form whose cost the claims compare."""
    o, p = torch.zeros(1, OBS_DIM), torch.zeros(1, CHUNK, ACT_DIM)
    n, d = cfg.flow_steps, 2
    return {
        "base": lambda: sample_flow(base, o, n, gen),
        "remac": lambda: sample_prefix_preserved(merged_remac, o, p, d, n),
        "lora": lambda: sample_prefix_preserved(lora_model, o, p, d, n),
        "gated": lambda: sample_prefix_preserved(gated, o, p, d, n),
        "rtc": lambda: sample_rtc(base, o, p, d, cfg.horizon, n, 5.0, generator=gen),
    }


def _costs(fns, cfg: Cfg) -> dict[str, float]:
    """FLOPs of one chunk (deterministic: the latency claims) and the median wall time over `timing_reps` calls, the
    samplers interleaved so machine load hits all alike (reported beside the counts)."""
    out = {f"flops_{k}": float(chunk_flops(f)) for k, f in fns.items()}
    times = {k: [] for k in fns}
    for _ in range(cfg.timing_reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    out.update({f"t_{k}_ms": 1000 * float(np.median(v)) for k, v in times.items()})
    for k in fns:
        if k != "base":
            out[f"{k}_flops_ratio"] = out[f"flops_{k}"] / out["flops_base"]
            out[f"{k}_time_ratio"] = out[f"t_{k}_ms"] / out["t_base_ms"]
    return out


@torch.no_grad()
def _action_change(policy, base, vobs, cfg: Cfg, seed: int) -> float:
    """Mean |chunk of `policy` - chunk of the base| on validation observations, the same noise for both (a LoRA that
    learnt nothing scores 0)."""
    o = torch.as_tensor(vobs[:512])
    a = sample_flow(policy, o, cfg.flow_steps, torch.Generator().manual_seed(seed))
    b = sample_flow(base, o, cfg.flow_steps, torch.Generator().manual_seed(seed))
    return float((a - b).abs().mean())


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    torch.manual_seed(seed)
    env_cfg, test_seed = CatchBallConfig(), 10_000 + seed
    obs, chunks, m["demo_success"] = demonstrations(cfg.train_episodes, 1000 * seed + 1, CHUNK, cfg=env_cfg)
    vobs, vchunks, _ = demonstrations(cfg.val_episodes, 1000 * seed + 2, CHUNK, cfg=env_cfg)
    m["expert_success"] = _per_step(BatchCatchBall(cfg.eval_episodes, test_seed), expert_action)
    m["still_success"] = _per_step(BatchCatchBall(cfg.eval_episodes, test_seed), lambda o: np.zeros(len(o)))

    base = FlowChunkPolicy(MixerConfig(OBS_DIM, ACT_DIM, CHUNK))
    info = train_flow(base, obs, chunks, vobs, vchunks, FlowTrainConfig(max_steps=cfg.base_steps), seed)
    base.eval()
    m["base_val_loss"] = info["val_loss"]
    ctx.log(f"data {len(obs)} chunks (demo success {m['demo_success']:.3f}); base {info['steps']} steps, val "
            f"{info['val_loss']:.4f}; {time.time() - t0:.0f}s")  # fmt: skip

    merged, peft_models = {}, {}
    a_tilde = self_samples(base, obs, cfg.flow_steps, seed=7 * seed + 3)
    for i, (arm, kw) in enumerate(LADDER.items()):
        rcfg = REMACConfig(**kw, steps=cfg.lora_steps, lr=cfg.lora_lr)
        peft_models[arm] = finetune(base, obs, chunks, rcfg, seed=100 * seed + i, a_tilde=a_tilde)
        merged[arm] = peft_models[arm] if arm in UNMERGED else merge(peft_models[arm])
    ctx.log(f"LoRA arms trained; {time.time() - t0:.0f}s")
    with torch.no_grad():  # merging leaves outputs equal
        vo, va = torch.as_tensor(vobs[:512]), torch.as_tensor(vchunks[:512])
        s, dd = torch.rand(len(vo)), torch.randint(0, 5, (len(vo),))
        diff = merged["remac"](vo, va, s, dd) - peft_models["remac"](vo, va, s, dd)
    m["merge_max_abs_diff"] = float(diff.abs().max())
    n_lora = sum(q.numel() for q in peft_models["remac"].parameters() if q.requires_grad)
    m["lora_param_frac"] = n_lora / sum(q.numel() for q in base.parameters())
    n_gated = sum(q.numel() for q in peft_models["remacgated"].parameters() if q.requires_grad)
    m["gated_param_frac"] = n_gated / sum(q.numel() for q in base.parameters())
    m["lora_action_change"] = _action_change(merged["lora"], base, vobs, cfg, seed)
    m["remac_action_change"] = _action_change(merged["remac"], base, vobs, cfg, seed)

    gen = torch.Generator().manual_seed(seed)
    m["rtc_beta"] = _tune(lambda b: (_chunkers(base, {}, cfg, gen, b)["rtc"], 0.01), cfg.rtc_betas, cfg, seed,
                          "async", ctx, "RTC beta")  # fmt: skip
    m["te_k"] = _tune(lambda k: (_chunkers(base, {}, cfg, gen)["naive"], k), cfg.te_ks, cfg, seed, "te", ctx, "TE k")
    chunkers = _chunkers(base, merged, cfg, gen, m["rtc_beta"])
    chunkers["expert_naive"], chunkers["expert_prefix"] = expert_chunker(False, CHUNK), expert_chunker(True, CHUNK)
    plan = [("sync", "naive", "sync"), ("naive", "naive", "async"), ("te", "naive", "te"), ("rtc", "rtc", "async")]
    plan += [(arm, arm, "async") for arm in (*LADDER, "remacnoise", "expert_naive", "expert_prefix")]
    dmax, rollout = max(cfg.delays), {}
    for arm, ch, strategy in plan:
        for d in cfg.delays:
            gen.manual_seed(1_000_003 * seed + d)
            succ, jerk, acts = _evaluate(chunkers[ch], d, cfg, cfg.eval_episodes, test_seed, strategy, m["te_k"])
            m[f"{arm}_d{d}"] = succ
            if d == dmax:
                m[f"{arm}_jerk"] = jerk
                if arm in ("naive", "remac", "rtc"):
                    rollout[arm] = acts[0].tolist()
        late = [d for d in cfg.delays if d >= 2] or [dmax]
        m[f"{arm}_late"] = float(np.mean([m[f"{arm}_d{d}"] for d in late]))
        ctx.log(f"{arm:10s} " + " ".join(f"d{d}={m[f'{arm}_d{d}']:.3f}" for d in cfg.delays)
                + f"  jerk {m[f'{arm}_jerk']:.3f}; {time.time() - t0:.0f}s")  # fmt: skip
    d0 = min(cfg.delays)
    m["remac_retention"] = m[f"remac_d{dmax}"] / max(m[f"remac_d{d0}"], 1e-9)
    m["remac_drop_vs_naive"] = (m[f"remac_d{d0}"] - m[f"remac_d{dmax}"]) / max(
        m[f"naive_d{d0}"] - m[f"naive_d{dmax}"], 1e-9
    )
    m["lora_gain"] = m["lora_late"] - m["naive_late"]
    m.update(_costs(_samplers(base, merged["remac"], peft_models["remac"], merged["remacgated"], cfg, gen), cfg))
    ctx.log(f"per chunk: base {m['flops_base']:.3g} FLOPs / {m['t_base_ms']:.2f} ms; x base FLOPs (wall): merged "
            f"REMAC {m['remac_flops_ratio']:.2f} ({m['remac_time_ratio']:.2f}), unmerged LoRA "
            f"{m['lora_flops_ratio']:.2f} ({m['lora_time_ratio']:.2f}), gated {m['gated_flops_ratio']:.2f} "
            f"({m['gated_time_ratio']:.2f}), RTC {m['rtc_flops_ratio']:.2f} ({m['rtc_time_ratio']:.2f}); "
            f"{time.time() - t0:.0f}s")  # fmt: skip
    if seed == cfg.seeds[0]:  # one episode's trajectory at the largest delay for the rollout figure
        env, states = BatchCatchBall(cfg.eval_episodes, test_seed), []
        while not env.done:
            states.append(env.obs()[0].tolist())
            env.step(np.zeros(env.n))
        art = {"d": dmax, "actions": rollout, "ball": states, "env_seed": test_seed, "n": cfg.eval_episodes}
        ctx.save_artifact("rollout", art)
    return m


def _paddle(actions, env_seed: int, n: int):
    """Replay the first test environment's executed actions (the balls do not depend on the paddle) for its path."""
    env, xs, caught = BatchCatchBall(n, env_seed), [], []
    for a in actions:
        xs.append(float(env.px[0]))
        caught.append(float(env.step(np.r_[a, np.zeros(n - 1)])[0]))
    return xs, caught


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    styles = {"sync": ":", "naive": "-", "te": ":", "rtc": "--", "lora": "-.", "mask": "-", "curr": "-", "remac": "-",
              "remacclean": "--", "remacgated": "--", "expert_prefix": ":"}  # fmt: skip
    for arm, st in styles.items():
        ys = [[s[f"{arm}_d{d}"] for s in seeds if f"{arm}_d{d}" in s] for d in cfg.delays]
        ax.errorbar(cfg.delays, [np.mean(y) for y in ys], yerr=[np.std(y) for y in ys], fmt=st, marker="o",
                    lw=2.5 if arm == "remac" else 1.2, label=arm, capsize=2)  # fmt: skip
    ax.set_xlabel("inference delay d (control steps)"), ax.set_ylabel("share of balls caught")
    ax.set_ylim(0, 1.02), ax.legend(fontsize=7, ncol=2), ax.set_title("CatchBall: success vs delay")
    fig.tight_layout()
    out = [("success_vs_delay", fig)]
    path = run_dir / "artifacts" / "rollout.json"
    if path.exists():
        art = json.loads(path.read_text())
        ball = np.array(art["ball"])
        fig2, axes = plt.subplots(1, len(art["actions"]), figsize=(4 * len(art["actions"]), 3.2), sharey=True)
        for axr, (arm, acts) in zip(np.atleast_1d(axes), art["actions"].items()):
            xs, caught = _paddle(acts, art["env_seed"], art["n"])
            t = np.arange(len(xs))
            axr.plot(t, ball[: len(t), 2], color="tab:red", lw=1, label="ball x")
            axr.plot(t, xs, color="tab:blue", lw=2, label="paddle x")
            lands = np.arange(len(xs))[np.array([(i + 1) % 24 == 0 for i in t])]
            for i in lands:
                axr.axvline(i, color="gray", lw=0.5)
                axr.text(i, 1.05, "caught" if caught[i] else "missed", fontsize=7, ha="right")
            axr.set_title(f"{arm}, d = {art['d']}"), axr.set_xlabel("step"), axr.set_ylim(-1.1, 1.2)
        np.atleast_1d(axes)[0].legend(fontsize=7, loc="lower left")
        fig2.tight_layout()
        out.append(("rollout", fig2))
    return out
