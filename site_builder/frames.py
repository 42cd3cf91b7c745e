"""DataFrames as plain rows, grouped and hashed once per frame (pure; used by the family
calculations and the page builders alike)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from typing import Any, TypeVar, overload

import numpy as np
import pandas as pd

T = TypeVar("T")


def plain(value: Any) -> Any:
    if value is pd.NA or value is None:
        return None
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    return value


def shared(value: Any) -> Any:
    """A string as one object for every table that holds it (a game id is in half a dozen
    tables, a player's name in every one), not a copy a table."""
    return sys.intern(value) if type(value) is str else value


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


def among(column: pd.Series, values: Collection[Any]) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """``column.isin(values)`` as a boolean array, by set lookups: pandas' string column
    makes a pyarrow scalar of each value first, 18 times slower for 20,000 names."""
    found = values if isinstance(values, (set, frozenset)) else set(values)
    return np.fromiter((v in found for v in column.tolist()), dtype=bool, count=len(column))


_MEMO: dict[tuple[int, Hashable], tuple[object, Any]] = {}


def memo_on(owner: object, name: Hashable, make: Callable[[], Any]) -> Any:
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


class _Picker:
    """One column of a frame, read a few rows at a time with the values :func:`records`
    gives: numbers stay in their numpy array and strings are coded once, so the frame's
    rows are never all made into Python objects."""

    __slots__ = ("array", "boxed", "labels", "missing")

    def __init__(self, column: pd.Series) -> None:
        dtype = column.dtype
        self.labels: list[Any] | None = None
        self.missing: Any = None
        #: Values that :func:`plain` must unbox (object and extension columns).
        self.boxed = False
        if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
            self.array: Any = column.to_numpy()
        elif isinstance(dtype, np.dtype) and dtype.kind == "O":
            self.array = column.to_numpy()
            self.boxed = True
        elif isinstance(dtype, pd.StringDtype):
            codes, uniques = pd.factorize(column, use_na_sentinel=True)
            self.array = codes.astype(np.int32) if len(uniques) < 2**31 else codes
            self.labels = [shared(plain(v)) for v in uniques.tolist()]
            self.missing = plain(dtype.na_value)
        else:  # other extension types: taken from the array as records() reads it
            self.array = column.array
            self.boxed = True

    def take(self, at: np.ndarray[Any, Any]) -> list[Any]:
        if self.labels is not None:
            labels, missing = self.labels, self.missing
            return [labels[c] if c >= 0 else missing for c in self.array[at].tolist()]
        values = self.array.take(at) if not isinstance(self.array, np.ndarray) else self.array[at]
        out = values.tolist()
        return [plain(v) for v in out] if self.boxed else out


class RecordIndex:
    """:func:`records` of a frame's rows grouped by the string value of one column, made
    for one group at a time when asked (:meth:`get`): the index holds the rows sorted by
    group (one integer a row) and the columns coded once, not every row as a dict."""

    def __init__(self, frame: pd.DataFrame, column: str) -> None:
        self.names = [str(c) for c in frame.columns]
        self.pickers = [_Picker(frame.iloc[:, i]) for i in range(len(self.names))]
        self._picker_of = dict(zip(self.names, self.pickers, strict=True))
        keys = []
        if len(frame):
            keys = [
                str(k) for k in self.pickers[self.names.index(column)].take(np.arange(len(frame)))
            ]
        codes, uniques = pd.factorize(np.array(keys, dtype=object), sort=False)
        #: group → its number; the rows of group k are order[starts[k]:starts[k + 1]] (a
        #: dict: a page's key looks up many groups, one at a time)
        self.index: dict[str, int] = {shared(str(k)): i for i, k in enumerate(uniques.tolist())}
        self.order = np.argsort(codes, kind="stable")
        self.starts = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(uniques)))]

    def keys(self) -> list[str]:
        return list(self.index)

    def __contains__(self, value: object) -> bool:
        return value in self.index

    def __iter__(self) -> Iterator[str]:
        """The groups, in order of first appearance."""
        return iter(self.index)

    @overload
    def get(self, value: str) -> list[dict[str, Any]] | None: ...
    @overload
    def get(self, value: str, default: T) -> list[dict[str, Any]] | T: ...
    def get(self, value: str, default: Any = None) -> Any:
        """The group's rows as dicts, in frame order (``default`` when it has none)."""
        return self._records(value, self.names, self.pickers, default)

    def get_columns(self, value: str, names: Sequence[str], default: Any = None) -> Any:
        """:meth:`get` with only the columns ``names``, in that order."""
        pickers = [self._picker_of[c] for c in names]
        return self._records(value, names, pickers, default)

    def _records(
        self, value: str, names: Sequence[str], pickers: Sequence[_Picker], default: Any
    ) -> Any:
        k = self.index.get(value)
        if k is None:
            return default
        at = self.order[self.starts[k] : self.starts[k + 1]]
        if not names:
            return [{} for _ in range(len(at))]
        columns = [p.take(at) for p in pickers]
        return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def column_array(column: pd.Series) -> np.ndarray[Any, Any]:
    """The column as a numpy array, its strings :func:`shared`."""
    values = column.to_numpy()
    if values.dtype == object:
        values = np.fromiter((shared(v) for v in values), dtype=object, count=len(values))
    return values


def positions_by(frame: pd.DataFrame, column: str) -> dict[str, np.ndarray]:
    """The row positions of each string value of ``column``, in row order (once per frame)."""
    found: dict[str, np.ndarray] = memo_on(
        frame, f"indices|{column}", lambda: _group_positions(frame[column])
    )
    return found


def _group_positions(column: pd.Series) -> dict[str, np.ndarray]:
    """``{str(value): row positions}`` of ``column``, values in order of first appearance,
    positions in row order, missing values left out: ``groupby(sort=False).indices`` without
    boxing each value of a pyarrow column one at a time."""
    codes, uniques = pd.factorize(column, sort=False, use_na_sentinel=True)
    order = np.argsort(codes, kind="stable")
    ends = np.searchsorted(codes[order], np.arange(len(uniques) + 1), side="left")
    return {
        shared(str(value)): order[ends[k] : ends[k + 1]] for k, value in enumerate(uniques.tolist())
    }


def records_by(frame: pd.DataFrame, column: str) -> RecordIndex:
    """:func:`records` of ``frame`` grouped by the string value of ``column``, in row order;
    indexed once per frame, each group's rows made when asked for."""
    found: RecordIndex = memo_on(frame, f"records_by|{column}", lambda: RecordIndex(frame, column))
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
        groups = _group_positions(frame[column])  # not kept: a page key needs the hashes only
        return {value: hashes[at].tobytes() for value, at in groups.items()}

    name = f"row_hashes_by|{column}|{'' if columns is None else ','.join(columns)}"
    found: dict[str, bytes] = memo_on(frame, name, group)
    return found
