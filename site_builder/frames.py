"""DataFrames as plain rows, grouped and hashed once per frame (pure; used by the family
calculations and the page builders alike)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd


def plain(value: Any) -> Any:
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
            values = [plain(v) for v in values]  # NA, None and numpy scalars inside
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
