"""DataFrames to template rows and CSV downloads (pure)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd


def _plain(value: Any) -> Any:
    if value is pd.NA or value is None:
        return None
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


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
