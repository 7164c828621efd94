"""TAKA: test-time task-aware knowledge aggregation (Uni-Walker §3.4): pick the expert without a task id.

Per learnt task t the retriever stores instruction embeddings E_I,t and scene-observation embeddings E_S,t (from the
frozen base encoder, never from the adapted model, so the index does not drift). For a query (I_q, O_q):

- paper: tasks whose instruction similarity (max cosine to E_I,t) reaches the threshold mu form a mask; among them
  the observation similarity (max cosine to E_S,t) ranks the tasks and the Top-K are returned (if no task passes
  the mask, all tasks compete);
- code (official `train_new.py` variant): w_t = max cos(O_q, E_S,t)^10, minus its mean, values < 0.01 set to 0,
  normalised; if the best weight is < 0.5 the candidates are intersected with the top-3 tasks by instruction
  similarity; the argmax is returned.
"""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray, what: str = "features") -> np.ndarray:
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    if x.size == 0:
        raise ValueError(f"{what}: no feature vectors given")
    if not np.isfinite(x).all():
        raise ValueError(f"{what} hold NaN or inf: retrieval would route them arbitrarily; check the encoder's input")
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class TaskRetriever:
    def __init__(self, threshold: float = 0.5, top_k: int = 2, mode: str = "paper", max_per_task: int = 64):
        if not -1 <= threshold <= 1:
            raise ValueError(f"threshold is a cosine similarity in [-1, 1], got {threshold!r}")
        if top_k < 1 or mode not in ("paper", "code"):
            raise ValueError(f"need top_k >= 1 and mode in ('paper', 'code'), got {top_k!r}, {mode!r}")
        self.threshold, self.top_k, self.mode, self.max_per_task = threshold, top_k, mode, max_per_task
        self.tasks: list = []
        self.instr: list[np.ndarray] = []
        self.obs: list[np.ndarray] = []

    def add_task(self, task, instr_feats, obs_feats) -> None:
        """Store up to `max_per_task` (evenly spaced) instruction and observation embeddings of a task."""
        i, o = _unit(instr_feats, "instruction features"), _unit(obs_feats, "observation features")
        keep = np.linspace(0, len(i) - 1, min(len(i), self.max_per_task)).astype(int)
        self.tasks.append(task)
        self.instr.append(i[keep])
        self.obs.append(o[np.linspace(0, len(o) - 1, min(len(o), self.max_per_task)).astype(int)])

    def similarities(self, instr, obs) -> tuple[np.ndarray, np.ndarray]:
        """(queries x tasks) max-cosine similarities of instructions and of observations."""
        qi, qo = _unit(instr, "instruction features"), _unit(obs, "observation features")
        if len(qi) != len(qo):
            raise ValueError(f"{len(qi)} instruction queries but {len(qo)} observation queries: give one of each")
        for name, q, e in (("instruction", qi, self.instr), ("observation", qo, self.obs)):
            if q.shape[1] != e[0].shape[1]:
                raise ValueError(f"{name} features have {q.shape[1]} dims, the index {e[0].shape[1]}")
        si = np.stack([(qi @ e.T).max(1) for e in self.instr], 1)
        so = np.stack([(qo @ e.T).max(1) for e in self.obs], 1)
        return si, so

    def select(self, instr, obs) -> list[list]:
        """For each query, the ranked tasks to activate (Top-K in 'paper' mode, the argmax in 'code' mode)."""
        if not self.tasks:
            raise RuntimeError("TaskRetriever.select before any add_task")
        si, so = self.similarities(instr, obs)
        out = []
        for i_row, o_row in zip(si, so):
            if self.mode == "paper":
                mask = i_row >= self.threshold
                score = np.where(mask if mask.any() else True, o_row, -np.inf)
                order = np.argsort(-score, kind="stable")[: self.top_k]
                out.append([self.tasks[j] for j in order if np.isfinite(score[j])])
            else:
                w = np.clip(o_row, 0, None) ** 10
                w = w - w.mean()
                w[w < 0.01] = 0
                w = w / w.sum() if w.sum() > 0 else np.full_like(w, 1 / len(w))
                if w.max() < 0.5:
                    top3 = np.argsort(-i_row, kind="stable")[:3]
                    keep = np.zeros_like(w, dtype=bool)
                    keep[top3] = True
                    w = np.where(keep, w + 1e-9 * o_row, -np.inf)
                out.append([self.tasks[int(np.argmax(w))]])
        return out
