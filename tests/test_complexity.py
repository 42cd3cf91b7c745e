"""Complexity indicators from per-depth scores (the seed's Table 4)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.metrics import complexity


def test_indicators_of_one_move() -> None:
    # steps 10, 20, 5: mean 11.67; the jump of 20 is between depths 2 and 3
    assert complexity.indicators([20, 30, 10, 15], 1000) == pytest.approx((35 / 3, 20, 3, 60))


def test_ties_take_the_first_jump_and_mates_are_clipped() -> None:
    assert complexity.indicators([0, 10, 0], 1000)[2] == 2.0
    stab, value, depth, _ = complexity.indicators([50, 9990], 1000)
    assert value == 950 and depth == 2 and stab == 950


def test_one_depth_is_not_enough() -> None:
    assert all(math.isnan(v) for v in complexity.indicators([12], 1000))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.lists(st.integers(-3000, 3000), min_size=0, max_size=12), min_size=1, max_size=20)
)
def test_table_equals_one_move_at_a_time(lists: list[list[int]]) -> None:
    frame = pd.DataFrame({"depth_scores": lists})
    got = complexity.move_indicators(frame, 1000).to_numpy()
    want = np.array([complexity.indicators(x, 1000) for x in lists], dtype=float)
    assert np.allclose(got, want, equal_nan=True)


def test_player_table_correlations_groups_and_thresholds() -> None:
    rng = np.random.default_rng(0)
    stability = rng.random(300)
    frame = pd.DataFrame(
        {
            "player": ["A"] * 250 + ["B"] * 50,
            "delta": np.concatenate([2 * stability[:250] + 1, rng.random(50)]),
            "stability": stability,
            "jump_value": stability,
            "jump_depth": -stability,
            "jump_product": rng.random(300),
        }
    )
    table = complexity.player_table(frame, 100, {"Champions": {"A"}}).set_index("player")
    assert table.loc["A", "stability"] == pytest.approx(1.0)
    assert table.loc["A", "jump_depth"] == pytest.approx(-1.0)
    assert math.isnan(float(table["stability"]["B"]))
    assert table.loc["B", "status"] == "n/a: 50 moves with per-depth scores, at least 100 needed"
    assert table.loc["Champions", "moves"] == 250
    assert table.loc["All", "moves"] == 300
    assert list(table.index) == ["A", "B", "Champions", "All"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.just(math.nan), st.floats(-5, 5)),
            st.one_of(st.just(math.nan), st.floats(0, 500)),
            st.floats(0, 900),
            st.integers(2, 20),
        ),
        max_size=40,
    )
)
def test_a_row_of_arrays_is_the_row_of_a_table_to_the_bit(
    moves: list[tuple[float, float, float, int]],
) -> None:
    # The groups' rows are made from the pooled arrays (no table of every move); they must
    # give exactly the row the same moves give as a table: NaNs skipped, the same order.
    delta = np.array([m[0] for m in moves], dtype=float)
    stability = np.array([m[1] for m in moves], dtype=float)
    value = np.array([m[2] for m in moves], dtype=float)
    depth = np.array([float(m[3]) for m in moves], dtype=float)
    value[np.isnan(stability)] = depth[np.isnan(stability)] = math.nan
    indicators = {
        "stability": stability,
        "jump_value": value,
        "jump_depth": depth,
        "jump_product": value * depth,
    }
    table = pd.DataFrame({"delta": delta, **indicators})
    by_table = complexity.player_row("All", "group", table, 3)
    by_arrays = complexity.moves_row("All", "group", delta, indicators, 3)
    assert by_table.keys() == by_arrays.keys()
    for key, value_of_table in by_table.items():
        got = by_arrays[key]
        if isinstance(value_of_table, float) and math.isnan(value_of_table):
            assert isinstance(got, float) and math.isnan(got), key
        else:
            assert got == value_of_table, key
