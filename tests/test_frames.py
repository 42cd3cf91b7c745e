"""frames.records_by: a group's rows, made when asked, are exactly the rows records() makes
of the whole frame, grouped by the string value of the column (issue 17: no frame is held
as one dict per row)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.frames import (
    RecordIndex,
    among,
    column_array,
    positions_by,
    records,
    records_by,
    row_hashes_by,
)
from site_builder.render.writer import fast_pickle


def _grouped_records(frame: pd.DataFrame, column: str) -> dict[str, list[dict[str, Any]]]:
    """What records_by gave before it was lazy: every row a dict, grouped in row order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in records(frame):
        out.setdefault(str(row[column]), []).append(row)
    return out


def _same(a: Any, b: Any) -> bool:
    """The same pickle as a page digest takes it (values and types; NaN equal to NaN)."""
    return fast_pickle(a) == fast_pickle(b)


_NAMES = st.sampled_from(["Carlsen, Magnus", "Ding, Liren", "", "x2", "Ånand"])


@st.composite
def _frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 25))
    names = draw(st.lists(st.one_of(_NAMES, st.none()), min_size=n, max_size=n))
    floats = draw(
        st.lists(st.one_of(st.floats(allow_nan=True), st.just(math.nan)), min_size=n, max_size=n)
    )
    ints = draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n))
    maybe = draw(st.lists(st.one_of(st.none(), st.integers(0, 3000)), min_size=n, max_size=n))
    mixed = draw(
        st.lists(st.one_of(st.none(), st.just(math.nan), _NAMES, st.integers(0, 9)), min_size=n)
    )[:n]
    mixed += [None] * (n - len(mixed))
    return pd.DataFrame(
        {
            "player": pd.array(names, dtype="str"),
            "q": np.array(floats, dtype=float),
            "n": np.array(ints, dtype=np.int64),
            "won": np.array([i % 2 == 0 for i in range(n)]),
            "elo": pd.array(maybe, dtype="Int64"),
            "note": pd.Series(mixed, dtype=object),
            "event": pd.array(names[::-1], dtype="string"),
            "mean": pd.array([None if v is None else v / 2 for v in maybe], dtype="Float64"),
        }
    )


@settings(max_examples=200, deadline=None)
@given(_frames(), st.sampled_from(["player", "note", "event", "n", "elo"]))
def test_a_group_is_the_rows_records_makes(frame: pd.DataFrame, column: str) -> None:
    expected = _grouped_records(frame, column)
    index = RecordIndex(frame, column)
    assert set(index.keys()) == set(expected)
    for key, rows in expected.items():
        assert key in index
        assert _same(index.get(key), rows), key
    assert index.get("no such group", []) == []
    assert index.get("no such group") is None


@settings(max_examples=200, deadline=None)
@given(_frames(), st.sampled_from(["player", "note", "event", "n", "elo"]))
def test_positions_by_is_groupby_indices(frame: pd.DataFrame, column: str) -> None:
    """positions_by (pandas' factorize, issue 17: a pyarrow column's groupby boxed every value
    one at a time) gives groupby's indices: the same groups, in order of first appearance,
    each with its rows in row order, missing values in no group."""
    expected = {str(k): v for k, v in frame.groupby(column, sort=False).indices.items()}
    found = positions_by(frame, column)
    assert list(found) == list(expected)
    for key, at in expected.items():
        assert found[key].tolist() == at.tolist(), key
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    assert row_hashes_by(frame, column) == {k: hashes[at].tobytes() for k, at in expected.items()}


def test_records_by_is_indexed_once_per_frame() -> None:
    frame = pd.DataFrame({"player": ["A", "B", "A"], "q": [1.0, 2.0, 3.0]})
    assert records_by(frame, "player") is records_by(frame, "player")
    assert records_by(frame, "player").get("A") == [
        {"player": "A", "q": 1.0},
        {"player": "A", "q": 3.0},
    ]


def test_a_frame_without_rows() -> None:
    frame = pd.DataFrame({"player": pd.array([], dtype="str"), "q": np.array([], dtype=float)})
    assert RecordIndex(frame, "player").keys() == []
    assert RecordIndex(frame, "player").get("A", []) == []


def test_tables_share_one_string_object_a_value() -> None:
    """A game id or a name read from several tables is one object, not a copy a table (a
    render process held about 80 MB of copies at 30x the demo)."""

    def fresh(text: str) -> str:
        return "".join(list(text))  # equal, not the same object

    one = pd.DataFrame({"player": [fresh("Tal, Mikhail")], "game_id": [fresh("g-1962-01")]})
    other = pd.DataFrame({"game_id": [fresh("g-1962-01")], "player": [fresh("Tal, Mikhail")]})
    one["player"], one["game_id"] = one["player"].astype("str"), one["game_id"].astype("str")
    other["player"] = other["player"].astype("str")
    other["game_id"] = other["game_id"].astype("str")
    a = RecordIndex(one, "player").get("Tal, Mikhail")[0]
    b = RecordIndex(other, "game_id").get("g-1962-01")[0]
    assert a["game_id"] is b["game_id"] and a["player"] is b["player"]
    assert next(iter(RecordIndex(one, "player"))) is b["player"]
    assert next(iter(positions_by(other, "player"))) is a["player"]
    assert next(iter(row_hashes_by(other, "game_id"))) is a["game_id"]
    assert column_array(other["player"])[0] is a["player"]


_NAMES = st.sampled_from(["Carlsen, M.", "Kasparov, G.", "Tal, M.", "Tal, M. x2", ""])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(_NAMES, st.none()), max_size=30),
    st.sets(_NAMES, max_size=4),
    st.sampled_from(["str", "object", "string[pyarrow]"]),
)
def test_among_is_isin(column: list[str | None], values: set[str], dtype: str) -> None:
    """among() gives Series.isin's answer (missing values never among the names), as an
    array of booleans, for every kind of string column and for a list of names too."""
    series = pd.Series(column, dtype=dtype)
    expected = series.isin(values).to_numpy(dtype=bool)
    assert among(series, values).dtype == bool
    assert among(series, values).tolist() == expected.tolist()
    assert among(series, sorted(values)).tolist() == expected.tolist()
