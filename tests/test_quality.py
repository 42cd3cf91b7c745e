"""Play quality index: METHODS.md section 1, worked examples to the digit."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from site_builder.analysis.stage import write_store
from site_builder.config import QualitySection, Settings
from site_builder.families.quality import compute
from site_builder.memo import Memo
from site_builder.metrics import intrinsic, quality
from site_builder.partitions import Partitions
from site_builder.store import LIST_COLUMNS, SCHEMA, MoveStore
from tests.conftest import requires_engine


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


def store_of(moves: pd.DataFrame, folder: Path, parts: int = 4, workers: int = 1) -> Partitions:
    """The move store of ``moves`` (columns they lack filled with a neutral value) in
    ``folder``, in ``parts`` partitions by player, as a build writes it."""
    full = moves.copy()
    for col in SCHEMA:
        if col.name in full:
            continue
        if col.name in LIST_COLUMNS:
            full[col.name] = [[] for _ in range(len(full))]
        elif pa.types.is_string(col.type):
            full[col.name] = ""
        elif pa.types.is_boolean(col.type):
            full[col.name] = False
        elif pa.types.is_floating(col.type):
            full[col.name] = 0.0
        else:
            full[col.name] = pd.array([None] * len(full), dtype="Int64")
    full = full.sort_values(["game_id", "ply"], kind="stable").reset_index(drop=True)
    store = MoveStore(folder / "moves", parts)
    write_store(store, full, {gid: gid for gid in full["game_id"].unique()})
    return Partitions(store, Memo(), workers)


def _games(seed: int = 7) -> pd.DataFrame:
    """Classical and blitz games of eight players over three years, both sides' moves, some
    with a negative raw delta (search noise), some with no Elo tag and some undated."""
    rng = np.random.default_rng(seed)
    names = ["A", "B", "C", "D", "E"]
    rows = []
    games = [
        (*rng.choice(names, 2, replace=False), "blitz" if i % 5 == 0 else "classical", i % 11)
        for i in range(60)
    ]
    # F: one game (below the list's minimum); G: one undated game; H: blitz only
    games += [("F", "A", "classical", 1), ("B", "G", "classical", 0), ("H", "C", "blitz", 1)]
    for i, (white, black, time_class, dated) in enumerate(games):
        months = float(2021 * 12 + rng.integers(0, 36)) if dated else float("nan")
        elos = {white: 2500 + 10 * i if i % 4 else None, black: 2600 - 5 * i}
        for ply in range(1, 2 * int(rng.integers(14, 30))):
            player, opponent = (white, black) if ply % 2 else (black, white)
            e_best = int(rng.integers(-400, 400))
            raw = int(rng.integers(-30, 350))
            rows.append(
                {
                    "game_id": f"g{i:03d}",
                    "ply": ply,
                    "move_number": (ply + 1) // 2,
                    "white": ply % 2 == 1,
                    "player": str(player),
                    "opponent": str(opponent),
                    "player_elo": elos[player],
                    "opponent_elo": elos[opponent],
                    "year": None if math.isnan(months) else int(months // 12),
                    "months": months,
                    "time_class": time_class,
                    "e_best": e_best,
                    "e_played": e_best - max(raw, 0),
                    "delta": max(raw, 0),
                    "raw_delta": raw,
                    "is_best": raw <= 0,
                }
            )
    frame = pd.DataFrame(rows)
    for col in ("player_elo", "opponent_elo", "year"):
        frame[col] = frame[col].astype("Int64")
    return frame


def _whole_table(moves: pd.DataFrame, cfg: QualitySection, as_of: float | None):  # type: ignore[no-untyped-def]
    """The family's numbers from the whole move table at once (as before the move store)."""
    games = quality.game_quality(moves[moves["time_class"] == "classical"], cfg)
    at = intrinsic.group_positions(games, "player").values()
    lists = [
        quality.sort_index(
            quality.frame_of_parts(
                [quality.player_rows(games.iloc[a], cfg, end) for a in at], quality.PLAYER_COLUMNS
            )
        )
        for end in (as_of, None)
    ]
    return games, *lists, int((moves["raw_delta"] < 0).sum())


