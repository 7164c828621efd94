"""PGLLM end to end on an unlabelled support set: graph → guided prompts → stage-2 reader → label propagation.

    pg = PGLLM(PGLLMConfig(k=3, alpha=0.5)).fit(feats, captions)     # frozen encoder features, stage-1 captions
    out = pg.predict(reader, task="cls", classes=names)              # out["pred"], out["scores"], out["scores0"]
    out = pg.predict(reader, task="ood", classes=names, id_classes=[0, 3, 5])   # out["scores"]: ID-ness per sample

``reader`` is anything with ``proba(prompts) -> (n, l)`` class probabilities (`CaptionScorer`, `LikelihoodReader`)
or, for a generative chat LLM, `GenerativeReader(generate)`, which parses the paper's 0-100 scores with retries.
Transductive (PGLLM_T): the support set is the set to be labelled; labels are never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import argmax_random_ties, knn_graph, label_propagation, retrieve
from .prompt import build_prompt, parse_score, parse_scores
from .standins import scores_from_proba


@dataclass
class PGLLMConfig:
    k: int = field(default=3, metadata={"help": "neighbours K of the graph and of retrieval (paper: 3; code: 3, and "
                                                "10 in the recognition propagation script)"})  # fmt: skip
    metric: str = field(default="cosine", metadata={"help": "'cosine' (paper) or 'euclidean' (code)"})
    weight: str | None = field(default=None, metadata={"help": "'cos' (paper) / 'exp' (code); None: the metric's"})
    alpha: float = field(default=0.5, metadata={"help": "propagation strength α in [0, 1) (paper and code: 0.5)"})
    steps: int = field(default=5, metadata={"help": "propagation iterations T (paper and code: 5)"})
    degree: str = field(default="sym", metadata={"help": "'sym' degrees of W + W^T, or 'code' (row sums of W)"})
    guidance: bool = field(default=True, metadata={"help": "add the neighbours' captions to the prompt"})
    propagation: bool = field(default=True, metadata={"help": "refine the scores by label propagation"})
    symmetric_retrieval: bool = field(
        default=True, metadata={"help": "retrieve from W + W^T (graph retrieval); False: plain K nearest (code)"}
    )
    hard: bool = field(default=False, metadata={"help": "round the reader's scores to {0, 100} (GPT-4-like)"})
    style: str = field(default="scores", metadata={"help": "prompt output form: 'scores' (paper) or 'choice'"})

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"PGLLMConfig.k must be >= 1, got {self.k!r}")
        if not 0.0 <= self.alpha < 1.0:
            raise ValueError(f"PGLLMConfig.alpha must lie in [0, 1), got {self.alpha!r}")
        if self.steps < 0:
            raise ValueError(f"PGLLMConfig.steps must be >= 0, got {self.steps!r}")
        if self.metric not in ("cosine", "euclidean") or self.degree not in ("sym", "code"):
            raise ValueError(f"PGLLMConfig: metric in ('cosine', 'euclidean'), degree in ('sym', 'code'); got "
                             f"{self.metric!r}, {self.degree!r}")  # fmt: skip


class PGLLM:
    def __init__(self, cfg: PGLLMConfig | None = None, graph=None):
        self.cfg = cfg or PGLLMConfig()
        self.graph = graph  # a precomputed (e.g. control) graph; otherwise built in `fit`

    def fit(self, feats, captions):
        """Step 1: the kNN graph over the frozen features of the support set (and its stage-1 captions)."""
        if len(feats) != len(captions):
            raise ValueError(f"{len(feats)} feature rows but {len(captions)} captions")
        self.captions = list(captions)
        if self.graph is None:
            self.graph = knn_graph(feats, self.cfg.k, self.cfg.metric, self.cfg.weight)
        return self

    def neighbors(self, i: int) -> list[int]:
        return retrieve(self.graph, i, self.cfg.k, symmetric=self.cfg.symmetric_retrieval)

    def prompts(self, task: str, classes, id_classes=None) -> list[str]:
        """Step 2: one prompt per support sample, with its graph neighbours' captions when guidance is on."""
        names = [classes[c] for c in id_classes] if id_classes is not None else None
        out = []
        for i, cap in enumerate(self.captions):
            nb = [self.captions[j] for j in self.neighbors(i)] if self.cfg.guidance else []
            out.append(build_prompt(task, classes, cap, nb, self.cfg.style, id_classes=names))
        return out

    def refine(self, scores0) -> np.ndarray:
        """Step 3: label propagation of the scores over the graph (identity when propagation is off)."""
        if not self.cfg.propagation:
            return np.asarray(scores0, dtype=np.float64)
        return label_propagation(scores0, self.graph, self.cfg.alpha, self.cfg.steps, self.cfg.degree)

    def predict(self, reader, task: str = "cls", classes=(), id_classes=None, seed: int = 0, proba=None) -> dict:
        """Scores before (``scores0``) and after (``scores``) refinement; ``pred`` (recognition) by argmax with random
        ties. ``proba`` skips the reader when the class probabilities of these prompts are already known."""
        if proba is None:
            proba = reader.proba(self.prompts(task, classes, id_classes))
        s0 = scores_from_proba(proba, task, id_classes, self.cfg.hard, seed)
        s = self.refine(s0)
        out = {"scores0": s0, "scores": s, "proba": proba}
        if task == "cls":
            out["pred"] = argmax_random_ties(s, seed)
        return out


class GenerativeReader:
    """Stage 2 through a text-generating chat LLM (``generate(prompt) -> str``, temperature 0.1 in the paper) with the
    paper's output contract: exactly l integers in 0..100 (recognition) or one (OOD), retried up to ``retries`` times.
    Failures are kept (uniform scores) and counted in ``failures``, never zero-padded silently."""

    def __init__(self, generate, n_classes: int, task: str = "cls", retries: int = 5):
        self.generate, self.n_classes, self.task, self.retries, self.failures = generate, n_classes, task, retries, 0

    def proba(self, prompts) -> np.ndarray:
        out = []
        for p in prompts:
            got = None
            for _ in range(self.retries):
                text = self.generate(p)
                got = parse_scores(text, self.n_classes) if self.task == "cls" else parse_score(text)
                if got is not None:
                    break
            if got is None:
                self.failures += 1
                got = [1] * self.n_classes if self.task == "cls" else 50
            if self.task == "cls":
                v = np.asarray(got, dtype=np.float64) + 1e-9
                out.append(v / v.sum())
            else:
                out.append([got / 100, 1 - got / 100])
        return np.asarray(out)
