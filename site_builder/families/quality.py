"""The play quality index family: each (game, player)'s quality q from the classical moves,
the players' current and all-time index lists over their window of games, and the fit of the
index against Elo (``[quality]`` settings; the numbers come from ``metrics.quality``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from site_builder.metrics import intrinsic, quality
from site_builder.sitedata import SiteData


@dataclass
class QualityResult:
    games: pd.DataFrame  # per (game, player)
    current: pd.DataFrame  # window ending at the as-of date
    historical: pd.DataFrame  # each player's window ending at their last game
    fit: quality.EloFit | None  # quality vs Elo on the historical list
    negative_deltas: int


def _player(
    games: pd.DataFrame, at: np.ndarray[Any, Any], site: SiteData
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """One player's current-list rows and all-time rows, from their game rows (at ``at``)."""
    cfg = site.settings.quality
    games = games.iloc[at]
    return (
        quality.player_rows(games, cfg, site.as_of_months),
        quality.player_rows(games, cfg, None),
    )


def compute(site: SiteData) -> QualityResult:
    cfg = site.settings.quality
    moves = site.classical_moves
    # The per-game table for the changed games only, the player indexes per player, so that
    # a rebuild recomputes only the players whose games changed.
    key = site.settings.digest("quality")
    games = site.cache.per_game_rows(
        "quality",
        key,
        moves,
        functools.partial(quality.game_quality, cfg=cfg),
        quality.GAME_ORDER,
    )
    parts = site.cache.per_players(
        "quality",
        key,
        {
            str(name): functools.partial(_player, games, at, site)
            for name, at in intrinsic.group_positions(games, "player").items()
        },
    )
    current, historical = (
        quality.frame_of_parts([p[i] for p in parts.values()], quality.PLAYER_COLUMNS)
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
    negative = int((site.moves["raw_delta"] < 0).sum()) if not site.moves.empty else 0
    return QualityResult(games, current, historical, fit, negative)
