"""Probes for frozen backbones: linear probing, attentive-pooling baselines, and Efficient Probing (EP).

Psomas et al., "Attention, Please! Revisiting Attentive Probing Through the Lens of Efficiency" (ICLR 2026,
https://arxiv.org/abs/2506.10178; official code https://github.com/billpsomas/efficient-probing). A probe is
`pooling → BatchNorm1d(affine=False) → Linear`, trained on frozen tokens X ∈ R^{N×D}. Linear probing (LP) pools by
taking [CLS] or the mean token (GAP). Attentive probes pool with cross-attention from learned queries. The paper's
observation: with one learned query u, head h of multi-head cross-attention scores token x by
(W_q^h u)ᵀ(W_k^h x) = (W_k^{hᵀ} W_q^h u)ᵀ x, i.e. by a single learned vector in the full token space, so W_q and W_k
are redundant given free queries, and W_o is absorbed by the linear classifier. **EP** keeps M learned queries
Q ∈ R^{M×D} that score the raw tokens, and one value projection W_v ∈ R^{D×D/d_out} whose output channels are split
into M contiguous groups, one per query:

    a_j = softmax_n(q_jᵀ x_n / √D)            (Eq. 1: one attention map per query, over tokens)
    y_j = a_jᵀ (X W_v)[:, group j]             (Eq. 2: query j pools only its own channel group)
    y   = [y_1, …, y_M] ∈ R^{D/d_out}           (Eq. 3: no output projection)

so its pooling has M·D + D²/d_out parameters (`ep_num_parameters`), against 4·D² for a multi-head cross-attention
(MHCA) probe. Baselines here: LP on [CLS] and on GAP; the AIM attentive probe (learned query, W_k, W_v, heads);
MHCA (learned query + W_q, W_k, W_v, W_o, as in V-JEPA/SigLIP-MAP pooling without their MLP); SimPool (GAP query,
LayerNorm, W_q, W_k); AbMILP (MLP attention scores over tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn


def _check_tokens(x: torch.Tensor, dim: int) -> None:
    if x.dim() != 3 or x.shape[-1] != dim or x.shape[1] < 1:
        raise ValueError(f"expected tokens of shape (batch, n_tokens ≥ 1, {dim}), got {tuple(x.shape)}")


@dataclass
class EPConfig:
    """Efficient Probing hyper-parameters (official defaults)."""

    num_queries: int = field(default=32, metadata={"help": "M learned queries (≥ 1); repo default `ep_queries` 32"})
    d_out: int = field(default=1, metadata={"help": "width reduction: output width D/d_out (≥ 1); repo default 1"})
    use_cls: bool = field(default=False, metadata={"help": "also attend to [CLS] (`ep_all`); default patches only"})
    init_std: float = field(default=0.02, metadata={"help": "std of the query initialisation (> 0); repo: 0.02"})

    def __post_init__(self):
        if self.num_queries < 1 or self.d_out < 1:
            raise ValueError(f"EPConfig.num_queries and d_out must be ≥ 1, got {self.num_queries}, {self.d_out}")
        if not 0 < self.init_std < math.inf:
            raise ValueError(f"EPConfig.init_std must be finite and > 0, got {self.init_std}")


class EfficientProbing(nn.Module):
    """EP pooling: M queries on raw tokens (no W_q, W_k, W_o), one value projection split into M channel groups."""

    def __init__(self, dim: int, cfg: EPConfig | None = None):
        super().__init__()
        self.cfg = c = cfg or EPConfig()
        if dim % (c.num_queries * c.d_out):
            valid = [m for m in range(1, dim + 1) if dim % (m * c.d_out) == 0]
            raise ValueError(
                f"EP needs dim divisible by num_queries·d_out: {dim} % ({c.num_queries}·{c.d_out}) ≠ 0; "
                f"valid num_queries for d_out={c.d_out}: {valid}"
            )
        self.dim, self.out_dim = dim, dim // c.d_out
        self.queries = nn.Parameter(torch.randn(c.num_queries, dim) * c.init_std)
        self.v = nn.Linear(dim, self.out_dim, bias=False)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """(B, M, N) attention of each query over the tokens; rows sum to one."""
        _check_tokens(x, self.dim)
        # Eq. 1: z_{j,n} = q_jᵀ x_n / √D (single head, so the scale uses the full width), softmax over tokens
        return torch.softmax(torch.einsum("md,bnd->bmn", self.queries, x) / math.sqrt(self.dim), dim=-1)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        a = self.attention(x)
        b, n, _ = x.shape
        m = self.cfg.num_queries
        v = self.v(x).reshape(b, n, m, self.out_dim // m)  # contiguous channel groups, one per query
        y = torch.einsum("bmn,bnmc->bmc", a, v).reshape(b, self.out_dim)  # Eq. 2–3
        return (y, a) if return_attention else y


def ep_num_parameters(dim: int, num_classes: int, num_queries: int = 32, d_out: int = 1) -> int:
    """Trainable parameters of an EP probe: M·D (queries) + D·D/d_out (W_v) + (D/d_out)·C + C (classifier)."""
    if not all(isinstance(v, int) and v >= 1 for v in (dim, num_classes, num_queries, d_out)):
        raise ValueError("dim, num_classes, num_queries and d_out must all be integers ≥ 1")
    if dim % (num_queries * d_out):
        raise ValueError(f"EP needs dim divisible by num_queries·d_out: {dim} % ({num_queries}·{d_out}) ≠ 0")
    return num_queries * dim + dim * (dim // d_out) + (dim // d_out) * num_classes + num_classes


class ClsPool(nn.Module):
    """Linear probing on [CLS]: the first token."""

    def forward(self, x):
        return x[:, 0]


class MeanPool(nn.Module):
    """Linear probing on GAP: the mean token."""

    def forward(self, x):
        return x.mean(1)


class AIMPool(nn.Module):
    """AIM's attentive probe: BN over tokens, a learned query used directly (no W_q), W_k, W_v, H heads, no W_o."""

    def __init__(self, dim: int, num_heads: int = 12):
        super().__init__()
        if num_heads < 1 or dim % num_heads:
            raise ValueError(f"AIMPool needs dim ({dim}) divisible by num_heads ({num_heads}) ≥ 1")
        self.h, self.dim = num_heads, dim
        self.bn = nn.BatchNorm1d(dim, affine=False, eps=1e-6)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.query = nn.Parameter(torch.randn(1, dim) * 0.02)

    def forward(self, x):
        _check_tokens(x, self.dim)
        b, n, d = x.shape
        x = self.bn(x.transpose(1, 2)).transpose(1, 2)
        split = lambda t: t.reshape(b, -1, self.h, d // self.h).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query.expand(b, 1, d)), split(self.k(x)), split(self.v(x))
        out = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h), -1) @ v  # (B, H, 1, d/H)
        return out.transpose(1, 2).reshape(b, d)


