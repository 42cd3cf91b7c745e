"""Play quality index: METHODS.md section 1, worked examples to the digit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from site_builder.config import QualitySection
from site_builder.metrics import quality


def test_worked_example() -> None:
    d, q = quality.quality_of_errors([0, 50, 400, 10])
    assert d == 90.0
    assert q == 10.0


def test_mean_error_above_100_gives_zero() -> None:
    d, q = quality.quality_of_errors([150, 120, 101])
    assert d == pytest.approx(123.6666666)
    assert q == 0.0


def test_empty_game_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one move"):
        quality.quality_of_errors([])


def _moves(
    rows: list[tuple[int, int, int, bool]],
    player: str = "A",
    game: str = "g1",
    months: float = 2024 * 12,
    elo: int | None = 2700,
) -> pd.DataFrame:
    """rows: (move_number, e_best, e_played, is_best)."""
    return pd.DataFrame(
        [
            {
                "game_id": game,
                "player": player,
                "white": True,
                "player_elo": elo,
                "opponent": "B",
                "opponent_elo": 2600,
                "year": int(months // 12),
                "months": months,
                "move_number": n,
                "e_best": eb,
                "e_played": ep,
                "delta": max(0, eb - ep),
                "is_best": best,
            }
            for n, eb, ep, best in rows
        ]
    )


def test_game_quality_applies_start_clip_and_discard() -> None:
    moves = _moves(
        [
            (11, 30, -500, False),  # before move 12: ignored
            (12, 30, 30, True),  # δ 0
            (13, 40, -10, False),  # δ 50
            (14, 150, -250, False),  # δ 400 → 300 (e_best inside the window: kept)
            (15, 20, 10, False),  # δ 10
            (16, 900, 500, False),  # both outside ±200: discarded
            (17, -300, -700, False),  # both outside: discarded
        ]
    )
    g = quality.game_quality(moves, QualitySection()).iloc[0]
    assert g["moves"] == 4
    assert g["D"] == 90.0
    assert g["q"] == 10.0
    assert g["matches"] == 1
    assert g["match_rate"] == 0.25
    # AD: moves from 12 whose position score is within ±200, uncapped: 0, 50, 400, 10
    assert g["ad_moves"] == 4
    assert g["AD"] == 115.0


def test_player_index_is_mean_of_game_q_in_window() -> None:
    cfg = QualitySection(min_games=2)
    games = pd.concat(
        [
            _moves([(12, 0, -20, False)], game="old", months=2020 * 12),  # q 80, outside window
            _moves([(12, 0, -10, False)], game="g1", months=2024 * 12),  # q 90
            _moves([(12, 0, -30, False)], game="g2", months=2025 * 12 + 5),  # q 70
        ]
    )
    per_game = quality.game_quality(games, cfg)
    idx = quality.player_index(per_game, cfg, as_of_months=2025 * 12 + 6)
    row = idx.iloc[0]
    assert row["games"] == 2
    assert row["index"] == 80.0
    assert row["status"] == ""


def test_player_below_minimum_is_listed_with_reason() -> None:
    cfg = QualitySection(min_games=5)
    per_game = quality.game_quality(_moves([(12, 0, -10, False)]), cfg)
    row = quality.player_index(per_game, cfg, as_of_months=2024 * 12 + 1).iloc[0]
    assert row["status"].startswith("n/a: 1 analysed game(s)")
    assert "needs 5" in row["status"]


def test_quality_vs_elo_fit_recovers_a_line() -> None:
    q = np.array([60.0, 70.0, 80.0, 90.0])
    elo = 2000 + 8 * q
    fit = quality.quality_vs_elo(q.tolist(), elo.tolist())
    assert fit is not None
    assert fit.slope == pytest.approx(8.0)
    assert fit.intercept == pytest.approx(2000.0)
    assert fit.pearson == pytest.approx(1.0)
    assert fit.spearman == pytest.approx(1.0)


def test_quality_vs_elo_needs_three_players() -> None:
    assert quality.quality_vs_elo([50.0, 60.0], [2500.0, 2600.0]) is None
    assert quality.quality_vs_elo([50.0, math.nan, 60.0], [2500.0, 2550.0, 2600.0]) is None


def test_fide_performance_table() -> None:
    from site_builder.metrics.events import fide_dp, performance

    assert fide_dp(0.5) == 0 and fide_dp(1.0) == 800 and fide_dp(0.0) == -800
    assert fide_dp(0.75) == 193 and fide_dp(0.25) == -193
    # 3 of 4 against an average of 2600: 2600 + dp(0.75) = 2793
    assert performance([2550, 2650, 2600, 2600], 3.0) == 2793
    assert performance([], 1.0) is None
