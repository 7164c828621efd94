"""VTA's reasoning-conditioned forecaster with conditional reasoning guidance (paper §3.3; official
``backbone/models/backbone.py``: ``StatisticsAlignmentLayer`` and the classifier-free-guided inference).

Idea. A time-series backbone forecasts the next H values from the look-back window (instance-normalised, RevIN-style).
An alignment layer then corrects that forecast towards attributes c = (min, max, mean) of the reasoner's predicted
path: a feature extractor maps the forecast to 64-d; per attribute a corrector MLP reads (features, the forecast's
own statistic, the reasoner's attribute) and proposes an additive path correction, used only when needed (min: the
forecast dips below the reasoner's min; max: it rises above the reasoner's max; mean: differs by more than 1e-4); a
sigmoid blender over [features, features of each correction] weighs the corrections, which are summed onto the
forecast. Training drops the conditioning with probability p_uncond (the unconditional pass is the backbone alone);
inference mixes both passes (classifier-free guidance):

    y_hat = y_uncond + w * (y_cond - y_uncond)                                                   (CFG, paper Eq. 6)

so w = 0 is exactly the backbone's unconditional forecast and w = 1 the conditional one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import nn

STATS = ("min", "max", "mean")


def path_stats(path: torch.Tensor, stats=STATS) -> torch.Tensor:
    """(B, H) paths -> (B, len(stats)) attributes."""
    fns = {"min": lambda p: p.min(-1).values, "max": lambda p: p.max(-1).values, "mean": lambda p: p.mean(-1)}
    return torch.stack([fns[s](path) for s in stats], -1)


class RevINMLP(nn.Module):
    """The backbone: window -> instance normalisation -> 2-layer MLP -> de-normalisation (our miniature of the
    CALF/GPT-2 backbone; the official code normalises the same way: mean, sqrt(var + 1e-5))."""

    def __init__(self, lookback: int, horizon: int, hidden: int = 128, dropout: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(lookback, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, horizon)
        )

    def forward(self, x):  # x: (B, L)
        m = x.mean(-1, keepdim=True)
        s = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
        return self.net((x - m) / s) * s + m


class DLinear(nn.Module):
    """DLinear (Zeng et al., AAAI 2023): moving-average trend + remainder, one linear map each (baseline)."""

    def __init__(self, lookback: int, horizon: int, kernel: int = 5):
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"DLinear kernel must be odd, got {kernel}")
        self.kernel = kernel
        self.trend, self.season = nn.Linear(lookback, horizon), nn.Linear(lookback, horizon)

    def forward(self, x):
        pad = (self.kernel - 1) // 2
        xp = torch.cat([x[:, :1].expand(-1, pad), x, x[:, -1:].expand(-1, pad)], 1)
        trend = xp.unfold(1, self.kernel, 1).mean(-1)
        return self.trend(trend) + self.season(x - trend)


class AlignmentLayer(nn.Module):
    """The reasoning-conditioned alignment layer (official ``StatisticsAlignmentLayer``, vectorised with masks)."""

    def __init__(self, horizon: int, hidden: int = 64, dropout: float = 0.1, stats=STATS):
        super().__init__()
        self.stats = tuple(stats)
        self.features = nn.Sequential(nn.Linear(horizon, hidden), nn.LeakyReLU(), nn.Dropout(dropout))
        self.correctors = nn.ModuleDict({s: nn.Sequential(nn.Linear(hidden + 2, hidden), nn.LeakyReLU(),
                                                          nn.Dropout(dropout), nn.Linear(hidden, horizon))
                                         for s in self.stats})  # fmt: skip
        self.blender = nn.Sequential(nn.Linear(hidden * (len(self.stats) + 1), len(self.stats)), nn.Sigmoid())

    def forward(self, pred: torch.Tensor, attrs: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """pred (B, H); attrs (B, n_stats) in the same units; cond (B,) bool: rows without conditioning pass as is."""
        feats = self.features(pred)
        cur = path_stats(pred, self.stats)
        corrections, corr_feats = [], []
        for k, s in enumerate(self.stats):
            target = attrs[:, k]
            if s == "min":
                needed = cur[:, k] < target
            elif s == "max":
                needed = cur[:, k] > target
            else:
                needed = (cur[:, k] - target).abs() > 1e-4
            needed = (needed & cond).unsqueeze(-1).to(pred.dtype)
            c = self.correctors[s](torch.cat([feats, cur[:, k : k + 1], target.unsqueeze(-1)], -1)) * needed
            corrections.append(c)
            corr_feats.append(self.features(c) * needed)  # zero features for a correction not applied (as official)
        w = self.blender(torch.cat([feats, *corr_feats], -1))  # (B, n_stats) blend weights
        total = sum(w[:, k : k + 1] * corrections[k] for k in range(len(self.stats)))
        return pred + total


@dataclass
class ForecasterConfig:
    lookback: int = field(default=10, metadata={"help": "look-back L (paper: 10)"})
    horizon: int = field(default=10, metadata={"help": "horizon H (paper: 10)"})
    hidden: int = field(default=128, metadata={"help": "backbone width (ours; paper: GPT-2 d=768)"})
    align_hidden: int = field(default=64, metadata={"help": "alignment-layer width (code: 64)"})
    dropout: float = field(default=0.1, metadata={"help": "dropout (code: 0.1)"})
    p_uncond: float = field(default=0.3, metadata={"help": "conditioning drop probability in training (code: 0.3)"})
    guidance: float = field(default=1.0, metadata={"help": "CFG scale w at inference (code: 2.0; demo script 0.1)"})

    def __post_init__(self):
        if not 0.0 <= self.p_uncond <= 1.0:  # also rejects NaN
            raise ValueError(f"ForecasterConfig.p_uncond must be in [0, 1], got {self.p_uncond!r}")
        if not 0 <= self.guidance < float("inf"):
            raise ValueError(f"ForecasterConfig.guidance must be a finite number >= 0, got {self.guidance!r}")
        if min(self.lookback, self.horizon, self.hidden, self.align_hidden) < 1:
            raise ValueError("ForecasterConfig sizes must be >= 1")


class ConditionalForecaster(nn.Module):
    """Backbone + alignment layer, trained with conditioning dropout and used with classifier-free guidance."""

    def __init__(self, cfg: ForecasterConfig | None = None, backbone: nn.Module | None = None):
        super().__init__()
        self.cfg = cfg or ForecasterConfig()
        self.backbone = backbone or RevINMLP(self.cfg.lookback, self.cfg.horizon, self.cfg.hidden, self.cfg.dropout)
        self.align = AlignmentLayer(self.cfg.horizon, self.cfg.align_hidden, self.cfg.dropout)

    def pass_(self, x, attrs, cond):
        """One forward pass; ``cond`` (B,) bool chooses the conditional (aligned) or unconditional output per row.
        Attributes of rows without conditioning are ignored (zeroed: a NaN there must not reach the output)."""
        bad = cond & ~torch.isfinite(attrs).all(-1)
        if bad.any():
            raise ValueError(f"attrs of {int(bad.sum())} conditioned rows are NaN or infinite (first row "
                             f"{int(bad.nonzero()[0])}): mark unparsed reasoner outputs valid=False")  # fmt: skip
        attrs = torch.where(cond.unsqueeze(-1), attrs, torch.zeros_like(attrs))
        return self.align(self.backbone(x), attrs, cond)

    def forward(self, x, attrs=None, valid=None):
        """Training: conditioning kept per batch with probability 1 - p_uncond (official: one draw per batch), and
        only for rows whose reasoner output parsed (``valid``). Evaluation: the CFG forecast (see ``forecast``)."""
        if not self.training:
            return self.forecast(x, attrs, valid)
        if attrs is None:
            return self.backbone(x)
        keep = bool(torch.rand(()) >= self.cfg.p_uncond)
        cond = torch.full((x.shape[0],), keep) if valid is None else valid & keep
        return self.pass_(x, attrs, cond)

    @torch.no_grad()
    def forecast(self, x, attrs=None, valid=None, guidance: float | None = None):
        """y_uncond + w (y_cond - y_uncond); rows without valid attributes get y_uncond. Always in eval mode
        (dropout off; the module's mode is restored afterwards)."""
        w = self.cfg.guidance if guidance is None else guidance
        if not isinstance(w, (int, float)) or not w >= 0 or w == float("inf"):
            raise ValueError(f"guidance (the CFG scale w) must be a finite number >= 0, got {w!r}")
        if x.dim() != 2 or x.shape[1] != self.cfg.lookback or not torch.isfinite(x).all():
            raise ValueError(f"x must be a finite (B, {self.cfg.lookback}) tensor of windows, got {tuple(x.shape)}")
        valid = torch.ones(x.shape[0], dtype=torch.bool) if valid is None else valid.bool()
        if attrs is not None:
            n = len(self.align.stats)
            if attrs.shape != (x.shape[0], n) or valid.shape != (x.shape[0],):
                raise ValueError(f"attrs must be ({x.shape[0]}, {n}) and valid ({x.shape[0]},), got "
                                 f"{tuple(attrs.shape)} and {tuple(valid.shape)}")  # fmt: skip
        was = self.training
        self.eval()
        try:
            uncond = self.backbone(x)
            if attrs is None:
                return uncond
            cond = self.pass_(x, attrs, valid)
            return uncond + w * (cond - uncond)  # CFG
        finally:
            self.train(was)


def fit(model, train, val, lr: float = 1e-3, max_epochs: int = 100, patience: int = 10, batch_size: int = 256,
        seed: int = 0, weight_decay: float = 0.0):  # fmt: skip
    """Adam on the MSE of the H targets with early stopping on validation MSE (paper code: Adam, patience 10, up to
    100 epochs); ``train`` / ``val`` are tuples ``(x, y)`` or ``(x, y, attrs, valid)``. Restores the best epoch and
    returns ``(model, best_val_mse, epochs_run)``."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    n = len(train[0])
    best, best_state, bad, ran = float("inf"), copy.deepcopy(model.state_dict()), 0, 0
    for ran in range(1, max_epochs + 1):  # noqa: B007 (the count is returned)
        model.train()
        for idx in torch.randperm(n, generator=g).split(batch_size):
            batch = [t[idx] for t in train]
            pred = model(batch[0], *batch[2:]) if len(batch) > 2 else model(batch[0])
            loss = nn.functional.mse_loss(pred, batch[1])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            v = val_mse(model, val)
        if v < best - 1e-7:
            best, best_state, bad = v, copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
            if bad >= patience:
                break
    model.load_state_dict(best_state)
    return model.eval(), best, ran


@torch.no_grad()
def val_mse(model, data, **kw) -> float:
    model.eval()
    pred = model.forecast(data[0], *data[2:], **kw) if isinstance(model, ConditionalForecaster) else model(data[0])
    return float(nn.functional.mse_loss(pred, data[1]))
