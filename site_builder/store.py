"""The move table on disk, in partitions: Parquet files read one partition at a time.

Every analysed move belongs to its mover, and every mover to one partition
(:func:`partition_of`: CRC-32 of the name modulo ``[build] partitions``), so a partition holds
whole players: everything a per-player calculation reads. A partition's file is named by the
digest of its games and their analysis (:meth:`MoveStore.partition_keys`), so a rebuild
rewrites only the partitions whose players' games changed, and a family's per-partition
values are reused under the same key (``site.partitions``).

Parquet through pyarrow: columnar and typed (the scores and first moves of the principal
lines as list columns, not Python lists), compressed, read column by column, and readable
from any machine of a Dask cluster that sees the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import NDArray

from site_builder.analysis.positions import position_hash
from site_builder.metrics.moves import COLUMNS

#: Columns that hold a list per row (kept as Python lists in memory, as the move table has them).
LIST_COLUMNS = ("line_scores", "line_moves", "depth_scores")
#: The move table's nullable integer columns.
NULLABLE_INT = ("player_elo", "opponent_elo", "year")
#: What the store writes beside its files: the key of every partition it holds.
RECORD = "store.json"
_SUFFIX = ".parquet"
#: The key of a partition file's facts (:func:`partition_facts`) in its Parquet metadata.
_FACTS = b"site_builder.facts"
#: A partition file's games and the key of each one's rows (JSON), so that the next build can
#: keep an unchanged game's rows from the file instead of reading them from the build cache.
_MEMBERS = b"site_builder.members"


#: A column the store adds to each partition file: :func:`position_hash` of each row's
#: position, so distinct positions are counted reading 8 bytes a move.
POSITION_HASH = "position_hash"


def _position_hashes(positions: pa.ChunkedArray | pa.Array) -> pa.Array:
    values = positions.to_pylist()
    return pa.array(np.fromiter(map(position_hash, values), np.uint64, len(values)))


def partition_facts(table: pa.Table) -> dict[str, int]:
    """What the build reports of a partition's analysed moves, additive over partitions: how
    many, how many with a negative error, and the nodes searched for them in all."""
    if table.num_rows == 0:
        return {"moves": 0, "negative_deltas": 0, "nodes": 0}
    negative = pc.sum(pc.less(table["raw_delta"], 0)).as_py()
    nodes = pc.sum(table["nodes"]).as_py()
    return {
        "moves": table.num_rows,
        "negative_deltas": int(negative or 0),
        "nodes": int(nodes or 0),
    }


def partition_of(player: str, partitions: int) -> int:
    """The partition of a player (stable across runs, machines and Python versions)."""
    return zlib.crc32(player.encode("utf-8")) % partitions


def _schema() -> pa.Schema:
    text, i64, f64, flag = pa.string(), pa.int64(), pa.float64(), pa.bool_()
    types: dict[str, pa.DataType] = {
        "game_id": text,
        "ply": i64,
        "move_number": i64,
        "white": flag,
        "player": text,
        "opponent": text,
        "player_elo": i64,
        "opponent_elo": i64,
        "year": i64,
        "months": f64,
        "time_class": text,
        "position": text,
        "played": text,
        "best": text,
        "e_best": i64,
        "e_played": i64,
        "delta": i64,
        "raw_delta": i64,
        "is_best": flag,
        "forced": flag,
        "repetition": flag,
        "legal": i64,
        "line_scores": pa.list_(i64),
        "line_moves": pa.list_(text),
        "depth_scores": pa.list_(i64),
        "played_rank": i64,
        "nodes": i64,
        "best_san": text,
    }
    return pa.schema([(c, types[c]) for c in COLUMNS])


SCHEMA = _schema()


def to_arrow(frame: pd.DataFrame) -> pa.Table:
    """Move-table rows as an Arrow table of :data:`SCHEMA`."""
    arrays = []
    for col in SCHEMA:
        values = frame[col.name]
        if col.name in NULLABLE_INT:
            arrays.append(pa.array(values.astype("Int64"), type=col.type, from_pandas=True))
        elif col.name in LIST_COLUMNS:
            arrays.append(pa.array(values.tolist(), type=col.type))
        else:
            arrays.append(pa.array(values.to_numpy(), type=col.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def to_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table of move rows as the move table (:func:`metrics.moves.move_table`'s
    dtypes: nullable Int64 Elos and year, Python lists in the list columns)."""
    data: dict[str, Any] = {}
    for name in table.column_names:
        column = table.column(name)
        if name in LIST_COLUMNS:
            data[name] = pd.Series(column.to_pylist(), dtype=object)
        elif name in NULLABLE_INT:
            data[name] = pd.Series(column.to_pandas(types_mapper=_nullable), dtype="Int64")
        else:
            data[name] = column.to_pandas()
    return pd.DataFrame(data, columns=table.column_names)


