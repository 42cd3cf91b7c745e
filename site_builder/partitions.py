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
import pickle
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from site_builder.errors import SiteBuilderError
from site_builder.forked import fork_pool, results, shared_pool
from site_builder.memo import Kind, Memo, entry
from site_builder.store import MoveStore

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


def _run(task: _Task) -> Any:
    """In a worker: the partition's rows from the store, then the work."""
    store = MoveStore.__new__(MoveStore)
    store.directory, store.partitions = Path(task.directory), task.partitions
    store.keys = {task.part: task.key}
    rows = store.read(task.part, task.columns, task.time_class)
    return task.work(rows, *task.args)


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
    ) -> list[T]:
        """``work(rows, *args)`` of every partition (its rows: only ``columns``, only games
        of ``time_class``; only the partitions ``only`` when given), in partition order;
        reused from the last build where the partition, ``work`` (module and name, and the
        code) and ``args`` are unchanged."""
        name = f"{work.__module__}.{work.__qualname__}"
        # Each argument digested alone: pickle writes an object shared by two arguments once,
        # so one argument read back from the build cache would change the key of both.
        spec = value_digest(
            (name, tuple(columns) if columns else None, time_class, [value_digest(a) for a in args])
        )
        memo = self.cache
        keys = {
            p: entry(Kind.PARTITION, name, str(p), self.store.keys[p], spec, memo.code)
            for p in self.store.parts()
            if only is None or p in only
        }
        out: dict[int, T] = {}
        if memo.store is not None:
            for p, k in keys.items():
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
                args,
            )
            for p in missing
        ]
        fresh = self._run(tasks)
        self.computed[name] = self.computed.get(name, 0) + len(fresh)
        for p, value in zip(missing, fresh, strict=True):
            out[p] = value
        if memo.store is not None and missing:
            with memo.store.transact():
                for p in missing:
                    memo.store.set(keys[p], (out[p],))
        return [out[p] for p in sorted(out)]

    def _run(self, tasks: list[_Task]) -> list[Any]:
        if not tasks:
            return []
        if self.client is not None:
            futures = self.client.map(_run, tasks, pure=False)
            return list(self.client.gather(futures))
        if self.workers <= 1 or len(tasks) == 1:
            return [_run(t) for t in tasks]
        pool = shared_pool()
        if pool is not None:  # the build's workers (an error ends them: worker_pool)
            return results([pool.submit(_run, t) for t in tasks])
        with fork_pool(min(self.workers, len(tasks))) as pool:
            submitted: list[Future[Any]] = [pool.submit(_run, t) for t in tasks]
            return [f.result() for f in submitted]


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
