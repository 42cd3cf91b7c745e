"""The play quality index family: each (game, player)'s quality q from the classical moves,
the players' current and all-time index lists over their window of games, and the fit of the
index against Elo (``[quality]`` settings; the numbers come from ``metrics.quality``).

The per-game rows and the players' index rows are computed per partition of the move store
(:func:`partition_quality`, a partition holds whole players); the lists, their order and the
fit are made from those rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from site_builder.config import QualitySection
from site_builder.metrics import quality
from site_builder.sitedata import SiteData

#: The move-table columns the family reads (every time class: the negative-delta count).
COLUMNS = (
    "game_id",
    "player",
    "white",
    "player_elo",
    "opponent",
    "opponent_elo",
    "year",
    "months",
    "time_class",
    "move_number",
    "e_best",
    "e_played",
    "delta",
    "raw_delta",
    "is_best",
)

#: One player's current-list rows and all-time rows (none or one each).
PlayerRows = tuple[list[dict[str, object]], list[dict[str, object]]]


@dataclass
class QualityResult:
    games: pd.DataFrame  # per (game, player)
    current: pd.DataFrame  # window ending at the as-of date
    historical: pd.DataFrame  # each player's window ending at their last game
    fit: quality.EloFit | None  # quality vs Elo on the historical list
    negative_deltas: int


@dataclass(frozen=True)
class PartitionQuality:
    """What one partition gives (nothing that depends on the as-of date, so a later as-of
    date reads no move): its players' per-game rows, their all-time index rows and the
    search noise."""

    games: pd.DataFrame  #: :func:`quality.game_quality` of the partition's classical moves
    historical: dict[str, list[dict[str, object]]]  #: player → their all-time rows
    negative_deltas: int  #: moves of any time class with a negative raw delta


def partition_quality(rows: pd.DataFrame, cfg: QualitySection) -> PartitionQuality:
    """The quality of one partition's movers (``rows``: their moves of every time class)."""
    negative = int((rows["raw_delta"] < 0).sum()) if len(rows) else 0
    classical = rows[rows["time_class"] == "classical"]
    games = quality.game_quality(classical, cfg)
    return PartitionQuality(games, _by_player(quality.player_rows(games, cfg, None)), negative)


def _by_player(rows: list[dict[str, object]]) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        out.setdefault(str(row["player"]), []).append(row)
    return out


def compute(site: SiteData) -> QualityResult:
    cfg = site.settings.quality
    if site.partitions is None:
        raise RuntimeError("the quality family reads the move store: site.partitions is None")
    parts = site.partitions.map(partition_quality, cfg, columns=COLUMNS)
    frames = [p.games for p in parts if len(p.games)]
    if frames:
        games = (
            pd.concat(frames, ignore_index=True)
            .sort_values(quality.GAME_ORDER, kind="stable")
            .reset_index(drop=True)
        )
    else:
        games = pd.DataFrame(columns=quality.GAME_COLUMNS)
    # The current list's windows end at the as-of date: made here from the partitions'
    # per-game rows (each partition's own, as it made its all-time rows).
    rows: dict[str, PlayerRows] = {}
    for p in parts:
        at_as_of = _by_player(quality.player_rows(p.games, cfg, site.as_of_months))
        # Every player with a game has an entry (no row without a scored game).
        for name in sorted({str(n) for n in p.games["player"]}):
            rows[name] = (at_as_of.get(name, []), p.historical.get(name, []))
    current, historical = (
        quality.frame_of_parts([rows[n][i] for n in sorted(rows)], quality.PLAYER_COLUMNS)
        for i in range(2)
    )
    current = quality.sort_index(current)
    historical = quality.sort_index(historical)
    if site.spec is not None and not site.spec.knows_best_move:
        # Imported [%eval] comments name no best move: no match rate.
        for frame in (games, current, historical):
            frame["match_rate"] = float("nan")
    listed = historical[historical["status"] == ""]
    fit = quality.quality_vs_elo(listed["index"].tolist(), listed["mean_elo"].tolist())
    negative = sum(p.negative_deltas for p in parts)
    return QualityResult(games, current, historical, fit, negative)
