"""intrinsic.UnitColumns: a group's figures read by position from arrays are exactly those
read from the frame of its units (issue 17: the skill and IPR rows no longer take a frame a
group)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.metrics.intrinsic import UnitColumns

_units = st.lists(
    st.tuples(
        st.sampled_from(["g1", "g2", "g3", "g4"]),
        st.sampled_from(["Anand, V", "Carlsen, M", "Tal, M"]),
        st.integers(0, 60),
        st.one_of(st.none(), st.integers(1000, 2900)),
    ),
    min_size=1,
    max_size=30,
)


def _frame(rows: list[tuple[str, str, int, int | None]]) -> pd.DataFrame:
    """Units as the families hold them: string ids, nullable integer Elos."""
    return pd.DataFrame(
        {
            "game_id": pd.Series([r[0] for r in rows], dtype="str"),
            "player": pd.Series([r[1] for r in rows], dtype="str"),
            "turns": np.array([r[2] for r in rows], dtype=np.int64),
            "player_elo": pd.array([r[3] for r in rows], dtype="Int64"),
        }
    )


@settings(max_examples=200, deadline=None)
@given(_units, st.data())
def test_a_groups_figures_are_its_frames(rows: list[tuple[str, str, int, int | None]], data):
    frame = _frame(rows)
    at = np.array(
        sorted(data.draw(st.sets(st.integers(0, len(rows) - 1), min_size=1))), dtype=np.int64
    )
    group = UnitColumns.of(frame).at(at)
    taken = frame.iloc[at]
    assert group.total_turns() == int(taken["turns"].sum())
    assert group.games() == int(taken["game_id"].nunique())
    elos = taken["player_elo"].dropna().astype(float)
    expected = float(elos.mean()) if len(elos) else float("nan")
    mean = group.mean_elo()
    assert (math.isnan(mean) and math.isnan(expected)) or mean == expected  # to the bit
    assert group.sides() == list(
        zip(taken["game_id"].astype(str), taken["player"].astype(str), strict=True)
    )
