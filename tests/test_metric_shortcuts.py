"""The faster paths of the metric families give exactly what the plain ones gave."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import BayesianSection, IntrinsicSection, ResultsSection
from site_builder.metrics import bayesian, intrinsic, moves, quality, results


def _scores_as_lists(turns: pd.DataFrame, lines: int) -> tuple[list[list[float]], list[int]]:
    """Candidate scores row by row (the plain way the matrix replaces)."""
    scores, played = [], []
    for line_scores, rank, e_played in zip(
        turns["line_scores"], turns["played_rank"], turns["e_played"], strict=True
    ):
        row = [v / 100.0 for v in list(line_scores)[:lines]]
        r = int(rank)
        if 1 <= r <= len(row):
            played.append(r - 1)
        else:
            played.append(len(row))
            row.append(float(e_played) / 100.0)
        scores.append(row)
    return scores, played


def _same_arrays(a: Any, b: Any) -> None:
    for name in vars(a):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and x.dtype == y.dtype, name
        assert x.tobytes() == y.tobytes(), name


def test_candidate_matrix_matches_the_rows(small_site: Any) -> None:
    classical = small_site.moves[small_site.moves["time_class"] == "classical"]
    for lines in (1, 3, 10):
        sel = intrinsic.select_turns(classical, IntrinsicSection(lines=lines))
        lists, played = _scores_as_lists(sel, lines)
        matrix, played_m = moves.candidate_scores(sel, lines)
        assert played_m.tolist() == played
        _same_arrays(
            intrinsic.spreads_from_scores(lists, played, 0.03),
            intrinsic.spreads_from_matrix(matrix, played_m, 0.03),
        )
        _same_arrays(
            bayesian.candidates_from_scores(lists, played, 0.1),
            bayesian.candidates_from_matrix(matrix, played_m, 0.1),
        )
    empty, played_e = moves.candidate_scores(classical.iloc[:0], 10)
    assert empty.shape == (0, 1) and len(played_e) == 0
    cand, meta = bayesian.turns_from_moves(classical, BayesianSection())
    assert len(cand) == len(meta) > 0


def test_frame_of_parts_is_the_concatenation() -> None:
    cols = ["player", "games", "index", "window_from"]
    full = {"player": "A", "games": 3, "index": 51.5, "window_from": "2014-01"}
    na = {"player": "B", "games": 0, "index": math.nan, "window_from": math.nan}
    cases: list[list[list[dict[str, object]]]] = [
        [[full], [na]],
        [[full], [], [full]],
        [[full], [full]],
        [[], []],
        [[na]],
    ]
    for parts in cases:
        want = pd.concat([pd.DataFrame(p, columns=cols) for p in parts], ignore_index=True)
        got = quality.frame_of_parts(parts, cols)
        pd.testing.assert_frame_equal(got, want)
        for c in cols:
            assert [repr(v) for v in got[c]] == [repr(v) for v in want[c]], c
    assert quality.frame_of_parts([], cols).columns.tolist() == cols


def test_group_digests_and_positions(small_site: Any) -> None:
    _, meta = intrinsic.turns_from_moves(
        small_site.moves[small_site.moves["time_class"] == "classical"], IntrinsicSection()
    )
    units = intrinsic.unit_frame(meta)
    site = small_site
    keys = dict(site.cache.game_keys)
    site.cache.game_keys = {g.game_id: f"k{i}" for i, g in enumerate(site.games)}
    try:
        at = intrinsic.group_positions(units, ["player", "year"])
        frames = dict(units.groupby(["player", "year"], sort=True).__iter__())
        assert list(at) == list(frames)
        for key, g in frames.items():
            pd.testing.assert_frame_equal(units.iloc[at[key]], g)
        groups = {str(k): rows for k, rows in at.items()}
        digests = site.cache.units_digests(units, groups, "s")
        for key, g in frames.items():
            plain = (
                f"{site.cache.games_digest(g['game_id'].astype(str))}|"
                f"{site.cache.games_digest(g['player'].astype(str))}|s"
            )
            assert digests[str(key)] == plain
    finally:
        site.cache.game_keys = keys


def test_records_and_scope_rows(small_site: Any) -> None:
    from site_builder.metrics import style

    cfg = ResultsSection()
    games = small_site.games
    facts = {
        g.game_id: results.GameFacts(
            results.game_material(style.material_trace(g.moves), g.full_moves, cfg), None
        )
        for g in games
    }
    updates = pd.DataFrame(columns=["game_id", "player", "before", "after"])
    rows = results.player_games(games, facts, updates, {}, cfg)
    recs = results.row_records(rows)
    plain = rows.to_dict("records")
    for r in plain:
        for c in ("player_elo", "opponent_elo", "year"):
            if r[c] is pd.NA:
                r[c] = None
    assert [[(k, type(v), repr(v)) for k, v in r.items()] for r in recs] == [
        [(k, type(v), repr(v)) for k, v in r.items()] for r in plain
    ]
    by_class = results.class_rows(recs)
    months = sorted({r["months"] for r in recs if not math.isnan(r["months"])})
    mid = months[len(months) // 2]
    for after, until in ((None, None), (mid, None), (None, mid), (months[0], mid)):
        scope = results.Scope("k", "t", "classical", after, until, "p", 0, 0, 1)
        assert results.scope_rows(by_class, scope) == [
            r for r in recs if results.in_scope(r, scope)
        ]
    assert np.isfinite(mid)