def store_digest(table: pa.Table) -> str:
    """sha256 of an Arrow table's content (its IPC stream)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _nullable(t: pa.DataType) -> Any:
    return pd.Int64Dtype() if pa.types.is_integer(t) else None


class UnreadablePartition(Exception):
    """A partition file whose footer reads but whose rows do not (damaged on disk)."""


class MoveStore:
    """The partitions of one build's move table, in ``directory`` (the build cache's
    ``moves/``): one Parquet file per non-empty partition, ``p<partition>-<key>.parquet``,
    and :data:`RECORD` naming the current key of each."""

    def __init__(self, directory: Path, partitions: int) -> None:
        self.directory = directory
        self.partitions = partitions
        self.keys: dict[int, str] = {}
        record = directory / RECORD
        if record.is_file():
            try:
                found = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                found = {}
            if found.get("partitions") == partitions:
                self.keys = {int(p): str(k) for p, k in found.get("keys", {}).items()}

    def path(self, part: int, key: str) -> Path:
        return self.directory / f"p{part:05d}-{key}{_SUFFIX}"

    @staticmethod
    def partition_keys(game_keys: Mapping[str, Iterable[str]]) -> str:
        """Digest of a partition's games (``{game_id: keys of its rows}``), sorted."""
        h = hashlib.sha256()
        for gid in sorted(game_keys):
            h.update(gid.encode())
            for k in game_keys[gid]:
                h.update(b"\0" + k.encode())
            h.update(b"\n")
        return h.hexdigest()[:24]

    def current(self, part: int) -> str | None:
        key = self.keys.get(part)
        return key if key is not None and self.path(part, key).is_file() else None

    def write(
        self,
        part: int,
        key: str,
        rows: pd.DataFrame | pa.Table,
        members: Mapping[str, str] | None = None,
    ) -> None:
        """The partition's rows (in move-table order) as its file under ``key``; ``members``
        (game → the key of its rows), when given, are recorded in the file's footer."""
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path(part, key)
        if not target.is_file():
            table = rows if isinstance(rows, pa.Table) else to_arrow(rows)
            if POSITION_HASH not in table.column_names:
                table = table.append_column(POSITION_HASH, _position_hashes(table["position"]))
            facts = json.dumps(partition_facts(table), sort_keys=True).encode()
            footer = {**(table.schema.metadata or {}), _FACTS: facts}
            if members is not None:
                footer[_MEMBERS] = json.dumps(dict(sorted(members.items()))).encode()
            table = table.replace_schema_metadata(footer)
            tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
            pq.write_table(table, tmp, compression="zstd", row_group_size=1 << 16)
            os.replace(tmp, target)
        self.keys[part] = key

    def commit(self, parts: Sequence[int]) -> None:
        """Record ``parts`` as the store's partitions and delete the store's own files of
        other keys (only files named as this store names them, in its folder)."""
        self.keys = {p: self.keys[p] for p in sorted(parts)}
        self.directory.mkdir(parents=True, exist_ok=True)
        record = {"partitions": self.partitions, "keys": {str(p): k for p, k in self.keys.items()}}
        tmp = self.directory / f"{RECORD}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.directory / RECORD)
        keep = {self.path(p, k).name for p, k in self.keys.items()}
        for f in self.directory.glob(f"p*{_SUFFIX}"):
            if f.name not in keep and _ours(f.name):
                f.unlink(missing_ok=True)

    def facts(self, part: int) -> dict[str, int]:
        """:func:`partition_facts` of one partition, from its file's footer (a file of an
        older version without them is read)."""
        key = self.keys.get(part)
        if key is None:
            return partition_facts(pa.table({}))
        path = self.path(part, key)
        found = (pq.read_metadata(path).metadata or {}).get(_FACTS)
        if found is not None:
            return {k: int(v) for k, v in json.loads(found).items()}
        return partition_facts(pq.read_table(path, columns=["raw_delta", "nodes"]))

    def members(self, part: int) -> dict[str, str]:
        """The games of the partition's current file and the key of each one's rows, as its
        footer records them (empty: no file, or one written without them)."""
        key = self.current(part)
        if key is None:
            return {}
        try:
            found = (pq.read_metadata(self.path(part, key)).metadata or {}).get(_MEMBERS)
            return {str(g): str(k) for g, k in json.loads(found).items()} if found else {}
        except (OSError, ValueError, pa.ArrowException):
            return {}

    def rows_of(self, part: int, games: Collection[str]) -> pa.Table:
        """The rows of ``games`` in the partition's current file, as :data:`SCHEMA`; raises
        :class:`UnreadablePartition` when the file cannot be read."""
        key = self.current(part)
        if key is None or not games:
            return SCHEMA.empty_table()
        path = self.path(part, key)
        try:
            table = pq.read_table(
                path,
                columns=list(COLUMNS),
                filters=pc.is_in(pc.field("game_id"), pa.array(sorted(games), pa.string())),
            )
            return table.replace_schema_metadata(None).cast(SCHEMA)
        except (OSError, pa.ArrowException) as exc:
            raise UnreadablePartition(
                f"the move store's file {path} cannot be read ({exc})"
            ) from exc

    def position_hashes(self) -> NDArray[np.uint64]:
        """The distinct :func:`position_hash` values of every partition's moves, sorted (a
        file of an older version without the column has its positions hashed)."""
        found = []
        for part in self.parts():
            path = self.path(part, self.keys[part])
            if POSITION_HASH in pq.read_schema(path).names:
                column = pq.read_table(path, columns=[POSITION_HASH])[POSITION_HASH]
                found.append(np.unique(column.to_numpy()))
            else:
                positions = pq.read_table(path, columns=["position"])["position"]
                found.append(np.unique(_position_hashes(positions).to_numpy()))
        if not found:
            return np.zeros(0, np.uint64)
        return np.unique(np.concatenate(found)).astype(np.uint64)

    def parts(self) -> list[int]:
        """The non-empty partitions, in order."""
        return sorted(self.keys)

    def table(self) -> pd.DataFrame:
        """Every partition's rows as one move table, in move-table order (game_id, ply): for
        small sites and tests only; a build reads a partition at a time."""
        from site_builder.metrics.moves import move_table

        frames = [self.read(p) for p in self.parts()]
        frames = [f for f in frames if len(f)]
        if not frames:
            return move_table([])
        whole = pd.concat(frames, ignore_index=True)
        return whole.sort_values(["game_id", "ply"], kind="stable").reset_index(drop=True)

    def read(
        self,
        part: int,
        columns: Sequence[str] | None = None,
        time_class: str | None = None,
    ) -> pd.DataFrame:
        """The rows of one partition's movers (only ``columns``; only games of
        ``time_class``), in move-table order (game_id, ply)."""
        key = self.keys.get(part)
        if key is None:
            return pd.DataFrame(columns=list(columns or COLUMNS))
        filters = [("time_class", "=", time_class)] if time_class else None
        table = pq.read_table(
            self.path(part, key), columns=list(columns or COLUMNS), filters=filters
        )
        return to_frame(table)


