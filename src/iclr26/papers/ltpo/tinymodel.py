"""The tiny reasoner of the LTPO reproduction: a llama trained here on modular-arithmetic chains, cached on disk.

Format: ``<bos> x = 7 ; add3 ; mul2 ; ? . . . . think×K ans 20``. Loss: cross-entropy of the answer token after
``ans`` plus an auxiliary cross-entropy at every ``think`` position (the dossier's testbed choice, so that the
distributions at the thought positions express the model's belief and the confidence reward means something in a
tiny model). Ours on top (``stepwise``): thought j is trained towards the state after min(j + 1, n) operations, a
latent chain of thought; with the answer as target at every thought the model did not train within our budget. A
share of the examples has no thought slots (the Direct format). Training stops early on the validation accuracy of
in-distribution problems (CoT-Unk format) and keeps the best weights: the learning rate is halved whenever the
validation accuracy has not improved for ``plateau + 1`` evaluations (torch's ``ReduceLROnPlateau``), and training
stops after ``patience`` evaluations without an improvement of at least ``min_delta`` (0.005, ~2.5 of the 512
validation problems: smaller gains are noise), i.e. once two halvings did not help (convergence, not a step count;
``steps`` is only a safety cap).
"""

from __future__ import annotations

import hashlib
import json
import random
import time

import torch
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

from iclr26.latent.ltpo.world import ANS, THINK, ModArithWorld, ModProblem

from ...core.cache import cached_folder
from ...core.paths import trained_cache_dir
from ...core.threads import torch_threads
from ...latent.ltpo import LatentProblem
from ...lm.tiny import tiny_config
from ...lm.tokenizer import build_word_tokenizer

RECIPE = dict(d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, max_len=64, steps=8000, batch=64, lr=3e-3,
              warmup=100, aux=1.0, stepwise=True, pad_to_ops=5, p_direct=0.25, eval_every=250, patience=5,
              plateau=1, min_delta=0.005, n_val=512)  # fmt: skip


def encode(tok, prob: ModProblem, k: int, pad_to_ops: int = 0) -> tuple[list[int], list[int]]:
    """(prefix ids incl. <bos> up to '?', suffix ids ['ans']); the thoughts sit in between. The question is padded
    with '.' to the length of a ``pad_to_ops``-operation question, so that every thought sits at the same position
    whatever n (it then finds operation j at a fixed offset; OOD operations fall where training only had padding)."""
    prefix = [tok.bos_token_id] + tok(prob.prompt(), add_special_tokens=False)["input_ids"]
    prefix += [tok.convert_tokens_to_ids(".")] * (2 * max(0, pad_to_ops - prob.n_ops))
    return prefix, [tok.convert_tokens_to_ids(ANS)]


def latent_problem(tok, prob: ModProblem, k: int, pad_to_ops: int = 0) -> LatentProblem:
    prefix, suffix = encode(tok, prob, k, pad_to_ops)
    return LatentProblem(torch.tensor(prefix), torch.tensor(suffix), k, tok.convert_tokens_to_ids(THINK))


def _batch(tok, world, rng, n, k, recipe):
    """Right-aligned ids, the answer position, the thought positions and the answer ids of ``n`` training examples."""
    seqs, ans_pos, think_pos, answers, think_targets = [], [], [], [], []
    think, ans = tok.convert_tokens_to_ids(THINK), tok.convert_tokens_to_ids(ANS)
    for _ in range(n):
        prob = world.draw(rng.randint(1, world.max_train_ops), rng, "train")
        kk = 0 if rng.random() < recipe["p_direct"] else k
        prefix, _ = encode(tok, prob, kk, recipe["pad_to_ops"])
        seq = prefix + [think] * kk + [ans]
        think_pos.append(list(range(len(prefix), len(prefix) + kk)))
        ans_pos.append(len(seq) - 1)
        answers.append(tok.convert_tokens_to_ids(str(prob.answer)))
        # thought j is trained towards the state after min(j + 1, n) operations (stepwise) or towards the answer
        states = [world.solve(prob.start, prob.ops[: min(j + 1, prob.n_ops)]) for j in range(kk)]
        if not recipe["stepwise"]:
            states = [prob.answer] * kk
        think_targets.extend(tok.convert_tokens_to_ids(str(x)) for x in states)
        seqs.append(seq)
    width = max(map(len, seqs))
    ids = torch.full((n, width), tok.pad_token_id)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)], mask[i, : len(s)] = torch.tensor(s), 1
    return ids, mask, ans_pos, think_pos, torch.tensor(answers), torch.tensor(think_targets, dtype=torch.long)


