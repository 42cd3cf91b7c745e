"""The evaluation cache: a diskcache that never evicts, written only by the build driver.

Only evaluations that :func:`validate.invalid_reason` accepts are written to it (by the pool
and by import); ``site-builder doctor --check`` removes any others an older version left, and
``doctor --salvage`` rebuilds a corrupt cache from its readable entries.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import diskcache

from site_builder.analysis.spec import IMPORTED, AnalysisSpec, move_key, pv_key
from site_builder.analysis.validate import invalid_reason
from site_builder.errors import SQLITE_DAMAGED, SiteBuilderError, sqlite_code

# Never evict: an evaluation costs engine time (METHODS.md 0b: the default evicts at 1 GB).
_SETTINGS = {"eviction_policy": "none", "size_limit": 2**62, "cull_limit": 0}

#: Random id of one evaluation cache: the build cache's move rows are tied to it.
ID_KEY = "meta|id"
#: Prefix of the markers of analysis files imported from the content folder ("v2": since
#: evaluations are keyed by the engine's binary, a cache of an older version imports again).
IMPORTED_PREFIX = "meta|imported-v2|"

P = ParamSpec("P")
R = TypeVar("R")


class CacheCorruptError(SiteBuilderError):
    """The evaluation cache's database cannot be read."""


def corrupt_message(directory: Path, exc: BaseException) -> str:
    return (
        f"the evaluation cache {directory / 'cache.db'} is corrupt ({exc}). Run "
        f"`site-builder doctor --salvage --cache {directory}` to copy its readable entries "
        "into a fresh cache (the corrupt file is kept beside it); positions it lost are "
        "analysed again by the next build."
    )


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite says the file is damaged, not read-only, locked or on a full disk:
    those are reported as such by the command line."""
    return sqlite_code(exc) in SQLITE_DAMAGED


def _guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Turn SQLite's 'database disk image is malformed' into a message saying what to do."""

    @wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            self = args[0]
            assert isinstance(self, EvalCache)
            raise CacheCorruptError(corrupt_message(self.directory, exc)) from exc

    return run


class EvalCache:
    """Maps cache keys (see :mod:`spec`) to JSON-like evaluation values."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._id: str | None = None
        #: spec → the keys :meth:`lookup` reads under, in order (made once, not per position)
        self._lookup_keys: dict[AnalysisSpec, tuple[str, ...]] = {}
        try:
            self._cache = diskcache.Cache(str(directory), **_SETTINGS)
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            raise CacheCorruptError(corrupt_message(directory, exc)) from exc

    @_guarded
    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        found = {}
        for key in keys:
            value = self._cache.get(key, default=None)
            if value is not None:
                found[key] = value
        return found

    @_guarded
    def __contains__(self, key: str) -> bool:
        return key in self._cache

    @_guarded
    def get(self, key: str) -> Any:
        return self._cache.get(key, default=None)

    def lookup(self, spec: AnalysisSpec, position: str, uci: str | None = None) -> Any:
        """A position's lines (or the played move ``uci``'s score) for ``spec``: the
        engine's own answer first, else one imported from an analysis file."""
        keys = self._lookup_keys.get(spec)
        if keys is None:
            specs = (spec,) if spec.binary == IMPORTED else (spec, spec.imported())
            keys = self._lookup_keys[spec] = tuple(s.key for s in specs)
        for key in keys:
            value = self.get(pv_key(key, position) if uci is None else move_key(key, position, uci))
            if value is not None:
                return value
        return None

    @_guarded
    def put_many(self, items: Mapping[str, Any]) -> None:
        """One transaction for a finished chunk."""
        with self._cache.transact():
            for key, value in items.items():
                self._cache.set(key, value)

    @_guarded
    def delete_many(self, keys: Iterable[str]) -> None:
        with self._cache.transact():
            for key in keys:
                self._cache.delete(key)

    @_guarded
    def identity(self) -> str:
        """This cache's random id, made on first use (and anew when entries are removed)."""
        if self._id is None:
            found = self._cache.get(ID_KEY)
            if found is None:
                found = uuid.uuid4().hex
                self._cache.set(ID_KEY, found)
            self._id = str(found)
        return self._id

    def renew_identity(self) -> None:
        """Entries were removed: move rows read from the old ones must not be trusted."""
        self._id = None
        self.put_many({ID_KEY: uuid.uuid4().hex})

    @_guarded
    def all_keys(self) -> list[str]:
        return list(self._cache)

    def __iter__(self) -> Iterator[str]:
        return iter(self.all_keys())

    @_guarded
    def __len__(self) -> int:
        return len(self._cache)

    @_guarded
    def volume(self) -> int:
        return int(self._cache.volume())

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> EvalCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class CheckResult:
    entries: int = 0
    removed: dict[str, str] = field(default_factory=dict)  # key → reason


