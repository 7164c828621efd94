"""Part 2 of the LTPO reproduction: SmolLM2-135M-Instruct on one-step questions with exact answers.

The chat prompt holds the question followed directly by the K thought slots (a space token as placeholder; the
official note announcing "K special tokens" makes this 135M model reply "not a question", so it is left out); the
suffix is the end of the user turn, the assistant header and "The answer is" (ours: it makes a 135M model state the
answer within a few tokens). Answers are generated greedily with ``generate(inputs_embeds=...)`` from the prompt's
cached prefix. Hyper-parameters are tuned once on a fixed validation set (cached on disk, the world's rule with at
most one extension per side); the oracle's Adam step is fixed (cost).
"""

from __future__ import annotations

import copy
import hashlib
import json
import time

import numpy as np
import torch

from iclr26.latent.ltpo.world import chat_questions, check_answer

from ...core.locks import file_lock
from ...core.paths import trained_cache_dir
from ...latent.ltpo import LTPO, LatentScorer, LTPOConfig, chat_problem, gold_oracle, random_search
from ...latent.ltpo.problem import THOUGHT_NOTE
from ...lm import zoo
from . import Cfg
from .measures import _rms, cache_speedup, mean_initial_reward
from .tuning import tune

ANSWER_PREFIX = "The answer is"
PLACEHOLDER = "Ġ"  # SmolLM2's space token (its unk is its eos, a document separator)
NOTE = ""  # no note before the thoughts (see the module docstring)
ORACLE_ADAM = 0.1  # oracle Adam lr / RMS(E) on SmolLM2 (fixed, not tuned: cost)


def _groups(tok, questions, k, by_gold: bool = False):
    """One batch of all questions (prompts left-padded: a forward reads the weights once for all of them), or, for
    the oracle, batches of equal gold-answer length: [(indices, problems, direct ids, their mask, gold ids)]."""
    probs = [chat_problem(tok, q.text, k, PLACEHOLDER, NOTE, ANSWER_PREFIX) for q in questions]
    direct = []
    for q in questions:
        text = tok.apply_chat_template(
            [{"role": "user", "content": q.text}], tokenize=False, add_generation_prompt=True
        )
        direct.append(tok(text + ANSWER_PREFIX, add_special_tokens=False)["input_ids"])
    gold = [tok(" " + q.answer, add_special_tokens=False)["input_ids"] for q in questions]
    by_len: dict[int, list[int]] = {}
    for i in range(len(questions)):  # the oracle needs equal gold lengths inside a batch
        by_len.setdefault(len(gold[i]) if by_gold else 0, []).append(i)
    out = []
    for sub in by_len.values():
        n = max(len(direct[i]) for i in sub)
        ids = torch.tensor([[tok.pad_token_id] * (n - len(direct[i])) + direct[i] for i in sub])
        mask = torch.tensor([[0] * (n - len(direct[i])) + [1] * len(direct[i]) for i in sub])
        golds = torch.tensor([gold[i] for i in sub]) if by_gold else None
        out.append((sub, [probs[i] for i in sub], ids, mask, golds))
    return out


def _generate(model, tok, sc: LatentScorer | None, h, n_new: int, ids=None, mask=None) -> list[str]:
    kw = dict(max_new_tokens=n_new, do_sample=False, num_beams=1, temperature=None, top_p=None, top_k=None,
              pad_token_id=tok.pad_token_id)  # fmt: skip
    if sc is None:
        out = model.generate(input_ids=ids, attention_mask=mask, **kw)[:, ids.shape[1] :]
    else:
        x = sc.embeds(h)
        full = sc.attention_mask(x.shape[1] - sc.n_prefix)
        full = torch.ones(x.shape[:2], dtype=torch.long) if full is None else full
        out = model.generate(inputs_embeds=x, attention_mask=full, past_key_values=copy.deepcopy(sc.cache), **kw)
    return tok.batch_decode(out, skip_special_tokens=True)


