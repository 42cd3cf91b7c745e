"""Play quality index (chess-db.com after Guid & Bratko; METHODS.md section 1).

Per analysed move from move 12: ``d = min(δ, 300)``; a move is discarded when both
``e_best`` and ``e_played`` lie outside [-200, +200]. Per game and player ``D = mean(d)``
and ``q = max(0, 100 − D)``. A player's index is the mean game ``q`` over the last two years.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from site_builder.config import QualitySection


def quality_of_errors(deltas: Sequence[float], clip_cp: int = 300) -> tuple[float, float]:
    """(D, q) for one game's errors in centipawns: D = mean(min(δ, clip)), q = max(0, 100 − D).

    >>> quality_of_errors([0, 50, 400, 10])
    (90.0, 10.0)
    """
    if len(deltas) == 0:
        raise ValueError("quality_of_errors needs at least one move")
    d = float(np.mean(np.minimum(np.asarray(deltas, dtype=float), clip_cp)))
    return d, max(0.0, 100.0 - d)


def kept_moves(moves: pd.DataFrame, cfg: QualitySection) -> pd.DataFrame:
    """Moves the index counts: from ``first_move`` on, not both scores outside the window."""
    w = cfg.window_cp
    outside = (moves["e_best"].abs() > w) & (moves["e_played"].abs() > w)
    return moves[(moves["move_number"] >= cfg.first_move) & ~outside]


GAME_COLUMNS = [
    "game_id",
    "player",
    "white",
    "player_elo",
    "opponent",
    "opponent_elo",
    "year",
    "months",
    "moves",
    "D",
    "q",
    "matches",
    "match_rate",
    "ad_moves",
    "ad_sum",
    "AD",
]


#: The order of :func:`game_quality`'s rows (one row per game and player).
GAME_ORDER = ["player", "months", "game_id"]


def game_quality(moves: pd.DataFrame, cfg: QualitySection) -> pd.DataFrame:
    """One row per (game, player): moves counted, D, q, first-choice matches and AD."""
    if moves.empty:
        return pd.DataFrame(columns=GAME_COLUMNS)
    from_move = moves[moves["move_number"] >= cfg.first_move]
    kept = kept_moves(moves, cfg)
    keys = ["game_id", "player"]
    clipped = kept.assign(d=np.minimum(kept["delta"], cfg.clip_cp))
    agg = clipped.groupby(keys, sort=True).agg(
        moves=("d", "size"), D=("d", "mean"), matches=("is_best", "sum")
    )
    in_window = from_move[from_move["e_best"].abs() <= cfg.window_cp]
    ad = in_window.groupby(keys, sort=True).agg(ad_moves=("delta", "size"), ad_sum=("delta", "sum"))
    info = moves.groupby(keys, sort=True).agg(
        white=("white", "first"),
        player_elo=("player_elo", "first"),
        opponent=("opponent", "first"),
        opponent_elo=("opponent_elo", "first"),
        year=("year", "first"),
        months=("months", "first"),
    )
    out = info.join(agg, how="left").join(ad, how="left").reset_index()
    out["moves"] = out["moves"].fillna(0).astype(int)
    out["matches"] = out["matches"].fillna(0).astype(int)
    out["ad_moves"] = out["ad_moves"].fillna(0).astype(int)
    out["ad_sum"] = out["ad_sum"].fillna(0.0).astype(float)
    out["q"] = np.where(out["moves"] > 0, np.maximum(0.0, 100.0 - out["D"]), np.nan)
    out["match_rate"] = np.where(
        out["moves"] > 0, out["matches"] / out["moves"].clip(lower=1), np.nan
    )
    out["AD"] = np.where(out["ad_moves"] > 0, out["ad_sum"] / out["ad_moves"].clip(lower=1), np.nan)
    return out[GAME_COLUMNS].sort_values(GAME_ORDER, kind="stable").reset_index(drop=True)


PLAYER_COLUMNS = [
    "player",
    "games",
    "index",
    "match_rate",
    "AD",
    "moves",
    "mean_elo",
    "first_year",
    "last_year",
    "window_from",
    "window_to",
    "status",
]


def player_index(
    games: pd.DataFrame, cfg: QualitySection, as_of_months: float | None
) -> pd.DataFrame:
    """Each player's index over the ``window_months`` up to ``as_of_months``.

    With ``as_of_months=None`` each player's own window ends at their latest game (the
    historical list). ``status`` is "" when listed, else the reason ("n/a: ...").
    Match rate and AD pool the moves of the window's games.
    """
    return sort_index(pd.DataFrame(player_rows(games, cfg, as_of_months), columns=PLAYER_COLUMNS))


def player_rows(
    games: pd.DataFrame, cfg: QualitySection, as_of_months: float | None
) -> list[dict[str, object]]:
    """The rows of :func:`player_index` (``PLAYER_COLUMNS``), one per player, by name."""
    rows: list[dict[str, object]] = []
    scored = games[games["moves"] > 0]
    if scored.empty:
        return rows
    # Each column as floats once; a player's values are their rows in table order.
    column = {
        name: pd.to_numeric(scored[name], errors="coerce").to_numpy(dtype=float)
        for name in ("months", "moves", "ad_moves", "player_elo", "year", "q", "matches", "ad_sum")
    }
    groups = scored.groupby("player", sort=True).indices
    for name in sorted(groups, key=str):
        at = groups[name]
        player = str(name)
        months = column["months"][at]
        dated = ~np.isnan(months)
        end = as_of_months if as_of_months is not None else np.nanmax(months, initial=np.nan)
        if not dated.any() or end is None or math.isnan(end):
            rows.append(_na_row(player, len(at), "n/a: no dated games"))
            continue
        start = end - cfg.window_months
        win = dated & (months > start) & (months <= end)
        n = int(win.sum())
        status = ""
        if n < cfg.min_games:
            status = (
                f"n/a: {n} analysed game(s) in the {cfg.window_months} months to "
                f"{_month_text(end)}; the list needs {cfg.min_games}"
            )
        moves = column["moves"][at][win]
        ad_moves = column["ad_moves"][at][win]
        elo = column["player_elo"][at][win]
        elo = elo[~np.isnan(elo)]
        years = column["year"][at][dated]
        rows.append(
            {
                "player": player,
                "games": n,
                "index": float(column["q"][at][win].mean()) if n else np.nan,
                "match_rate": float(column["matches"][at][win].sum() / moves.sum())
                if n
                else np.nan,
                "AD": float(column["ad_sum"][at][win].sum() / ad_moves.sum())
                if n and ad_moves.sum() > 0
                else np.nan,
                "moves": int(moves.sum()),
                "mean_elo": float(elo.mean()) if len(elo) else np.nan,
                "first_year": int(years.min()),
                "last_year": int(years.max()),
                "window_from": _month_text(start + 1),
                "window_to": _month_text(end),
                "status": status,
            }
        )
    return rows


def frame_of_parts(
    parts: Sequence[Sequence[dict[str, object]]], columns: list[str]
) -> pd.DataFrame:
    """What ``pd.concat`` of a frame per part (``pd.DataFrame(part, columns=columns)``) gives,
    dtypes included, without a frame per part: all rows in one frame, cast to the dtypes of
    the concatenation of one frame per kind of part (the types of its values)."""
    if not parts:
        return pd.DataFrame(columns=columns)
    kinds: dict[object, Sequence[dict[str, object]]] = {}
    for part in parts:
        kind = tuple(frozenset(type(row.get(c)) for row in part) for c in columns)
        kinds.setdefault((len(part) > 0, kind), part)
    samples = [pd.DataFrame(list(part), columns=columns) for part in kinds.values()]
    dtypes = pd.concat(samples, ignore_index=True).dtypes.to_dict()
    return pd.DataFrame([row for part in parts for row in part], columns=columns).astype(dtypes)


def sort_index(frame: pd.DataFrame) -> pd.DataFrame:
    """Listed players first, best index first, then by name."""
    return frame.sort_values(
        ["status", "index", "player"], ascending=[True, False, True], kind="stable"
    ).reset_index(drop=True)


def _na_row(player: str, games: int, status: str) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(PLAYER_COLUMNS, np.nan)
    row.update(player=player, games=games, moves=0, status=status)
    return row


def _month_text(months: float) -> str:
    m = math.floor(months)
    return f"{m // 12:04d}-{m % 12 + 1:02d}"


@dataclass(frozen=True)
class EloFit:
    """Least-squares line Elo ≈ intercept + slope·q, and rank/linear correlations."""

    n: int
    slope: float
    intercept: float
    pearson: float
    spearman: float

    def scaled(self, q: float) -> float:
        return self.intercept + self.slope * q


def quality_vs_elo(index: Sequence[float], elo: Sequence[float]) -> EloFit | None:
    """Fit for chess-db's "scaled QoP" chart; None with fewer than 3 rated players."""
    x = np.asarray(index, dtype=float)
    y = np.asarray(elo, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    return EloFit(
        n=len(x),
        slope=float(slope),
        intercept=float(intercept),
        pearson=float(stats.pearsonr(x, y).statistic),
        spearman=float(stats.spearmanr(x, y).statistic),
    )
