"""A regime-switching synthetic stock market with structure that technical analysis can exploit.

The stand-in for StockNet / Dow Jones data in the VTA reproduction (Koa et al., ICLR 2026,
https://arxiv.org/abs/2511.08616). Each stock's log close x_t follows a hidden Markov regime s_t in

- ``up``:        x_t = x_{t-1} + mu + sigma eps_t                      (momentum: moving averages cross upwards)
- ``down``:      x_t = x_{t-1} - mu + sigma eps_t
- ``meanrev``:   x_t = x_{t-1} - kappa (x_{t-1} - a) + sigma eps_t      (a = log price when the regime began:
                 overbought / oversold readings such as RSI > 70 / < 30 are followed by reversals)
- ``volatile``:  x_t = x_{t-1} + vol_mult sigma eps_t                   (no drift, wide Bollinger bands)

with eps_t Student-t (``df`` degrees of freedom, scaled to unit variance). The regime stays with probability
1 - 1/mean_duration each day and otherwise jumps to one of the other three uniformly. Open / high / low / volume are
drawn around the closes (Yahoo layout: Date, Open, High, Low, Close, Adj Close, Volume). Everything is deterministic
from the seed; the regimes and mean-reversion anchors are returned, so the ground truth of every day is known and an
oracle forecast (the exact conditional mean by Monte Carlo over the generator) can be computed.

Splits are chronological per stock (paper code: 70 / 10 / 20 % of the days).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

REGIMES = ("up", "down", "meanrev", "volatile")


@dataclass(frozen=True)
class MarketParams:
    mu: float = field(default=0.004, metadata={"help": "daily log drift in trend regimes (ours)"})
    sigma: float = field(default=0.01, metadata={"help": "daily noise scale (ours)"})
    kappa: float = field(default=0.12, metadata={"help": "mean-reversion speed per day (ours)"})
    vol_mult: float = field(default=1.8, metadata={"help": "noise multiplier of the volatile regime (ours)"})
    mean_duration: float = field(default=40.0, metadata={"help": "mean regime length in days (dossier: ~40)"})
    df: float = field(default=4.0, metadata={"help": "Student-t degrees of freedom of the noise (ours)"})

    def __post_init__(self):
        if self.mean_duration <= 1:
            raise ValueError(f"MarketParams.mean_duration must be > 1 day, got {self.mean_duration!r}")
        if self.df <= 2:
            raise ValueError(f"MarketParams.df must be > 2 (finite variance), got {self.df!r}")
        if not 0 <= self.kappa < 1:
            raise ValueError(f"MarketParams.kappa must be in [0, 1), got {self.kappa!r}")
        if self.sigma <= 0 or self.vol_mult <= 0:
            raise ValueError("MarketParams.sigma and vol_mult must be > 0")


@dataclass
class Market:
    frames: list[pd.DataFrame]  # one OHLCV frame per stock (Yahoo columns)
    regimes: np.ndarray  # (n_stocks, n_days) int index into REGIMES of the regime that generated day t's return
    anchors: np.ndarray  # (n_stocks, n_days) mean-reversion anchor a (log price) in force on day t
    params: MarketParams
    seed: int

    @property
    def n_days(self) -> int:
        return self.regimes.shape[1]

    def bounds(self, ratios=(0.7, 0.1, 0.2)) -> dict[str, tuple[int, int]]:
        """Chronological day ranges [start, end) of train / val / test (paper code: 70 / 10 / 20 %)."""
        if abs(sum(ratios) - 1) > 1e-9 or min(ratios) <= 0:
            raise ValueError(f"ratios must be three positive shares summing to 1, got {ratios!r}")
        n_train, n_test = int(self.n_days * ratios[0]), int(self.n_days * ratios[2])
        return {
            "train": (0, n_train),
            "val": (n_train, self.n_days - n_test),
            "test": (self.n_days - n_test, self.n_days),
        }


def _t_noise(rng: np.random.Generator, df: float, size) -> np.ndarray:
    return rng.standard_t(df, size=size) / np.sqrt(df / (df - 2))


def next_regime(rng: np.random.Generator, s: np.ndarray, mean_duration: float) -> np.ndarray:
    """One Markov step: stay with probability 1 - 1/mean_duration, else jump uniformly to another regime."""
    jump = rng.random(s.shape) < 1.0 / mean_duration
    other = (s + rng.integers(1, len(REGIMES), size=s.shape)) % len(REGIMES)
    return np.where(jump, other, s)


def step(x, s, a, eps, p: MarketParams):
    """Log-price update of one day for arrays of current log price x, regime s, anchor a and unit noise eps."""
    drift = np.select([s == 0, s == 1, s == 2], [p.mu, -p.mu, -p.kappa * (x - a)], 0.0)
    scale = np.where(s == 3, p.vol_mult * p.sigma, p.sigma)
    return x + drift + scale * eps


def make_market(n_stocks: int = 30, n_days: int = 2500, seed: int = 0, params: MarketParams | None = None) -> Market:
    """``n_stocks`` independent stocks of ``n_days`` trading days (dossier: 30 x 2500)."""
    if n_stocks < 1 or n_days < 100:
        raise ValueError(f"need n_stocks >= 1 and n_days >= 100, got {n_stocks!r}, {n_days!r}")
    p = params or MarketParams()
    rng = np.random.default_rng(seed)
    x = np.log(rng.uniform(20, 200, n_stocks))
    s = rng.integers(0, len(REGIMES), n_stocks)
    a = x.copy()
    xs, ss, aa = np.empty((n_stocks, n_days)), np.empty((n_stocks, n_days), int), np.empty((n_stocks, n_days))
    for t in range(n_days):
        if t > 0:
            s_new = next_regime(rng, s, p.mean_duration)
            a = np.where((s_new == 2) & (s != 2), x, a)  # the anchor is the price where mean reversion begins
            s = s_new
            x = step(x, s, a, _t_noise(rng, p.df, n_stocks), p)
        xs[:, t], ss[:, t], aa[:, t] = x, s, a
    dates = pd.bdate_range("2010-01-04", periods=n_days)
    frames = []
    for i in range(n_stocks):
        close = np.exp(xs[i])
        prev = np.concatenate([[close[0]], close[:-1]])
        day_vol = np.where(ss[i] == 3, p.vol_mult, 1.0) * p.sigma
        open_ = prev * np.exp(0.3 * day_vol * rng.standard_normal(n_days))
        high = np.maximum(open_, close) * np.exp(np.abs(0.5 * day_vol * rng.standard_normal(n_days)))
        low = np.minimum(open_, close) * np.exp(-np.abs(0.5 * day_vol * rng.standard_normal(n_days)))
        volume = np.round(1e6 * np.exp(0.3 * rng.standard_normal(n_days)) * np.where(ss[i] == 3, 2.0, 1.0))
        frames.append(pd.DataFrame({"Date": dates, "Open": open_, "High": high, "Low": low, "Close": close,
                                    "Adj Close": close, "Volume": volume}))  # fmt: skip
    return Market(frames, ss, aa, p, seed)


def oracle_paths(market: Market, stock: int, days: np.ndarray, horizon: int = 10, n_paths: int = 256, seed: int = 0):
    """The generator's conditional mean of the next ``horizon`` closes given day t's full hidden state (regime,
    anchor, price), by Monte Carlo over ``n_paths`` futures: (len(days), horizon) prices."""
    p, rng = market.params, np.random.default_rng(seed)
    close = market.frames[stock]["Close"].to_numpy()
    days = np.asarray(days)
    x = np.repeat(np.log(close[days])[:, None], n_paths, 1)
    s = np.repeat(market.regimes[stock, days][:, None], n_paths, 1)
    a = np.repeat(market.anchors[stock, days][:, None], n_paths, 1)
    out = np.empty((len(days), horizon))
    for k in range(horizon):
        s_new = next_regime(rng, s, p.mean_duration)
        a = np.where((s_new == 2) & (s != 2), x, a)
        s = s_new
        x = step(x, s, a, _t_noise(rng, p.df, x.shape), p)
        out[:, k] = np.exp(x).mean(1)
    return out