def _ours(name: str) -> bool:
    """A file name this store writes: p<5 digits>-<24 hex>.parquet."""
    stem = name[: -len(_SUFFIX)]
    head, _, key = stem.partition("-")
    return (
        len(head) == 6
        and head[0] == "p"
        and head[1:].isdigit()
        and len(key) == 24
        and all(c in "0123456789abcdef" for c in key)
    )


class GameStore:
    """Each game's plies and move rows, read one game at a time from the build cache, where
    the analysis stage keeps them (so no build holds every game's plies in memory): a game
    page reads its own. A process forked from the build opens its own connection."""

    def __init__(
        self,
        directory: Path,
        ply_keys: Mapping[str, str],
        row_keys: Mapping[str, str],
        make_plies: Callable[[str], list[Any]] | None = None,
    ) -> None:
        self.directory = directory
        self.ply_keys = dict(ply_keys)
        self.row_keys = dict(row_keys)
        #: A game's plies when the build cache does not hold them (made from its record;
        #: pickled with the store, so picklable)
        self.make_plies = make_plies
        self._cache: Any = None
        self._pid = 0

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": None, "_pid": 0}

    def _open(self) -> Any:
        if self._cache is None or self._pid != os.getpid():
            from site_builder.forked import keep
            from site_builder.incremental import BuildCache

            if self._cache is not None:
                keep(self._cache)  # inherited across a fork: never used or closed here
            self._cache, self._pid = BuildCache(self.directory), os.getpid()
        return self._cache

    def plies(self, game_id: str) -> list[Any]:
        """The game's plies (every move, analysed or not)."""
        key = self.ply_keys.get(game_id)
        found = self._open().get(key) if key is not None else None
        if found is None and self.make_plies is not None and key is not None:
            found = self.make_plies(game_id)
        return list(found) if found is not None else []

    def moves(self, game_id: str, columns: Sequence[str]) -> list[dict[str, Any]]:
        """The game's move rows (only ``columns``), in ply order; none when not analysed."""
        key = self.row_keys.get(game_id)
        found = self._open().get(key) if key is not None else None
        if not found:
            return []
        rows = sorted(found, key=lambda r: int(r["ply"]))
        return [{c: r[c] for c in columns} for r in rows]

    def close(self) -> None:
        if self._cache is not None and self._pid == os.getpid():
            self._cache.close()
        self._cache = None


