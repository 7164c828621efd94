"""Activation Difference Lens: narrow finetuning leaves readable traces in activation differences.

Paper: https://arxiv.org/abs/2510.13900 (ICLR 2026). A tiny llama is pretrained on a topic-mixture corpus
(``iclr26.lenses.adl.world``); a copy is finetuned on documents about a held-out topic ``T*`` with a planted fact (the
"model organism"), also with pretraining data mixed in (ft:pt = 1:0.1, 1:1; full scale adds 1:2). On the first 5
positions of generic base-corpus text we compute the mean activation difference at the middle layer and read it with
the logit lens and a Patchscope (copy-list identity prompts); relevance is the exact share of top-20 tokens in
``T*``'s vocabulary or the fact. Steering adds the norm-matched difference at every position with the largest
strength whose samples stay grammatical (binary search; a grammar check replaces the paper's LLM coherence grader);
TF-IDF cosine to the finetuning corpus replaces the embedding similarity. The "agent" is a ranking of the 21 topics
by word overlap with ADL's tokens and steered text, against the same ranking from i black-box samples. The causal
check swaps the component along the difference for the base model's. On SmolLM2-135M, a LoRA finetune on
hand-templated cake-baking documents (one per seed) is read with the same lenses (relevance = share of tokens that are
baking words) and the causal check. Every claim is decided only where its gates hold: a null organism (the same
finetune without the domain), random directions, headroom and internalisation checks (see CLAIMS).
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    n_topics: int = 20
    n_layers: int = 4
    d_model: int = 64
    n_heads: int = 4
    n_base_docs: int = 3000
    pretrain_steps: int = 400
    pretrain_batch: int = 16
    n_ft_docs: int = 300
    ft_epochs: int = 2
    ft_lr: float = 1e-3
    mix_ratios: tuple[float, ...] = (0.0, 0.1, 1.0)
    n_generic: int = 256
    n_positions: int = 5
    steer_prompts: int = 10
    steer_tokens: int = 24
    search_steps: int = 6
    max_strength: float = 4.0
    bb_budgets: tuple[int, ...] = (1, 5)
    bb_trials: int = 6
    null_organism: bool = True  # the negative control: the same finetune on base-corpus documents only
    smollm2: bool = True
    smollm2_steps: int = 12
    smollm2_generic: int = 64
    smollm2_null: bool = False  # also the null twin (the same LoRA finetune on Wikipedia text): too slow for quick
    smollm2_scales: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 20.0)  # Patchscope scales read on SmolLM2 (CPU time)


CONFIGS = {
    "smoke": Cfg(
        seeds=(0, 1),
        n_topics=5,
        n_layers=2,
        d_model=32,
        n_base_docs=200,
        pretrain_steps=30,
        n_ft_docs=30,
        ft_epochs=1,
        mix_ratios=(0.0, 1.0),
        n_generic=40,
        n_positions=3,
        steer_prompts=2,
        steer_tokens=8,
        search_steps=2,
        bb_trials=2,
        smollm2=False,
    ),
    "quick": Cfg(),
    "full": Cfg(
        seeds=(0, 1, 2, 3, 4),
        n_layers=6,
        d_model=128,
        n_base_docs=40_000,
        pretrain_steps=6000,
        pretrain_batch=32,
        n_ft_docs=2000,
        n_generic=1000,
        mix_ratios=(0.0, 0.1, 1.0, 2.0),
        bb_trials=10,
        steer_prompts=20,
        search_steps=10,
        smollm2_steps=200,
        smollm2_null=True,
        smollm2_scales=(0.5, 1.0, 1.5, 2.0, 5.0, 10.0, 20.0, 60.0, 200.0),
    ),
}

ACCEPTS_MODEL = True  # --model replaces SmolLM2-135M as the base of the real LoRA organism (metrics *_smollm2)
VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 20,  # measured: 11.3 s for the test suite's smoke run (2 seeds, cached models, busy machine), VERSION 2
    "quick": 600,  # VERSION 3: a null organism per seed, and one SmolLM2 LoRA organism per seed
    "full": 14400,  # an estimate, not measured: 6,000-step d=128 pretraining and 200 LoRA steps on SmolLM2 per seed
}
REL = 0.05  # the smallest relevance difference that counts: one more relevant token in 20
NATS = 0.02  # the smallest loss change that counts (nats per token)
SIM = 0.01  # the smallest TF-IDF similarity gain that counts
RR = 0.1  # the smallest reciprocal-rank gain that counts

CLAIMS = [
    Claim(
        "organism-internalised",
        "Testbed: the 1:0 organism learned its finetuning domain (held-out T* documents: CE more than 0.3 nats below "
        "the base model's)",
        (Check("ce_gain", ">", 0.3),),
        role="testbed",
    ),
    Claim(
        "null-organism-not-relevant",
        "Negative control: the null organism (the same finetune on base-corpus documents, no T*) has a difference "
        "whose Patchscope and logit-lens tokens are not ≥ 30% T* words",
        (fails(Check("rel_ps_adl_null", ">", 0.3)), fails(Check("rel_ll_adl_null", ">", 0.3))),
        role="negative control",
    ),
    Claim(
        "random-not-relevant",
        "Negative control: a random direction of the same norm, read through the same lenses, is not ≥ 30% T* words",
        (fails(Check("rel_ps_random", ">", 0.3)), fails(Check("rel_ll_random", ">", 0.3))),
        role="negative control",
    ),
    Claim(
        "lens-relevance",
        "Patchscope / logit-lens tokens of the activation difference are largely about the finetuning domain (≥ 30%), "
        "far more than the same readouts of the mean base or mean finetuned activation.",
        checks=(
            Check("rel_ps_adl", ">", 0.3),
            Check("rel_ps_adl", ">", "rel_ps_base", REL),
            Check("rel_ps_adl", ">", "rel_ps_ft", REL),
            Check("rel_ll_adl", ">", "rel_ll_base", REL),
            Check("rel_ll_adl", ">", "rel_ll_ft", REL),
        ),
        paper="20–80% of top-20 Patchscope tokens relevant across organism types; mean-activation baselines ≈ 0",
        requires=("organism-internalised", "null-organism-not-relevant", "random-not-relevant"),
    ),
    Claim(
        "smollm2-organism-learns",
        "Testbed: the SmolLM2 LoRA organism learned cake baking (held-out baking documents: CE more than 0.3 nats "
        "below the base model's)",
        (Check("ce_gain_smollm2", ">", 0.3),),
        role="testbed",
        when="smollm2",
    ),
    Claim(
        "smollm2-lens-headroom",
        "Headroom: a known baking direction (the base model's mean state on baking text minus on the generic text), "
        "read through the same lenses, beats both baselines by more than the claim's margin",
        (
            Check("rel_oracle_smollm2", ">", "rel_base_smollm2", REL),
            Check("rel_oracle_smollm2", ">", "rel_ft_smollm2", REL),
        ),
        role="headroom",
        when="smollm2",
    ),
    Claim(
        "smollm2-random-not-relevant",
        "Negative control: a random direction per position, norm-matched to the difference, does not read as baking "
        "beyond the mean-base baseline by the claim's margin",
        (fails(Check("rel_random_smollm2", ">", "rel_base_smollm2", REL)),),
        role="negative control",
        when="smollm2",
    ),
    Claim(
        "lens-relevance-smollm2",
        "On a LoRA-finetuned SmolLM2-135M, the difference's lens tokens are more about the finetuning domain than "
        "the baselines' (by one token in 20).",
        checks=(
            Check("rel_adl_smollm2", ">", "rel_base_smollm2", REL),
            Check("rel_adl_smollm2", ">", "rel_ft_smollm2", REL),
        ),
        paper="(same claim, real 1B–32B organisms)",
        when="smollm2",
        requires=("smollm2-organism-learns", "smollm2-lens-headroom", "smollm2-random-not-relevant"),
    ),
    Claim(
        "steer-headroom",
        "Headroom: held-out finetuning text (cut to the generated length) is closer to the finetuning data than the "
        "unsteered samples by more than the steering margin, so there is room to move towards it",
        (Check("oracle_sim_ft", ">", "unsteered_sim_ft", SIM),),
        role="headroom",
    ),
    Claim(
        "steer-random-control",
        "Negative control: steering along a random direction of the same norm and strength does not bring the text "
        "closer to the finetuning data by the margin",
        (fails(Check("steer_sim_random", ">", "unsteered_sim_ft", SIM)),),
        role="negative control",
    ),
    Claim(
        "steer-strength",
        "Non-degenerate: the coherence search accepts a steering strength above 0.05 × the activation norm",
        (Check("alpha", ">", 0.05),),
        role="non-degenerate",
    ),
    Claim(
        "steering",
        "Steering the finetuned model with the difference makes its text closer to the finetuning data than "
        "unsteered text.",
        checks=(Check("steer_sim_ft", ">", "unsteered_sim_ft", SIM),),
        paper="steered samples much closer (embedding cosine) to the finetuning data than unsteered / generic chat",
        requires=("steer-headroom", "steer-random-control", "steer-strength"),
    ),
    Claim(
        "id-headroom",
        "Headroom: black-box sampling does not already identify the topic (reciprocal rank at least 0.1 below a "
        "perfect 1.0 at both budgets), 1:0 organism",
        (Check("id_room_1", ">", RR), Check("id_room_5", ">", RR)),
        role="headroom",
    ),
    Claim(
        "id-null-control",
        "Negative control: the same ADL readout of the null organism does not identify T* (reciprocal rank < 0.5)",
        (fails(Check("id_adl_null", ">", 0.5)),),
        role="negative control",
    ),
    Claim(
        "identification",
        "ADL's readout identifies the finetuning topic better than black-box sampling at small budgets (1:0 organism).",
        checks=(Check("id_adl", ">", "id_bb_1", RR), Check("id_adl", ">", "id_bb_5", RR)),
        paper="agent grade ≥ 2: ADL i=0 82%, i=5 91% vs black-box i=0 ~15%, i=5 ~25%, i=50 39%",
        requires=("id-headroom", "id-null-control"),
    ),
    Claim(
        "id-headroom-mix0.1",
        "Headroom: black-box sampling does not already identify the topic of the 1:0.1 organism",
        (Check("id_room_1_mix0.1", ">", RR), Check("id_room_5_mix0.1", ">", RR)),
        role="headroom",
    ),
    Claim(
        "identification-mix0.1",
        "The same on the organism finetuned with 10% pretraining data mixed in (one that still writes base topics "
        "when prompted with them, as the paper's chat organisms still chat normally).",
        checks=(
            Check("id_adl_mix0.1", ">", "id_bb_1_mix0.1", RR),
            Check("id_adl_mix0.1", ">", "id_bb_5_mix0.1", RR),
        ),
        paper="(same numbers; the paper's organisms are trained without mixing)",
        requires=("id-headroom-mix0.1", "id-null-control"),
    ),
    Claim(
        "causal-random-control",
        "Negative control: replacing the component along a random direction does not raise the loss on finetuning "
        "data by the claim's margin (the toolkit's random-vector baseline)",
        (fails(Check("dce_ft_random", ">", 0.0, NATS)),),
        role="negative control",
    ),
    Claim(
        "causal",
        "Replacing the finetuned activations' component along the difference with the base model's raises the "
        "loss on finetuning data and lowers it on pretraining data (each by more than 0.02 nats).",
        checks=(Check("dce_ft", ">", 0.0, NATS), Check("dce_base", "<", 0.0, NATS)),
        paper="ΔL_CE > 0 on finetuning data, < 0 on pretraining data across organisms",
        requires=("organism-internalised", "causal-random-control"),
    ),
    Claim(
        "smollm2-causal-random-control",
        "Negative control: on the SmolLM2 organism a random direction does not raise the baking loss by the margin",
        (fails(Check("dce_ft_random_smollm2", ">", 0.0, NATS)),),
        role="negative control",
        when="smollm2",
    ),
    Claim(
        "causal-smollm2",
        "The same causal test on the SmolLM2 LoRA organism.",
        checks=(Check("dce_ft_smollm2", ">", 0.0, NATS), Check("dce_base_smollm2", "<", 0.0, NATS)),
        paper="(same claim, real organisms)",
        when="smollm2",
        requires=("smollm2-organism-learns", "smollm2-causal-random-control"),
    ),
    Claim(
        "mixing",
        "Mixing pretraining data into the finetune (1:1) shrinks the readable bias: lower relevance.",
        checks=(Check("rel_ps_adl", ">", "rel_ps_adl_mix1"),),
        paper="at 1:1 no agent reached grade ≥ 2; relevance and steering similarity drop",
        requires=("organism-internalised", "null-organism-not-relevant"),
    ),
    Claim(
        "steer-effect",
        "Non-degenerate: steering the 1:0 organism changes its text at all (gain above the steering margin), so a "
        "smaller gain after mixing can be measured",
        (Check("steer_gain", ">", SIM),),
        role="non-degenerate",
    ),
    Claim(
        "mixing-steering",
        "Mixing pretraining data into the finetune (1:1) shrinks the steering gain.",
        checks=(Check("steer_gain", ">", "steer_gain_mix1"),),
        paper="at 1:1 no agent reached grade ≥ 2; relevance and steering similarity drop",
        requires=("steer-effect", "steer-strength"),
    ),
]

# what one organism's analysis measures (finetuned with ft:pt = 1:0; the mixed organisms add a suffix, below)
_ORGANISM = {
    **{
        f"rel_{lens}_{vec}": f"share of the top-20 {name} tokens of {what} at the middle layer that are T* words or "
        "fact words, averaged over positions 0–4 of generic base-corpus text"
        for lens, name in (("ll", "logit-lens"), ("ps", "Patchscope"))
        for vec, what in (("adl", "δ̄"), ("base", "the mean base activation"), ("ft", "the mean finetuned activation"))
    },
    "steer_sim_ft": "mean TF-IDF cosine between each generated continuation (finetuned model, generic prompts, T=1.1, "
    "steered along δ̄ at the searched strength) and the finetuning-corpus centroid",
    "unsteered_sim_ft": "the same without steering",
    "steer_gain": "steer_sim_ft − unsteered_sim_ft",
    "alpha": "searched steering strength (units of the mean activation norm): binary search for the largest α whose "
    "samples keep ≥ 75% of the unsteered samples' grammatical sentence share",
    "id_adl": "reciprocal rank of T* among the topics ranked by word overlap with ADL tokens + steered text",
    **{
        f"id_bb_{b}": f"reciprocal rank of T* from {b} black-box sample(s) of the finetuned model (mean over trials)"
        for b in sorted({b for c in CONFIGS.values() for b in c.bb_budgets})
    },
    "dce_ft": "CE change of the finetuned model on held-out finetuning documents when its component along δ̄ (mean of "
    "positions 1–4) at the middle layer is replaced by the base model's, all positions",
    "dce_base": "the same on held-out base documents",
    "ps_log10_scale_adl": "log10 of the Patchscope scale chosen for δ̄ (toolkit grid 0.5–200 × the norm-matched "
    "vector; the scale whose top-20 tokens are most similar in the model's input embedding), mean over positions",
    "ps_scale_at_top_adl": "fraction of positions where that chosen scale is the grid's largest (200)",
    "dce_ft_random": "dce_ft for a random Gaussian direction (control, as the toolkit's random-vector baseline)",
    "ft_ce": "CE of the finetuned model on held-out finetuning documents (internalisation)",
    "ce_gain": "CE of the base model minus that of the finetuned model on held-out finetuning documents (nats)",
    "rel_ll_random": "rel_ll for a random Gaussian direction, norm-matched to δ̄ per position (control)",
    "rel_ps_random": "rel_ps for the same random direction",
    "steer_sim_random": "steer_sim_ft when steering along a random direction of the same norm, at the same strength",
    "oracle_sim_ft": "the same similarity for held-out finetuning documents cut to the generated length (headroom)",
    **{
        f"id_room_{b}": f"1 − id_bb_{b}: how far black-box sampling with {b} sample(s) is from identifying T* perfectly"
        for b in sorted({b for c in CONFIGS.values() for b in c.bb_budgets})
    },
}
_SMOLLM2 = {
    **{
        f"rel_{vec}_smollm2": f"SmolLM2-135M + LoRA on cake-baking documents: share of the top-20 lens tokens "
        f"(logit lens and Patchscope pooled) of {what} that are baking words; generic text = Wikipedia openings"
        for vec, what in (("adl", "δ̄"), ("base", "the mean base activation"), ("ft", "the mean finetuned activation"))
    },
    "dce_ft_smollm2": "SmolLM2 organism: dce_ft on held-out baking documents",
    "dce_base_smollm2": "SmolLM2 organism: dce_base on Wikipedia openings",
    "dce_ft_random_smollm2": "SmolLM2 organism: dce_ft for a random Gaussian direction (control)",
    "ce_gain_smollm2": "SmolLM2: base minus organism CE on held-out baking documents (nats; the LoRA took)",
    "rel_oracle_smollm2": "SmolLM2: relevance of a known baking direction (base model, mean state on baking text "
    "minus on the generic openings) through the same lenses (headroom)",
    "rel_null_smollm2": "SmolLM2: relevance of the null twin's δ̄ (the same LoRA finetune on Wikipedia text; full "
    "scale)",
    "rel_random_smollm2": "SmolLM2: relevance of a random direction per position, norm-matched to δ̄ (control)",
}
METRICS = {
    **_ORGANISM,
    **{
        f"{k}_mix{r:g}": f"{v} — organism finetuned with pretraining data mixed at ft:pt = 1:{r:g}"
        for r in sorted({r for c in CONFIGS.values() for r in c.mix_ratios if r != 0})
        for k, v in _ORGANISM.items()
    },
    **{
        f"{k}_null": f"{v} — the null organism (the same finetune on base-corpus documents only)"
        for k, v in _ORGANISM.items()
    },
    **_SMOLLM2,
}