@torch.no_grad()
def accuracy(model, tok, probs: list[ModProblem], k: int, pad_to_ops: int = 0) -> float:
    """Greedy answer accuracy with K unoptimised thoughts (k = 0: Direct), batched by length."""
    think, ans = tok.convert_tokens_to_ids(THINK), tok.convert_tokens_to_ids(ANS)
    groups: dict[int, list] = {}
    for p in probs:
        prefix, _ = encode(tok, p, k, pad_to_ops)
        seq = prefix + [think] * k + [ans]
        groups.setdefault(len(seq), []).append((seq, tok.convert_tokens_to_ids(str(p.answer))))
    hit = 0
    for rows in groups.values():
        logits = model(input_ids=torch.tensor([s for s, _ in rows])).logits[:, -1]
        hit += int((logits.argmax(-1) == torch.tensor([a for _, a in rows])).sum())
    return hit / len(probs)


def _train(world: ModArithWorld, k: int, seed: int, recipe: dict, progress: bool, log=None):
    tok = build_word_tokenizer(world.vocabulary_texts())
    torch.manual_seed(seed)
    cfg = tiny_config("llama", vocab_size=len(tok), **{n: recipe[n] for n in ("d_model", "n_layers", "n_heads",
                                                                                "n_kv_heads", "max_len")})  # fmt: skip
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    rng = random.Random(seed)
    val = world.sample(world.max_train_ops, recipe["n_val"], seed=10_000 + seed, split="test")
    opt = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / recipe["warmup"]))
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode="max", factor=0.5, patience=recipe["plateau"], threshold=recipe["min_delta"], threshold_mode="abs"
    )
    best, best_state, bad, history = -1.0, None, 0, []
    bar = tqdm(range(recipe["steps"]), desc="ltpo tiny reasoner", disable=not progress, leave=False)
    for step in bar:
        model.train()
        ids, mask, ans_pos, think_pos, answers, targets = _batch(tok, world, rng, recipe["batch"], k, recipe)
        logits = model(input_ids=ids, attention_mask=mask).logits
        rows = torch.arange(len(ids))
        loss = torch.nn.functional.cross_entropy(logits[rows, ans_pos], answers)
        tr = [(i, j) for i, ps in enumerate(think_pos) for j in ps]
        if tr and recipe["aux"] > 0:  # auxiliary CE at the thought positions
            bi, pj = torch.tensor(tr).T
            loss = loss + recipe["aux"] * torch.nn.functional.cross_entropy(logits[bi, pj], targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step < recipe["warmup"]:  # linear warm-up only; afterwards the plateau rule owns the learning rate
            sched.step()
        if (step + 1) % recipe["eval_every"] == 0 or step + 1 == recipe["steps"]:
            model.eval()
            acc = accuracy(model, tok, val, k, recipe["pad_to_ops"])
            history.append((step + 1, round(loss.item(), 4), acc))
            plateau.step(acc)
            bar.set_postfix(loss=f"{loss.item():.3f}", val=f"{acc:.3f}")
            if log is not None:
                log(f"step {step + 1}: loss {loss.item():.3f} val ID acc {acc:.3f}")
            bad = 0 if acc > best + recipe["min_delta"] else bad + 1  # noise-sized gains do not reset patience
            if acc > best:  # but the best weights are kept whatever the gain
                best, best_state = acc, {n: t.clone() for n, t in model.state_dict().items()}
            if bad >= recipe["patience"]:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    steps = history[-1][0] if history else 0
    return model.eval(), tok, {"val_acc_id": best, "log": history, "steps": steps, "capped": steps >= recipe["steps"]}


def load_reasoner(world: ModArithWorld, k: int, seed: int = 0, recipe: dict | None = None, progress: bool = True):
    """(model, tokenizer, info) of the tiny reasoner, trained on first use and cached under the iclr26 cache."""
    recipe = {**RECIPE, **(recipe or {})}
    spec = json.dumps([recipe, world.p, world.max_train_ops, world.holdout, k, seed], sort_keys=True)
    out = trained_cache_dir() / "zoo" / f"ltpo-modarith-s{seed}-{hashlib.sha1(spec.encode()).hexdigest()[:8]}"
    def build(tmp):  # digest-verified folder: a damaged or half-built reasoner is moved aside and rebuilt
        t0 = time.time()
        with torch.enable_grad(), torch_threads():
            model, tok, info = _train(world, k, seed, recipe, progress)
        info["train_s"] = time.time() - t0
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp / "tokenizer")
        return info

    info = cached_folder(out, "the LTPO tiny reasoner", build, record="train.json")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    tok = PreTrainedTokenizerFast.from_pretrained(out / "tokenizer")
    return model, tok, info