def evaluate(model, tok, questions, method, params, cfg: Cfg, base_seed: int, r0: float = 1.0) -> dict:
    """{method: per-question correctness}; ``ltpo`` also gives ``ltpo_last`` (the same run's last iterate)."""
    rms, k = _rms(model), cfg.num_thoughts
    correct = {method: np.zeros(len(questions))}
    if method == "ltpo":
        correct["ltpo_last"] = np.zeros(len(questions))
    for idx, lps, direct_ids, direct_mask, gold in _groups(tok, questions, k, by_gold=method == "oracle"):
        seeds = [base_seed * 1_000_003 + i for i in idx]
        answers = {}
        if method == "direct":
            answers[method] = _generate(model, tok, None, None, cfg.smol_new_tokens, direct_ids, direct_mask)
        else:
            sc = LatentScorer(model, lps)
            if method == "cotunk":
                h = sc.h0
            elif method == "ltpo":
                sigma = params["sigma"] * rms
                lc = LTPOConfig(num_thoughts=k, steps=cfg.smol_steps, lr=params["step"] * sigma**2 / r0, sigma=sigma,
                                sigma_decay=cfg.sigma_decay, top_k=cfg.top_k)  # fmt: skip
                tr = LTPO(model, tok, lc).optimize(lps, seeds, scorer=sc)
                h = tr.h_best
                answers["ltpo_last"] = _generate(model, tok, sc, tr.h_last, cfg.smol_new_tokens)
            elif method == "rs":
                lc = LTPOConfig(num_thoughts=k, steps=cfg.smol_steps, sigma_decay=cfg.sigma_decay, top_k=cfg.top_k)
                h = random_search(sc, lc, params["sigma"] * rms, seeds).h_best
            elif method == "oracle":
                h = gold_oracle(sc, gold, cfg.smol_oracle_steps, ORACLE_ADAM * rms).h_best
            else:
                raise ValueError(f"unknown method {method!r}")
            answers[method] = _generate(model, tok, sc, h, cfg.smol_new_tokens)
        for name, texts in answers.items():
            for i, t in zip(idx, texts):
                correct[name][i] = check_answer(questions[i], t)
    return correct


def _tuned(model, tok, cfg: Cfg, r0: float, log) -> dict:
    """LTPO's (σ, step) and random search's σ on the fixed validation questions; cached on disk."""
    key = json.dumps([cfg.smol_val, cfg.smol_steps, cfg.num_thoughts, cfg.top_k, cfg.sigma_decay, cfg.smol_sigma_grid,
                      cfg.smol_step_grid, cfg.smol_new_tokens, ANSWER_PREFIX, PLACEHOLDER, NOTE, 1])  # fmt: skip
    path = trained_cache_dir() / "ltpo_smol_tuning" / f"{hashlib.sha1(key.encode()).hexdigest()[:12]}.json"
    with file_lock(path.with_suffix(".lock"), "LTPO's SmolLM2 tuning"):
        if path.exists():
            return json.loads(path.read_text())
        val = chat_questions(cfg.smol_val, seed=999)

        def score(method):
            return lambda **p: evaluate(model, tok, val, method, p, cfg, 999, r0)[method].mean()

        out = {
            "ltpo": tune(score("ltpo"), {"sigma": cfg.smol_sigma_grid, "step": cfg.smol_step_grid}, 1, log)[0],
            "rs": tune(score("rs"), {"sigma": cfg.smol_sigma_grid}, 1, log)[0],
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out))
        return out


def smol_part(cfg: Cfg, seed: int, ctx, m: dict) -> None:
    t0 = time.time()
    model, tok = zoo.load("smollm2-135m")
    k = cfg.num_thoughts
    val = chat_questions(cfg.smol_val, seed=999)
    r0 = mean_initial_reward(model, [lps for _, lps, _, _, _ in _groups(tok, val, k)], cfg.top_k)
    params = _tuned(model, tok, cfg, r0, ctx.log)
    qs = chat_questions(cfg.smol_n, seed=100 + seed)
    for meth in ("direct", "cotunk", "ltpo", "rs", "oracle"):
        t1 = time.time()
        for name, c in evaluate(model, tok, qs, meth, params.get(meth, {}), cfg, seed, r0).items():
            m[f"acc_smol_{name}"] = float(c.mean())
        if meth == "ltpo":
            m["sec_ltpo_smol"] = (time.time() - t1) / len(qs)
    # speed of the cached-prefix loop: the official prompt (with its note), 3 questions, 5 steps, prefix pass included
    lps = [chat_problem(tok, q.text, k, PLACEHOLDER, THOUGHT_NOTE, ANSWER_PREFIX) for q in qs[:3]]
    m["speedup_cache_smol"] = cache_speedup(model, lps, min(cfg.smol_steps, 5), cfg.top_k, reps=1)
    ctx.log(
        f"seed {seed}: SmolLM2 direct {m['acc_smol_direct']:.2f} cot-unk {m['acc_smol_cotunk']:.2f} ltpo "
        f"{m['acc_smol_ltpo']:.2f} (last {m['acc_smol_ltpo_last']:.2f}) rs {m['acc_smol_rs']:.2f} oracle "
        f"{m['acc_smol_oracle']:.2f}; cache x{m['speedup_cache_smol']:.2f}; {time.time() - t0:.0f}s"
    )
