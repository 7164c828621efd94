"""Representation dispersion predicts perplexity (Li, Li, Livescu, Zhou; ICLR 2026).

Paper: https://arxiv.org/abs/2506.24106. Claims tested here:

1. On a real pretrained LM (SmolLM2-135M-Instruct) and real text of four domains (Wikipedia, news, Python's manual,
   standard-library code), segment dispersion correlates strongly and negatively with segment perplexity
   (binned Pearson r, the paper's protocol), and more strongly in deep layers than early ones.
2. Across tiny models of the zoo (three sizes × training checkpoints) lower held-out perplexity goes with higher
   dispersion.
3. kNN-LM: of the last layer's attention-output and FFN-output keys, the more dispersed one gives the lower kNN-LM
   perplexity.
4. The push-away auxiliary term raises dispersion and lowers test perplexity (cross-domain Wikipedia + code).

Not reproducible here: the LLaMA/Qwen/OLMo/GPT-2 numbers (weights not available), ARC/MMLU/MATH accuracy prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.core.claims import Check, Claim, fails

ACCEPTS_MODEL = True  # --model replaces the real model of claim 1


@dataclass(frozen=True)
class DispersionConfig:
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)  # sized from the first VERSION 3 run: ~4–6 seeds decide its gates
    real_model: str = "smollm2-135m"
    domains: tuple[str, ...] = ("wikipedia", "news", "python_manual", "code")
    segments_per_domain: int = 24  # paper: 100,000 WikiText segments; scaled down
    seg_len: int = 128  # paper: 512 tokens; scaled down
    n_bins: int = 8  # paper: 20 PPL bins over 100k segments; 8 equal-count bins over our segments
    early_layer_frac: float = 0.25  # "early" layer for the depth claim: a quarter of the way up
    tiny_sizes: tuple[int, ...] = (32, 64, 96)  # d_model of the three tiny zoo models
    tiny_steps: int = 300
    tiny_checkpoints: tuple[int, ...] = (30, 100, 200)  # plus the final model
    tiny_vocab: int = 512  # BPE vocabulary of the tiny models
    tiny_domains: tuple[str, ...] = ("wikipedia", "news", "python_manual")
    max_docs: int = 60  # documents per domain the tiny models train on
    tiny_eval_segments: int = 48
    tiny_seq: int = 64
    knn_store_blocks: int = 300  # datastore = blocks × tiny_seq training tokens
    knn_eval_blocks: int = 40
    knn_k: int = 64  # dossier's CPU plan (kNN-LM default is 1024)
    push_steps: int = 250
    push_d_model: int = 48
    push_domains: tuple[str, str] = ("wikipedia", "code")  # paper: Wiki + Python code
    push_lr: float = 3e-3  # paper: 5e-4 / 7e-4 for GPT-2 small; tiny models need more
    push_lam_single: float = 0.1  # paper's λ for single-domain
    push_lam_cross: float = 0.01  # paper's λ for cross-domain
    push_batch: int = 16
    push_replicates: int = 2  # paired trainings (with / without the term) per seed, averaged
    untrained_control: bool = True  # the negative control of the real-model claims: the same architecture untrained


CONFIGS = {
    "smoke": DispersionConfig(
        seeds=(0, 1),
        domains=("news", "python_manual"),
        segments_per_domain=16,
        seg_len=32,
        n_bins=4,
        tiny_sizes=(16, 32),
        tiny_steps=40,
        tiny_checkpoints=(20,),
        tiny_eval_segments=8,
        tiny_seq=32,
        max_docs=10,
        knn_store_blocks=40,
        knn_eval_blocks=8,
        knn_k=16,
        push_steps=20,
        push_d_model=16,
        push_batch=4,
        push_replicates=1,
    ),
    "quick": DispersionConfig(),
    "full": DispersionConfig(
        seeds=(0, 1, 2, 3, 4, 5, 6, 7),
        segments_per_domain=128,
        seg_len=256,
        n_bins=20,
        tiny_steps=2000,
        tiny_vocab=2048,
        tiny_sizes=(32, 64, 128),
        max_docs=10_000,
        push_steps=1000,
        push_d_model=64,
        tiny_checkpoints=(100, 300, 600, 1200),
        tiny_eval_segments=128,
        knn_store_blocks=2000,
        knn_eval_blocks=200,
        knn_k=1024,
        push_replicates=5,
    ),
}

VERSION = 3  # bump when the method or the protocol changes: it enters the run key
EXPECTED_SECONDS = {  # wall seconds on a 2-core CPU with cached models
    "smoke": 25,  # measured: 17.3 s for the test suite's smoke run (2 seeds, cached models, busy machine), VERSION 2
    "quick": 480,  # VERSION 3, measured: 240 s wall for 3 seeds (quiet machine, cached models); 6 seeds
    "full": 14400,  # an estimate, not measured: 2,000-step tiny models, 128 segments of 256 tokens per domain, 5 seeds
}


def _within_10pct(metric: str) -> Check:
    """Budget parity: ``metric`` (the largest relative deviation of the arms' measured budgets) is below 0.1."""
    return Check(metric, "<", 0.2, 0.1, deterministic=True)  # 0.2 − 0.1: the deviation must stay below 0.1


CLAIMS = [
    Claim(
        "real-model-works",
        "Testbed: the real model models the four domains' text (mean log-perplexity more than 3 nats below a uniform "
        "guess over its vocabulary), so its perplexities say something",
        (Check("lm_gain_real", ">", 3.0),),
        role="testbed",
    ),
    Claim(
        "untrained-no-correlation",
        "Negative control: the same architecture untrained (seeded initialisation), on the same segments, does not "
        "show the claimed correlation (r < −0.5): the text alone does not produce it",
        (fails(Check("r_untrained_mean", "<", -0.5)),),
        role="negative control",
    ),
    Claim(
        "ppl-correlation",
        "Dispersion correlates strongly and negatively with perplexity on a real LM across domains (r < −0.5)",
        (Check("r_real_mean", "<", -0.5),),
        paper="Pearson r ≈ −0.62 … −0.92 (LLaMA-3.2 1B/3B/8B, Phi, Mistral, Qwen; WikiText, news, abstracts)",
        requires=("real-model-works", "untrained-no-correlation"),
    ),
    Claim(
        "untrained-no-depth",
        "Negative control: in the untrained model the correlation is not stronger at the last layer than a quarter "
        "of the way up by the depth claim's margin (0.1 in r)",
        (fails(Check("r_untrained_last", "<", "r_untrained_early", 0.1)),),
        role="negative control",
    ),
    Claim(
        "depth",
        "The correlation is stronger (more negative) in deep layers than in early layers (by at least 0.1 in r)",
        (Check("r_real_last", "<", "r_real_early", 0.1),),
        paper="correlation strengthens with depth (LLaMA-3.2-1B, per-layer curves)",
        requires=("real-model-works", "untrained-no-depth"),
    ),
    Claim(
        "tiny-ppl-range",
        "Testbed: the tiny models and checkpoints span a range of held-out perplexities (the largest over 1.5× the "
        "smallest), so a correlation across them can be measured",
        (Check("tiny_logppl_range", ">", 0.405),),  # log 1.5
        role="testbed",
    ),
    Claim(
        "models",
        "Across tiny models and checkpoints, lower held-out perplexity goes with higher dispersion (r < −0.5)",
        (Check("r_tiny_models", "<", -0.5),),
        paper="dispersion tracks 30 OLMo-7B checkpoints (correlation > 0.90); bigger models more dispersed",
        requires=("tiny-ppl-range",),
    ),
    Claim(
        "knn-helps",
        "Headroom: the kNN-LM datastore helps, with the better of the two keys by more than 0.5 PPL over the LM alone",
        (Check("knn_best_gain", ">", 0.5),),
        role="headroom",
    ),
    Claim(
        "knn-keys-differ",
        "Headroom: the choice matters, the two keys' kNN-LM perplexities differ by more than 0.5 (the exhaustive "
        "oracle choice beats the other key)",
        (Check("knn_key_spread", ">", 0.5),),
        role="headroom",
    ),
    Claim(
        "knn-disp-differ",
        "Non-degenerate: the two keys' dispersions differ by more than 0.01, so the dispersion criterion chooses",
        (Check("disp_key_spread", ">", 0.01),),
        role="non-degenerate",
    ),
    Claim(
        "knn-key",
        "The more dispersed kNN-LM key (attention vs FFN output) gives the lower kNN-LM perplexity",
        (Check("knn_choice_gain", ">", 0.0),),
        paper="attention output more dispersed and the better key (GPT2-Medium 0.66 vs 0.19, GPT2-Large, DistilGPT2)",
        requires=("knn-helps", "knn-keys-differ", "knn-disp-differ"),
    ),
    Claim(
        "push-budget",
        "Budget parity: the push-away and baseline trainings take the same measured optimizer steps and training "
        "tokens (within 10 %), in both settings",
        (_within_10pct("budget_dev_single"), _within_10pct("budget_dev_cross")),
        role="budget",
    ),
    Claim(
        "push-base-learns",
        "Testbed: the baseline trainings (λ = 0) learn more than token frequencies: test log-perplexity more than 0.1 "
        "nats per token below an add-one unigram model of their training data",
        (Check("logppl_gain_single_base", ">", 0.1), Check("logppl_gain_cross_base", ">", 0.1)),
        role="testbed",
    ),
    Claim(
        "push-away",
        "The push-away term raises dispersion and lowers test perplexity in the cross-domain setting",
        (Check("ppl_cross_push", "<", "ppl_cross_base"), Check("disp_cross_push", ">", "disp_cross_base")),
        paper="GPT-2 small, Wiki + Python: test PPL 175.7 → 150.2 at step 1000 (λ = 0.01)",
        requires=("push-budget", "push-base-learns"),
    ),
    Claim(
        "push-single-acts",
        "Non-degenerate: in the single-domain setting the term raises the dispersion of the vectors it acts on by "
        "more than 0.005",
        (Check("disp_gain_single", ">", 0.005),),
        role="non-degenerate",
    ),
    Claim(
        "push-away-single",
        "The push-away term lowers test perplexity in the single-domain setting",
        (Check("ppl_single_push", "<", "ppl_single_base"),),
        paper="GPT-2 small, single domain: 83.0 → 82.0 at step 1000 (λ = 0.1), about 1%",
        requires=("push-budget", "push-base-learns", "push-single-acts"),
    ),
]

METRICS = {
    "r_real_mean": "binned Pearson r (equal-count PPL bins) between segment PPL and last-layer dispersion, "
    "mean over domains, real model",
    "r_real_pooled": "binned Pearson r over the segments of all domains pooled, real model",
    "r_real_last": "per-segment Pearson r (log PPL vs dispersion) at the last layer, within each domain, averaged",
    "r_real_early": "the same at the layer a quarter of the way up",
    "r_real_last_pooled": "per-segment Pearson r at the last layer over all domains pooled (domain-confounded)",
    "lm_gain_real": "log(vocabulary size) minus the mean log segment PPL of the real model (nats below uniform)",
    "r_untrained_mean": "r_real_mean for the same architecture untrained (seeded initialisation), same segments",
    "r_untrained_last": "r_real_last for the untrained model",
    "r_untrained_early": "r_real_early for the untrained model",
    "r_tiny_models": "Pearson r over (size, checkpoint) points: held-out PPL vs mean last-layer dispersion",
    "tiny_logppl_range": "largest minus smallest log held-out PPL over the (size, checkpoint) points",
    "r_tiny_segments": "binned Pearson r between segment PPL and dispersion, largest final tiny model",
    "knn_choice_gain": "kNN-LM PPL with the less dispersed key minus with the more dispersed key (λ and the softmax "
    "temperature tuned per key on the first half of the evaluation tokens)",
    "knn_best_gain": "LM-alone PPL minus the better key's kNN-LM PPL (second half of the evaluation tokens)",
    "knn_key_spread": "|kNN-LM PPL with the attention key − with the FFN key|",
    "disp_key_spread": "|dispersion of the attention key − of the FFN key| (20 datastore segments)",
    "ppl_cross_push": "test PPL (Wikipedia + code) after training with push-away λ = 0.01, mean over the replicates",
    "ppl_cross_base": "test PPL (Wikipedia + code) after the same training without push-away (λ = 0)",
    "disp_cross_push": "push-away: mean dispersion of the last block's output before the final norm (the vectors "
    "the push-away term acts on) on the cross-domain test blocks",
    "disp_cross_base": "the same without push-away",
    "ppl_single_push": "test PPL (Wikipedia) after training with push-away λ = 0.1, mean over the replicates",
    "ppl_single_base": "test PPL (Wikipedia) after the same training without push-away (λ = 0)",
    "disp_gain_single": "disp_single_push − disp_single_base (the same vectors, Wikipedia test blocks)",
    "budget_dev_single": "largest relative difference of measured optimizer steps and training tokens, push-away vs "
    "baseline, single domain",
    "budget_dev_cross": "the same, cross domain",
    "logppl_gain_single_base": "log test PPL of an add-one unigram model of the training blocks minus that of the "
    "single-domain baseline (nats per token)",
    "logppl_gain_cross_base": "the same for the cross-domain baseline",
    "ppl_single_unigram": "test PPL of the add-one unigram model of the single-domain training blocks",
    "ppl_cross_unigram": "the same for the cross-domain training blocks",
}
