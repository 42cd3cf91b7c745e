"""The JSON downloads: the fast writer gives exactly what json.dumps(indent=1) gives."""

from __future__ import annotations

import csv
import io
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


@settings(max_examples=300, deadline=None)
@given(TABLES, st.integers(1, 3), st.booleans())
def test_json_bytes_in_chunks_equal_the_whole_list_encoded(
    table: tuple[list[str], list[dict[str, object]]], chunk: int, nested_first: bool
) -> None:
    """Encoded a few rows at a time, from a generator, some chunks through the general
    encoder (a nested value): still exactly json.dumps of the whole list."""
    cols, rows = table
    if cols and nested_first and rows:
        rows = [{**rows[0], cols[0]: [1, {"a": None}]}, *rows[1:]]
    saved, tables._JSON_CHUNK = tables._JSON_CHUNK, chunk
    try:
        assert tables.json_bytes((r for r in rows), cols) == _plain_json(rows, cols)
    finally:
        tables._JSON_CHUNK = saved


def test_a_table_made_on_demand_is_digested_by_what_it_is_made_from() -> None:
    """Rows made by a function are not held by the pages: their digest is that of
    ``made_from``, and the files' bytes are those of the rows."""
    from site_builder.render.output import _page_digest

    made: list[int] = []

    def rows() -> list[dict[str, object]]:
        made.append(1)
        return [{"player": "Tal", "q": 0.5}]

    csv_page, json_page = tables.table_files("t.csv", "t.json", rows, ["player", "q"], (1, 2))
    same = tables.table_files("t.csv", "t.json", rows, ["player", "q"], (1, 2))[0]
    other = tables.table_files("t.csv", "t.json", rows, ["player", "q"], (1, 3))[0]
    assert made == []  # digests read made_from only
    assert _page_digest(csv_page, "") == _page_digest(same, "") != _page_digest(other, "")
    listed = tables.table_files("t.csv", "t.json", rows(), ["player", "q"])
    assert csv_page.context["bytes"].make() == listed[0].context["bytes"].make()
    assert json_page.context["bytes"].make() == listed[1].context["bytes"].make()


def test_json_bytes_fall_back_for_nested_values() -> None:
    rows = [{"player": "Tal, Mihail", "years": [1960, 1961]}]
    assert tables.json_bytes(rows, ["player", "years"]) == _plain_json(rows, ["player", "years"])


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised() -> None:
    # A player named "=HYPERLINK(...)" in a PGN was written raw into the CSV downloads.
    rows = [
        {"player": '=HYPERLINK("http://x.invalid","Tal")', "q": -0.5, "n": -3, "d": "-0.25"},
        {"player": "+1+cmd|' /C calc'!A0", "q": 0.5, "n": 2, "d": "+3"},
        {"player": "-2+3", "q": None, "n": 0, "d": "@SUM(A1)"},
        {"player": "\tTab", "q": 1.0, "n": 1, "d": "=1+1"},
        {"player": "Tal, Mihail", "q": float("nan"), "n": 1, "d": "1e5"},
    ]
    text = tables.csv_bytes(rows, ["player", "q", "n", "d"]).decode()
    cells = list(csv.reader(io.StringIO(text)))
    assert cells == [
        ["player", "q", "n", "d"],
        ['\'=HYPERLINK("http://x.invalid","Tal")', "-0.5000", "-3", "-0.25"],
        ["'+1+cmd|' /C calc'!A0", "0.5000", "2", "+3"],
        ["'-2+3", "", "0", "'@SUM(A1)"],
        ["'\tTab", "1.0000", "1", "'=1+1"],
        ["Tal, Mihail", "", "1", "1e5"],
    ]
    assert tables.spreadsheet_safe("\r=1") == "'\r=1"


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_characters="\r", blacklist_categories=("Cs",)), max_size=12))
@example("-0.5")
@example("=1")
def test_csv_strings_are_safe_and_recoverable(text: str) -> None:
    rows = list(csv.reader(io.StringIO(tables.csv_bytes([{"a": text}], ["a"]).decode())))
    cell = rows[1][0] if len(rows) > 1 and rows[1] else ""
    if cell != text:  # neutralised: one apostrophe in front, nothing else changed
        assert cell == "'" + text
    if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):  # left as is: a plain number only
        float(cell)
