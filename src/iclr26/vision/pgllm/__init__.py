"""PGLLM: *Test-Time Optimization of 3D Point Cloud LLM via Manifold-Aware In-Context Guidance and Refinement*
(ICLR 2026, https://openreview.net/forum?id=qsra0EsUpe; code https://github.com/handsome999KK/PGLLM).

A training-free add-on to two-stage 3D LLM pipelines (stage 1: a 3D MLLM captions each point cloud; stage 2: a text
LLM answers from the caption). Over an unlabelled support set, a kNN graph of frozen point-encoder features
(`graph.knn_graph`) supplies (i) the captions of each query's graph neighbours to the stage-2 prompt (in-context
guidance, `prompt.build_prompt`) and (ii) label propagation of the LLM's class scores over the graph
(`graph.label_propagation`). `pipeline.PGLLM` runs the three steps; `standins` holds the small models trained here
that replace PointLLM / Point-BERT / GPT-4, and `LikelihoodReader` for a real Hugging Face causal LM.
"""

from .graph import (
    argmax_random_ties,
    knn_graph,
    label_propagation,
    ood_metrics,
    propagation_closed_form,
    propagation_matrix,
    random_graph,
    retrieve,
)
from .pipeline import PGLLM, GenerativeReader, PGLLMConfig
from .prompt import build_prompt, parse_score, parse_scores, split_prompt
from .standins import (
    Captioner,
    CaptionScorer,
    LikelihoodReader,
    attributes,
    encode,
    predict_logits,
    scores_from_proba,
    train_pointnet,
)

__all__ = [
    "knn_graph", "random_graph", "retrieve", "propagation_matrix", "label_propagation", "propagation_closed_form",
    "argmax_random_ties", "ood_metrics", "build_prompt", "split_prompt", "parse_scores", "parse_score", "PGLLM",
    "PGLLMConfig", "GenerativeReader", "Captioner", "CaptionScorer", "LikelihoodReader", "attributes", "encode",
    "predict_logits", "scores_from_proba", "train_pointnet",
]  # fmt: skip