def check_cache(cache: EvalCache, remove: bool = True) -> CheckResult:
    """Validate every evaluation; remove the invalid ones (and forget which analysis files
    were imported, so the next build imports them again and fills the gaps)."""
    result = CheckResult()
    for key in sorted(cache.all_keys()):
        if key.startswith("meta|"):
            continue
        result.entries += 1
        reason = invalid_reason(key, cache.get(key))
        if reason is not None:
            result.removed[key] = reason
    if remove and result.removed:
        markers = [k for k in cache.all_keys() if k.startswith(IMPORTED_PREFIX)]
        cache.delete_many([*result.removed, *markers])
        cache.renew_identity()
    return result


@dataclass
class SalvageResult:
    aside: Path | None = None  # where the corrupt database was moved
    copied: int = 0
    unreadable: int = 0
    invalid: int = 0


def _read_rows(db: Path, disk: diskcache.Disk) -> tuple[dict[str, Any], int]:
    """Every row of a damaged diskcache database that can still be read, and how many not."""
    found: dict[str, Any] = {}
    bad = 0
    con = sqlite3.connect(str(db))
    try:
        try:
            rowids = [r[0] for r in con.execute("SELECT rowid FROM Cache ORDER BY rowid")]
        except sqlite3.DatabaseError:
            try:
                top = con.execute("SELECT max(rowid) FROM Cache").fetchone()[0] or 0
            except sqlite3.DatabaseError:
                return found, 0
            rowids = list(range(1, top + 1))
        for rowid in rowids:
            try:
                row = con.execute(
                    "SELECT key, raw, mode, filename, value FROM Cache WHERE rowid = ?", (rowid,)
                ).fetchone()
                if row is None:
                    continue
                key = disk.get(row[0], row[1])
                found[key] = disk.fetch(row[2], row[3], row[4], False)
            except Exception:  # any damage to one row: count it, read the next
                bad += 1
    finally:
        con.close()
    return found, bad


def salvage_cache(directory: Path) -> SalvageResult:
    """Move the corrupt ``cache.db`` aside and copy its readable, valid evaluations into a
    fresh cache in ``directory``. Markers of imported files are not copied, so the next build
    imports the content's analysis files again."""
    result = SalvageResult()
    db = directory / "cache.db"
    if not db.exists():
        return result
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = directory / f"cache.db.corrupt-{stamp}"
    db.replace(aside)
    for suffix in ("-wal", "-shm"):
        extra = directory / f"cache.db{suffix}"
        if extra.exists():
            extra.replace(directory / f"{aside.name}{suffix}")
    result.aside = aside
    rows, result.unreadable = _read_rows(aside, diskcache.Disk(str(directory)))
    good: dict[str, Any] = {}
    for key, value in sorted(rows.items(), key=lambda kv: str(kv[0])):
        if not isinstance(key, str) or key.startswith("meta|"):
            continue
        if invalid_reason(key, value) is not None:
            result.invalid += 1
            continue
        good[key] = value
    with contextlib.closing(EvalCache(directory)) as fresh:
        fresh.put_many(good)
    result.copied = len(good)
    return result
