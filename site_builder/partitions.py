"""Per-partition work of the metric families: one function over every partition of the move
store, in worker processes on this machine or on the Dask cluster of ``--scheduler``.

A family hands :meth:`Partitions.map` a module-level function ``work(rows, *args)`` (``rows``:
the partition's move rows, read by the worker from the store, so no rows travel from the
build to a worker) and small arguments (a settings section, a calibration). Each partition's
value is reused from the last build while the partition's key (its players' games and their
analysis), the function and the arguments are unchanged, so a rebuild after a tournament
computes only the partitions of the players who played in it.

Values come back in partition order, whatever the order they were computed in, and do not
depend on the number of workers or machines: the same site from one process or a cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from site_builder.errors import SiteBuilderError
from site_builder.forked import fork_pool, pool_map, release_free_memory, shared_pool
from site_builder.incremental import BuildCache
from site_builder.memo import Kind, Memo, entry
from site_builder.store import MoveStore
from site_builder.targets import OUTPUT_RECORD

T = TypeVar("T")


@dataclass(frozen=True)
class _Task:
    """One partition's work, as a worker receives it: where to read, what to run."""

    directory: str
    partitions: int
    part: int
    key: str
    columns: tuple[str, ...] | None
    time_class: str | None
    work: Callable[..., Any]
    args: tuple[Any, ...]
    #: The folder the work leaves its side output in (:meth:`Partitions.map_beside`), or
    #: reads another work's from (``beside`` of :meth:`Partitions.map`); None: no folder
    side: str | None = None
    #: Whether the work takes ``side=`` at all.
    takes_side: bool = False
    #: The side folder the same work left for this partition number in an earlier build
    #: (:meth:`Partitions.map_beside` with ``earlier``), or None
    earlier: str | None = None
    #: Whether the work takes ``earlier=`` at all.
    takes_earlier: bool = False


def _run(task: _Task) -> Any:
    """In a worker: the partition's rows from the store, then the work."""
    store = MoveStore.__new__(MoveStore)
    store.directory, store.partitions = Path(task.directory), task.partitions
    store.keys = {task.part: task.key}
    rows = store.read(task.part, task.columns, task.time_class)
    kwargs: dict[str, Path | None] = {}
    if task.takes_side:
        kwargs["side"] = Path(task.side) if task.side else None
    if task.takes_earlier:
        kwargs["earlier"] = Path(task.earlier) if task.earlier else None
    return task.work(rows, *task.args, **kwargs)


def _run_in_worker(task: _Task) -> Any:
    """:func:`_run` in a worker, which runs many partitions: then the memory it freed is
    given back (at 30x, about 80 MB less in a worker after a dozen of the conformance
    family's partitions)."""
    found = _run(task)
    release_free_memory()
    return found


#: The folder, beside the store's Parquet files, of the partitions' side output.
SIDE = "side"
_SIDE_NAME = re.compile(r"p\d{5}-[0-9a-f]{24}(\.tmp-\d+)?")


def _written_side(folder: Path) -> bool:
    """A folder :func:`write_side` writes: named as it names them, holding only .npy files."""
    return (
        _SIDE_NAME.fullmatch(folder.name) is not None
        and folder.is_dir()
        and not folder.is_symlink()
        and all(f.suffix == ".npy" and f.is_file() for f in folder.iterdir())
    )


def array_header(handle: BinaryIO) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """The shape and dtype of the array in the .npy file ``handle`` (as :func:`write_side`
    writes them: format 1.0 or 2.0, in row order), leaving the file at its first byte of
    data."""
    version = np.lib.format.read_magic(handle)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"an .npy format this build does not write: {version}")
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = read(handle)
    if fortran:
        raise ValueError("an .npy array not in row order")
    return tuple(shape), np.dtype(dtype)


def _whole_side(folder: Path) -> bool:
    """Whether every array of a side folder is whole: each file as long as its header says
    (a file cut short or damaged since it was written is not)."""
    try:
        for f in folder.iterdir():
            with f.open("rb") as handle:
                shape, dtype = array_header(handle)
                size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                if f.stat().st_size != handle.tell() + size:
                    return False
    except (OSError, ValueError):
        return False
    return True


