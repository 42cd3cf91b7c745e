"""DataFrames to template rows and CSV/JSON downloads (pure).

Every list of the site has a CSV and a JSON file beside it, and a legend of their columns:
:class:`Column` documents one column, :func:`download_pages` makes both files from the same
columns, so the documented keys are the header of the CSV and the keys of the JSON objects.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from site_builder.render.writer import Deferred, Digested, Page


@dataclass(frozen=True)
class Column:
    """A column of a downloadable list: key in CSV/JSON, header, legend line."""

    key: str
    label: str
    legend: str
    numeric: bool = False


@dataclass(frozen=True)
class Downloads:
    """The CSV and JSON files of one table, and its documented columns (macros.downloads_for)."""

    csv: str
    json: str
    columns: tuple[Column, ...]

    @property
    def keys(self) -> list[str]:
        return [c.key for c in self.columns]


def downloads_of(base: str, columns: Sequence[Column]) -> Downloads:
    """The paths and columns of the downloads ``base.csv`` and ``base.json``."""
    return Downloads(f"{base}.csv", f"{base}.json", tuple(columns))


def download_pages(
    base: str, rows: Sequence[dict[str, Any]], columns: Sequence[Column]
) -> tuple[Downloads, list[Page]]:
    """``base.csv`` and ``base.json`` of ``rows`` with the documented ``columns``."""
    d = downloads_of(base, columns)
    return d, table_files(d.csv, d.json, rows, d.keys)


def table_files(
    csv_path: str, json_path: str, rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> list[Page]:
    """The CSV and JSON files of ``rows`` (columns ``keys``), made only when written: an
    unchanged table is kept from the last build. Both read the same table, digested once."""
    table = Digested((list(keys), rows))
    return [
        Page(csv_path, "", {"bytes": Deferred(("csv", table), lambda: csv_bytes(rows, keys))}),
        Page(json_path, "", {"bytes": Deferred(("json", table), lambda: json_bytes(rows, keys))}),
    ]


def _plain(value: Any) -> Any:
    if value is pd.NA or value is None:
        return None
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows as plain dicts (None for missing values), a column at a time."""
    if len(frame.columns) == 0:
        return [{} for _ in range(len(frame))]
    names = [str(c) for c in frame.columns]
    columns = []
    for i in range(len(names)):
        col = frame.iloc[:, i]
        values = col.tolist()
        if col.dtype == object or isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
            values = [_plain(v) for v in values]  # NA, None and numpy scalars inside
        columns.append(values)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


_MEMO: dict[tuple[int, str], tuple[object, Any]] = {}


def memo_on(owner: object, name: str, make: Callable[[], Any]) -> Any:
    """``make()`` computed once per ``owner`` object (a family's result, a frame) and ``name``."""
    key = (id(owner), name)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is owner:
        return hit[1]
    if len(_MEMO) > 256:
        _MEMO.clear()
    value = make()
    _MEMO[key] = (owner, value)
    return value


def forget_memos() -> None:
    """Drop what :func:`memo_on` keeps: after a build, its frames and site are garbage."""
    _MEMO.clear()


def records_by(frame: pd.DataFrame, column: str) -> dict[str, list[dict[str, Any]]]:
    """:func:`records` of ``frame`` grouped by the string value of ``column``, in row order;
    grouped once per frame, so per-page lookups cost a dict access."""

    def group() -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for row in records(frame):
            out.setdefault(str(row[column]), []).append(row)
        return out

    found: dict[str, list[dict[str, Any]]] = memo_on(frame, f"records_by|{column}", group)
    return found


def row_hashes_by(
    frame: pd.DataFrame, column: str, columns: Sequence[str] | None = None
) -> dict[str, bytes]:
    """A 64-bit hash of each row (of ``columns``, all by default) in row order, grouped by
    the string value of ``column``: what a page key holds of a table, without the rows as
    dicts (hashed column-wise, once per frame)."""

    def group() -> dict[str, bytes]:
        if frame.empty:
            return {}
        shown = frame if columns is None else frame[list(columns)]
        hashes = pd.util.hash_pandas_object(shown, index=False).to_numpy()
        return {
            str(value): hashes[at].tobytes()
            for value, at in frame.groupby(column, sort=False).indices.items()
        }

    name = f"row_hashes_by|{column}|{'' if columns is None else ','.join(columns)}"
    found: dict[str, bytes] = memo_on(frame, name, group)
    return found


#: A cell a spreadsheet reads as a formula (or whose leading tab or CR hides one).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: A plain decimal number such as -0.5 or +3: never a formula, kept as is.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_safe(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet will not run: a string beginning with =, +, -, @,
    tab or CR gets a leading apostrophe (OWASP's advice on CSV injection), unless it is a
    plain number. Only strings from the data are passed here, never the site's numbers."""
    if text.startswith(_FORMULA_START) and _NUMBER.fullmatch(text) is None:
        return "'" + text
    return text


def csv_bytes(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([spreadsheet_safe(c) for c in columns])
    for row in rows:
        out = []
        for c in columns:
            v = row.get(c)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                out.append("")
            elif isinstance(v, float):
                out.append(f"{v:.4f}")
            elif isinstance(v, str):
                out.append(spreadsheet_safe(v))
            else:
                out.append(str(v))
        writer.writerow(out)
    return buf.getvalue().encode("utf-8")


def _json_value(v: Any) -> Any:
    """:func:`_plain`, with NaN as None."""
    t = type(v)
    if t is float:
        return None if v != v else v
    if t in _SCALARS:
        return v
    v = _plain(v)
    return None if isinstance(v, float) and math.isnan(v) else v


def json_bytes(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    """The same rows as :func:`csv_bytes`, as a JSON list of objects (NaN → null)."""
    import json

    out = [{c: _json_value(row.get(c)) for c in columns} for row in rows]
    text = _indented_rows(out, columns)
    if text is None:  # a value that is not a scalar: the general encoder
        text = json.dumps(out, ensure_ascii=False, sort_keys=False, indent=1)
    return (text + "\n").encode("utf-8")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _indented_rows(items: list[dict[str, Any]], columns: Sequence[str]) -> str | None:
    """``json.dumps(items, ensure_ascii=False, indent=1)`` for rows of scalars; None when a
    value is not a str, int, float, bool or None.

    One call of the C encoder, whose item separator already holds a row's indentation (the
    indenting encoder is pure Python and encodes value by value); the rows' separators are
    then indented one space less. An encoded string holds no line break, so ``},`` followed
    by a line break occurs only between rows.
    """
    import json

    if not items:
        return "[]"
    if not columns:
        return "[\n " + ",\n ".join("{}" for _ in items) + "\n]"
    for item in items:
        if not set(map(type, item.values())) <= _SCALARS:
            return None
    text = json.JSONEncoder(ensure_ascii=False, separators=(",\n  ", ": ")).encode(items)
    body = text[2:-2].replace("},\n  {", "\n },\n {\n  ")
    return "[\n {\n  " + body + "\n }\n]"
