"""Real retrievers over a document collection: BM25 (``rank-bm25``'s Okapi BM25) and TF-IDF cosine (scikit-learn).

SeekBench's agents search a local Wikipedia index (the Search-R1 retriever); here the same role is played by BM25 over
the documents of a world. A retriever is deterministic: the same query returns the same documents, which is exactly
why a *repeated* query cannot recover from a poor result while a reformulated one can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

_TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an the of is was in on at to and or for by with what which who whose s".split())  # noqa: SIM905


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric tokens without a few function words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class RetrieverConfig:
    k: int = field(default=3, metadata={"help": "documents returned per query (Search-R1's retriever: topk=3)"})
    k1: float = field(default=1.5, metadata={"help": "BM25 term-frequency saturation (rank-bm25 default 1.5)"})
    b: float = field(default=0.75, metadata={"help": "BM25 length normalisation (rank-bm25 default 0.75)"})

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"RetrieverConfig.k must be ≥ 1, got {self.k}")
        if self.k1 < 0 or not 0 <= self.b <= 1:
            raise ValueError(f"RetrieverConfig: need k1 ≥ 0 and b in [0, 1], got k1={self.k1}, b={self.b}")


class BM25Retriever:
    """Okapi BM25 over ``docs`` (``[{"title", "content", ...}]``); ``search(query)`` returns the top-k documents."""

    def __init__(self, docs: list[dict], config: RetrieverConfig | None = None):
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as exc:  # an extra, not a core dependency
            raise ImportError("BM25Retriever needs rank-bm25: pip install rank-bm25 (or use TfidfRetriever)") from exc
        if not docs:
            raise ValueError("BM25Retriever needs at least one document")
        self.docs, self.config = docs, config or RetrieverConfig()
        self._bm25 = BM25Okapi(
            [tokenize(f"{d['title']} {d['content']}") for d in docs], k1=self.config.k1, b=self.config.b
        )
        self.search = lru_cache(maxsize=None)(self._search)

    def scores(self, query: str) -> np.ndarray:
        return self._bm25.get_scores(tokenize(query))

    def _search(self, query: str) -> tuple[int, ...]:
        """Indices of the top-k documents (ties broken by document order, so the result is deterministic)."""
        s = self.scores(query)
        return tuple(int(i) for i in np.argsort(-s, kind="stable")[: self.config.k])


class TfidfRetriever:
    """TF-IDF cosine similarity (scikit-learn), the dossier's alternative to BM25."""

    def __init__(self, docs: list[dict], config: RetrieverConfig | None = None):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not docs:
            raise ValueError("TfidfRetriever needs at least one document")
        self.docs, self.config = docs, config or RetrieverConfig()
        self._vec = TfidfVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None)
        self._m = self._vec.fit_transform([f"{d['title']} {d['content']}" for d in docs])
        self.search = lru_cache(maxsize=None)(self._search)

    def scores(self, query: str) -> np.ndarray:
        return (self._m @ self._vec.transform([query]).T).toarray().ravel()

    def _search(self, query: str) -> tuple[int, ...]:
        s = self.scores(query)
        return tuple(int(i) for i in np.argsort(-s, kind="stable")[: self.config.k])
