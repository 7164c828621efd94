"""The MLR testbed's pretrained base: one micro llama per config, "pretrained" on the world's component skills only
(no program, no trace) and cached, with its held-out skill accuracies."""

from __future__ import annotations

import hashlib
import json

import torch
from transformers import AutoModelForCausalLM

from iclr26.core.cache import cached_folder
from iclr26.core.paths import trained_cache_dir
from iclr26.lm.tiny import tiny_model
from iclr26.lm.tokenizer import build_word_tokenizer
from iclr26.rlft.mlr import encode_parts, masked_logps, masked_sft
from iclr26.rlft.mlr.world import ModProgWorld

from . import Cfg

BASE_VERSION = 7  # bump when the world or the pretraining recipe changes (cached bases are retrained); 7: label chains


def skill_accuracy(model, tok, examples: list[tuple[str, str]]) -> float:
    """Greedy next-token accuracy of the answers of (question, one-token answer) pairs."""
    enc = [encode_parts(tok, [(q, False), (" " + a, True)], eos=False)[0] for q, a in examples]
    x = torch.tensor([e + [tok.pad_token_id] * (max(map(len, enc)) - len(e)) for e in enc])
    att = (torch.arange(x.shape[1])[None] < torch.tensor([len(e) for e in enc])[:, None]).long()
    with torch.no_grad():
        logits = model(input_ids=x, attention_mask=att).logits
    at = torch.tensor([len(e) - 2 for e in enc])  # the position that predicts the answer token
    pred = logits[torch.arange(len(enc)), at].argmax(-1)
    return float((pred == torch.tensor([e[-1] for e in enc])).float().mean())


@torch.no_grad()
def label_chain_accuracy(model, tok, chains: list[list[tuple[str, bool]]]) -> float:
    """Share of held-out labelled chains whose every trained token is the greedy (teacher-forced) prediction."""
    if not chains:
        return float("nan")
    enc = [encode_parts(tok, parts, eos=False) for parts in chains]
    x = torch.tensor([e[0] + [tok.pad_token_id] * (max(len(f[0]) for f in enc) - len(e[0])) for e in enc])
    att = (torch.arange(x.shape[1])[None] < torch.tensor([len(e[0]) for e in enc])[:, None]).long()
    pred = model(input_ids=x, attention_mask=att).logits[:, :-1].argmax(-1)
    ok = []
    for i, (ids, mask) in enumerate(enc):
        pos = [j - 1 for j in range(1, len(ids)) if mask[j]]
        ok.append(all(int(pred[i, j]) == ids[j + 1] for j in pos))
    return float(sum(ok) / len(ok))


def _pretrained_base(cfg: Cfg, world: ModProgWorld, ctx):
    """The base model (component skills only), one for every seed like a pretrained LLM; trained once, cached. It
    trains until the held-out answer NLL of its skills stops improving (the same early-stopping rule as every SFT
    stage; cap ``pretrain_epochs``); its skill accuracies are stored beside it."""
    key = json.dumps([BASE_VERSION, cfg.operations, cfg.p, cfg.d_model, cfg.n_layers, cfg.pretrain_epochs,
                      cfg.pretrain_lookups, cfg.pretrain_reps, cfg.pretrain_chains, cfg.patience,
                      cfg.base_lr, cfg.pretrain_label_chains])  # fmt: skip
    d = trained_cache_dir() / "mlr-base" / hashlib.sha1(key.encode()).hexdigest()[:12]
    tok = build_word_tokenizer(world.vocabulary_texts())

    def build_into(tmp):
        model = tiny_model("llama", seed=0, vocab_size=len(tok), d_model=cfg.d_model, n_layers=cfg.n_layers,
                           n_heads=4, max_len=512)  # fmt: skip
        pre = world.pretrain_examples(cfg.pretrain_lookups, reps=cfg.pretrain_reps, n_chains=cfg.pretrain_chains)
        exs = [[(q, False), (" " + a, True)] for q, a in pre]
        labelled = cfg.operations == "library" and cfg.pretrain_label_chains > 0
        if labelled:  # applying named library operations step after step (the executor's skill, no plan)
            exs += world.label_chains(cfg.pretrain_label_chains)
        held = world.pretrain_examples(min(400, cfg.pretrain_lookups), salt="pretrain-val", reps=1)
        looks = [e for e in held if e[0].startswith("ops")]  # held-out look-ups (none in the library world)
        facts = [e for e in held if e[1].isdigit() and "=" in e[0]][: len(looks) or None]
        order = [e for e in held if not e[0].startswith("ops") and e not in facts]  # letter order, library
        chains = world.pretrain_examples(0, salt="pretrain-val", reps=0, n_chains=min(100, cfg.pretrain_chains))
        enc = [encode_parts(tok, [(q, False), (" " + a, True)]) for q, a in looks + facts + order + chains]
        n_held = min(100, cfg.pretrain_label_chains)
        held_labelled = world.label_chains(n_held, "label-chains-val") if labelled else []
        enc += [encode_parts(tok, parts) for parts in held_labelled]

        @torch.no_grad()
        def score():  # minus the held-out answer NLL (look-ups unseen in training, all facts)
            lp = masked_logps(model, [e[0] for e in enc], [e[1] for e in enc], tok.pad_token_id)
            return float(lp.mean())

        r = masked_sft(model, tok, exs, lr=cfg.base_lr, batch_size=64, max_epochs=cfg.pretrain_epochs,
                       evaluate=score, patience=cfg.patience, progress=not ctx.quiet)  # fmt: skip
        skills = {"fact_acc": skill_accuracy(model, tok, facts),
                  "order_library_acc": skill_accuracy(model, tok, order),
                  "lookup_acc": skill_accuracy(model, tok, looks) if looks else None, "epochs": r["epochs"],
                  "label_chain_acc": label_chain_accuracy(model, tok, held_labelled) if labelled else None,
                  "val_nll": -r["best"]}  # fmt: skip
        model.save_pretrained(tmp)
        ctx.log(f"base: {skills}")
        return skills

    cached_folder(d, "the MLR base model", build_into, record="skills.json", quiet=ctx.quiet)  # digest-verified
    return AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval(), tok
