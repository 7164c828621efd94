"""Brain graphs from ROI time series, padded dense batches of graphs from several atlases, and PyG interop.

Recipe of the official code (`main_meta_learning.py`, dossier §1): Pearson correlation C of the ROI series,
z-scored over the whole matrix, C_norm = (C - mean C) / (std C + 1e-6); node features X = C_norm (row i is node i's
connectivity profile, so the feature width is N_a); adjacency A = 1[C_norm > 0.6] (diagonal zeroed: ours). Atlases
of different sizes are batched by zero-padding to N_max nodes (and N_max feature columns) with a node mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def build_brain_graph(timeseries: np.ndarray, threshold: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """(X, A) of one scan from its (T, N_a) ROI series: X = z-scored Pearson matrix, A = 1[X > threshold]."""
    ts = np.asarray(timeseries, dtype=float)
    if ts.ndim != 2 or ts.shape[0] < 3:
        raise ValueError(f"timeseries must be (T, N_rois) with T >= 3, got shape {ts.shape}")
    c = np.corrcoef(ts.T)
    c = np.nan_to_num(c)  # a constant ROI has no correlation
    x = (c - c.mean()) / (c.std() + 1e-6)  # z-score over the whole matrix (code)
    a = (x > threshold).astype(np.float32)
    np.fill_diagonal(a, 0.0)
    return x.astype(np.float32), a


@dataclass
class GraphSet:
    """Dense padded graphs: ``x`` (G, N_max, N_max) features, ``adj`` (G, N_max, N_max), ``n`` (G,) valid nodes,
    ``atlas`` (G,) atlas ids, ``y`` (G,) labels (-1 when unlabelled), ``subject`` (G,) subject ids."""

    x: torch.Tensor
    adj: torch.Tensor
    n: torch.Tensor
    atlas: torch.Tensor
    y: torch.Tensor
    subject: torch.Tensor

    def __len__(self) -> int:
        return len(self.n)

    def __getitem__(self, idx) -> GraphSet:
        return GraphSet(*(t[idx] for t in (self.x, self.adj, self.n, self.atlas, self.y, self.subject)))

    @property
    def mask(self) -> torch.Tensor:
        return torch.arange(self.x.shape[1])[None, :] < self.n[:, None]

    @staticmethod
    def cat(sets: list[GraphSet]) -> GraphSet:
        nmax = max(s.x.shape[1] for s in sets)
        pad = [GraphSet(_pad(s.x, nmax), _pad(s.adj, nmax), s.n, s.atlas, s.y, s.subject) for s in sets]
        return GraphSet(*(torch.cat([getattr(s, f) for s in pad]) for f in ("x", "adj", "n", "atlas", "y", "subject")))


def _pad(t: torch.Tensor, nmax: int) -> torch.Tensor:
    return torch.nn.functional.pad(t, (0, nmax - t.shape[2], 0, nmax - t.shape[1]))


def graph_set(series: list[np.ndarray], atlas_id: int, y=None, threshold: float = 0.6, n_max: int | None = None):
    """A :class:`GraphSet` from a list of (T, N_a) series of one atlas."""
    if not series:
        raise ValueError("graph_set: empty list of series")
    xs, adjs = zip(*(build_brain_graph(s, threshold) for s in series))
    n = xs[0].shape[0]
    n_max = n_max or n
    if n > n_max:
        raise ValueError(f"graph_set: atlas with {n} ROIs exceeds n_max={n_max}")
    g = len(xs)
    y = torch.full((g,), -1) if y is None else torch.as_tensor(np.asarray(y), dtype=torch.long)
    return GraphSet(
        _pad(torch.from_numpy(np.stack(xs)), n_max),
        _pad(torch.from_numpy(np.stack(adjs)), n_max),
        torch.full((g,), n),
        torch.full((g,), atlas_id),
        y,
        torch.arange(g),
    )


def to_pyg(gs: GraphSet) -> list:
    """A list of torch_geometric ``Data`` (x = the N_a valid feature columns, edge_index from A, y), for the
    sparse-graph baselines and for users who hold PyG datasets."""
    from torch_geometric.data import Data
    from torch_geometric.utils import dense_to_sparse

    out = []
    for i in range(len(gs)):
        k = int(gs.n[i])
        ei, _ = dense_to_sparse(gs.adj[i, :k, :k])
        out.append(Data(x=gs.x[i, :k, :k], edge_index=ei, y=gs.y[i : i + 1], atlas=gs.atlas[i : i + 1]))
    return out


def from_pyg(batch, n_max: int | None = None) -> GraphSet:
    """A :class:`GraphSet` from a PyG ``Batch`` (``x`` rows = nodes, ``edge_index``, optional ``y`` and ``atlas``);
    uses ``to_dense_batch`` / ``to_dense_adj``."""
    from torch_geometric.utils import to_dense_adj, to_dense_batch

    x, mask = to_dense_batch(batch.x, batch.batch, max_num_nodes=n_max)
    adj = to_dense_adj(batch.edge_index, batch.batch, max_num_nodes=x.shape[1])
    nmax = x.shape[1]
    x = torch.nn.functional.pad(x, (0, max(0, nmax - x.shape[2])))[:, :, :nmax]
    g = x.shape[0]
    y = getattr(batch, "y", None)
    atlas = getattr(batch, "atlas", None)
    return GraphSet(
        x.float(),
        adj.float(),
        mask.sum(1),
        atlas if atlas is not None else torch.zeros(g, dtype=torch.long),
        y if y is not None else torch.full((g,), -1),
        torch.arange(g),
    )
