"""Part 2 of the LTPO reproduction: SmolLM2-135M-Instruct (or ``--model``) on one-step questions with exact answers.

The chat prompt holds the question followed directly by the K thought slots (the library's default placeholder,
chosen from the tokenizer: ``...`` on SmolLM2, never its ``<|endoftext|>`` separator; the official note announcing
"K special tokens" makes this 135M model reply "not a question", so it is left out); the suffix is the end of the
user turn, the assistant header and "The answer is" (ours: it makes a 135M model state the answer within a few
tokens). A model without a chat template gets the plain-text layout of ``chat_problem``. Answers are generated
greedily with ``generate(inputs_embeds=...)`` from the prompt's cached prefix. Hyper-parameters are tuned once on a
fixed validation set (cached on disk, the world's rule with its moved-answer floor and at most one extension per
side); the oracle's Adam step is fixed (cost). The cached-prefix speed-up is measured against prompt length.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time

import numpy as np
import torch

from iclr26.latent.ltpo.world import chat_questions, check_answer

from ...core.cache import cached_json
from ...core.paths import trained_cache_dir
from ...latent.ltpo import LTPO, LatentScorer, LTPOConfig, chat_problem, gold_oracle, random_search
from ...latent.ltpo.problem import THOUGHT_NOTE
from ...lm import zoo
from . import Cfg
from .measures import _rms, cache_speedup, mean_initial_reward
from .tuning import tune

ANSWER_PREFIX = "The answer is"
PLACEHOLDER = None  # the library's default, chosen from the tokenizer ("..." on SmolLM2)
NOTE = ""  # no note before the thoughts (see the module docstring)
SPEED_LENGTHS = (64, 128, 256, 512)  # prompt tokens before the thoughts at which the cached-prefix speed-up is measured
ORACLE_ADAM = 0.1  # oracle Adam lr / RMS(E) on SmolLM2 (fixed, not tuned: cost)


def _groups(tok, questions, k, by_gold: bool = False):
    """One batch of all questions (prompts left-padded: a forward reads the weights once for all of them), or, for
    the oracle, batches of equal gold-answer length: [(indices, problems, direct ids, their mask, gold ids)]."""
    probs = [chat_problem(tok, q.text, k, PLACEHOLDER, NOTE, ANSWER_PREFIX) for q in questions]
    direct = []
    for q in questions:
        if getattr(tok, "chat_template", None) is None:  # a plain LM: the question, then the answer prefix
            direct.append(tok(q.text + " " + ANSWER_PREFIX)["input_ids"])
            continue
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
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        ids = torch.tensor([[pad] * (n - len(direct[i])) + direct[i] for i in sub])
        mask = torch.tensor([[0] * (n - len(direct[i])) + [1] * len(direct[i]) for i in sub])
        golds = torch.tensor([gold[i] for i in sub]) if by_gold else None
        out.append((sub, [probs[i] for i in sub], ids, mask, golds))
    return out


def _generate(model, tok, sc: LatentScorer | None, h, n_new: int, ids=None, mask=None) -> list[str]:
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    kw = dict(max_new_tokens=n_new, do_sample=False, num_beams=1, temperature=None, top_p=None, top_k=None,
              pad_token_id=pad)  # fmt: skip
    if sc is None:
        out = model.generate(input_ids=ids, attention_mask=mask, **kw)[:, ids.shape[1] :]
    else:
        x = sc.embeds(h)
        full = sc.attention_mask(x.shape[1] - sc.n_prefix)
        full = torch.ones(x.shape[:2], dtype=torch.long) if full is None else full
        out = model.generate(inputs_embeds=x, attention_mask=full, past_key_values=copy.deepcopy(sc.cache), **kw)
    return tok.batch_decode(out, skip_special_tokens=True)


def evaluate(model, tok, questions, method, params, cfg: Cfg, base_seed: int, r0: float = 1.0) -> dict:
    """{method: per-question correctness, "text": {method: answers}}; ``ltpo`` also gives ``ltpo_last``."""
    rms, k = _rms(model), cfg.num_thoughts
    correct = {method: np.zeros(len(questions))}
    texts = {method: [""] * len(questions)}
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
        for name, out in answers.items():
            for i, t in zip(idx, out):
                correct[name][i] = check_answer(questions[i], t)
                if name in texts:
                    texts[name][i] = t
    correct["text"] = texts
    return correct


def _tuned(model, tok, cfg: Cfg, r0: float, log, name: str) -> dict:
    """LTPO's (σ, step) and random search's σ on the fixed validation questions, among the settings that change at
    least ``min_moved`` of the validation answers (the world's rule); cached on disk per model."""
    key = json.dumps([name, cfg.smol_val, cfg.smol_steps, cfg.num_thoughts, cfg.top_k, cfg.sigma_decay,
                      cfg.smol_sigma_grid, cfg.smol_step_grid, cfg.smol_new_tokens, cfg.min_moved, ANSWER_PREFIX,
                      PLACEHOLDER, NOTE, 2])  # fmt: skip
    path = trained_cache_dir() / "ltpo_smol_tuning" / f"{hashlib.sha1(key.encode()).hexdigest()[:12]}.json"

    def compute() -> dict:
        val = chat_questions(cfg.smol_val, seed=999)
        base = evaluate(model, tok, val, "cotunk", {}, cfg, 999, r0)["text"]["cotunk"]

        def score(method):
            def f(**p):
                res = evaluate(model, tok, val, method, p, cfg, 999, r0)
                moved = float(np.mean([a != b for a, b in zip(res["text"][method], base)]))
                return res[method].mean() if moved >= cfg.min_moved else moved - 1.0

            return f

        out = {
            "ltpo": tune(score("ltpo"), {"sigma": cfg.smol_sigma_grid, "step": cfg.smol_step_grid}, 1, log)[0],
            "rs": tune(score("rs"), {"sigma": cfg.smol_sigma_grid}, 1, log)[0],
        }
        return out

    return cached_json(path, "LTPO's SmolLM2 tuning", compute)  # digest-verified, built once under a lock


def speed_problems(tok, questions, k: int, length: int) -> list:
    """Problems whose prompt prefix is ``length`` tokens: the question after a filler passage (a long word problem's
    stand-in), the prefix cut to ``length`` from the left so that the question and the chat header stay intact."""
    filler = "Tom has some apples and gives a few of them to his friends at school every day of the week. "
    out = []
    for q in questions:
        p = chat_problem(tok, filler * (length // 8 + 2) + q.text, k, PLACEHOLDER, THOUGHT_NOTE, ANSWER_PREFIX)
        p.prefix_ids = torch.cat([p.prefix_ids[:1], p.prefix_ids[-(length - 1) :]])
        out.append(p)
    return out


def smol_part(cfg: Cfg, seed: int, ctx, m: dict) -> None:
    t0 = time.time()
    name = getattr(ctx, "model", None) or "smollm2-135m"
    model, tok = zoo.load(name)
    model = model.float().eval()
    k = cfg.num_thoughts
    val = chat_questions(cfg.smol_val, seed=999)
    r0 = mean_initial_reward(model, [lps for _, lps, _, _, _ in _groups(tok, val, k)], cfg.top_k)
    params = _tuned(model, tok, cfg, r0, ctx.log, name)
    qs = chat_questions(cfg.smol_n, seed=100 + seed)
    texts = {}
    for meth in ("direct", "cotunk", "ltpo", "rs", "oracle"):
        t1 = time.time()
        res = evaluate(model, tok, qs, meth, params.get(meth, {}), cfg, seed, r0)
        texts[meth] = res.pop("text")[meth]
        for key, c in res.items():
            m[f"acc_smol_{key}"] = float(c.mean())
        if meth == "ltpo":
            m["sec_ltpo_smol"] = (time.time() - t1) / len(qs)
    for meth in ("ltpo", "rs", "oracle"):
        m[f"moved_smol_{meth}"] = float(np.mean([a != b for a, b in zip(texts[meth], texts["cotunk"])]))
    # speed of the cached-prefix loop against prompt length: the official note, one question, 5 steps, prefix pass
    # included; and the largest reward difference between the two loops (they must agree)
    diffs = []
    for length in SPEED_LENGTHS:
        lps = speed_problems(tok, qs[:1], k, length)
        m[f"speedup_cache_smol_L{length}"], diff = cache_speedup(model, lps, min(cfg.smol_steps, 5), cfg.top_k, 1)
        diffs.append(diff)
    m["cache_max_diff_smol"] = max(diffs)
    ctx.log(
        f"seed {seed}: {name} direct {m['acc_smol_direct']:.2f} cot-unk {m['acc_smol_cotunk']:.2f} ltpo "
        f"{m['acc_smol_ltpo']:.2f} (last {m['acc_smol_ltpo_last']:.2f}, moved {m['moved_smol_ltpo']:.2f}) rs "
        f"{m['acc_smol_rs']:.2f} oracle {m['acc_smol_oracle']:.2f}; cache speed-up by prompt length "
        + ", ".join(f"{n}: x{m[f'speedup_cache_smol_L{n}']:.2f}" for n in SPEED_LENGTHS)
        + f"; {time.time() - t0:.0f}s"
    )
