"""The VTA reproduction's windows: per split, standardised look-back / target closes, the reasoner's word prompts, the
rule-based analyst rationales of the SFT teacher, the true return bins, the hidden regime and the oracle path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.rlft.vta import ReturnBins, indicator_states, indicators
from iclr26.rlft.vta.annotate import STATE_WORDS, WARMUP
from iclr26.rlft.vta.world import REGIMES, make_market, oracle_paths

BINS = ReturnBins()
PAST = ReturnBins(quantum=0.01, max_bin=10)  # past returns in the prompt, 1 % bins
RATIONALE_WORDS = ("TREND_UP", "TREND_DOWN", "NO_TREND", "OVERBOUGHT", "OVERSOLD", "NEUTRAL", "VOLATILE", "CALM",
                   "EXPECT_CONTINUATION_UP", "EXPECT_CONTINUATION_DOWN", "EXPECT_REVERSAL_UP", "EXPECT_REVERSAL_DOWN",
                   "EXPECT_RANGE", "EXPECT_NOISE")  # fmt: skip


def vocabulary() -> list[str]:
    return ["ANALYSE", "PREDICT", "<think>", "</think>", "<answer>", "</answer>", *STATE_WORDS, *RATIONALE_WORDS,
            *BINS.words, *(w.replace("r", "p", 1) for w in PAST.words)]  # fmt: skip


def analyst(states: list[str]) -> list[str]:
    """The SFT teacher's rationale: a fixed technical-analysis reading of the indicator states (not the regime)."""
    s = set(states)
    trend = ("TREND_UP" if {"PX>SMA", "SMA_RISING", "MACD_UP"} <= s else
             "TREND_DOWN" if {"PX<SMA", "SMA_FALLING", "MACD_DOWN"} <= s else "NO_TREND")  # fmt: skip
    osc = "OVERBOUGHT" if s & {"RSI_HIGH", "BB_ABOVE"} else "OVERSOLD" if s & {"RSI_LOW", "BB_BELOW"} else "NEUTRAL"
    vol = "VOLATILE" if "BB_WIDE" in s else "CALM"
    if vol == "VOLATILE" and trend == "NO_TREND":
        end = "EXPECT_NOISE"
    elif trend != "NO_TREND" and "ADX_STRONG" in s:
        end = "EXPECT_CONTINUATION_UP" if trend == "TREND_UP" else "EXPECT_CONTINUATION_DOWN"
    elif osc == "OVERBOUGHT":
        end = "EXPECT_REVERSAL_DOWN"
    elif osc == "OVERSOLD":
        end = "EXPECT_REVERSAL_UP"
    else:
        end = "EXPECT_RANGE"
    return [trend, osc, vol, end]


def completion(rationale: list[str], bins: list[int]) -> str:
    return ("<think>\n" + " ".join(rationale) + "\n</think>\n<answer>\n" + " ".join(BINS.word(k) for k in bins)
            + "\n</answer>")  # fmt: skip


@dataclass
class Split:
    x: np.ndarray  # (N, L) standardised closes
    y: np.ndarray  # (N, H) standardised future closes
    last: np.ndarray  # (N,) raw last close
    mu: np.ndarray  # (N,) scaler mean of the stock
    sd: np.ndarray  # (N,) scaler std of the stock
    prompts: list[str]
    sft: list[str]  # teacher completions (rule rationale + true bins)
    regime: np.ndarray  # (N,) hidden regime on the last observed day
    oracle: np.ndarray | None  # (N, H) standardised oracle paths (test only)

    def rows(self) -> list[dict]:
        return [{"prompt": p, "target": list(map(float, y)), "last": float(la), "mu": float(m), "sd": float(s)}
                for p, y, la, m, s in zip(self.prompts, self.y, self.last, self.mu, self.sd)]  # fmt: skip


def build(cfg, seed: int) -> dict[str, Split]:
    market = make_market(cfg.n_stocks, cfg.n_days, seed=seed)
    bounds = market.bounds()
    L, H = cfg.lookback, cfg.horizon
    parts: dict[str, dict[str, list]] = {k: {f: [] for f in Split.__dataclass_fields__} for k in bounds}
    for i, df in enumerate(market.frames):
        close = df["Close"].to_numpy()
        ind = indicators(df)
        recs = ind.to_dict("records")
        tr0, tr1 = bounds["train"]
        mu, sd = close[tr0:tr1].mean(), close[tr0:tr1].std()  # "price_standard": fit on the train days
        z = (close - mu) / sd
        width = ((ind["bb_upper"] - ind["bb_lower"]) / ind["bb_middle"]).to_numpy()
        wide = float(np.nanmedian(width[WARMUP:tr1]))  # wide band: above the stock's train median width
        for split, (a, b) in bounds.items():
            days = np.arange(max(a - 1, WARMUP + L), b - H)  # last observed day t; targets t+1..t+H inside the split
            if len(days) == 0:
                continue
            P = parts[split]
            for t in days:
                states = indicator_states(close[t], recs[t], recs[t - L + 1], wide)
                past = [PAST.word(PAST.bin_of(close[t - j] / close[t] - 1)).replace("r", "p", 1)
                        for j in range(L - 1, 0, -1)]  # fmt: skip
                P["prompts"].append("ANALYSE " + " ".join(past + states) + " PREDICT\n")
                bins = [BINS.bin_of(close[t + k] / close[t] - 1) for k in range(1, H + 1)]
                P["sft"].append(completion(analyst(states), bins))
                P["x"].append(z[t - L + 1 : t + 1])
                P["y"].append(z[t + 1 : t + H + 1])
                P["last"].append(close[t])
                P["regime"].append(market.regimes[i, t])
            P["mu"] += [mu] * len(days)
            P["sd"] += [sd] * len(days)
            if split == "test":
                orc = oracle_paths(market, i, days, H, n_paths=cfg.oracle_paths, seed=seed * 1000 + i)
                P["oracle"].append((orc - mu) / sd)
    out = {}
    for split, P in parts.items():
        arr = {k: np.asarray(P[k], float) for k in ("x", "y", "last", "mu", "sd")}
        oracle = np.concatenate(P["oracle"]) if P["oracle"] else None
        out[split] = Split(**arr, prompts=P["prompts"], sft=P["sft"], regime=np.asarray(P["regime"], int),
                           oracle=oracle)  # fmt: skip
    return out


__all__ = ["BINS", "REGIMES", "Split", "analyst", "build", "completion", "vocabulary"]
