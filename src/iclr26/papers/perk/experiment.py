"""The PERK reproduction: `run` and `plots` (imported only to run; the light card is `__init__.py`)."""

from __future__ import annotations

import copy
import random
import time

import numpy as np
import torch

from iclr26.core.threads import run_threads
from iclr26.latent.perk import PERK, PERKConfig, icr_prompts, qa_batch
from iclr26.latent.perk.measure import peak_memory_bytes, wall_seconds
from iclr26.latent.perk.world import TASKS

from . import Cfg
from .base import icr_acc, load_base, previous_token_head, to_example
from .tuning import perk_config, perk_correct, seed_stage, split, train_fticr, train_perk, tuned_lrs, untrained

__all__ = ["exact_bounds", "plots", "previous_token_head", "run"]

# ------------------------------------------------------------------------------------------------- evaluation


def exact_bounds(right: list[bool], alpha: float = 0.05) -> tuple[float, float]:
    """One-sided (1 - alpha) Clopper-Pearson bounds of an accuracy from its k right of n answers: the lower bound is
    the p with P(Bin(n, p) >= k) = alpha (0 for k = 0), the upper the p with P(Bin(n, p) <= k) = alpha (1 for k = n).
    A saturated seed still carries its evidence: 32 of 32 right gives a lower bound of 0.05^(1/32) = 0.911."""
    from scipy.stats import beta

    k, n = int(sum(right)), len(right)
    lo = float(beta.ppf(alpha, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(1 - alpha, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def _evaluate(name: str, fn, test: dict, cfg: Cfg, m: dict) -> None:
    """Accuracy by length and task, means, and by needle-position quartile over lengths > training; exact lower bounds
    of the accuracy at the training length (1-hop, and both tasks pooled)."""
    per_pos, at_train = [[] for _ in range(4)], {t: [] for t in TASKS}
    for L in cfg.test_segs:
        accs = []
        for t in TASKS:
            res = [(fn(c), c.positions) for c in test[(t, L)]]
            if cfg.train_segs == L:
                at_train[t] = [x for r, _ in res for x in r]
            acc = float(np.mean([x for r, _ in res for x in r]))
            m[f"{name}_acc_{t}_L{L}"] = acc
            accs.append(acc)
            if cfg.train_segs < L:
                for r, pos in res:
                    for x, p in zip(r, pos):
                        per_pos[min(3, int(p * 4))].append(x)
        m[f"{name}_acc_L{L}"] = float(np.mean(accs))
    m[f"{name}_acc"] = float(np.mean([m[f"{name}_acc_L{L}"] for L in cfg.test_segs]))
    for t in TASKS:
        m[f"{name}_acc_{t}"] = float(np.mean([m[f"{name}_acc_{t}_L{L}"] for L in cfg.test_segs]))
    m[f"{name}_acc_Ltrain"] = m[f"{name}_acc_L{cfg.train_segs}"]
    m[f"{name}_acc_hop1_Ltrain"] = m[f"{name}_acc_hop1_L{cfg.train_segs}"]
    m[f"{name}_lcb_hop1_Ltrain"] = exact_bounds(at_train["hop1"])[0]
    m[f"{name}_lcb_Ltrain"] = exact_bounds([x for t in TASKS for x in at_train[t]])[0]
    m[f"{name}_drop"] = m[f"{name}_acc_Ltrain"] - m[f"{name}_acc_L{max(cfg.test_segs)}"]
    q = [float(np.mean(p)) if p else float("nan") for p in per_pos]
    for i, v in enumerate(q):
        m[f"{name}_pos_q{i}"] = v
    m[f"{name}_pos_spread"] = float(np.nanmax(q) - np.nanmin(q))


# ------------------------------------------------------------------------------------------------- run


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    with run_threads():
        return _run(cfg, seed, ctx)


def _run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    t0, m = time.time(), {}
    base, tok, info = load_base(cfg, ctx)
    ctx.log(
        f"base: instruction phase {info['steps_run']} steps (best {info['best_step']}), validation reading accuracy "
        f"{max(info['val']):.3f}, {info['seconds']:.0f}s"
    )
    lrs = tuned_lrs(cfg, base, tok, info["key"], ctx)  # once per config, on the tuning seed (cached)
    sp = split(cfg, seed)
    test, at_train = sp.test, [c for t in TASKS for c in sp.test[(t, cfg.train_segs)]]

    # -- control: the base model, no adapter and no context (the floor)
    seed_stage(seed, "floor")
    floor = PERK(copy.deepcopy(base), tok, perk_config(cfg, sp.world))
    right = [x for c in at_train for x in perk_correct(floor, c, encode=False, adapter=False)]
    m["noadapter_acc"], m["noadapter_ucb"] = float(np.mean(right)), exact_bounds(right)[1]
    m["base_icr_acc_Ltrain"] = icr_acc(base, tok, at_train)
    m["base_steps_run"] = float(info["steps_run"])
    m["lr_at_edge"] = float(any(lrs[f"{k}_at_edge"] for k in ("inner_lr", "outer_lr", "icr_lr")))

    # -- control: PERK's inner loop from peft's init, no meta-training; inner lr tuned on validation
    m["untrained_inner_lr"] = lrs["inner_lr"]
    seed_stage(seed, "untrained")
    ctrl = untrained(base, tok, cfg, sp.world, lrs["inner_lr"])
    _evaluate("untrained", lambda c: perk_correct(ctrl, c), test, cfg, m)

    # -- PERK: meta-trained init and inner lrs (initial inner lr = the control's), outer lr tuned on validation
    seed_stage(seed, "perk")
    perk, hist = train_perk(base, tok, cfg, sp, lrs["inner_lr"], lrs["outer_lr"], ctx)
    m["perk_outer_lr"], m["perk_meta_steps"] = lrs["outer_lr"], float(hist["best_step"])
    m["perk_steps_run"], m["perk_val"] = float(len(hist["loss"])), max(hist["val"])
    m["perk_contexts"] = m["perk_steps_run"] * cfg.meta_batch  # task contexts PERK trained on (the budget)
    ctx.log(f"PERK: outer lr {lrs['outer_lr']:g}, best step {hist['best_step']} of {len(hist['loss'])} run (val "
            f"{max(hist['val']):.3f}), {hist['seconds']:.0f}s, lrs now {perk.lrs().mean().item():.2e}")  # fmt: skip
    _evaluate("perk", lambda c: perk_correct(perk, c), test, cfg, m)
    # sanity: segments are encoded as one batch with positions restarting in each, so the adapter cannot depend on
    # their order (position robustness by construction): the largest change of a LoRA tensor when reversed
    c = test[("hop1", max(cfg.test_segs))][0]
    fwd, rev = perk.encode(list(c.segments)), perk.encode(list(c.segments)[::-1])
    m["perk_order_gap"] = max(float((fwd[n] - rev[n]).abs().max() / (fwd[n].abs().max() + 1e-12)) for n in fwd)

    # -- FT-ICR: full fine-tuning with the context in the prompt; lr tuned on validation
    seed_stage(seed, "fticr")
    fticr, ihist = train_fticr(base, tok, cfg, sp, lrs["icr_lr"], ctx)
    m["icr_lr"], m["icr_steps"] = lrs["icr_lr"], float(ihist["best_step"])
    m["icr_steps_run"], m["icr_val"] = float(len(ihist["loss"])), max(ihist["val"])
    m["fticr_contexts"] = m["icr_steps_run"] * cfg.icr_batch
    m["budget_ratio"] = m["perk_contexts"] / m["fticr_contexts"]
    ctx.log(f"FT-ICR: lr {lrs['icr_lr']:g}, best step {ihist['best_step']} of {len(ihist['loss'])} run (val "
            f"{max(ihist['val']):.3f}), {ihist['seconds']:.0f}s")  # fmt: skip
    _evaluate("fticr", lambda c: fticr.exact_match(to_example(c)), test, cfg, m)

    # -- measured cost of answering one question: PERK (encode + answer) vs prompting with the context
    for L in cfg.test_segs:
        c = test[("hop1", L)][0]
        q, a = [c.questions[0]], [c.answers[0]]
        ids, mask, _ = qa_batch(tok, icr_prompts(to_example(c))[:1], a)

        def perk_call(q=q, a=a, c=c):
            return perk.exact_match(q, a, perk.encode(list(c.segments)))

        def icr_call(ids=ids, mask=mask):
            with torch.no_grad():
                return fticr.model(input_ids=ids, attention_mask=mask).logits

        m[f"perk_mem_L{L}"], m[f"icr_mem_L{L}"] = (
            peak_memory_bytes(perk_call) / 2**20,
            peak_memory_bytes(icr_call) / 2**20,
        )
        m[f"perk_time_L{L}"], m[f"icr_time_L{L}"] = wall_seconds(perk_call), wall_seconds(icr_call)
    lo, hi = cfg.train_segs, max(cfg.test_segs)
    m["perk_mem_growth"] = m[f"perk_mem_L{hi}"] / m[f"perk_mem_L{lo}"]
    m["icr_mem_growth"] = m[f"icr_mem_L{hi}"] / m[f"icr_mem_L{lo}"]
    m["perk_mem_added"] = m[f"perk_mem_L{hi}"] - m[f"perk_mem_L{lo}"]  # absolute growth (MB), beside the ratio
    m["icr_mem_added"] = m[f"icr_mem_L{hi}"] - m[f"icr_mem_L{lo}"]

    if cfg.smollm2:
        seed_stage(seed, "smollm2")
        m.update(_smollm2(cfg, seed, ctx))
    ctx.log(
        f"seed {seed}: acc train-length PERK {m['perk_acc_Ltrain']:.3f} FT-ICR {m['fticr_acc_Ltrain']:.3f} untrained "
        f"{m['untrained_acc_Ltrain']:.3f} floor {m['noadapter_acc']:.3f}; by length PERK "
        f"{[round(m[f'perk_acc_L{L}'], 3) for L in cfg.test_segs]} FT-ICR "
        f"{[round(m[f'fticr_acc_L{L}'], 3) for L in cfg.test_segs]}; mem growth PERK {m['perk_mem_growth']:.2f} "
        f"prompt {m['icr_mem_growth']:.2f}; {time.time() - t0:.0f}s"
    )
    return m


# ------------------------------------------------------------------------------------------------- SmolLM2

_SMOL: dict = {}
_PLANTS = ["marble", "falcon", "orchid", "lantern", "glacier", "saffron", "compass", "violin", "harbor", "thistle"]


def _smollm2(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    """Wikipedia passages with a planted cloze fact, each encoded by K inner steps from peft's init (no meta-training)
    on SmolLM2-135M (or ``--model``); the per-seed means over ``smol_passages`` passages."""
    from iclr26.lm import zoo

    name = getattr(ctx, "model", None) or "smollm2-135m"
    if _SMOL.get("name") != name:
        model, tok = zoo.load(name)
        torch.manual_seed(0)  # one LoRA initialisation for every seed, whichever seed builds it in this process
        pc = PERKConfig(seg_len=cfg.smol_tokens + 16, inner_steps=cfg.smol_steps, unroll_last=0, lora_rank=8,
                        inner_lr=cfg.smol_lr, inner_weight_decay=0.0)  # fmt: skip
        _SMOL.update(name=name, perk=PERK(model.float(), tok, pc))
    perk = _SMOL["perk"]
    rows = [_plant(perk, cfg, random.Random(f"{seed}-{i}"), ctx) for i in range(cfg.smol_passages)]
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def _plant(perk: PERK, cfg: Cfg, rng: random.Random, ctx) -> dict[str, float]:
    from iclr26.lm.scoring import target_logprobs
    from iclr26.worlds.text import test_split, wikipedia

    tok = perk.tok
    doc = rng.choice([d for d in test_split(wikipedia()) if len(d.split()) > 300])
    words = doc.split()
    start = rng.randrange(0, len(words) - 200)
    ids = tok(" ".join(words[start : start + 200]), add_special_tokens=False)["input_ids"][: cfg.smol_tokens]
    planted, other = rng.sample(_PLANTS, 2)
    cloze = "The password of the archive is"
    passage = tok.decode(ids[: len(ids) // 2]) + f" {cloze} {planted}. " + tok.decode(ids[len(ids) // 2 :])

    def logp(ans, phi):
        with perk.adapted(phi) if phi is not None else perk.no_adapter():
            return float(target_logprobs(perk.model, tok, [cloze], [ans])[0])

    before = {a: logp(a, None) for a in (planted, other)}
    t = time.time()
    phi = perk.encode([passage])
    enc_s = time.time() - t
    after = {a: logp(a, phi) for a in (planted, other)}
    em_before = perk.answer(cloze, None, 3)  # phi_0 = peft's init (B = 0): the base model's own continuation
    em_after = perk.answer(cloze, phi, 3)
    ctx.log(
        f"passage: planted {planted!r}: log p {before[planted]:.2f} -> {after[planted]:.2f}; other {other!r}: "
        f"{before[other]:.2f} -> {after[other]:.2f}; greedy {em_before!r} -> {em_after!r}; encode {enc_s:.1f}s"
    )
    return {
        "smol_gain_planted": after[planted] - before[planted],
        "smol_gain_other": after[other] - before[other],
        "smol_em_before": float(em_before.lower().startswith(planted)),
        "smol_em_after": float(em_after.lower().startswith(planted)),
        "smol_encode_s": enc_s,
    }


def plots(run_dir, per_seed, cfg):
    import matplotlib.pyplot as plt

    seeds = list(per_seed.values())
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for name, style in (("perk", "-o"), ("fticr", "--s"), ("untrained", ":^")):
        ys = [[s[f"{name}_acc_L{L}"] for s in seeds if f"{name}_acc_L{L}" in s] for L in cfg.test_segs]
        axes[0].errorbar(cfg.test_segs, [np.mean(y) for y in ys], yerr=[np.std(y) for y in ys], fmt=style, label=name)
        ps = [[s[f"{name}_pos_q{q}"] for s in seeds if f"{name}_pos_q{q}" in s] for q in range(4)]
        axes[1].errorbar(range(4), [np.nanmean(p) for p in ps], yerr=[np.nanstd(p) for p in ps], fmt=style, label=name)
    axes[0].set_xlabel("context length (segments)"), axes[0].set_ylabel("exact match"), axes[0].set_ylim(0, 1.02)
    axes[1].set_xlabel("needle position quartile (lengths > training)"), axes[1].set_ylim(0, 1.02)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return [("accuracy_by_length_and_position", fig)]