class PartitionWriter:
    """Move rows of many games into the store's partitions, holding at most ``budget`` rows
    in memory, in Arrow's columns (a ``batch`` of rows at most as Python dicts, about 3 KB
    a row against 0.5 KB): when the budget is reached, the held rows go to fragment files
    (in a work folder of its own under the store), and :meth:`finish` makes each
    partition's file from its fragments, in move-table order."""

    def __init__(self, store: MoveStore, budget: int = 250_000, batch: int = 10_000) -> None:
        self.store = store
        self.budget = budget
        self.batch = batch
        self._rows: dict[int, list[dict[str, Any]]] = {}
        self._tables: dict[int, list[pa.Table]] = {}
        self._loose = 0  # rows held as dicts
        self._held = 0  # rows held in all
        self._fragments: dict[int, list[Path]] = {}
        self._work = store.directory / f".fragments-{os.getpid()}"
        #: partition → games whose rows :meth:`finish` takes from its current file
        self._kept: dict[int, set[str]] = {}

    def keep(self, part: int, games: set[str]) -> None:
        """Take the rows of ``games`` in ``part`` from the partition's current file (their
        rows unchanged); :meth:`add` then leaves out their rows in ``part``."""
        if games:
            self._kept[part] = games

    def add(self, rows: Sequence[dict[str, Any]]) -> None:
        """One game's rows (both movers): each to its mover's partition."""
        n = self.store.partitions
        taken = 0
        for row in rows:
            part = partition_of(row["player"], n)
            if part in self._kept and row["game_id"] in self._kept[part]:
                continue
            self._rows.setdefault(part, []).append(row)
            taken += 1
        self._loose += taken
        self._held += taken
        if self._loose >= self.batch:
            self._columnar()
        if self._held >= self.budget:
            self._spill()

    def add_table(self, table: pa.Table) -> None:
        """Rows of :data:`SCHEMA` as an Arrow table (any games): each to its mover's
        partition, as :meth:`add` hands them."""
        n = self.store.partitions
        players = table.column("player").combine_chunks()
        names = pc.unique(players)
        parts = pa.array([partition_of(p, n) for p in names.to_pylist()], pa.int32())
        where = pc.take(parts, pc.index_in(players, names)).to_numpy()
        for part in np.unique(where).tolist():
            mine = where == part
            if part in self._kept:
                ids = pa.array(list(self._kept[part]), pa.string())
                mine &= ~pc.is_in(table.column("game_id"), ids).to_numpy(zero_copy_only=False)
            taken = int(np.count_nonzero(mine))
            if taken:
                self._tables.setdefault(part, []).append(table.filter(mine))
                self._held += taken
        if self._held >= self.budget:
            self._spill()

    def _columnar(self) -> None:
        for part, rows in self._rows.items():
            self._tables.setdefault(part, []).append(pa.Table.from_pylist(rows, schema=SCHEMA))
        self._rows.clear()
        self._loose = 0

    def _spill(self) -> None:
        self._columnar()
        self._work.mkdir(parents=True, exist_ok=True)
        for part, tables in sorted(self._tables.items()):
            found = self._fragments.setdefault(part, [])
            path = self._work / f"p{part:05d}-{len(found):05d}{_SUFFIX}"
            pq.write_table(pa.concat_tables(tables), path, compression="zstd")
            found.append(path)
        self._tables.clear()
        self._held = 0

    def parts(self) -> set[int]:
        """The partitions that received rows or keep rows of their current file."""
        return set(self._rows) | set(self._tables) | set(self._fragments) | set(self._kept)

    def finish(
        self, keys: Mapping[int, str], members: Mapping[int, Mapping[str, str]] | None = None
    ) -> set[int]:
        """Each partition of ``keys`` with a row, received or kept, gets its file under its
        key (in move-table order), with its ``members`` in the footer; the work folder goes.
        Returns the partitions written."""
        written: set[int] = set()
        try:
            self._columnar()
            for part in sorted(self.parts() & set(keys)):
                tables = [pq.read_table(f) for f in self._fragments.get(part, [])]
                tables += self._tables.pop(part, [])
                if part in self._kept:
                    tables.append(self.store.rows_of(part, self._kept[part]))
                table = pa.concat_tables(tables)
                if table.num_rows == 0:  # kept games without a row here: no file, as before
                    continue
                # Move-table order; Arrow's sort is stable, and (game, ply) is unique.
                table = table.sort_by([("game_id", "ascending"), ("ply", "ascending")])
                found = members.get(part) if members is not None else None
                self.store.write(part, keys[part], table, found)
                written.add(part)
        finally:
            self.close()
        return written

    def close(self) -> None:
        """Drop what is held and the work folder (made and filled only by this writer)."""
        self._rows.clear()
        self._tables.clear()
        self._kept.clear()
        for paths in self._fragments.values():
            for path in paths:
                path.unlink(missing_ok=True)
        self._fragments.clear()
        with contextlib.suppress(OSError):
            self._work.rmdir()
