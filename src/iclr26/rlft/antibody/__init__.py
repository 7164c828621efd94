"""Antibody (Nguyen et al., *Antibody: Strengthening Defense Against Harmful Fine-Tuning for Large Language Models via
Attenuating Harmful Gradient Influence*, ICLR 2026, https://arxiv.org/abs/2603.00498; code
https://github.com/minhquoc0712/Antibody), with the baselines Booster and Lisa, on HF `Trainer`.

Threat: a provider aligns a model, then fine-tunes it on user data of which a share is harmful. Antibody defends in
two stages. **Alignment**: besides the alignment loss, make the harmful loss *flat* around the weights, so that a
fine-tuning step cannot lower it quickly: with the attacker's step theta_p = theta - alpha g_h/||g_h||, follow
g_align + lambda_t (g_h(theta) - g_h(theta_p)) + lambda_2 g_refusal(theta_p), lambda_t = EMA(max(eta - cos, 0)).
**Fine-tuning**: weight each sample of a batch by softmax over the batch of its token-averaged log-likelihood ratio
log pi(answer|x) - log pi(refusal|x); an aligned model prefers refusing harmful prompts, so harmful samples get tiny
weights, without any harmfulness label. Booster (ICLR 2025) is stage 1 with a constant lambda and no refusal term;
Lisa (NeurIPS 2024) alternates alignment and user steps with a proximal term.

    from iclr26.rlft.antibody import (AntibodyAlignmentConfig, AntibodyAlignmentTrainer, WeightedSFTConfig,
                                      WeightedSFTTrainer, PairedCollator, encode_pair)
    coll = PairedCollator(tok.pad_token_id)
    AntibodyAlignmentTrainer(model=m, args=AntibodyAlignmentConfig("out"), train_dataset=align_feats,
                             harmful_dataset=harm_feats, data_collator=coll).train()
    WeightedSFTTrainer(model=m, args=WeightedSFTConfig("out", tau=1.0), train_dataset=user_feats,
                       data_collator=coll).train()

Modules: `losses` (equations), `updates` (one step of each method as a gradient; `Lisa`), `data` (paired batches),
`trainers` (the Trainer subclasses), `metrics` (HS, FA, greedy answers).
"""

from .data import PairedCollator, encode_pair, pad_pairs, split_views
from .losses import (
    EMA,
    antibody_lambda_raw,
    likelihood_ratio_scores,
    likelihood_ratio_weights,
    lm_loss,
    per_sample_nll,
    weighted_lm_loss,
)
from .metrics import finetune_accuracy, greedy_answers, harmful_score
from .trainers import (
    AntibodyAlignmentConfig,
    AntibodyAlignmentTrainer,
    BoosterAlignmentTrainer,
    BoosterConfig,
    LisaConfig,
    LisaTrainer,
    WeightedSFTConfig,
    WeightedSFTTrainer,
)
from .updates import (
    Lisa,
    antibody_alignment_gradient,
    apply,
    attack_direction,
    booster_gradient,
    gradients,
    perturbed,
    sharpness_gradient,
    weighted_finetune_gradient,
)

__all__ = [
    "EMA", "Lisa", "PairedCollator", "encode_pair", "pad_pairs", "split_views", "antibody_lambda_raw",
    "likelihood_ratio_scores", "likelihood_ratio_weights", "lm_loss", "per_sample_nll", "weighted_lm_loss",
    "finetune_accuracy", "greedy_answers", "harmful_score", "AntibodyAlignmentConfig", "AntibodyAlignmentTrainer",
    "BoosterAlignmentTrainer", "BoosterConfig", "LisaConfig", "LisaTrainer", "WeightedSFTConfig", "WeightedSFTTrainer",
    "antibody_alignment_gradient", "apply", "attack_direction", "booster_gradient", "gradients", "perturbed",
    "sharpness_gradient", "weighted_finetune_gradient",
]  # fmt: skip