class MHCAPool(nn.Module):
    """Multi-head cross-attention from one learned query: softmax((W_q u)(X W_k)ᵀ/√d_h) X W_v, then W_o."""

    def __init__(self, dim: int, num_heads: int = 4, bias: bool = True):
        super().__init__()
        if num_heads < 1 or dim % num_heads:
            raise ValueError(f"MHCAPool needs dim ({dim}) divisible by num_heads ({num_heads}) ≥ 1")
        self.dim = dim
        self.query = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.attn = nn.MultiheadAttention(dim, num_heads, bias=bias, batch_first=True)

    def forward(self, x, return_attention: bool = False):
        _check_tokens(x, self.dim)
        out, a = self.attn(self.query.expand(x.shape[0], -1, -1), x, x, average_attn_weights=False)
        return (out[:, 0], a[:, :, 0]) if return_attention else out[:, 0]


class SimPool(nn.Module):
    """SimPool: query = W_q LN(GAP(X)), keys = W_k LN(X), values = LN(X); one head, no value/output projection."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        _check_tokens(x, self.dim)
        # the official module feeds the raw GAP to W_q and LayerNorm-ed patches to W_k and as values
        q, xn = self.wq(x.mean(1, keepdim=True)), self.norm(x)
        a = torch.softmax(q @ self.wk(xn).transpose(1, 2) / math.sqrt(self.dim), -1)
        return (a @ xn)[:, 0]


class AbMILPPool(nn.Module):
    """Attention-based MIL pooling: a_n = softmax_n(MLP(x_n)) with a tanh MLP of depth 2; y = Σ_n a_n x_n."""

    def __init__(self, dim: int, depth: int = 2):
        super().__init__()
        if depth < 1:
            raise ValueError(f"AbMILPPool.depth must be ≥ 1, got {depth}")
        self.dim = dim
        layers: list[nn.Module] = []
        for _ in range(depth - 1):
            layers += [nn.Linear(dim, dim), nn.Tanh()]
        self.score = nn.Sequential(*layers, nn.Linear(dim, 1))

    def forward(self, x):
        _check_tokens(x, self.dim)
        return (torch.softmax(self.score(x), 1) * x).sum(1)


class Probe(nn.Module):
    """`pooling → BatchNorm1d(width, affine=False, eps=1e-6) → Linear(width, C)` on a chosen token set.

    `tokens` is (B, T, D) with [CLS] first when `has_cls`; `token_set` is "cls", "patches" or "all".
    """

    def __init__(self, pool: nn.Module, width: int, num_classes: int, token_set: str = "patches", has_cls: bool = True):
        super().__init__()
        if token_set not in ("cls", "patches", "all"):
            raise ValueError(f"token_set must be 'cls', 'patches' or 'all', got {token_set!r}")
        if token_set == "cls" and not has_cls:
            raise ValueError("a [CLS] probe needs tokens with [CLS] first (has_cls=True); use 'lp_gap' otherwise")
        if not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes must be an integer ≥ 2, got {num_classes!r}")
        self.pool, self.token_set, self.has_cls = pool, token_set, has_cls
        self.bn = nn.BatchNorm1d(width, affine=False, eps=1e-6)
        self.classifier = nn.Linear(width, num_classes)

    def select(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 3:
            raise ValueError(f"expected tokens (batch, n_tokens, dim), got {tuple(tokens.shape)}")
        if not bool(torch.isfinite(tokens).all()):
            raise ValueError("tokens contain NaN or inf; clean the cached features")
        if self.token_set == "patches" and self.has_cls and tokens.shape[1] < 2:
            raise ValueError(f"tokens hold only [CLS] (shape {tuple(tokens.shape)}): no patch tokens to pool")
        if self.token_set == "cls":
            return tokens[:, :1]
        return tokens[:, 1:] if (self.token_set == "patches" and self.has_cls) else tokens

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.pool(self.select(tokens))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.bn(self.features(tokens)))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


PROBES = ("lp_cls", "lp_gap", "ep", "aim", "mhca", "simpool", "abmilp")


def make_probe(name: str, dim: int, num_classes: int, has_cls: bool = True, **kwargs) -> Probe:
    """Build a probe by name: lp_cls, lp_gap, ep (kwargs → EPConfig), aim/mhca (num_heads), simpool, abmilp (depth)."""
    if dim < 1:
        raise ValueError(f"dim must be ≥ 1, got {dim}")
    allowed = {"ep": set(EPConfig.__dataclass_fields__), "aim": {"num_heads"}, "mhca": {"num_heads"},
               "abmilp": {"depth"}}.get(name, set())  # fmt: skip
    unknown = sorted(set(kwargs) - allowed)
    if name in PROBES and unknown:
        raise ValueError(f"probe {name!r} takes no argument(s) {unknown}; it accepts {sorted(allowed) or 'none'}")
    if name == "lp_cls":
        return Probe(ClsPool(), dim, num_classes, "cls", has_cls)
    if name == "lp_gap":
        return Probe(MeanPool(), dim, num_classes, "patches", has_cls)
    if name == "ep":
        cfg = EPConfig(**kwargs)
        pool = EfficientProbing(dim, cfg)
        return Probe(pool, pool.out_dim, num_classes, "all" if cfg.use_cls else "patches", has_cls)
    builders = {
        "aim": lambda: AIMPool(dim, kwargs.get("num_heads", 12 if dim % 12 == 0 else 4)),
        "mhca": lambda: MHCAPool(dim, kwargs.get("num_heads", 4)),
        "simpool": lambda: SimPool(dim),
        "abmilp": lambda: AbMILPPool(dim, kwargs.get("depth", 2)),
    }
    if name not in builders:
        raise ValueError(f"unknown probe {name!r}; choose one of {', '.join(PROBES)}")
    return Probe(builders[name](), dim, num_classes, "patches", has_cls)


@dataclass
class ProbeTrainConfig:
    """Probe training recipe. The paper uses LARS (blr 0.1, batch 4096, 90 epochs, 10 warm-up, wd 0); torch has
    no LARS, so we use AdamW with the same schedule shape and no weight decay."""

    epochs: int = field(default=90, metadata={"help": "training epochs (≥ 1); paper: 90"})
    warmup_epochs: int = field(default=10, metadata={"help": "linear warm-up epochs (≥ 0, < epochs); paper: 10"})
    batch_size: int = field(default=4096, metadata={"help": "batch size (≥ 1); paper: 4096 (512 × 8 GPUs)"})
    lr: float = field(default=1e-3, metadata={"help": "AdamW peak LR (> 0); paper uses LARS blr 0.1, ours AdamW"})
    weight_decay: float = field(default=0.0, metadata={"help": "weight decay (≥ 0); paper: 0"})
    seed: int = field(default=0, metadata={"help": "seed of initialisation and batch order"})

    def __post_init__(self):
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(
                f"ProbeTrainConfig.epochs and batch_size must be ≥ 1, got {self.epochs}, {self.batch_size}"
            )
        if not 0 <= self.warmup_epochs < self.epochs:
            raise ValueError(
                f"ProbeTrainConfig.warmup_epochs must be in [0, epochs={self.epochs}), got {self.warmup_epochs}"
            )
        if not (0 < self.lr < math.inf and 0 <= self.weight_decay < math.inf):
            raise ValueError(
                f"ProbeTrainConfig needs finite lr > 0 and weight_decay ≥ 0, got {self.lr}, {self.weight_decay}"
            )


def _check_labelled(probe: Probe, tokens: torch.Tensor, labels: torch.Tensor) -> None:
    if len(tokens) != len(labels) or len(tokens) == 0:
        raise ValueError(f"tokens ({len(tokens)}) and labels ({len(labels)}) must be non-empty and of equal length")
    if tokens.dim() != 3:
        raise ValueError(f"expected tokens (batch, n_tokens, dim), got {tuple(tokens.shape)}")
    if not torch.isfinite(tokens).all():
        n_bad = int((~torch.isfinite(tokens)).flatten(1).any(1).sum())
        raise ValueError(f"tokens contain NaN or inf in {n_bad} of {len(tokens)} samples; clean the cached features")
    c = probe.classifier.out_features
    if labels.dim() != 1 or labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise ValueError(f"labels must be a 1-D integer tensor of class ids, got {labels.dtype} {tuple(labels.shape)}")
    if int(labels.min()) < 0 or int(labels.max()) >= c:
        raise ValueError(
            f"labels must lie in [0, {c}) (the probe's classes), got [{int(labels.min())}, {int(labels.max())}]"
        )


def train_probe(probe: Probe, tokens: torch.Tensor, labels: torch.Tensor, cfg: ProbeTrainConfig) -> list[float]:
    """Train `probe` on cached frozen tokens with cross-entropy; return the per-epoch training loss."""
    _check_labelled(probe, tokens, labels)
    if len(tokens) < 2 or cfg.batch_size < 2:
        raise ValueError(
            f"BatchNorm in the probe head needs batches of ≥ 2 samples: got {len(tokens)} samples, batch_size "
            f"{cfg.batch_size}"
        )
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.AdamW(probe.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = math.ceil(len(tokens) / cfg.batch_size)
    total, warm = cfg.epochs * steps, cfg.warmup_epochs * steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total - warm)))
    )
    history = []
    probe.train()
    for _ in range(cfg.epochs):
        perm, running = torch.randperm(len(tokens), generator=gen), 0.0
        for s in range(steps):
            idx = perm[s * cfg.batch_size : (s + 1) * cfg.batch_size]
            if len(idx) < 2:  # BatchNorm needs two samples
                continue
            loss = nn.functional.cross_entropy(probe(tokens[idx]), labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.item() * len(idx)
        history.append(running / len(tokens))
    probe.eval()
    return history


@torch.no_grad()
def probe_accuracy(probe: Probe, tokens: torch.Tensor, labels: torch.Tensor, batch_size: int = 512) -> float:
    """Top-1 accuracy in percent."""
    _check_labelled(probe, tokens, labels)
    if batch_size < 1:
        raise ValueError(f"batch_size must be ≥ 1, got {batch_size}")
    probe.eval()
    correct = sum(
        int((probe(tokens[s : s + batch_size]).argmax(-1) == labels[s : s + batch_size]).sum())
        for s in range(0, len(tokens), batch_size)
    )
    return 100.0 * correct / len(tokens)