# G's only game is undated: player_rows takes the latest of no months (NaN, "n/a").
@pytest.mark.filterwarnings("ignore:All-NaN slice encountered:RuntimeWarning")
def test_family_over_partitions_is_the_index_of_the_whole_table(tmp_path: Path) -> None:
    moves = _games()
    settings = dataclasses.replace(Settings(), quality=QualitySection(min_games=3))
    as_of = 2023 * 12 + 6.0
    games, current, historical, negative = _whole_table(moves, settings.quality, as_of)
    blitz = moves["time_class"] == "blitz"
    assert (moves.loc[blitz, "raw_delta"] < 0).any() and (moves.loc[~blitz, "raw_delta"] < 0).any()
    assert historical["status"].eq("").sum() >= 3
    assert set(historical.loc[historical["status"] != "", "player"]) == {"F", "G"}
    for parts, workers in ((1, 1), (4, 2), (7, 1)):
        site = SimpleNamespace(
            settings=settings,
            as_of_months=as_of,
            spec=None,
            partitions=store_of(moves, tmp_path / str(parts), parts, workers),
        )
        res = compute(site)  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(res.games, games)
        pd.testing.assert_frame_equal(res.current, current)
        pd.testing.assert_frame_equal(res.historical, historical)
        # search noise is counted in every time class
        assert res.negative_deltas == negative
        assert res.fit is not None and res.fit.n == historical["status"].eq("").sum()


@pytest.mark.filterwarnings("ignore:All-NaN slice encountered:RuntimeWarning")
def test_a_later_as_of_date_recomputes_the_current_list_without_reading_moves(
    tmp_path: Path,
) -> None:
    """The partitions' work does not depend on the as-of date: a new tournament after every
    other game moves the as-of date, and the current list follows it from the per-game rows,
    with every partition's work reused."""
    from site_builder.incremental import BuildCache

    moves = _games()
    settings = dataclasses.replace(Settings(), quality=QualitySection(min_games=3))
    with BuildCache(tmp_path / "memo") as memo:
        partitions = store_of(moves, tmp_path, 4)
        partitions.cache = Memo(store=memo, code="c")
        work = "site_builder.families.quality.partition_quality"
        results = []
        for as_of in (2023 * 12 + 6.0, 2024 * 12 + 6.0):
            site = SimpleNamespace(
                settings=settings, as_of_months=as_of, spec=None, partitions=partitions
            )
            results.append(compute(site))  # type: ignore[arg-type]
            assert partitions.computed == {work: len(partitions.parts())}  # the first time
            _, current, historical, _ = _whole_table(moves, settings.quality, as_of)
            pd.testing.assert_frame_equal(results[-1].current, current)
            pd.testing.assert_frame_equal(results[-1].historical, historical)
    # A year later the windows hold fewer games: the current list changed, the all-time not.
    assert not results[0].current.equals(results[1].current)
    pd.testing.assert_frame_equal(results[0].historical, results[1].historical)


@requires_engine
def test_family_on_the_real_store_is_the_index_of_the_whole_table(small_site) -> None:  # type: ignore[no-untyped-def]
    moves = small_site.moves
    assert small_site.partitions is not None and len(small_site.partitions.parts()) > 10
    games, current, historical, negative = _whole_table(
        moves, small_site.settings.quality, small_site.as_of_months
    )
    res = compute(small_site)
    pd.testing.assert_frame_equal(res.games, games)
    pd.testing.assert_frame_equal(res.current, current)
    pd.testing.assert_frame_equal(res.historical, historical)
    assert res.negative_deltas == negative == small_site.state.facts["negative_deltas"]
