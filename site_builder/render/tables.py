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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from site_builder.frames import plain
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
    base: str,
    rows: Sequence[dict[str, Any]] | Callable[[], Iterable[dict[str, Any]]],
    columns: Sequence[Column],
    made_from: Any = None,
) -> tuple[Downloads, list[Page]]:
    """``base.csv`` and ``base.json`` of ``rows`` with the documented ``columns``."""
    d = downloads_of(base, columns)
    return d, table_files(d.csv, d.json, rows, d.keys, made_from)


def table_files(
    csv_path: str,
    json_path: str,
    rows: Sequence[dict[str, Any]] | Callable[[], Iterable[dict[str, Any]]],
    keys: Sequence[str],
    made_from: Any = None,
) -> list[Page]:
    """The CSV and JSON files of ``rows`` (columns ``keys``), made only when written: an
    unchanged table is kept from the last build. Both read the same table, digested once.

    ``rows`` may be a function making them, with ``made_from`` all it reads (digested in
    their place): a large table is then made row by row while its file is written, not held
    with its family's other pages (the head-to-head pairs: 89,700 rows from 300 × 300
    arrays)."""
    if callable(rows):
        table = Digested((list(keys), "made from", made_from))
        make = rows
    else:
        table = Digested((list(keys), rows))
        listed = rows
        make = lambda: listed  # noqa: E731
    return [
        Page(csv_path, "", {"bytes": Deferred(("csv", table), lambda: csv_bytes(make(), keys))}),
        Page(json_path, "", {"bytes": Deferred(("json", table), lambda: json_bytes(make(), keys))}),
    ]


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


def csv_bytes(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> bytes:
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
    """:func:`frames.plain`, with NaN as None."""
    t = type(v)
    if t is float:
        return None if v != v else v
    if t in _SCALARS:
        return v
    v = plain(v)
    return None if isinstance(v, float) and math.isnan(v) else v


def json_bytes(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> bytes:
    """The same rows as :func:`csv_bytes`, as a JSON list of objects (NaN → null), encoded
    :data:`_JSON_CHUNK` rows at a time: the text of ``json.dumps(rows, indent=1)`` is its
    chunks' texts joined, each without its brackets (the indentation of an item does not
    depend on its place in the list), so a large table never holds every row's dict."""
    parts: list[bytes] = []
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append({c: _json_value(row.get(c)) for c in columns})
        if len(chunk) == _JSON_CHUNK:
            parts.append(_json_items(chunk, columns))
            chunk = []
    if chunk:
        parts.append(_json_items(chunk, columns))
    if not parts:
        return b"[]\n"
    return b"[\n" + b",\n".join(parts) + b"\n]\n"


#: Rows a piece of :func:`json_bytes` encodes at once.
_JSON_CHUNK = 2000


def _json_items(items: list[dict[str, Any]], columns: Sequence[str]) -> bytes:
    """``json.dumps(items, ensure_ascii=False, indent=1)`` without its opening ``[\\n`` and
    closing ``\\n]``, as UTF-8."""
    import json

    text = _indented_rows(items, columns)
    if text is None:  # a value that is not a scalar: the general encoder
        text = json.dumps(items, ensure_ascii=False, sort_keys=False, indent=1)
    return text[2:-2].encode("utf-8")


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
