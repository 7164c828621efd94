"""VTA's textual annotation of a price window: statistics and technical indicators (paper §3.1; official
``combined_preprocessor.py`` / ``grpo_utils.format_input_stats``).

Indicators come from the maintained `ta` package (the official code uses TA-Lib) with the official default periods
(SMA / EMA / RSI / CCI / ADX / Williams %R 14, momentum 10, Bollinger 20, MACD 12/26/9, Stochastic 14/3). They are
computed once on a stock's whole *past* series and sliced per window, so a window's indicators never see its future
(the official code recomputes them inside the 10-day window with periods capped at L - 5 = 5; see the docs).

Two renderings of the same window:
- ``annotate_window``: the official full text prompt (closes, min/max/mean/median with their days, 13 indicator
  series, 4 significant digits) for a real instruction-tuned LLM;
- ``indicator_states``: the same indicators read as discrete analyst states (``RSI_HIGH``, ``MACD_UP``, …), the
  prompt words of the tiny word-level reasoner of the reproduction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PERIODS = {"sma": 14, "ema": 14, "mom": 10, "rsi": 14, "cci": 14, "adx": 14, "willr": 14, "bbands": 20,
           "macd_fast": 12, "macd_slow": 26, "macd_signal": 9, "stoch_k": 14, "stoch_d": 3}  # fmt: skip
COLUMNS = ("sma", "ema", "mom", "rsi", "macd", "willr", "cci", "adx", "bb_upper", "bb_middle", "bb_lower",
           "stoch_k", "stoch_d")  # fmt: skip
WARMUP = 2 * PERIODS["macd_slow"] + PERIODS["macd_signal"]  # first day whose indicators are all defined (ADX: 2n)


def indicators(df: pd.DataFrame, periods: dict | None = None) -> pd.DataFrame:
    """The 13 official indicator series of an OHLCV frame (Yahoo columns), causal, by the `ta` package."""
    import ta

    p = {**PERIODS, **(periods or {})}
    missing = {"High", "Low", "Close"} - set(df.columns)
    if missing:
        raise ValueError(f"indicators need the OHLCV columns High, Low, Close; missing {sorted(missing)}")
    h, lo, c = df["High"], df["Low"], df["Close"]
    bb = ta.volatility.BollingerBands(c, window=p["bbands"], window_dev=2)
    st = ta.momentum.StochasticOscillator(h, lo, c, window=p["stoch_k"], smooth_window=p["stoch_d"])
    out = {
        "sma": ta.trend.SMAIndicator(c, window=p["sma"]).sma_indicator(),
        "ema": ta.trend.EMAIndicator(c, window=p["ema"]).ema_indicator(),
        # TA-Lib MOM (c_t - c_{t-n}) via `ta`'s rate of change times the lagged price
        "mom": ta.momentum.ROCIndicator(c, window=p["mom"]).roc() / 100 * c.shift(p["mom"]),
        "rsi": ta.momentum.RSIIndicator(c, window=p["rsi"]).rsi(),
        "macd": ta.trend.MACD(
            c, window_slow=p["macd_slow"], window_fast=p["macd_fast"], window_sign=p["macd_signal"]
        ).macd(),  # fmt: skip
        "willr": ta.momentum.WilliamsRIndicator(h, lo, c, lbp=p["willr"]).williams_r(),
        "cci": ta.trend.CCIIndicator(h, lo, c, window=p["cci"]).cci(),
        "adx": ta.trend.ADXIndicator(h, lo, c, window=p["adx"]).adx(),
        "bb_upper": bb.bollinger_hband(),
        "bb_middle": bb.bollinger_mavg(),
        "bb_lower": bb.bollinger_lband(),
        "stoch_k": st.stoch(),
        "stoch_d": st.stoch_signal(),
    }
    return pd.DataFrame(out, index=df.index)


def _fmt(arr) -> str:
    return "[" + ", ".join(f"{x:.4g}" for x in np.asarray(arr, float)) + "]"


def annotate_window(closes, ind: pd.DataFrame | None = None, simplified: bool = False) -> str:
    """The official user prompt for one window: ``closes`` are the L (standardised) closes, ``ind`` the indicator rows
    of the same L days (``indicators(df).iloc[t-L+1:t+1]``). ``simplified=True`` is the closes-only prompt the
    released code uses by default; the paper's method is the full annotation (default here)."""
    c = np.asarray(closes, float)
    head = f"Stock closing prices for the past {len(c)} days:\n{_fmt(c)}\n\n"
    tail = f"Based on these data, predict the closing prices for the next {len(c)} days.\n"
    if simplified:
        return head + tail
    if ind is None or len(ind) != len(c):
        raise ValueError(f"the full annotation needs the {len(c)} indicator rows of the window, got {ind!r:.60}")
    med_day = int(np.argsort(c)[len(c) // 2])
    stats = (f"Stock statistics:\n- Minimum price: {c.min():.4g} on day {int(c.argmin())}\n"
             f"- Maximum price: {c.max():.4g} on day {int(c.argmax())}\n- Mean price: {c.mean():.4g}\n"
             f"- Median price: {np.median(c):.4g} on day {med_day}\n\n")  # fmt: skip
    names = {"sma": "Simple Moving Average", "ema": "Exponential Moving Average", "mom": "Momentum",
             "rsi": "Relative Strength Index", "macd": "MACD Line", "willr": "Williams %R",
             "cci": "Commodity Channel Index", "adx": "Average Directional Index", "bb_upper": "Bollinger Bands Upper",
             "bb_middle": "Bollinger Bands Middle", "bb_lower": "Bollinger Bands Lower", "stoch_k": "Stochastic %K",
             "stoch_d": "Stochastic %D"}  # fmt: skip
    ta_lines = "".join(f"- {names[k]}: {_fmt(ind[k].to_numpy())}\n" for k in COLUMNS)
    return head + stats + "Technical Analysis:\n" + ta_lines + "\n" + tail


STATE_WORDS = ("PX>SMA", "PX<SMA", "SMA_RISING", "SMA_FALLING", "MOM_UP", "MOM_DOWN", "RSI_HIGH", "RSI_MID",
               "RSI_LOW", "MACD_UP", "MACD_DOWN", "MACD_RISING", "MACD_FALLING", "WR_HIGH", "WR_MID", "WR_LOW",
               "CCI_HIGH", "CCI_MID", "CCI_LOW", "ADX_STRONG", "ADX_WEAK", "BB_ABOVE", "BB_INSIDE", "BB_BELOW",
               "BB_WIDE", "BB_NARROW", "STOCH_K>D", "STOCH_K<D")  # fmt: skip


def indicator_states(close: float, ind_now, ind_before, wide_band: float) -> list[str]:
    """Discrete analyst readings of day t's indicators (rows as mappings; ``ind_before``: the row L - 1 days
    earlier, for slopes;
    ``wide_band``: Bollinger width / middle above which the band counts as wide)."""
    i = ind_now
    out = ["PX>SMA" if close > i["sma"] else "PX<SMA", "SMA_RISING" if i["sma"] > ind_before["sma"] else "SMA_FALLING",
           "MOM_UP" if i["mom"] > 0 else "MOM_DOWN",
           "RSI_HIGH" if i["rsi"] > 70 else "RSI_LOW" if i["rsi"] < 30 else "RSI_MID",
           "MACD_UP" if i["macd"] > 0 else "MACD_DOWN", "MACD_RISING" if i["macd"] > ind_before["macd"] else
           "MACD_FALLING", "WR_HIGH" if i["willr"] > -20 else "WR_LOW" if i["willr"] < -80 else "WR_MID",
           "CCI_HIGH" if i["cci"] > 100 else "CCI_LOW" if i["cci"] < -100 else "CCI_MID",
           "ADX_STRONG" if i["adx"] > 25 else "ADX_WEAK",
           "BB_ABOVE" if close > i["bb_upper"] else "BB_BELOW" if close < i["bb_lower"] else "BB_INSIDE",
           "BB_WIDE" if (i["bb_upper"] - i["bb_lower"]) / i["bb_middle"] > wide_band else "BB_NARROW",
           "STOCH_K>D" if i["stoch_k"] > i["stoch_d"] else "STOCH_K<D"]  # fmt: skip
    return out
