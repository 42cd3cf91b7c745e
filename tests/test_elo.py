"""Sequential Elo: the improved Elo's K, the cap, start values and ordering (metrics/elo.py)."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.metrics import elo
from site_builder.model import GameRecord, PgnDate


def rated(white: str, black: str, score: float, months: float, we=None, be=None, gid=""):  # type: ignore[no-untyped-def]
    return elo.RatedGame(
        gid or f"{white}-{black}-{months}", white, black, score, months, int(months // 12), we, be
    )


def test_expected_score_and_the_400_cap() -> None:
    assert elo.expected_score(2700, 2700) == 0.5
    assert elo.expected_score(2500, 2100) == pytest.approx(1 / 1.1)  # D = 400
    # Beyond 400 points the difference is capped (FIDE).
    assert elo.expected_score(2800, 2000) == elo.expected_score(2400, 2000)
    assert elo.expected_score(2000, 2800) == pytest.approx(1 - 1 / 1.1)
    assert elo.expected_score(2000, 2800, cap=800) < elo.expected_score(2000, 2800)


def test_k_at_both_clamps() -> None:
    assert elo.improved_k(0) == elo.improved_k(70) == pytest.approx(1200 / 70)
    assert elo.improved_k(70) == pytest.approx(17.142857, abs=1e-6)
    assert elo.improved_k(100) == 12.0
    assert elo.improved_k(150) == elo.improved_k(400) == 8.0
    with pytest.raises(ValueError, match="gm_min"):
        elo.improved_k(10, gm_min=100, gm_max=50)


K = partial(elo.improved_k, numerator=1200.0, gm_min=70, gm_max=150)


def test_k_clamps_in_a_sequence() -> None:
    """A player with 200 games in one month reaches gm = 150 → K = 8; a newcomer has 17.14."""
    games = [rated("Busy", f"Opp{i}", 1.0, 24000.0, 2600, 2600) for i in range(200)]
    out = elo.sequential_elo(games, K, 2200)
    busy = out[out["player"] == "Busy"]
    assert busy["gm"].tolist() == list(range(1, 201))
    assert busy["k"].iloc[0] == pytest.approx(1200 / 70)
    assert busy["k"].iloc[69] == pytest.approx(1200 / 70)  # gm = 70
    assert busy["k"].iloc[99] == 12.0  # gm = 100
    assert busy["k"].iloc[149] == 8.0 and busy["k"].iloc[-1] == 8.0
    newcomer = out[out["player"] == "Opp0"].iloc[0]
    assert newcomer["k"] == pytest.approx(1200 / 70)


def test_gm_counts_the_last_two_years_at_the_time_of_each_game() -> None:
    # Months 0, 10, 23, 24, 47: the window is (m − 24, m].
    games = [rated("A", f"B{i}", 0.5, m) for i, m in enumerate([0.0, 10.0, 23.0, 24.0, 47.0])]
    out = elo.sequential_elo(games, K, 2200)
    assert out[out["player"] == "A"]["gm"].tolist() == [1, 2, 3, 3, 2]


def test_a_hand_computed_sequence() -> None:
    """Two games, start from the Elo tags; numbers worked by hand."""
    games = [
        rated("A", "B", 1.0, 100.0, 2600, 2500),
        rated("B", "A", 0.5, 101.0),
    ]
    out = elo.sequential_elo(games, K, 2200)
    a1, b1, b2, a2 = out.itertuples(index=False)
    e = 1 / (1 + 10 ** (-100 / 400))  # 0.640065
    k = 1200 / 70
    assert (a1.before, b1.before) == (2600.0, 2500.0)
    assert a1.expected == pytest.approx(e)
    assert a1.after == pytest.approx(2600 + k * (1 - e))  # 2606.170
    assert b1.after == pytest.approx(2500 - k * (1 - e))  # 2493.830
    assert (round(a1.after, 3), round(b1.after, 3)) == (2606.170, 2493.830)
    # Later Elo tags do not reset the rating; the second game starts from the first's result.
    d = b1.after - a1.after
    e2 = 1 / (1 + 10 ** (-d / 400))
    assert b2.before == pytest.approx(b1.after) and b2.after == pytest.approx(
        b1.after + k * (0.5 - e2)
    )
    assert a2.after == pytest.approx(a1.after + k * (0.5 - (1 - e2)))
    assert a1.started == "Elo tag" and a2.started == ""


def test_games_without_elo_start_at_the_start_value() -> None:
    games = [rated("A", "B", 1.0, 0.0, None, 2500)]
    out = elo.sequential_elo(games, K, 2200)
    a, b = out.itertuples(index=False)
    assert (a.before, a.started) == (2200.0, "start value")
    assert (b.before, b.started) == (2500.0, "Elo tag")
    # The cap: 300 points apart, so the capped and uncapped expectations agree here.
    assert a.expected == pytest.approx(1 / (1 + 10 ** (300 / 400)))
    assert elo.sequential_elo(games, K, 2000).iloc[0]["before"] == 2000.0


def test_reseed_after_a_gap() -> None:
    games = [rated("A", "B", 1.0, 0.0, 2500, 2500), rated("A", "C", 1.0, 200.0, 2700, 2700)]
    kept = elo.sequential_elo(games, K, 2200)
    assert kept.iloc[2]["before"] > 2500 and kept.iloc[2]["before"] < 2510
    reseeded = elo.sequential_elo(games, K, 2200, reseed_months=120)
    assert reseeded.iloc[2]["before"] == 2700.0
    assert reseeded.iloc[2]["started"] == "Elo tag after a gap"


def test_date_order_uses_round_within_a_day() -> None:
    def record(gid: str, date: str, rnd: str, line: int) -> GameRecord:
        return GameRecord(
            gid,
            "f.pgn",
            line,
            "A",
            "B",
            "1-0",
            PgnDate.parse(date),
            "E",
            "",
            rnd,
            None,
            None,
            None,
            (),
        )

    games = [
        record("r10", "2024.05.01", "10.1", 1),
        record("r9", "2024.05.01", "9.2", 2),
        record("late", "2024.07.01", "1", 3),
        record("mid", "2024.??.??", "1", 4),  # month unknown: mid-year
        record("undated", "????.??.??", "1", 5),
    ]
    assert [g.game_id for g in elo.rated_games(games, "classical")] == ["r9", "r10", "mid", "late"]
    assert elo.round_key("9.12") == (9, 12) and elo.round_key("?") == ()


def test_ratings_at_a_date_and_year_end() -> None:
    games = [rated("A", "B", 1.0, 24000.0), rated("A", "B", 1.0, 24013.0)]
    out = elo.sequential_elo(games, K, 2200)
    assert elo.rating_at(out, 24005.0)["A"] == out.iloc[0]["after"]
    assert elo.rating_at(out)["A"] == out.iloc[2]["after"]
    ye = elo.year_end_ratings(out)
    assert ye[ye["player"] == "B"]["year"].tolist() == [2000, 2001]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from([0.0, 0.5, 1.0])),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.integers(1800, 2900), min_size=6, max_size=6),
)
def test_equal_k_conserves_the_sum_of_ratings(
    pairs: list[tuple[int, int, float]], tags: list[int]
) -> None:
    games = [
        rated(f"P{w}", f"P{b}", s, float(i), tags[w], tags[b])
        for i, (w, b, s) in enumerate(pairs)
        if w != b
    ]
    out = elo.sequential_elo(games, lambda gm: 20.0, 2200)
    if out.empty:
        return
    start = {p: float(tags[int(p[1:])]) for p in set(out["player"])}
    final = elo.rating_at(out)
    assert sum(final.values()) == pytest.approx(sum(start.values()))


#: Games between six players over five years of months: (white, black, White's score,
#: month, whether White has an Elo tag).
_GAMES = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.integers(0, 5),
        st.sampled_from([0.0, 0.5, 1.0]),
        st.integers(24000, 24060),
        st.booleans(),
    ),
    min_size=1,
    max_size=60,
)


def _dated(games, half_months: bool = False) -> list[elo.RatedGame]:  # type: ignore[no-untyped-def]
    """The games in date order (every other one mid-month with ``half_months``)."""
    return sorted(
        (
            rated(
                f"P{w}",
                f"P{b if b != w else (w + 1) % 6}",
                s,
                m + (0.5 * (i % 2) if half_months else 0.0),
                2500 + 10 * w if tag else None,
                gid=f"g{i}",
            )
            for i, (w, b, s, m, tag) in enumerate(games)
        ),
        key=lambda g: (g.months, g.game_id),
    )


@settings(max_examples=60, deadline=None)
@given(_GAMES, st.data())
def test_resumed_run_equals_a_run_from_scratch(games, data) -> None:  # type: ignore[no-untyped-def]
    """A run resumed from an earlier game list (some games missing, as before a tournament was
    added) equals a run over the full list from scratch, whatever the dates of the new games."""
    full = _dated(games)
    kept = data.draw(st.lists(st.booleans(), min_size=len(full), max_size=len(full)))
    earlier = [g for g, k in zip(full, kept, strict=True) if k]
    rules = (K, 2200.0, 400.0, 24.0, 12.0)
    previous = elo.sequential_run(earlier, *rules)
    resumed = elo.sequential_run(full, *rules, previous=previous)
    scratch = elo.sequential_run(full, *rules)
    assert resumed.rows == scratch.rows
    first_new = next(
        (i for i, (a, b) in enumerate(zip(earlier, full, strict=False)) if a != b), len(earlier)
    )
    assert resumed.resumed_at <= first_new
    if first_new == len(full):
        assert resumed.resumed_at == max(i for i, _ in scratch.checkpoints)


@settings(max_examples=60, deadline=None)
@given(_GAMES, st.integers(23999, 24061))
def test_a_run_up_to_a_month_is_the_run_from_scratch_over_its_games(games, cut) -> None:  # type: ignore[no-untyped-def]
    """What an edition takes of the site's run (its games up to its month) is what a run over
    those games alone gives: rows, checkpoints and games."""
    full = _dated(games, half_months=True)
    rules = (K, 2200.0, 400.0, 24.0, 12.0)
    scratch = elo.sequential_run([g for g in full if g.months <= cut], *rules)
    taken = elo.run_to(elo.sequential_run(full, *rules), cut)
    assert taken.games == scratch.games
    assert taken.rows == scratch.rows
    assert [i for i, _ in taken.checkpoints] == [i for i, _ in scratch.checkpoints]
    assert [s for _, s in taken.checkpoints] == [s for _, s in scratch.checkpoints]
