"""Reproduction: BrainGFM, *A Brain Graph Foundation Model: Pre-Training and Prompt-Tuning across Broad Atlases and
Disorders* (Xu et al., ICLR 2026, https://arxiv.org/abs/2506.02044; code https://github.com/weixinxu666/BrainGFM).

Idea. Brain graphs (nodes = ROIs, features = z-scored FC rows, edges = thresholded FC) from many parcellations are
pooled to pre-train one graph Transformer by graph contrastive learning (GCL) plus a graph masked autoencoder (GMAE);
each graph carries a learnable atlas token [A/P] and a disorder token [T/D] from a text encoder. Downstream, graph
prompts (learnable node/edge perturbations, frozen backbone) are meta-learned across (disorder, atlas) tasks for
few-shot use, and language prompts (the text of an unseen disorder) give zero-shot transfer.

Protocol (no fMRI or Bio_ClinicalBERT here: `iclr26.science.braingfm.world` and the MiniLM sentence encoder). Per seed:
a world (264 Power-atlas "voxels" in 7 networks, 6 synthetic atlases of 16-48 parcels, 3 sites, disorders that are
text-describable edits of the network couplings); an unlabelled mixed-disorder corpus parcellated by every atlas.
(1) Pre-training: BrainGFM-tiny pre-trained by GCL+GMAE on all atlases ("multi") or on the target atlas only
("single"), both early-stopped on a validation loss under the same step budget; then full fine-tuning on seen
disorders (target atlas, 40 labelled subjects), against the same model from scratch and a vanilla GCN (PyG); every arm's
lr tuned on a validation split (grid extended past edges), early stopping on validation AUC; shuffled-label control.
(2) Few-shot: the graph prompt + language projection + shared head meta-learned by first-order MAML over
(seen disorder, atlas) tasks on the frozen multi backbone; k-shot adaptation on unseen disorders vs full fine-tuning,
linear probing and a not-meta-learned prompt (control); adaptation lr and steps tuned on a held-out validation disorder.
(3) Zero-shot: the meta-learned model scores unseen disorders whose descriptions compose seen phrases, with their own
text and (control) with another unseen disorder's text; a disorder naming an unseen network is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclr26.core.claims import Check, Claim, fails


@dataclass(frozen=True)
class Cfg:
    seeds: tuple[int, ...] = (0, 1, 2)
    n_timepoints: int = field(default=100, metadata={"help": "fMRI time points per scan (dossier: 200)"})
    target_atlas: str = field(default="func24", metadata={"help": "downstream atlas (paper: Schaefer100)"})
    n_pretrain: int = field(default=400, metadata={"help": "unlabelled pre-training subjects (x 6 atlases)"})
    n_pretrain_val: int = field(default=80, metadata={"help": "subjects for the pre-training validation loss"})
    pretrain_steps: int = field(
        default=6000,
        metadata={
            "help": "pre-training step cap, a safety net: early stopping on the validation loss decides (ours; "
            "VERSION 3: 3,000, which the multi-atlas variant hit on every seed; VERSION 2: a 300-step budget)"
        },
    )
    pretrain_schedule_steps: int = field(
        default=300, metadata={"help": "steps of the code's 10-'epoch' mask/augmentation schedules, then held (ours)"}
    )
    pretrain_batch: int = field(default=32, metadata={"help": "graphs per pre-training batch (code: 64)"})
    ft_disorders: tuple[str, ...] = field(default=("S1", "S2", "S3"), metadata={"help": "claim 1 disorders"})
    n_train: int = field(default=40, metadata={"help": "labelled fine-tuning subjects per disorder (balanced)"})
    n_val: int = field(default=60, metadata={"help": "validation subjects per disorder (lr, early stopping)"})
    n_test: int = field(default=100, metadata={"help": "test subjects per disorder"})
    lr_grid: tuple[float, ...] = field(
        default=(3e-3, 1e-2), metadata={"help": "fine-tuning lrs to start from; x3 past a winning edge (ours)"}
    )
    max_epochs: int = field(default=30, metadata={"help": "fine-tuning epoch cap (code: 100)"})
    patience: int = field(default=6, metadata={"help": "epochs without a better validation AUC before stopping"})
    meta_disorders: tuple[str, ...] = field(default=("S1", "S2", "S3", "S4", "S5", "S6"), metadata={"help": "seen"})
    n_meta: int = field(default=60, metadata={"help": "subjects per seen disorder for meta-learning (all atlases)"})
    meta_iters: int = field(default=200, metadata={"help": "first-order MAML iterations (dossier: 200)"})
    meta_inner_steps: int = field(default=2, metadata={"help": "inner SGD steps (code: 5; ours for time)"})
    meta_outer_lr: float = field(default=5e-3, metadata={"help": "outer Adam lr (code: 5e-4; ours for the short run)"})
    k_shot: int = field(default=5, metadata={"help": "shots per class (paper code: 5)"})
    shot_reps: int = field(default=2, metadata={"help": "support draws per unseen disorder"})
    adapt_lrs: tuple[float, ...] = field(
        default=(1e-2, 3e-2), metadata={"help": "few-shot lrs to start from; x3 past a winning edge (ours)"}
    )
    adapt_steps: tuple[int, ...] = field(default=(0, 10, 20, 40), metadata={"help": "few-shot step grid"})
    prompt_arm: bool = field(default=False, metadata={"help": "also report prompt tuning on seen disorders"})
    unseen: tuple[str, ...] = field(default=("U1", "U2"), metadata={"help": "compositional unseen disorders"})
    ablations: bool = field(default=False, metadata={"help": "also pre-train GCL-only and GMAE-only (slower)"})

    def __post_init__(self):
        if self.n_train < 4 or self.n_val < 4 or self.n_test < 4 or self.n_pretrain < 8:
            raise ValueError(f"Cfg: n_train/n_val/n_test >= 4 and n_pretrain >= 8 required, got {self!r}")
        if self.k_shot < 1 or 2 * self.k_shot > self.n_val:
            raise ValueError(f"Cfg.k_shot must be in [1, n_val/2], got {self.k_shot!r}")
        if len(self.unseen) < 2:
            raise ValueError("Cfg.unseen needs >= 2 disorders (the swapped-text control pairs them)")


CONFIGS = {
    "smoke": Cfg(seeds=(0, 1), n_pretrain=40, n_pretrain_val=16, pretrain_steps=20, pretrain_batch=16,
                 ft_disorders=("S1",), n_train=16, n_val=12, n_test=20, lr_grid=(1e-3, 3e-3), max_epochs=3,
                 meta_disorders=("S1", "S2"), n_meta=16, meta_iters=3, k_shot=2, shot_reps=1, adapt_lrs=(1e-2,),
                 adapt_steps=(0, 2)),
    "quick": Cfg(),
    "full": Cfg(seeds=tuple(range(10)), n_timepoints=200, n_pretrain=1500, pretrain_steps=10000,
                pretrain_schedule_steps=3000, pretrain_batch=64,
                ft_disorders=("S1", "S2", "S3", "S4"), n_train=80, n_test=200, max_epochs=100, n_meta=120,
                meta_iters=400, meta_inner_steps=5, shot_reps=5, adapt_steps=(0, 5, 10, 20, 40, 80), prompt_arm=True,
                ablations=True),
}  # fmt: skip
VERSION = 4  # 4: pre-training cap 6,000 (every variant now stops by its rule; 3,000 bound the multi variant)
# 3: pre-training until its validation loss stops improving (the 300-step budget was used up)
# 2: lr grids start from two values and grow past winning edges (was three), for time
EXPECTED_SECONDS = {"smoke": 40, "quick": 900, "full": 28800}  # quick v4: 893 s wall empty cache, 2 jobs
ACCEPTS_MODEL = False
MODEL_NOTE = "BrainGFM is a graph model; the language prompts use MiniLM (pass backend='clinicalbert' to encode_text)"

CLAIMS = [
    Claim(
        "testbed",
        "The testbed is solvable: a logistic regression on FC edges with many labels (400 subjects) separates patients",
        checks=(Check("oracle_auc", ">", 0.75),),
        paper="(our check of the synthetic world; not in the paper)",
        role="testbed",
    ),
    Claim(
        "pretraining-headroom",
        "Headroom: the many-label FC oracle beats the single-atlas pre-trained model by more than 0.05 AUC on the "
        "same test subjects, so the 40-label fine-tuning leaves room for a better pre-training to show",
        checks=(Check("oracle_auc", ">", "auc_single", margin=0.05),),
        paper="(our gate)",
        role="headroom",
    ),
    Claim(
        "shuffled-control",
        "Negative control: the multi-atlas backbone fine-tuned on shuffled labels stays near chance (AUC below 0.6)",
        checks=(Check("auc_shuffled", "<", 0.6),),
        paper="(our control; not in the paper)",
        role="negative control",
    ),
    Claim(
        "mixed-atlas-pretraining",
        "Pre-training over mixed atlases beats no pre-training and single-atlas pre-training (fine-tuning AUC, mean "
        "over seen disorders)",
        checks=(Check("auc_multi", ">", "auc_scratch"), Check("auc_multi", ">", "auc_single")),
        paper="ABIDE II accuracy: none 65.2, Schaefer100 only 67.5, all 8 atlases 70.5 (%); AUC vs vanilla GCN "
        "e.g. ADHD200 70.3 vs 62.3",
        requires=("testbed", "pretraining-headroom", "shuffled-control"),
    ),
    Claim(
        "random-prompt-control",
        "Negative control: the same graph prompt without meta-learning (the mechanism removed) does not pass the "
        "claim's check against full fine-tuning",
        checks=(fails(Check("fs_prompt_random", ">", "fs_finetune")),),
        paper="(our control)",
        role="negative control",
    ),
    Claim(
        "graph-prompt-few-shot",
        "In few-shot transfer to unseen disorders a meta-learned graph prompt (frozen backbone) beats full "
        "fine-tuning, and beats the same prompt without meta-learning",
        checks=(Check("fs_prompt_meta", ">", "fs_finetune"), Check("fs_prompt_meta", ">", "fs_prompt_random")),
        paper="prompts matter most at 1% labels / few-shot (paper's few-shot tables; values not recovered)",
        requires=("testbed", "random-prompt-control"),
    ),
    Claim(
        "untrained-zero-shot-control",
        "Negative control: the prompt and head before meta-learning do not pass the claim's above-chance check "
        "(zero-shot AUC not above 0.55)",
        checks=(fails(Check("zs_auc_untrained", ">", 0.5, margin=0.05)),),
        paper="(our control)",
        role="negative control",
    ),
    Claim(
        "language-zero-shot",
        "Language prompts give above-chance zero-shot AUC on unseen disorders composed of seen phrases, and the "
        "disorder's own description beats another unseen disorder's description",
        checks=(Check("zs_auc", ">", 0.5, margin=0.05), Check("zs_auc", ">", "zs_auc_swapped")),
        paper="zero-shot on unseen disorders above chance (an aggregator's 'AUC > 0.82' could not be verified)",
        requires=("testbed", "untrained-zero-shot-control"),
    ),
]
HEADLINE = "mixed-atlas-pretraining"

METRICS = {
    "oracle_auc": "logistic regression (C tuned by 5-fold CV) on FC upper triangles of 400 subjects, test AUC, "
    "mean over the fine-tuning disorders (target atlas)",
    "auc_scratch": "BrainGFM-tiny trained from scratch (full fine-tuning), test AUC, mean over ft_disorders",
    "auc_gcn": "vanilla GCN (PyG GCNConv x2 + mean pool) from scratch, test AUC, mean over ft_disorders",
    "auc_single": "pre-trained (GCL+GMAE) on the target atlas only, then full fine-tuning, test AUC",
    "auc_multi": "pre-trained (GCL+GMAE) on all 6 atlases, then full fine-tuning, test AUC",
    "auc_multi_gcl": "pre-trained GCL only on all atlases (ablations), test AUC",
    "auc_multi_gmae": "pre-trained GMAE only on all atlases (ablations), test AUC",
    "auc_prompt": "multi backbone, prompt tuning (frozen backbone), test AUC",
    "auc_shuffled": "multi backbone fine-tuned on shuffled training labels (control), test AUC",
    "pt_steps_multi": "pre-training steps run by the multi variant (early stopping)",
    "pt_steps_single": "pre-training steps run by the single variant",
    "fs_prompt_meta": "k-shot AUC on unseen disorders: meta-learned prompt, then prompt tuning (mean over disorders "
    "and support draws)",
    "fs_finetune": "k-shot AUC: full fine-tuning of the pre-trained backbone with a fresh head",
    "fs_finetune_meta": "k-shot AUC: full fine-tuning starting from the meta-learned model (extra arm)",
    "fs_prompt_random": "k-shot AUC: prompt tuning from a prompt that was not meta-learned (control)",
    "fs_linear": "k-shot AUC: linear probe of the pre-trained backbone",
    "zs_auc": "zero-shot AUC on the unseen compositional disorders with their own descriptions (meta-learned model)",
    "zs_auc_swapped": "zero-shot AUC with another unseen disorder's description (control)",
    "zs_auc_unseen_words": "zero-shot AUC on U3 (its description names a network absent from every seen text)",
    "zs_auc_val": "zero-shot AUC on the validation disorder V",
    "zs_auc_untrained": "zero-shot AUC with the prompt/head before meta-learning (control)",
}
for _d in ("S1", "S2", "S3", "S4", "S5", "S6"):
    for _a in ("scratch", "gcn", "single", "multi"):
        METRICS[f"auc_{_a}_{_d}"] = f"{_a}: test AUC on disorder {_d}"
for _d in ("U1", "U2"):
    METRICS[f"zs_auc_{_d}"] = f"zero-shot AUC on {_d}"
for _a in ("prompt_meta", "finetune", "finetune_meta", "prompt_random", "linear"):
    METRICS[f"fs_{_a}_lr"] = f"few-shot lr chosen on the validation disorder for {_a}"
    METRICS[f"fs_{_a}_steps"] = f"few-shot steps chosen on the validation disorder for {_a}"
