"""Reproduction: PERK, *Long-Context Reasoning as Parameter-Efficient Test-Time Learning* (Chen, Romanou, Weiss,
Bosselut; ICLR 2026, https://arxiv.org/abs/2507.06415; code https://github.com/eric11eca/perk).

Idea. A long context is written into a LoRA adapter by K gradient steps of causal-LM loss on its segments (encoded
as a batch, positions restarting per segment); the question is answered from the question alone with the adapted
weights. Meta-training learns the LoRA initialisation and per-step inner learning rates through the inner loop
(truncated unrolling: second order through the last T steps). The paper reports large gains over FT-ICR (the same
model fine-tuned with the context in the prompt), better length extrapolation and no positional bias.

Protocol (``iclr26.worlds.perk``: key-value retrieval with distractor filler, 1-hop facts and 2-hop link chains, one
item per segment, questions about every item so the needle sits at every position). One tiny llama is pre-trained
here by causal LM on the world's text at every length up to the longest test context (so its window fits it), cached
and shared by the seeds. Per seed: FT-ICR (full fine-tuning, context in the prompt, training contexts of
``train_segs`` segments; lr tuned on validation, early stopping); PERK meta-trained on the same training contexts
(outer lr tuned on validation, early stopping); controls: the base model with no adapter and no context, and PERK's
inner loop from peft's untrained initialisation (inner lr tuned on validation), i.e. without meta-training. Test at
``test_segs`` segments (longer than training), accuracy = exact match of the greedy answer, by length, task and needle
position. Measured peak memory (torch profiler) and wall time of answering one question by PERK (encode + answer) and
by prompting with the context, at each length. SmolLM2-135M: one Wikipedia passage (gensim's sample) with a planted
fact, encoded by PERK's inner loop without meta-training (peft init), the fact's cloze answered without the passage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    sents_per_seg: int = field(default=4, metadata={"help": "4-word sentences per segment (ours; 1 item each)"})
    train_segs: int = field(default=4, metadata={"help": "segments per training context (dossier: 8)"})
    test_segs: tuple[int, ...] = field(default=(4, 8, 16), metadata={"help": "test lengths (dossier: 8, 16, 32)"})
    # the base LM (pre-trained once, cached, shared by the seeds)
    d_model: int = 64
    n_layers: int = 2
    pretrain_steps: int = field(default=800, metadata={"help": "causal-LM steps of the base model (ours)"})
    pretrain_batch: int = 8
    # PERK
    lora_rank: int = field(default=8, metadata={"help": "LoRA rank (dossier toy: 8; paper code 16-256)"})
    inner_steps: int = field(default=4, metadata={"help": "K (paper code 4)"})
    unroll_last: int = field(default=2, metadata={"help": "T second-order steps (paper code: 2 of 4)"})
    inner_lr_grid: tuple[float, ...] = field(default=(3e-3, 1e-2, 3e-2), metadata={"help": "untrained-init inner lr"})
    outer_lr_grid: tuple[float, ...] = field(default=(3e-3, 1e-2, 3e-2), metadata={"help": "PERK outer lr (tuned)"})
    meta_steps: int = field(default=150, metadata={"help": "outer-step cap (early stopping decides)"})
    meta_batch: int = 1
    # FT-ICR
    icr_lr_grid: tuple[float, ...] = field(default=(3e-4, 1e-3, 3e-3), metadata={"help": "FT-ICR lr (tuned)"})
    icr_steps: int = field(default=150, metadata={"help": "FT-ICR step cap (early stopping decides)"})
    icr_batch: int = 2
    eval_every: int = 15
    patience: int = 3
    n_val: int = field(default=8, metadata={"help": "validation contexts per task (train length)"})
    n_test: int = field(default=8, metadata={"help": "test contexts per task and length"})
    max_extensions: int = field(default=1, metadata={"help": "grid extensions past an edge pick (time budget)"})
    # SmolLM2
    smollm2: bool = True
    smol_tokens: int = field(default=96, metadata={"help": "passage tokens (ours)"})
    smol_steps: int = field(default=5, metadata={"help": "inner steps on SmolLM2, no meta-training (ours)"})
    smol_lr: float = field(default=3e-3, metadata={"help": "inner Adam lr on SmolLM2, peft init (ours)"})

    def __post_init__(self):
        if self.train_segs < 2 or min(self.test_segs) < 2:
            raise ValueError("Cfg.train_segs and every test_segs must be >= 2 (2-hop chains need two segments)")
        if self.train_segs not in self.test_segs or max(self.test_segs) <= self.train_segs:
            raise ValueError(
                f"Cfg.test_segs must contain train_segs={self.train_segs} and a longer length, got {self.test_segs}"
            )
        if not 0 <= self.unroll_last <= self.inner_steps:
            raise ValueError(f"Cfg.unroll_last must lie in [0, inner_steps], got {self.unroll_last}")


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        test_segs=(4, 6),
        pretrain_steps=60,
        max_extensions=0,
        inner_lr_grid=(1e-2,),
        outer_lr_grid=(3e-3,),
        icr_lr_grid=(3e-3,),
        meta_steps=4,
        icr_steps=4,
        eval_every=2,
        n_val=2,
        n_test=2,
        smollm2=False,
    ),  # fmt: skip
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), test_segs=(4, 8, 16, 32), meta_steps=2000, icr_steps=2000, n_test=40, n_val=30),
}
VERSION = 1
EXPECTED_SECONDS = {"smoke": 60, "quick": 600, "full": 5400}
ACCEPTS_MODEL = False
MODEL_NOTE = "PERK(your_model, your_tokenizer) works on any gpt2/llama/qwen2 causal LM: see docs/papers/perk.md"

PAPER = "Qwen-2.5-0.5B/7B, BabiLong / Drops-in-the-Ocean / multi-doc QA, contexts 1K-128K tokens"

CLAIMS = [
    Claim(
        "testbed",
        "The task is solvable with the context: FT-ICR answers training-length contexts (accuracy > 0.6), the base "
        "model without the context cannot (accuracy < 0.05)",
        checks=(Check("fticr_acc_Ltrain", ">", 0.6), Check("noadapter_acc", "<", 0.05)),
        paper="(our testbed check; not in the paper)",
    ),
    Claim(
        "perk-encodes",
        "PERK answers from the adapter alone: at the training length it beats the no-adapter model (control) by 0.3 "
        "and beats its own untrained initialisation (no meta-training, inner lr tuned; control)",
        checks=(
            Check("perk_acc_Ltrain", ">", "noadapter_acc", margin=0.3),
            Check("perk_acc_Ltrain", ">", "untrained_acc_Ltrain"),
        ),  # fmt: skip
        paper="meta-training is what makes test-time encoding answer questions (paper §3)",
    ),
    Claim(
        "beats-fticr",
        "PERK's accuracy averaged over test lengths and tasks exceeds FT-ICR's",
        checks=(Check("perk_acc", ">", "fticr_acc"),),
        paper=f"average absolute gains up to 20 points over FT-ICR ({PAPER})",
    ),
    Claim(
        "length-generalisation",
        "PERK loses less accuracy than FT-ICR from the training length to the longest test length",
        checks=(Check("perk_drop", "<", "fticr_drop"),),
        paper="trained at 8K, PERK extrapolates to 128K tokens where FT-ICR degrades",
    ),
    Claim(
        "position-robust",
        "PERK's accuracy varies less with the needle's position than FT-ICR's (max - min over position quartiles, "
        "contexts longer than training)",
        checks=(Check("perk_pos_spread", "<", "fticr_pos_spread"),),
        paper="PERK shows no lost-in-the-middle effect; FT-ICR does",
    ),
    Claim(
        "two-hop",
        "On 2-hop questions PERK beats FT-ICR (robust to reasoning complexity)",
        checks=(Check("perk_acc_hop2", ">", "fticr_acc_hop2"),),
        paper="PERK more robust from BabiLong QA1 to QA3",
    ),
    Claim(
        "memory-scaling",
        "Peak memory of answering by PERK grows less with the context length than prompting's (measured, ratio of "
        "the longest to the training length)",
        checks=(Check("perk_mem_growth", "<", "icr_mem_growth", margin=0.05, deterministic=True),),
        paper="v1: training is memory-heavy but inference scales better than prompting with the full context",
    ),
    Claim(
        "smollm2-encodes",
        "SmolLM2-135M, no meta-training: encoding a Wikipedia passage with a planted fact raises the log-probability "
        "of the planted answer (passage not in the prompt) more than that of an unplanted alternative (control)",
        checks=(Check("smol_gain_planted", ">", "smol_gain_other", margin=0.5),),
        when="smollm2",
        paper="(mechanism on a real LM; the paper meta-trains Qwen-2.5)",
    ),
]

METRICS = {
    "fticr_acc_Ltrain": "FT-ICR exact-match accuracy at the training length (both tasks)",
    "noadapter_acc": "base model (no adapter, no context) accuracy at the training length: the floor",
    "perk_acc_Ltrain": "PERK accuracy at the training length",
    "untrained_acc_Ltrain": "PERK inner loop from peft's init (no meta-training), inner lr tuned: training length",
    "perk_acc": "PERK accuracy, mean over test lengths and both tasks",
    "fticr_acc": "FT-ICR accuracy, mean over test lengths and both tasks",
    "untrained_acc": "untrained-init control, mean over test lengths and tasks",
    "perk_drop": "PERK accuracy at the training length minus at the longest test length",
    "fticr_drop": "FT-ICR accuracy at the training length minus at the longest test length",
    "perk_pos_spread": "PERK: max - min accuracy over needle-position quartiles, test lengths > training",
    "fticr_pos_spread": "FT-ICR: same",
    "perk_acc_hop2": "PERK accuracy on 2-hop questions, mean over lengths",
    "fticr_acc_hop2": "FT-ICR accuracy on 2-hop questions, mean over lengths",
    "perk_acc_hop1": "PERK accuracy on 1-hop questions, mean over lengths",
    "fticr_acc_hop1": "FT-ICR accuracy on 1-hop questions, mean over lengths",
    "perk_mem_growth": "PERK peak memory (encode + answer one question) at the longest length / at the training length",
    "icr_mem_growth": "prompting (context + question, one forward) peak memory, same ratio",
    "perk_outer_lr": "PERK outer lr picked on validation",
    "perk_meta_steps": "PERK outer steps at the best validation score",
    "icr_lr": "FT-ICR lr picked on validation",
    "icr_steps": "FT-ICR steps at the best validation score",
    "untrained_inner_lr": "inner lr of the untrained-init control picked on validation (also PERK's initial lr)",
    "smol_gain_planted": "SmolLM2: log p(planted answer | cloze) after encoding minus before (nats)",
    "smol_gain_other": "SmolLM2: same for an unplanted alternative answer (control)",
    "smol_em_after": "SmolLM2: greedy continuation of the cloze starts with the planted answer after encoding",
    "smol_em_before": "SmolLM2: same before encoding",
    "smol_encode_s": "SmolLM2: seconds to encode the passage",
}
for _m in ("perk", "fticr", "untrained"):
    for _L in (4, 6, 8, 16, 32):
        METRICS[f"{_m}_acc_L{_L}"] = f"{_m} accuracy at {_L} segments (both tasks)"
        for _t in ("hop1", "hop2"):
            METRICS[f"{_m}_acc_{_t}_L{_L}"] = f"{_m} accuracy on {_t} at {_L} segments"
    for _q in range(4):
        METRICS[f"{_m}_pos_q{_q}"] = f"{_m} accuracy with the needle in position quartile {_q} (lengths > training)"
for _L in (4, 6, 8, 16, 32):
    METRICS[f"perk_mem_L{_L}"] = f"PERK peak memory (MB) to answer one question at {_L} segments (encode + answer)"
    METRICS[f"icr_mem_L{_L}"] = f"prompting peak memory (MB) at {_L} segments (one forward of context + question)"
    METRICS[f"perk_time_L{_L}"] = f"PERK wall seconds (encode + answer) at {_L} segments"
    METRICS[f"icr_time_L{_L}"] = f"prompting wall seconds at {_L} segments"
