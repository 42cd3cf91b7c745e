"""Complexity indicators from the engine's per-depth scores (METHODS.md section 3; seed Table 4).

Per move, from the best line's score at each depth 1 … D (mover's view, cp, clipped):

- **stability**: mean |Δ| between consecutive depths (cp);
- **jump value**: the largest |Δ| (cp);
- **jump depth**: the depth at which it occurs (the deeper of the two; the first on ties);
- **jump product**: jump value × jump depth.

Each is correlated (Pearson's ρ) with the move's error δ, per player.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np
import pandas as pd

from site_builder.metrics.conformance import pearson

INDICATORS = ("stability", "jump_value", "jump_depth", "jump_product")
INDICATOR_NAMES = {
    "stability": "Stability",
    "jump_value": "Jump value",
    "jump_depth": "Jump depth",
    "jump_product": "Jump depth × value",
}


def indicators(depth_scores: Sequence[float], clip_cp: float) -> tuple[float, float, float, float]:
    """(stability, jump value, jump depth, product) of one move; NaN with fewer than 2 depths.

    >>> indicators([20, 30, 10, 15], 1000)
    (11.666666666666666, 20.0, 3.0, 60.0)
    """
    s = np.clip(np.asarray(depth_scores, dtype=float), -clip_cp, clip_cp)
    if len(s) < 2:
        return (math.nan, math.nan, math.nan, math.nan)
    steps = np.abs(np.diff(s))
    at = int(np.argmax(steps))
    value = float(steps[at])
    depth = float(at + 2)  # steps[i] is between depths i+1 and i+2
    return (float(steps.mean()), value, depth, value * depth)


def move_indicators(moves: pd.DataFrame, clip_cp: float) -> pd.DataFrame:
    """The four indicators for every row of the move table (its ``depth_scores``)."""
    lists = moves["depth_scores"].tolist()
    out = np.full((len(lists), len(INDICATORS)), np.nan)
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(chain.from_iterable(lists), dtype=float, count=int(lengths.sum()))
    start = np.cumsum(lengths) - lengths
    for n in np.unique(lengths).tolist():
        if n < 2:
            continue
        rows = np.flatnonzero(lengths == n)
        s = np.clip(flat[start[rows, None] + np.arange(n)], -clip_cp, clip_cp)
        steps = np.abs(np.diff(s, axis=1))
        at = np.argmax(steps, axis=1)
        value = steps[np.arange(len(rows)), at]
        depth = at + 2.0
        out[rows] = np.column_stack([steps.mean(axis=1), value, depth, value * depth])
    return pd.DataFrame(out, columns=list(INDICATORS), index=moves.index)


def correlations(delta: np.ndarray, indicators: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Pearson ρ of each indicator with the error δ over the moves where both are known."""
    known = ~np.isnan(delta)  # once, not once an indicator (2.8 million moves at 30x)
    out = {}
    for name in INDICATORS:
        x = indicators[name]
        ok = known & ~np.isnan(x)
        out[name] = pearson(x[ok], delta[ok])
    return out


TABLE_COLUMNS = ["player", "kind", "moves", "mean_delta", "mean_stability", *INDICATORS, "status"]


def player_row(label: str, kind: str, part: pd.DataFrame, min_moves: int) -> dict[str, object]:
    """One row of :func:`player_table`: the moves of a player or a group of players."""
    return moves_row(
        label,
        kind,
        part["delta"].to_numpy(dtype=float),
        {name: part[name].to_numpy(dtype=float) for name in INDICATORS},
        min_moves,
    )


def moves_row(
    label: str,
    kind: str,
    delta: np.ndarray,
    indicators: Mapping[str, np.ndarray],
    min_moves: int,
) -> dict[str, object]:
    """:func:`player_row` of moves given as arrays: each move's error δ and indicators."""
    n = len(delta)
    stability = indicators["stability"]
    item: dict[str, object] = {
        "player": label,
        "kind": kind,
        "moves": n,
        # pandas' means (NaN skipped), as over a table's columns
        "mean_delta": float(pd.Series(delta, copy=False).mean()) if n else math.nan,
        "mean_stability": float(pd.Series(stability, copy=False).mean()) if n else math.nan,
    }
    scored = int(np.count_nonzero(~np.isnan(stability))) if n else 0
    if n and not scored:
        item.update(dict.fromkeys(INDICATORS, math.nan))
        item["status"] = (
            "n/a: no per-depth scores (the analysis did not record them, as with [%eval] imports)"
        )
    elif scored < min_moves:
        item.update(dict.fromkeys(INDICATORS, math.nan))
        item["status"] = f"n/a: {scored} moves with per-depth scores, at least {min_moves} needed"
    else:
        item.update(correlations(delta, indicators))
        item["status"] = ""
    return item


def player_table(
    frame: pd.DataFrame,
    min_moves: int,
    groups: dict[str, set[str]] | None = None,
    players: list[dict[str, object]] | None = None,
) -> pd.DataFrame:
    """One row per player (and per named group of players, plus "All"): moves, mean δ, ρ's.

    ``frame`` has columns player, delta and the indicators. A row with fewer than
    ``min_moves`` moves has its ρ's left NaN and a status saying why. ``players`` are the
    players' rows when already known (:func:`player_row`, by name).
    """
    columns = TABLE_COLUMNS
    if players is None:
        players = [
            player_row(str(name), "player", part, min_moves)
            for name, part in frame.groupby("player", sort=True)
        ]
    rows = list(players)
    for label, members in sorted((groups or {}).items()):
        rows.append(player_row(label, "group", frame[frame["player"].isin(members)], min_moves))
    rows.append(player_row("All", "group", frame, min_moves))
    return pd.DataFrame(rows, columns=columns)
