"""BrainGFM: a brain graph foundation model pre-trained by graph contrastive learning and a graph masked autoencoder
over a mixture of parcellations, adapted by meta-learned graph prompts (few-shot) and language prompts (zero-shot).

Xu et al., *BrainGFM: A Brain Graph Foundation Model: Pre-Training and Prompt-Tuning across Broad Atlases and
Disorders*, ICLR 2026, https://arxiv.org/abs/2506.02044, code https://github.com/weixinxu666/BrainGFM.

Modules: ``graphs`` (z-scored FC graphs, padded multi-atlas batches, PyG interop), ``text`` (language prompts:
MiniLM in place of Bio_ClinicalBERT), ``model`` (RWSE, [A/P] and [T/D] tokens, graph prompt, Transformer+GCN
backbone, condition head), ``pretrain`` (GCL + GMAE), ``adapt`` (fine-tuning, prompt tuning, first-order MAML of the
prompt, few-shot and zero-shot), ``baselines`` (vanilla GCN).
"""

from .adapt import (
    FitConfig,
    MetaConfig,
    adapt_curve,
    auc,
    finetune,
    fit,
    make_classifier,
    meta_train_prompt,
    predict,
    sample_shots,
    trainable,
    zero_shot,
)
from .baselines import VanillaGCN
from .graphs import GraphSet, build_brain_graph, from_pyg, graph_set, to_pyg
from .model import BrainGFM, BrainGFMConfig, Classifier, ConditionHead, GraphPrompt, rwse
from .pretrain import Decoder, PretrainConfig, augment, gmae_loss, mask_nodes, nt_xent, pretrain
from .text import encode_text

__all__ = [
    "BrainGFM", "BrainGFMConfig", "Classifier", "ConditionHead", "Decoder", "FitConfig", "GraphPrompt", "GraphSet",
    "MetaConfig", "PretrainConfig", "VanillaGCN", "adapt_curve", "auc", "augment", "build_brain_graph", "encode_text",
    "finetune", "fit", "from_pyg", "gmae_loss", "graph_set", "make_classifier", "mask_nodes", "meta_train_prompt",
    "nt_xent", "predict", "pretrain", "rwse", "sample_shots", "to_pyg", "trainable", "zero_shot",
]  # fmt: skip
