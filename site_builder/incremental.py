"""What changed since the last build, and the build cache that lets unchanged work be skipped.

Change detection runs in tiers, as doit does: the same (mtime, size) → unchanged without
reading the file; otherwise the content hash decides. Parsed files, the plies of each game and
the move rows of each analysed game are cached under keys that hold everything they depend on.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import io
import json
import os
import pickle
import sqlite3
import struct
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import diskcache

from site_builder.config import TimeControlSection
from site_builder.errors import (
    SQLITE_DAMAGED,
    SQLITE_UNWRITABLE,
    SiteBuilderError,
    sqlite_code,
)
from site_builder.forked import pool_map, shared_pool
from site_builder.ingest.names import AliasTable
from site_builder.ingest.pgn import Reader, read_file
from site_builder.model import GameRecord, Problem

#: Bump when parsing, plies or move rows change meaning or layout (3: records and plies
#: have slots, and pickle as their values, not dicts; a list or a tuple reads the same).
#: It enters the parse cache's key and every game's fingerprint, so the plies' and rows'
#: keys.
BUILD_CACHE_VERSION = 3
#: Bump when the way values are stored changes (2: value files end in a checksum).
BUILD_CACHE_FORMAT = 2
_FORMAT_KEY = "build-cache-format"
#: Value files end in the CRC-32 and length of what precedes, then this tag.
_TRAILER = struct.Struct("<IQ4s")
_TAG = b"SBc2"


def digest(data: Any) -> str:
    """md5 of sorted JSON: the config digest of doit and of site_builder.config."""
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.md5(blob).hexdigest()


class GarbledValueError(Exception):
    """A value file of the build cache does not hold what was written."""


class _Disk(diskcache.Disk):  # type: ignore[misc]
    """diskcache's Disk through its documented extension points (``store``, ``fetch``,
    ``filename``): a value's file is written in one call (diskcache's own writer iterates a
    pickle as a BytesIO, which yields it line by line: a write per b"\\n" byte, 260,000 on a
    rebuild of the demo) and ends in a checksum that :meth:`fetch` checks: a garbled file is
    found, not unpickled into nonsense (a value that is plain bytes unpickles to anything).
    Values kept in the database itself are stored as diskcache stores them."""

    def __init__(self, directory: str, **settings: Any) -> None:
        super().__init__(directory, **settings)
        self.folder = Path(directory)

    def store(
        self, value: Any, read: bool, key: Any = diskcache.UNKNOWN
    ) -> tuple[int, int, str | None, Any]:
        kind = type(value)
        payload: bytes
        if read:  # a file object: its bytes
            payload, mode = value.read(), diskcache.core.MODE_BINARY
        elif kind is str:
            if len(value) < self.min_file_size:
                return super().store(value, read, key)  # type: ignore[no-any-return]
            payload, mode = value.encode("utf-8"), diskcache.core.MODE_TEXT
        elif kind is bytes:
            if len(value) < self.min_file_size:
                return super().store(value, read, key)  # type: ignore[no-any-return]
            payload, mode = value, diskcache.core.MODE_BINARY
        elif kind is float or (kind is int and -(2**63) <= value < 2**63):
            return super().store(value, read, key)  # type: ignore[no-any-return]
        else:
            payload = pickle.dumps(value, protocol=self.pickle_protocol)
            mode = diskcache.core.MODE_PICKLE
            if len(payload) < self.min_file_size:  # in the database, as diskcache keeps it
                return 0, mode, None, sqlite3.Binary(payload)
        filename, full_path = self.filename(key, value)
        trailer = _TRAILER.pack(zlib.crc32(payload), len(payload), _TAG)
        for attempt in range(10):  # as diskcache: another cache may remove the folder first
            os.makedirs(os.path.dirname(full_path), exist_ok=True)
            try:
                with open(full_path, "xb") as writer:
                    writer.write(payload)
                    writer.write(trailer)
                break
            except FileNotFoundError:
                if attempt == 9:
                    raise
        return len(payload), mode, filename, None

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if filename is None:  # stored in the database itself
            return super().fetch(mode, filename, value, read)
        full_path = self.folder / filename
        data = full_path.read_bytes()
        payload, trailer = memoryview(data)[: -_TRAILER.size], data[-_TRAILER.size :]
        if len(trailer) != _TRAILER.size:
            raise GarbledValueError(str(full_path))
        crc, size, tag = _TRAILER.unpack(trailer)
        if tag != _TAG or size != len(payload) or crc != zlib.crc32(payload):
            raise GarbledValueError(str(full_path))
        if mode == diskcache.core.MODE_BINARY:
            return io.BytesIO(payload) if read else payload.tobytes()
        if mode == diskcache.core.MODE_TEXT:
            return str(payload, "utf-8")
        return pickle.loads(payload)


def warn(message: str) -> None:
    print(f"site-builder: warning: {message}", file=sys.stderr, flush=True)


def unwritable(directory: Path) -> OSError:
    """The OSError for a folder SQLite cannot write (it does not say why): on a read-only
    file system, else without permission; the CLI turns it into one line naming the folder."""
    folder = next((p for p in (directory, *directory.parents) if p.exists()), directory)
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return OSError(errno.EROFS, os.strerror(errno.EROFS), str(directory))
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(directory))


#: cache.db files found sound in this process (forked workers inherit it, a new render
#: worker is handed it: checked once a build)
_CHECKED: set[Path] = set()


def checked_databases() -> frozenset[Path]:
    """The cache.db files this process found sound (for a new worker of the same build)."""
    return frozenset(_CHECKED)


def count_as_checked(databases: frozenset[Path]) -> None:
    """Take the build's word (:func:`checked_databases`) that these files are sound: a new
    worker does not read a large cache.db through again."""
    _CHECKED.update(databases)


#: Beside cache.db: its size and modification time when a build last closed it.
SOUND_STAMP = "cache.db.sound"
#: How far back a closed cache.db's modification time is set (see :func:`mark_sound`).
_STAMP_BACK_NS = 10 * 10**9


def _check_once(db: Path) -> None:
    """Raise the DatabaseError of a damaged ``db`` now, not halfway through a build: SQLite's
    quick_check reads every page (about 0.05 s for the demo's 100 MB build cache, 5.5 s for
    2.2 GB). Skipped when the file is as a build closed it (:func:`mark_sound`)."""
    if db in _CHECKED or not db.is_file():
        return
    if _closed_whole(db):
        _CHECKED.add(db)
        return
    try:
        with contextlib.closing(
            sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
        ) as con:
            verdict = con.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        if sqlite_code(exc) in SQLITE_DAMAGED:
            raise
        return  # cannot look (a read-only disk, a lock): opening it will say what is wrong
    if verdict is None or verdict[0] != "ok":
        first = " ".join(
            str(verdict[0] if verdict else "").replace("*** in database main ***", "").split()
        )
        damaged = sqlite3.DatabaseError(f"database disk image is malformed: {first}")
        damaged.sqlite_errorcode = 11  # SQLITE_CORRUPT
        raise damaged
    _CHECKED.add(db)


def _stamp(db: Path) -> dict[str, int]:
    st = db.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def mark_sound(db: Path) -> None:
    """After a build closed ``db`` (no write-ahead log left: no other connection): its
    modification time is set ten seconds back and recorded with its size. Any later write,
    a build's or a damage's, sets the time to the present, which differs from the recorded
    one even where file times are coarse, so :func:`_check_once` then checks the file."""
    with contextlib.suppress(OSError):  # a read-only cache stays unmarked
        if not db.is_file() or db.with_name(db.name + "-wal").exists():
            return
        st = db.stat()
        os.utime(db, ns=(st.st_atime_ns, time.time_ns() - _STAMP_BACK_NS))
        # Written in place: a stamp cut short is not JSON, and the next opening checks.
        db.with_name(SOUND_STAMP).write_text(json.dumps(_stamp(db)), encoding="utf-8")


def _closed_whole(db: Path) -> bool:
    """``db`` is as a build closed it. The stamp is removed: the build opening it now writes,
    and one that does not close it (killed) leaves the next one to check."""
    marker = db.with_name(SOUND_STAMP)
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    with contextlib.suppress(OSError):
        marker.unlink()
    try:
        wal = db.with_name(db.name + "-wal")
        return not wal.exists() and recorded == _stamp(db)
    except OSError:
        return False


def _aside(directory: Path) -> Path:
    """A free name beside ``directory`` to move a damaged cache to."""
    for n in range(1, 1000):
        target = directory.with_name(f"{directory.name}.damaged-{n}")
        if not target.exists():
            return target
    raise SiteBuilderError(f"too many damaged copies beside {directory}: delete some")


class BuildCache:
    """A diskcache beside the evaluation cache for everything a build can reuse.

    ``stamp``: the command's own cache (not a worker's), stamped sound when closed
    (:func:`mark_sound`), so that the next command need not read it whole to check it."""

    def __init__(self, directory: Path, stamp: bool = False) -> None:
        self.directory = directory
        self._stamp_when_closed = stamp
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._cache = self._open(directory)
        except sqlite3.DatabaseError as exc:
            if sqlite_code(exc) in SQLITE_UNWRITABLE:
                raise unwritable(directory) from exc
            if sqlite_code(exc) not in SQLITE_DAMAGED:
                raise
            # Derived data: kept aside for the user to look at or delete, and rebuilt.
            target = _aside(directory)
            directory.rename(target)
            warn(
                f"the build cache {directory / 'cache.db'} is damaged ({exc}); it was moved "
                f"to {target} (delete it when you like: it only held work that is redone) "
                "and this build starts a fresh one."
            )
            directory.mkdir(parents=True)
            self._cache = self._open(directory)
        self.hits = 0
        self.misses = 0
        #: value files found garbled (discarded and recomputed) in this process
        self.garbled = 0
        #: source → content hash of every file read in this build
        self.file_shas: dict[str, str] = {}

    @staticmethod
    def _open(directory: Path) -> diskcache.Cache:
        _check_once(directory / "cache.db")
        cache = diskcache.Cache(
            str(directory), disk=_Disk, eviction_policy="none", size_limit=2**62
        )
        if cache.get(_FORMAT_KEY) != BUILD_CACHE_FORMAT:
            cache.clear()  # an older layout (value files without checksums): derived data
            cache.set(_FORMAT_KEY, BUILD_CACHE_FORMAT)
        return cache

    def close(self, whole: bool = True) -> None:
        """``whole``: the work ended without an error (else the next opening checks it)."""
        self._cache.close()
        if self._stamp_when_closed and whole:
            mark_sound(self.directory / "cache.db")

    def __enter__(self) -> BuildCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(whole=exc[0] is None)

    def file_hash(self, path: Path) -> str:
        """Content hash of a file; (mtime, size) unchanged since last time → not re-read."""
        st = path.stat()
        stamp_key = f"stamp|{path.resolve()}"
        stamp = self._read(stamp_key)
        if stamp is not None and stamp[0] == st.st_mtime_ns and stamp[1] == st.st_size:
            return str(stamp[2])
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        self._cache.set(stamp_key, (st.st_mtime_ns, st.st_size, sha))
        return sha

    def get(self, key: str) -> Any:
        value = self._read(key)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def _read(self, key: str) -> Any:
        """The value at ``key``, None if absent; a garbled value is discarded (with a
        warning) and reads as absent, so it is recomputed; a damaged database stops."""
        try:
            return self._cache.get(key, default=None)
        except sqlite3.DatabaseError as exc:
            if sqlite_code(exc) in SQLITE_UNWRITABLE:
                raise unwritable(self.directory) from exc
            if sqlite_code(exc) not in SQLITE_DAMAGED:
                raise
            raise SiteBuilderError(
                f"the build cache {self.directory / 'cache.db'} is damaged ({exc}). It only "
                f"holds work that is redone: move the folder {self.directory} aside (or delete "
                "it) and run the command again."
            ) from None
        except OSError:
            raise
        except Exception as exc:  # a garbled value file or pickle: derived data, recomputed
            self.garbled += 1
            where = exc.args[0] if isinstance(exc, GarbledValueError) else f"entry {key[:60]}"
            if self.garbled == 1:
                warn(
                    f"the build cache value {where} is garbled; it was discarded and is "
                    "recomputed (further garbled values of this build are discarded silently)"
                )
            with contextlib.suppress(Exception):
                self._cache.delete(key)
            return None

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def set(self, key: str, value: Any) -> None:
        self._cache.set(key, value)

    def delete(self, key: str) -> None:
        self._cache.delete(key)

    def transact(self) -> contextlib.AbstractContextManager[Any]:
        """Many writes in one transaction (one commit, not one per entry)."""
        found: contextlib.AbstractContextManager[Any] = self._cache.transact()
        return found

    def engine_name(self, path: str, identify: Callable[[str], str]) -> str:
        """The engine's ``id name``, remembered while the executable is unchanged."""
        st = Path(path).stat()
        key = f"engine|{Path(path).resolve()}|{st.st_mtime_ns}|{st.st_size}"
        name = self.get(key)
        if name is None:
            name = identify(path)
            self.set(key, name)
        return str(name)

    def cached_reader(self, aliases: AliasTable, tc_rules: TimeControlSection) -> Reader:
        """``read_file`` that returns the cached result for an unchanged file."""
        context = digest([BUILD_CACHE_VERSION, aliases.fingerprint(), asdict(tc_rules)])

        def read(
            path: Path, source: str, aliases: AliasTable, tc_rules: TimeControlSection
        ) -> tuple[list[GameRecord], list[Problem]]:
            sha = self.file_hash(path)
            self.file_shas[source] = sha
            key = f"file|{source}|{sha}|{context}"
            found = self.get(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
            result = read_file(path, source, aliases, tc_rules)
            self.set(key, result)
            return result

        def prefetch(files: list[tuple[Path, str]]) -> None:
            """Parse the files not yet cached in the build's workers, largest first (none
            open: each file is parsed when it is read)."""
            if shared_pool() is None:
                return
            todo = []
            for path, source in files:
                sha = self.file_hash(path)
                if f"file|{source}|{sha}|{context}" not in self:
                    todo.append((path.stat().st_size, path, source, sha))
            if len(todo) < 2:
                return
            todo.sort(key=lambda t: (-t[0], t[2]))
            parsed = pool_map(
                _read_file, [(p, source, aliases, tc_rules) for _, p, source, _ in todo]
            )
            for (_, _, source, sha), result in zip(todo, parsed, strict=True):
                self.set(f"file|{source}|{sha}|{context}", result)

        read.prefetch = prefetch  # type: ignore[attr-defined]
        return read


def _read_file(
    args: tuple[Path, str, AliasTable, TimeControlSection],
) -> tuple[list[GameRecord], list[Problem]]:
    return read_file(*args)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside (for code that allocates much and frees little)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def collector_running() -> Iterator[None]:
    """Garbage collection on inside, within :func:`collector_paused` (the engines' hours of
    asyncio leave reference cycles)."""
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()


def code_digest() -> str:
    """Digest of the package's own Python sources: new code can change any number."""
    package = Path(__file__).resolve().parent
    h = hashlib.sha1()
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def explain_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why this build differs from the last one, one line per reason (for --explain)."""
    if not old:
        return ["no previous build recorded for this output folder: everything is built"]
    lines: list[str] = []
    if old.get("code") != new["code"]:
        lines.append("site-builder's code changed: every metric and page is recomputed")
    if old.get("templates") != new["templates"]:
        lines.append("templates changed: pages are re-rendered")
    if old.get("spec") != new["spec"]:
        lines.append(f"analysis settings changed: {old.get('spec')} → {new['spec']}")
    for section, value in sorted(new["settings"].items()):
        if old.get("settings", {}).get(section) != value:
            lines.append(f"settings [{section}] changed: the metrics that use it are recomputed")
    old_files: dict[str, Any] = old.get("files", {})
    new_files: dict[str, Any] = new["files"]
    for source in sorted(set(old_files) | set(new_files)):
        f_old: dict[str, Any] | None = old_files.get(source)
        f_new: dict[str, Any] | None = new_files.get(source)
        if f_old == f_new:
            continue
        if f_old is None and f_new is not None:
            lines.append(f"new file {source}: {len(f_new['games'])} games")
        elif f_new is None and f_old is not None:
            lines.append(f"removed file {source}: {len(f_old['games'])} games gone")
        elif f_old is not None and f_new is not None:
            n_added = len(set(f_new["games"]) - set(f_old["games"]))
            n_gone = len(set(f_old["games"]) - set(f_new["games"]))
            lines.append(f"changed file {source}: {n_added} games added, {n_gone} removed")
    old_players: dict[str, Any] = old.get("players", {})
    new_players: dict[str, Any] = new["players"]
    for name in sorted(set(old_players) | set(new_players)):
        before: dict[str, Any] | None = old_players.get(name)
        after: dict[str, Any] | None = new_players.get(name)
        if before == after:
            continue
        if before is None and after is not None:
            lines.append(f"player {name}: new, {len(after['games'])} games")
        elif after is None:
            lines.append(f"player {name}: no games left; their page is removed")
        elif before is not None:
            added = sorted(set(after["games"]) - set(before["games"]))
            where = sorted({after["sources"][g] for g in added if g in after["sources"]})
            if added:
                lines.append(f"player {name}: {len(added)} new games in {', '.join(where)}")
            gone = len(set(before["games"]) - set(after["games"]))
            if gone:
                lines.append(f"player {name}: {gone} games removed")
            if not added and not gone:
                lines.append(f"player {name}: games changed (tags or analysis)")
    if old.get("analysed") != new["analysed"]:
        lines.append("new engine analysis completed games: their metrics are recomputed")
    return lines or ["nothing changed"]
