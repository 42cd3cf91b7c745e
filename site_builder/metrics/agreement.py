"""Agreement between rating methods: ranks, Spearman correlations and the Elo each player is
compared with (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


def window_mean_elo(games: pd.DataFrame, window_months: int) -> dict[str, float]:
    """Each player's mean Elo tag over their games in the ``window_months`` up to their own
    latest dated game (the window of the all-time lists).

    ``games``: one row per game and player with ``player``, ``months`` (months since year 0,
    NaN when undated) and ``player_elo`` (the player's Elo tag, missing when absent). Undated
    games are left out; the window is chosen among all dated games, tagged or not, and the
    mean is over the tagged ones, so a player without a tag in the window gets no value.
    """
    if games.empty:
        return {}
    dated = games[games["months"].notna()]
    end = dated.groupby("player")["months"].transform("max")
    win = dated[dated["months"] > end - window_months]
    elo = pd.to_numeric(win["player_elo"].astype("Float64"), errors="coerce").astype(float)
    means = elo.groupby(win["player"].astype(str)).mean().dropna()
    return {str(p): float(v) for p, v in means.items()}


def ranks(values: Mapping[str, float]) -> dict[str, int]:
    """Rank 1 = the highest value; ties share the better rank; ties in order by name."""
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    out: dict[str, int] = {}
    prev: float | None = None
    rank = 0
    for i, (name, value) in enumerate(ordered, start=1):
        if prev is None or value != prev:
            rank = i
        out[name] = rank
        prev = value
    return out


@dataclass(frozen=True)
class Correlation:
    a: str
    b: str
    n: int  #: players with both values
    rho: float  #: Spearman's rank correlation (NaN below three players)
    p: float  #: two-sided p-value of rho = 0


def spearman(x: Mapping[str, float], y: Mapping[str, float], a: str, b: str) -> Correlation:
    common = sorted(set(x) & set(y))
    if len(common) < 3:
        return Correlation(a, b, len(common), math.nan, math.nan)
    xs = np.array([x[k] for k in common], dtype=float)
    ys = np.array([y[k] for k in common], dtype=float)
    if np.ptp(xs) == 0 or np.ptp(ys) == 0:
        return Correlation(a, b, len(common), math.nan, math.nan)
    res = stats.spearmanr(xs, ys)
    return Correlation(a, b, len(common), float(res.statistic), float(res.pvalue))


def correlation_matrix(
    methods: Sequence[str], values: Mapping[str, Mapping[str, float]]
) -> list[Correlation]:
    """Every unordered pair of methods, in the order given."""
    out = []
    for i, a in enumerate(methods):
        for b in methods[i + 1 :]:
            out.append(spearman(values[a], values[b], a, b))
    return out
