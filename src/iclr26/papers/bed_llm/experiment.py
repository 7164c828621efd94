"""BED-LLM reproduction: 20 Questions, preference elicitation, and games on SmolLM2's own answer probabilities."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from tqdm.auto import tqdm

from iclr26.agents.bed_llm.world_preferences import PreferenceWorld
from iclr26.agents.bed_llm.world_twenty_questions import TwentyQuestionsConfig, TwentyQuestionsWorld

from ...agents.bed_llm import BEDAgent, BEDConfig, NaiveQuestioner, play
from . import PREF_ARMS, Cfg
from .simulated import ExactBelief, TableAnswerModel, TableProposer, TableSampler


class _Parts:
    """The simulated LLM of one table: answer model, in-context sampler, proposer (and their variants)."""

    def __init__(self, p_yes, n_open, cfg: Cfg, seed: int, answer_table=None):
        self.p_yes, self.n_open, self.cfg, self.seed = p_yes, n_open, cfg, seed
        self.am = TableAnswerModel(p_yes if answer_table is None else answer_table)
        self.sampler = TableSampler(self.am.table, cfg.forget, cfg.popularity, seed)
        self.coherent = TableSampler(self.am.table, 0.0, cfg.popularity, seed)
        self.proposer = TableProposer(self.am.table, n_open, cfg.n_guesses)
        self.guess = (lambda h: n_open + int(h)) if n_open < p_yes.shape[1] else None

    def agent(self, arm: str, tau: float = 0.5, g: float = 0.5, c: float = 0.5):
        """One arm; a name ending in "_coherent" is that arm with the coherent sampler (forget = 0)."""
        cfg = self.cfg
        sampler = self.sampler
        if arm.endswith("_coherent"):
            arm, sampler = arm[: -len("_coherent")], self.coherent
        base = dict(n_hypotheses=cfg.n_hypotheses, n_candidates=cfg.n_candidates, refill_rounds=cfg.refill_rounds)
        bc = BEDConfig(filter_threshold=tau, guess_threshold=g, **base)
        sel = {"bed": "eig", "entropy": "entropy", "random": "random"}
        if arm in sel:
            return BEDAgent(sampler, self.am, self.proposer, _rep(bc, selection=sel[arm]), guess_question=self.guess)
        if arm == "noflt":
            return BEDAgent(sampler, self.am, self.proposer, _rep(bc, belief="in_context"), guess_question=self.guess)
        if arm == "naive":
            return NaiveQuestioner(sampler, self.am, self.proposer, self.guess, c, cfg.n_hypotheses, cfg.n_candidates)
        if arm == "blind":
            blind = TableAnswerModel(self.am.table, blind=True)
            return BEDAgent(sampler, blind, self.proposer, bc, guess_question=self.guess)
        if arm == "bed_uncond":
            prop = TableProposer(self.am.table, self.n_open, cfg.n_guesses, conditional=False)
            return BEDAgent(sampler, self.am, prop, bc, guess_question=self.guess)
        if arm == "oracle":
            a = BEDAgent(self.coherent, self.am, self.proposer, bc, guess_question=self.guess)
            a.belief = ExactBelief(self.p_yes)
            return a
        raise ValueError(f"unknown arm {arm!r}")


def _rep(c, **kw):
    return replace(c, **kw)


def _games(parts: _Parts, agent, targets, answer_p, turns: int, seed: int) -> np.ndarray:
    """Turn of the winning guess of each game (turns + 1 when lost)."""
    out = []
    for i, t in enumerate(targets):
        rng = np.random.default_rng([seed, i, 31])
        won = play(agent, lambda q, r, t=t: int(r.random() < answer_p[t, q]), lambda q, a: q >= parts.n_open and a == 1,
                   turns, rng)  # fmt: skip
        out.append(won if won is not None else turns + 1)
    return np.array(out)


def _curve(turn_won: np.ndarray, turns: int) -> list[float]:
    return [float(np.mean(turn_won <= t)) for t in range(1, turns + 1)]


def _tune(score, grid: list[dict], ctx, name: str, max_extend: int = 2) -> dict:
    """One rule for every method: the grid point with the best validation score (ties: the first in grid order).

    When the best value of a knob is the smallest of its grid, the grid is extended below it (halving) and the
    search repeated, up to `max_extend` times; the upper ends are natural bounds (τ ≤ 0.5, thresholds ≤ 1).
    """
    seen: dict[tuple, float] = {}
    for _ in range(max_extend + 1):
        for p in grid:
            key = tuple(sorted(p.items()))
            if key not in seen:
                seen[key] = float(score(**p))
        best = dict(max(seen, key=lambda k: (seen[k], -list(seen).index(k))))
        low = {k: min(p[k] for p in grid) for k in best}
        edge = [k for k in best if best[k] == low[k]]
        if not edge:
            break
        grid = grid + [{**p, k: p[k] / 2} for p in grid for k in edge if p[k] == low[k]]
    ctx.log(f"tuned {name}: {best} (validation {seen[tuple(sorted(best.items()))]:.3f}; {len(seen)} grid points)")
    return best


def _twenty_questions(cfg: Cfg, seed: int, ctx, m: dict) -> None:
    wc = TwentyQuestionsConfig(n_classes=cfg.n_classes, n_subclasses=cfg.n_subclasses, per_subclass=cfg.per_subclass,
                               n_attributes=cfg.n_attributes, n_vague=cfg.n_vague, ambiguous=cfg.ambiguous,
                               noise=cfg.noise)  # fmt: skip
    world = TwentyQuestionsWorld(wc, seed=seed)
    parts = _Parts(world.p_yes, world.first_identity, cfg, seed)
    val_t = world.sample_targets(cfg.n_val_games, seed + 1000)
    test_t = world.sample_targets(cfg.n_games, seed)
    T = cfg.max_turns

    def val(arm, **kw):
        won = _games(parts, parts.agent(arm, **kw), val_t, world.p_yes, T, seed + 1000)
        return float(np.mean(won <= T) + 1e-3 * np.mean(T + 1 - won))  # success, ties broken by speed

    grid_tg = [dict(tau=a, g=b) for a in cfg.tau_grid for b in cfg.guess_grid]
    grid_g, grid_c = [dict(g=b) for b in cfg.guess_grid], [dict(c=c) for c in cfg.naive_grid]
    tuned = {"bed": grid_tg, "entropy": grid_tg, "random": grid_tg, "noflt": grid_g, "naive": grid_c,
             "entropy_coherent": grid_tg, "random_coherent": grid_tg, "naive_coherent": grid_c}  # fmt: skip
    knobs = {}
    for arm in tqdm([a for a in tuned if a in cfg.arms], desc="bed-llm tune", disable=ctx.quiet):
        knobs[arm] = _tune(lambda arm=arm, **k: val(arm, **k), tuned[arm], ctx, arm)
    for arm in ("blind", "bed_coherent", "bed_uncond", "oracle"):  # controls and ablations: BED-LLM's knobs
        knobs[arm] = knobs["bed"]
    knobs["noflt_coherent"] = knobs["noflt"]
    curves = {}
    for arm in tqdm(cfg.arms, desc="bed-llm 20Q", disable=ctx.quiet):
        won = _games(parts, parts.agent(arm, **knobs[arm]), test_t, world.p_yes, T, seed)
        curves[arm] = _curve(won, T)
        m[f"success_{arm}"] = curves[arm][-1]
        m[f"success10_{arm}"] = curves[arm][9]
        m[f"mean_turns_{arm}"] = float(won[won <= T].mean()) if (won <= T).any() else float("nan")
    for arm, k in knobs.items():
        for key, v in k.items():
            m[f"knob_{key}_{arm}"] = v
    m["filter_gain"] = m["success_bed"] - m["success_noflt"]
    m["filter_gain_coherent"] = m["success_bed_coherent"] - m["success_noflt_coherent"]
    # the n_vague sweep: the same seed's world with another number of subjective attributes, each arm with its knobs
    # from the main world (tuned at n_vague = cfg.n_vague), so only the world changes along the curve
    for nv in cfg.vague_sweep:
        wv = TwentyQuestionsWorld(replace(wc, n_vague=nv), seed=seed)
        pv = _Parts(wv.p_yes, wv.first_identity, cfg, seed)
        tv = wv.sample_targets(cfg.n_games, seed)
        for arm in ("bed", "entropy", "random"):
            won = _games(pv, pv.agent(arm, **knobs[arm]), tv, wv.p_yes, T, seed)
            m[f"success_{arm}_v{nv}"] = float(np.mean(won <= T))
        m[f"gap_bed_entropy_v{nv}"] = m[f"success_bed_v{nv}"] - m[f"success_entropy_v{nv}"]
    m[f"gap_bed_entropy_v{cfg.n_vague}"] = m["success_bed"] - m["success_entropy"]
    ctx.save_artifact(f"curves_seed{seed}", curves)
    ctx.log(f"20Q success@{T}: " + str({a: round(m[f"success_{a}"], 3) for a in cfg.arms}))
    ctx.log(
        "n_vague sweep, BED-LLM − entropy: "
        + str({nv: round(m[f"gap_bed_entropy_v{nv}"], 3) for nv in sorted((*cfg.vague_sweep, cfg.n_vague))})
    )


def _preference(cfg: Cfg, seed: int, ctx, m: dict) -> None:
    world = PreferenceWorld(cfg.pref_items, cfg.pref_features, cfg.pref_beta, cfg.pref_pool, seed=seed)
    parts = _Parts(world.pool_p_yes, world.n_questions, cfg, seed)

    def hits(arm, users, useed, **kw) -> np.ndarray:
        agent, out = parts.agent(arm, **kw), np.zeros((len(users), cfg.pref_turns))
        for i, u in enumerate(users):
            rng = np.random.default_rng([useed, i, 57])
            agent.reset(rng)
            for t in range(cfg.pref_turns):
                q = agent.next_question()
                agent.observe(q, world.answer(u, q, rng))
                if hasattr(agent, "belief"):  # the belief-weighted mean profile (uniform but for the oracle)
                    hyps, w = np.asarray(agent.hypotheses, dtype=int), agent.weights
                else:
                    hyps = np.asarray(parts.sampler.sample(agent.history, cfg.n_hypotheses, rng), dtype=int)
                    w = np.ones(len(hyps))
                out[i, t] = world.hit_rate(np.average(world.pool[hyps], axis=0, weights=w), u, cfg.pref_k)
        return out

    val_u, test_u = world.sample_users(cfg.pref_val_users, seed + 1000), world.sample_users(cfg.pref_users, seed)
    grid = [dict(tau=t) for t in cfg.pref_tau_grid]
    knobs = {a: _tune(lambda a=a, **k: hits(a, val_u, seed + 1000, **k)[:, -1].mean(), grid, ctx, f"pref {a}")
             for a in ("bed", "entropy", "random")}  # fmt: skip
    knobs.update(noflt={}, naive=dict(c=1.0))  # no knob: in-context belief; naive never "guesses" a user
    knobs.update(blind=knobs["bed"], oracle=knobs["bed"])
    curves = {}
    for arm in tqdm(PREF_ARMS, desc="bed-llm pref", disable=ctx.quiet):
        h = hits(arm, test_u, seed, **knobs[arm])
        curves[arm] = h.mean(0).tolist()
        m[f"hit_{arm}"] = curves[arm][-1]
        m[f"hit5q_{arm}"] = curves[arm][min(4, cfg.pref_turns - 1)]
    m["hit_chance"] = cfg.pref_k / cfg.pref_items
    ctx.save_artifact(f"pref_curves_seed{seed}", curves)
    ctx.log(f"preference hit@{cfg.pref_k}: " + str({a: round(v[-1], 3) for a, v in curves.items()}))


_REAL_CACHE: dict = {}


def _real_table(cfg: Cfg, ctx) -> tuple[np.ndarray, np.ndarray, float]:
    """The LM's p(yes | animal, question) [A, Q] with the library's default prompt (`HFAnswerModel`: two solved
    examples as a KV-cached prefix, the question asked about the named animal), the written truth, and the seconds."""
    key = ctx.model or cfg.real_model
    if key not in _REAL_CACHE:
        from iclr26.agents.bed_llm.world_twenty_questions_real import ANIMALS, QUESTIONS, truth

        from ...agents.bed_llm.hf import HFAnswerModel
        from ...core.threads import torch_threads
        from ...lm import zoo

        t0 = time.perf_counter()
        model, tok = zoo.load(key)
        with torch_threads():
            p = HFAnswerModel(model, tok).probs(list(ANIMALS), list(QUESTIONS))[..., 1]
        _REAL_CACHE[key] = (p, truth(), time.perf_counter() - t0)
    return _REAL_CACHE[key]


def _real(cfg: Cfg, seed: int, ctx, m: dict) -> None:
    from sklearn.metrics import roc_auc_score

    from ...agents.bed_llm.hf import centre_logits

    p_raw, truth, secs = _real_table(cfg, ctx)
    p = centre_logits(p_raw)  # the library's calibration over the closed set of 40 animals
    m["real_auc"] = float(roc_auc_score(truth.ravel(), p_raw.ravel()))
    m["real_auc_calibrated"] = float(roc_auc_score(truth.ravel(), p.ravel()))
    m["real_acc_calibrated"] = float(np.mean((p > 0.5) == truth))
    m["real_scoring_seconds"] = secs
    A, Q = truth.shape
    eps = cfg.noise
    answer_p = np.concatenate([np.where(truth == 1, 1 - eps, eps), np.eye(A)], 1)  # the answerer: written truth
    model_p = np.concatenate([p, np.eye(A)], 1)  # the questioner's likelihood: the LM (+ exact "is it θ?")
    targets = np.random.default_rng([seed, 5]).permutation(np.tile(np.arange(A), cfg.real_rounds))

    def success(table, arm) -> float:
        parts = _Parts(table, Q, cfg, seed)
        k = {kk: m[f"knob_{kk}_{arm}"] for kk in ("tau", "g", "c") if f"knob_{kk}_{arm}" in m}
        return float(np.mean(_games(parts, parts.agent(arm, **k), targets, answer_p, cfg.real_turns, seed)
                             <= cfg.real_turns))  # fmt: skip

    arms = ("bed", "entropy", "random", "noflt", "naive")
    for arm in arms:
        m[f"real_success_{arm}"] = success(model_p, arm)
    # the same games with the written truth as the likelihood: what a perfectly informed LM would reach (headroom)
    m["real_success_bed_truth"] = success(answer_p, "bed")
    # negative control: SmolLM2's rows given to the wrong animals (same answer marginals, no knowledge of the animal)
    perm = np.random.default_rng([seed, 9]).permutation(A)
    m["real_success_bed_shuffled"] = success(np.concatenate([p[perm], np.eye(A)], 1), "bed")
    succ = {a: round(m[f"real_success_{a}"], 3) for a in arms}
    ctx.log(
        f"real ({ctx.model or cfg.real_model}): AUC {m['real_auc']:.3f} (calibrated {m['real_auc_calibrated']:.3f}); "
        f"success {succ}; written truth as likelihood {m['real_success_bed_truth']:.3f}; "
        f"shuffled rows {m['real_success_bed_shuffled']:.3f}"
    )


def run(cfg: Cfg, seed: int, ctx) -> dict[str, float]:
    m: dict[str, float] = {}
    t0 = time.perf_counter()
    _twenty_questions(cfg, seed, ctx, m)
    m["seconds_20q"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _preference(cfg, seed, ctx, m)
    m["seconds_pref"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _real(cfg, seed, ctx, m)
    m["seconds_real"] = time.perf_counter() - t0
    return m


def plots(run_dir, per_seed, cfg):
    import json

    import matplotlib.pyplot as plt

    figs = []
    for name, prefix, ylabel in (("success_by_turn", "curves", "success rate"),
                                 ("preference_hit_by_turn", "pref_curves", f"hit-rate@{cfg.pref_k}")):  # fmt: skip
        files = sorted((run_dir / "artifacts").glob(f"{prefix}_seed*.json"))
        if not files:
            continue
        data = [json.loads(f.read_text()) for f in files]
        fig, ax = plt.subplots(figsize=(5.5, 3.5))
        for arm in data[0]:
            c = np.mean([d[arm] for d in data], 0)
            ax.plot(range(1, len(c) + 1), c, label=arm, lw=2 if arm == "bed" else 1)
        ax.set_xlabel("questions asked")
        ax.set_ylabel(ylabel)
        ax.set_title(f"mean over {len(data)} seeds")
        ax.legend(fontsize=6, ncol=2)
        figs.append((name, fig))
    return figs
