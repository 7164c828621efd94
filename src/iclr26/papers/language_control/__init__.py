"""LinguaMap (language control): probes find three layer phases; tuning only the last layers fixes the output language.

Paper: https://arxiv.org/abs/2601.20009 (ICLR 2026). Testbed: four synthetic languages with disjoint vocabularies
(``iclr26.lenses.language_control.world``) and an English-dominant pretraining mixture, so a tiny model solves
target-language
addition problems but often answers in English (the *language consistency bottleneck*). We then

1. evaluate the four-scenario protocol (monolingual, code-mixed, English distractor, bilingual instruction);
2. probe the layers: logit-lens language probability of the output tokens and cross-lingual cosine similarity of
   mean-pooled hidden states of parallel prompts;
3. fine-tune on 500 target-language examples with the masked loss, training all layers, the last ``k``, the first
   ``k`` or ``k`` random layers, and compare consistency, task accuracy and the fraction of parameters trained.

On the real SmolLM2-135M we run the probes only (hand-written parallel English/French/Spanish/German sentences and
few-shot word-translation prompts); fine-tuning a real model on real multilingual task data is out of our budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim

# the world's languages, English first; the same tuple as iclr26.lenses.language_control.world.LANGS
# (tests/test_paper_cards.py)
LANGS = ("en", "l1", "l2", "l3")
TARGETS = LANGS[1:]
# the prompt scenarios; the same tuple as iclr26.lenses.language_control.world.SCENARIOS
SCENARIOS = ("mono", "codemixed", "distractor", "bilingual")


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    arch: str = "llama"
    n_layers: int = 6
    d_model: int = 64
    n_heads: int = 4
    n_pretrain: int = 20_000  # examples in the pretraining mixture
    pretrain_steps: int = 400
    batch_size: int = 32
    lr: float = 3e-3
    # pretraining mixture (fractions; the rest is English task data)
    frac_lx_to_en: float = 0.12  # target-language question answered in English (English-dominant responses)
    frac_lx_task: float = 0.02  # target-language question answered in the target language
    frac_mono: float = 0.15  # generic target-language sentences
    frac_parallel: float = 0.08  # "english sentence = target sentence"
    frac_instruction: float = 0.5  # share of task examples that carry an instruction (always truthful)
    n_finetune: int = 400
    ft_epochs: int = 5
    ft_lr: float = 5e-4
    ft_batch: int = 32
    k: int = 1  # of 6 blocks (the paper: 1 of 30 for Bloom, 2 of 64 for Qwen-3-32B)
    n_eval: int = 30  # problems per target language and scenario
    n_probe: int = 40
    smollm2: bool = True
    smollm2_concepts: int = 16  # concepts per seed for the real-model lens probes (disjoint slices of 48)
    smollm2_sentences: int = 20  # parallel sentences per seed for the real-model similarity (disjoint slices of 60)


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_layers=3,
        d_model=32,
        n_pretrain=2000,
        pretrain_steps=60,
        n_finetune=40,
        ft_epochs=1,
        n_eval=6,
        n_probe=6,
        smollm2=False,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_layers=8,
        d_model=128,
        n_pretrain=60_000,
        pretrain_steps=6000,
        n_finetune=2500,
        n_eval=300,
        n_probe=200,
        smollm2_concepts=9,  # 5 seeds: 5 disjoint slices of the 48 concepts and of the 60 sentences
        smollm2_sentences=12,
    ),
}

ACCEPTS_MODEL = True  # --model replaces SmolLM2-135M in the real-model probes (metrics *_smollm2)
VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 15,  # measured: 14.1 s for the test suite's smoke run (2 seeds, cached models, busy machine)
    "quick": 520,  # VERSION 2: 282 s CPU (931 s wall on an oversubscribed machine); VERSION 1: 514 s wall
    "full": 14400,  # an estimate, not measured: 6,000-step d=128 pretraining and 2,500 finetuning examples, 5 seeds
}

CONDITIONS = ("pre", "full", "last", "first", "random")


def _within_10pct(metric: str) -> Check:
    """Budget parity: ``metric`` (the largest relative deviation of two arms' measured budgets) is below 0.1."""
    return Check(metric, "<", 0.2, 0.1, deterministic=True)  # 0.2 − 0.1: the deviation must stay below 0.1


CLAIMS = [
    Claim(
        "tiny-solves-task",
        "Testbed: the untuned tiny model solves target-language problems (monolingual task accuracy > 0.3; chance "
        "≈ 0.05), so a consistency bottleneck can be told from a transfer failure",
        (Check("task_pre_mono", ">", 0.3),),
        role="testbed",
    ),
    Claim(
        "tiny-english-consistent",
        "Positive control: asked in English for English, the untuned model answers in English (consistency > 0.9), "
        "so low consistency elsewhere is not an artefact of the language identification or of decoding",
        (Check("cons_pre_en", ">", 0.9),),
        role="positive control",
    ),
    Claim(
        "consistency-bottleneck",
        "The untuned model solves target-language problems but answers in the wrong language, worst when the "
        "instructions are in English (code-mixed): task accuracy exceeds language consistency.",
        checks=(
            Check("task_pre_codemixed", ">", "cons_pre_codemixed", 0.1),
            Check("cons_pre_mono", ">", "cons_pre_codemixed"),
        ),
        paper="Qwen-3-32B code-mixed MMLU: task 60.51%, consistency 8.35%; monolingual MGSM consistency 65.56%",
        requires=("tiny-solves-task", "tiny-english-consistent"),
    ),
    Claim(
        "tiny-lens-sees-target",
        "Testbed: at the last layer the lens reads the target language at the positions that predict the "
        "(teacher-forced) target-language output (share > 0.5), so the lens can see the output language",
        (Check("p_target_last", ">", 0.5),),
        role="testbed",
    ),
    Claim(
        "tiny-probe-sees-meaning",
        "Positive control: at some layer parallel prompts are more similar than mismatched ones after centring "
        "(gap > 0.02), so the similarity probe sees shared meaning at all",
        (Check("sim_gap_max", ">", 0.02),),
        role="positive control",
    ),
    Claim(
        "three-phases",
        "Cross-lingual similarity of parallel prompts, beyond that of mismatched prompts (centred states), rises "
        "from the embeddings to a middle plateau and drops in the last layers; the target language wins the logit "
        "lens only at the end (tiny model).",
        checks=(
            Check("sim_gap_mid", ">", "sim_gap_emb"),
            Check("sim_gap_mid", ">", "sim_gap_last"),
            Check("p_target_last", ">", "p_target_mid"),
        ),
        paper="similarity 0.95–0.99 in middle layers, drop after layer ~55 (Qwen-3-32B) / ~24–30 (BLOOM)",
        requires=("tiny-lens-sees-target", "tiny-probe-sees-meaning"),
    ),
    Claim(
        "smollm2-translates",
        "Testbed: SmolLM2-135M does the few-shot word translation at all: the target word's first token is in its "
        "top 10 at the last layer for more than half of the items",
        (Check("top10_target_last_smollm2", ">", 0.5),),
        role="testbed",
        when="smollm2",
    ),
    Claim(
        "smollm2-probe-sees-meaning",
        "Positive control: at some layer SmolLM2's parallel sentences are more similar than mismatched ones after "
        "centring (gap > 0.02)",
        (Check("sim_gap_max_smollm2", ">", 0.02),),
        role="positive control",
        when="smollm2",
    ),
    Claim(
        "three-phases-smollm2",
        "On SmolLM2-135M: parallel EN/FR/ES/DE sentences, beyond mismatched ones (centred states), are more similar "
        "in the middle than at the embeddings and at the last layer (the similarity half of the three phases).",
        checks=(
            Check("sim_gap_mid_smollm2", ">", "sim_gap_emb_smollm2"),
            Check("sim_gap_mid_smollm2", ">", "sim_gap_last_smollm2"),
        ),
        paper="similarity 0.95–0.99 in middle layers, drop in the last layers (Qwen-3-32B, BLOOM)",
        when="smollm2",
        requires=("smollm2-probe-sees-meaning",),
    ),
    Claim(
        "english-latent-smollm2",
        "On SmolLM2-135M: in the middle layers the lens ranks the English word above the target-language word, "
        "which wins at the end (the lens half of the three phases, few-shot word translation).",
        checks=(
            Check("rank_en_mid_smollm2", "<", "rank_target_mid_smollm2"),
            Check("p_target_last_smollm2", ">", "p_en_last_smollm2"),
        ),
        paper="middle layers English-dominated; target-language probability overtakes English only in the last layers",
        when="smollm2",
        requires=("smollm2-translates",),
    ),
    Claim(
        "tuning-budget",
        "Budget parity: every tuned arm takes the same measured optimizer steps as last-k tuning, and the first-k "
        "and random-k arms train as many parameters (within 10 %)",
        (_within_10pct("budget_dev_first"), _within_10pct("budget_dev_random"), _within_10pct("budget_dev_full")),
        role="budget",
    ),
    Claim(
        "full-reaches-consistency",
        "Headroom: the full fine-tuning reference, with the same data and steps, reaches the claimed 95% consistency "
        "(else no arm of this testbed can show it)",
        (Check("cons_full", ">", 0.95),),
        role="headroom",
    ),
    Claim(
        "full-keeps-task",
        "Testbed: the full fine-tuning reference keeps the task (accuracy at most 10 points below the untuned "
        "model's), so 'within 3 points of full tuning' is not a comparison of two collapsed arms",
        (Check("task_full", ">", "task_pre", -0.1),),
        role="testbed",
    ),
    Claim(
        "last-k-matches-full",
        "Tuning only the last k layers reaches ≥ 95% consistency, task accuracy within 3 points of full tuning, "
        "training ≤ 25% of the parameters.",
        checks=(
            Check("cons_last", ">", 0.95),
            Check("task_last", ">", "task_full", -0.03),
            Check("frac_last", "<", 0.26, 0.01, deterministic=True),  # a parameter count: the same on every seed
        ),
        paper="Qwen-3-32B last 2 layers (1.5B/32B params): consistency 99.20–99.83% vs full 99.47–100%",
        requires=("tuning-budget", "full-reaches-consistency", "full-keeps-task"),
    ),
    Claim(
        "last-tuning-acts",
        "Non-degenerate: tuning the last k layers changes the output language (consistency up by more than 0.1 over "
        "the untuned model)",
        (Check("cons_last", ">", "cons_pre", 0.1),),
        role="non-degenerate",
    ),
    Claim(
        "first-random-worse",
        "Tuning the first k or k random layers gives lower consistency than the last k.",
        checks=(Check("cons_last", ">", "cons_first"), Check("cons_last", ">", "cons_random")),
        paper="random layers, Qwen monolingual MGSM: consistency ~65.9%, task 0.13%",
        requires=("tuning-budget", "last-tuning-acts"),
    ),
]

_LENS = {
    "sim_emb": "cosine of mean-pooled hidden states of parallel EN/Lx prompts+outputs (BOS excluded), embeddings",
    "sim_mid": "the same, mean over the middle third of blocks",
    "sim_last": "the same, last block",
    "p_en_mid": "logit-lens top-1 share of English at the positions predicting the reference target-language output "
    "(teacher forced), mean over the middle third of blocks",
    "p_en_last": "the same, last block",
    "p_target_mid": "logit-lens top-1 share of the target language, same positions, middle third of blocks",
    "p_target_last": "the same, last block",
    "sim_mis_emb": "mismatched baseline: cosine of mean-pooled states of EN prompt n and the Lx prompt of item n+1 "
    "(same languages, different content), embeddings",
    "sim_mis_mid": "the same, mean over the middle third of blocks",
    "sim_mis_last": "the same, last block",
    "sim_gap_emb": "parallel minus mismatched similarity after centring (the mean pooled state over all EN and Lx "
    "texts subtracted at each layer), embeddings",
    "sim_gap_mid": "the same, mean over the middle third of blocks",
    "sim_gap_last": "the same, last block",
    "sim_gap_max": "the largest of the centred parallel-minus-mismatched gaps over the embeddings and all blocks",
}
_RANKS = {
    "rank_en_mid": "mean log10(1 + rank) of the English word's first token in the logit lens at the last prompt "
    "position (rank 0 = top), middle third of blocks",
    "rank_target_mid": "the same for the target-language word",
    "rank_en_last": "log10(1 + rank) of the English word, last block",
    "rank_target_last": "the same for the target-language word",
}
METRICS = {
    **{
        f"cons_{cond}_{sc}": f"[{cond}] share of greedy outputs whose majority-vocabulary language is the requested "
        "one, "
        f"over n_eval problems × 3 target languages, scenario {sc}"
        for cond in CONDITIONS
        for sc in SCENARIOS
    },
    **{
        f"task_{cond}_{sc}": f"[{cond}] share of greedy outputs whose last number word (any language) equals a + b, "
        f"scenario {sc}"
        for cond in CONDITIONS
        for sc in SCENARIOS
    },
    **{f"cons_{cond}": f"[{cond}] cons_{cond}_<scenario>, mean over the four scenarios" for cond in CONDITIONS},
    **{f"task_{cond}": f"[{cond}] task_{cond}_<scenario>, mean over the four scenarios" for cond in CONDITIONS},
    **{
        f"frac_{cond}": f"[{cond}] trainable parameters / all parameters (tied weights once)" for cond in CONDITIONS[1:]
    },
    **_LENS,
    **{
        f"{k}_smollm2": f"SmolLM2-135M: {v} — on hand-written parallel EN–FR/ES/DE sentences (similarity) and "
        "few-shot word translation (lens probability of the first token of the target word vs its English translation)"
        for k, v in {**_LENS, **_RANKS}.items()
    },
    "top1_target_last_smollm2": "SmolLM2-135M: share of translation items whose target word's first token is the "
    "model's top-1 next token (last layer)",
    "top10_target_last_smollm2": "SmolLM2-135M: the same, in the top 10",
    "n_lens_items_smollm2": "SmolLM2-135M: translation items measured per seed (16 concepts × 2 directions, less "
    "items whose English and target words share a first token)",
    **{f"steps_{cond}": f"[{cond}] optimizer steps of the fine-tuning, as run" for cond in CONDITIONS[1:]},
    "budget_dev_first": "largest relative difference of steps and trained-parameter fraction, first-k vs last-k",
    "budget_dev_random": "the same, random-k vs last-k",
    "budget_dev_full": "relative difference of optimizer steps, full vs last-k tuning",
    "cons_pre_en": "[pre] share of greedy outputs in English for English prompts asking for English (positive control)",
    "task_pre_en": "[pre] task accuracy on those English prompts",
}