def write_side(side: Path, arrays: dict[str, NDArray[Any]]) -> None:
    """In a worker: ``arrays`` as ``side/<name>.npy``, written into a new folder and moved
    into place at once, so a folder found under its name is whole."""
    side.parent.mkdir(parents=True, exist_ok=True)
    tmp = side.with_name(f"{side.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name, array in arrays.items():
        np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
    try:
        os.rename(tmp, side)
    except OSError:  # written already, from the same key (so the same arrays)
        shutil.rmtree(tmp, ignore_errors=True)
        if not side.is_dir():
            raise


@dataclass(frozen=True)
class PerPartition:
    """An argument of :meth:`Partitions.map` that differs by partition: each partition's
    work is given ``values[part]`` (so only what it needs travels to it), and only that
    value is in its key."""

    values: Mapping[int, Any]


def _args_of(args: tuple[Any, ...], part: int) -> tuple[Any, ...]:
    return tuple(a.values[part] if isinstance(a, PerPartition) else a for a in args)


def value_digest(value: Any) -> str:
    """Digest of a value's pickle: every bit of its numbers (a ``repr`` rounds arrays)."""
    return hashlib.sha256(pickle.dumps(value, protocol=5)).hexdigest()[:24]


class Partitions:
    """The move store's partitions and where their work runs."""

    def __init__(self, store: MoveStore, cache: Memo, workers: int = 1) -> None:
        self.store = store
        self.cache = cache
        #: Local worker processes (1: in the build's own process).
        self.workers = workers
        #: A Dask ``distributed.Client`` (``--scheduler``): the work runs on its workers,
        #: which read the store's folder (a path every worker machine sees).
        self.client: Any = None
        #: work name → partitions computed (not reused) in this build
        self.computed: dict[str, int] = {}
        #: The keys of the partition results this build used, read or computed (what
        #: :func:`drop_unused` keeps), and those used since :meth:`recording` began.
        self.used: set[str] = set()
        self.recorded: set[str] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The client is this process's connection to the cluster: a copy (the site a new
        # render worker reads) runs its work in its own process.
        return {**self.__dict__, "client": None, "workers": 1}

    @contextlib.contextmanager
    def recording(self) -> Iterator[set[str]]:
        """The keys of the partition results used inside the ``with`` block (a family's
        compute: a family reused in a later build uses them again, :meth:`use`)."""
        found: set[str] = set()
        self.recorded = found
        try:
            yield found
        finally:
            self.recorded = None

    def use(self, keys: Collection[str]) -> None:
        """Count ``keys`` as used by this build (those of a family it did not recompute)."""
        self.used.update(keys)

    def parts(self) -> list[int]:
        return self.store.parts()

    def read(
        self, part: int, columns: Sequence[str] | None = None, time_class: str | None = None
    ) -> pd.DataFrame:
        """One partition's rows, in this process."""
        return self.store.read(part, columns, time_class)

    def map(
        self,
        work: Callable[..., T],
        *args: Any,
        columns: Sequence[str] | None = None,
        time_class: str | None = None,
        only: Collection[int] | None = None,
        beside: Mapping[int, str] | None = None,
    ) -> list[T]:
        """``work(rows, *args)`` of every partition (its rows: only ``columns``, only games
        of ``time_class``; only the partitions ``only`` when given), in partition order;
        reused from the last build where the partition, ``work`` (module and name, and the
        code) and ``args`` are unchanged. An argument :class:`PerPartition` gives each
        partition its own value (every partition of ``only`` must have one).

        ``beside``: partition → the side folder of another work (:meth:`map_beside`) that
        ``work`` reads, as ``work(rows, *args, side=folder or None)``. The folder is not part
        of the key: the other work's arguments must be among ``args``, so that the key
        covers what is in it, and ``work`` must give the same value without it."""
        found = self._map(work, args, columns, time_class, only, side=False, beside=beside)
        return [value for value, _ in found]

    def map_beside(
        self,
        work: Callable[..., T],
        *args: Any,
        columns: Sequence[str] | None = None,
        time_class: str | None = None,
        earlier: bool = False,
    ) -> list[tuple[T, Path]]:
        """As :meth:`map`, for a ``work(rows, *args, side=folder)`` that also leaves large
        output on disk, in ``folder`` (by :func:`write_side`), beside the store: each
        partition's value and its folder. A value is reused only while its folder is there,
        and the folders of other keys are deleted (only those this method names).

        ``earlier``: ``work`` also takes ``earlier=folder or None``, the folder it left for
        the same partition number in an earlier build (from other rows and arguments). It
        may take from it only what it checks is still right, and must give the same value
        and folder without it."""
        found = self._map(work, args, columns, time_class, None, side=True, earlier=earlier)
        name = f"{work.__module__}.{work.__qualname__}"
        keep = {path.name for _, path in found if path is not None}
        folder = self._side_root(name)
        if folder.is_dir():
            for old in folder.iterdir():
                if old.name not in keep and _written_side(old):
                    shutil.rmtree(old, ignore_errors=True)
        return [(value, path) for value, path in found if path is not None]

    def _side_root(self, name: str) -> Path:
        return self.store.directory / SIDE / name

    def _map(
        self,
        work: Callable[..., T],
        args: tuple[Any, ...],
        columns: Sequence[str] | None,
        time_class: str | None,
        only: Collection[int] | None,
        side: bool,
        beside: Mapping[int, str] | None = None,
        earlier: bool = False,
    ) -> list[tuple[T, Path | None]]:
        name = f"{work.__module__}.{work.__qualname__}"
        memo = self.cache
        chosen = [p for p in self.store.parts() if only is None or p in only]

        # Each argument digested alone: pickle writes an object shared by two arguments once,
        # so one argument read back from the build cache would change both keys. The shared
        # arguments are digested once, a partition's own value for each partition.
        shared = [None if isinstance(a, PerPartition) else value_digest(a) for a in args]

        def spec(part: int) -> str:
            digests = [d or value_digest(a.values[part]) for d, a in zip(shared, args, strict=True)]
            return value_digest((name, tuple(columns) if columns else None, time_class, digests))

        same = None if None in shared else spec(-1)
        keys = {
            p: entry(Kind.PARTITION, name, str(p), self.store.keys[p], same or spec(p), memo.code)
            for p in chosen
        }
        self.used.update(keys.values())
        if self.recorded is not None:
            self.recorded.update(keys.values())
        sides = {
            p: self._side_root(name) / f"p{p:05d}-{hashlib.sha256(k.encode()).hexdigest()[:24]}"
            for p, k in keys.items()
            if side
        }
        out: dict[int, T] = {}
        if memo.store is not None:
            for p, k in keys.items():
                if side and not (sides[p].is_dir() and _whole_side(sides[p])):
                    if _written_side(sides[p]):  # damaged: written again below
                        shutil.rmtree(sides[p], ignore_errors=True)
                    continue
                hit = memo.store.get(k)
                if hit is not None:
                    out[p] = hit[0]
        missing = [p for p in keys if p not in out]
        tasks = [
            _Task(
                str(self.store.directory),
                self.store.partitions,
                p,
                self.store.keys[p],
                tuple(columns) if columns else None,
                time_class,
                work,
                _args_of(args, p),
                str(sides[p]) if side else (beside or {}).get(p),
                side or beside is not None,
                self._earlier_side(name, p, sides[p]) if earlier else None,
                earlier,
            )
            for p in missing
        ]
        fresh = self._run(tasks)
        self.computed[name] = self.computed.get(name, 0) + len(fresh)
        for p, value in zip(missing, fresh, strict=True):
            out[p] = value
            if side and not sides[p].is_dir():
                raise SiteBuilderError(
                    f"{name} left no output in {sides[p]}: the workers must write to the "
                    "build cache's moves/ folder at the path this machine sees"
                )
        if memo.store is not None and missing:
            with memo.store.transact():
                for p in missing:
                    memo.store.set(keys[p], (out[p],))
        return [(out[p], sides.get(p)) for p in sorted(out)]

    def _earlier_side(self, name: str, part: int, new: Path) -> str | None:
        """The whole side folder of ``name`` for partition ``part`` other than ``new``, the
        latest written (None: there is none)."""
        root = self._side_root(name)
        if not root.is_dir():
            return None
        found = [
            f
            for f in root.glob(f"p{part:05d}-*")
            # not a folder still being written (".tmp-<pid>")
            if f != new and "." not in f.name and _written_side(f) and _whole_side(f)
        ]
        if not found:
            return None
        return str(max(found, key=lambda f: (f.stat().st_mtime_ns, f.name)))

    def _run(self, tasks: list[_Task]) -> list[Any]:
        if not tasks:
            return []
        if self.client is not None:
            futures = self.client.map(_run_in_worker, tasks, pure=False)
            return list(self.client.gather(futures))
        if self.workers <= 1 or len(tasks) == 1:
            return [_run(t) for t in tasks]
        if shared_pool() is not None:  # the build's workers (an error ends them: worker_pool)
            return pool_map(_run_in_worker, tasks)
        with fork_pool(min(self.workers, len(tasks))) as pool:
            submitted: list[Future[Any]] = [pool.submit(_run_in_worker, t) for t in tasks]
            return [f.result() for f in submitted]


#: The build cache's record of the partition results each output folder's last build used:
#: folder → their keys.
_USED = entry(Kind.PARTITIONS_USED)


def drop_unused(store: BuildCache, folder: Path, used: Collection[str]) -> int:
    """Delete the partition results the last build of ``folder`` used and this one did not
    (``used``), unless the last build of another output folder on the same build cache used
    them; then put ``used`` on the record. A folder that is no site any more (no
    :data:`~site_builder.targets.OUTPUT_RECORD`) leaves the record, its results with it.
    Results on no record (written before the record was kept) are left. Returns how many
    were deleted.

    Without it the build cache keeps every partition's result of every earlier tournament
    and version: at 10× the demo, about 14 MB more after each tournament."""
    name = str(folder.resolve())
    with store.transact():
        record: dict[str, tuple[str, ...]] = dict(store.get(_USED) or {})
        old = set(record.pop(name, ()))
        for other in sorted(record):
            if not (Path(other) / OUTPUT_RECORD).is_file():
                old.update(record.pop(other))
        stale = sorted(old.difference(used, *record.values()))
        for key in stale:
            store.delete(key)
        record[name] = tuple(sorted(used))
        store.set(_USED, record)
    return len(stale)


@contextlib.contextmanager
def dask_client(address: str) -> Iterator[Any]:
    """A client of the Dask scheduler at ``address`` for the partitions' work, closed at the
    end of the build. The workers read the store where the build wrote it: a folder every
    worker machine sees at the same path (the build cache's ``moves/``)."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise SiteBuilderError(
            f"--scheduler needs Dask ({exc}); "
            "install it with: pip install 'site-builder[distributed]'"
        ) from exc
    with Client(address, set_as_default=False) as client:  # type: ignore[no-untyped-call]
        yield client
