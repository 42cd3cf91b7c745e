"""The JSON downloads: the fast writer gives exactly what json.dumps(indent=1) gives."""

from __future__ import annotations

import json
import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from site_builder.render import tables

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
TABLES = st.lists(
    st.sampled_from(["player", "q", "é", 'a "quoted" key', "5"]), unique=True, max_size=4
).flatmap(
    lambda cols: st.tuples(
        st.just(cols), st.lists(st.fixed_dictionaries({c: SCALARS for c in cols}), max_size=4)
    )
)


def _plain_json(rows: list[dict[str, object]], cols: list[str]) -> bytes:
    out = []
    for row in rows:
        item = {}
        for c in cols:
            v = row.get(c)
            item[c] = None if isinstance(v, float) and math.isnan(v) else v
        out.append(item)
    return (json.dumps(out, ensure_ascii=False, sort_keys=False, indent=1) + "\n").encode()


@settings(max_examples=500, deadline=None)
@given(TABLES)
@example((["player", "q"], [{"player": '},\n  {"q": 1}', "q": 0.5}, {"player": "}", "q": None}]))
def test_json_bytes_equal_the_standard_encoder(
    table: tuple[list[str], list[dict[str, object]]],
) -> None:
    cols, rows = table
    assert tables.json_bytes(rows, cols) == _plain_json(rows, cols)


def test_json_bytes_fall_back_for_nested_values() -> None:
    rows = [{"player": "Tal, Mihail", "years": [1960, 1961]}]
    assert tables.json_bytes(rows, ["player", "years"]) == _plain_json(rows, ["player", "years"])
