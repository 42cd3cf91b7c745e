"""DataFrames to template rows and CSV/JSON downloads (pure).

Every list of the site has a CSV and a JSON file beside it, and a legend of their columns:
:class:`Column` documents one column, :func:`download_pages` makes both files from the same
columns, so the documented keys are the header of the CSV and the keys of the JSON objects.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from site_builder.render.writer import Deferred, Page


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
    keys = d.keys
    # Made only when written: an unchanged table is linked from the last build.
    return d, [
        Page(d.csv, "", {"bytes": Deferred(("csv", keys, rows), lambda: csv_bytes(rows, keys))}),
        Page(d.json, "", {"bytes": Deferred(("json", keys, rows), lambda: json_bytes(rows, keys))}),
    ]


def _plain(value: Any) -> Any:
    if value is pd.NA or value is None:
        return None
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


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


def csv_bytes(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        out = []
        for c in columns:
            v = row.get(c)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                out.append("")
            elif isinstance(v, float):
                out.append(f"{v:.4f}")
            else:
                out.append(str(v))
        writer.writerow(out)
    return buf.getvalue().encode("utf-8")


def json_bytes(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    """The same rows as :func:`csv_bytes`, as a JSON list of objects (NaN → null)."""
    import json

    out = []
    for row in rows:
        item = {}
        for c in columns:
            v = _plain(row.get(c))
            if isinstance(v, float) and math.isnan(v):
                v = None
            item[c] = v
        out.append(item)
    return (json.dumps(out, ensure_ascii=False, sort_keys=False, indent=1) + "\n").encode("utf-8")
