"""Dask distributed backend: the same chunks, run on a cluster (``--scheduler tcp://HOST:8786``).

Each Dask worker holds one long-lived engine (a worker plugin starts it on first use and quits
it at teardown). Workers only compute; the driver receives each finished chunk and writes it
to the cache, as with the local pool. Start workers with one thread each::

    dask scheduler
    dask worker tcp://HOST:8786 --nthreads 1 --nworkers N

Every worker machine needs the same engine executable (the same bytes) at the same path: the
cache key names the binary (see :func:`spec.engine_identity`).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Sequence
from typing import Any

from distributed import Client, WorkerPlugin, as_completed, get_worker

from site_builder.analysis.engine import PositionTask, engine_name
from site_builder.analysis.pool import (
    EngineHolder,
    OnChunk,
    PoolStats,
    Streak,
    default_deadline,
    run_chunk,
)
from site_builder.analysis.spec import AnalysisSpec, engine_identity
from site_builder.errors import EngineError

PLUGIN_NAME = "site-builder-engine"


class EnginePlugin(WorkerPlugin):
    """Gives each worker one engine and an event loop to drive it."""

    name = PLUGIN_NAME

    def __init__(self, engine_path: str, spec: AnalysisSpec) -> None:
        self.engine_path = engine_path
        self.spec = spec
        self.loop: asyncio.AbstractEventLoop | None = None
        self.engine: EngineHolder | None = None
        self.streak = Streak(engine_path)

    def setup(self, worker: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine = EngineHolder(self.engine_path, self.spec)
        self.streak = Streak(self.engine_path)

    def teardown(self, worker: Any) -> None:
        loop, engine = self.loop, self.engine
        if loop is None or engine is None:
            return

        def close() -> None:
            loop.run_until_complete(engine.quit())
            loop.close()

        # Dask calls this from the worker's running event loop, where another loop cannot
        # run: quit the engine from a thread of its own.
        closer = threading.Thread(target=close, name="site-builder-engine-quit", daemon=True)
        closer.start()
        closer.join(timeout=30)

    def analyse(
        self, chunk: Sequence[PositionTask], deadline: float, max_tries: int
    ) -> tuple[dict[str, Any], PoolStats]:
        assert self.loop is not None and self.engine is not None
        return self.loop.run_until_complete(self._analyse(chunk, deadline, max_tries))

    async def _analyse(
        self, chunk: Sequence[PositionTask], deadline: float, max_tries: int
    ) -> tuple[dict[str, Any], PoolStats]:
        assert self.engine is not None
        protocol = await self.engine.get()
        found = engine_name(protocol)
        if found != self.spec.engine:
            raise EngineError(
                f"worker engine is {found!r} but the build analyses with {self.spec.engine!r}; "
                "install the same engine version on every worker"
            )
        if self.spec.binary and engine_identity(self.engine_path) != self.spec.binary:
            raise EngineError(
                f"worker engine at {self.engine_path} is not the same executable as the "
                "build's (its bytes or path differ); install the same engine build at the "
                "same path on every worker"
            )
        stats = PoolStats()
        results = await run_chunk(
            self.engine, self.spec, chunk, deadline, max_tries, stats, self.streak
        )
        if self.streak.gave_up:
            raise EngineError(self.streak.gave_up)
        return results, stats


def analyse_chunk_on_worker(
    chunk: Sequence[PositionTask], deadline: float, max_tries: int
) -> tuple[dict[str, Any], PoolStats]:
    """The Dask task: run one chunk on this worker's engine."""
    plugin: EnginePlugin = get_worker().plugins[PLUGIN_NAME]  # type: ignore[assignment]
    return plugin.analyse(chunk, deadline, max_tries)


def _chunk_key(chunk: Sequence[PositionTask]) -> str:
    blob = "\n".join(f"{t.position}|{t.need_pv}|{','.join(t.moves)}" for t in chunk)
    return "site-builder-chunk-" + hashlib.sha1(blob.encode()).hexdigest()[:20]


class DaskPool:
    """Runs chunks on a Dask cluster; the driver writes each finished chunk."""

    def __init__(
        self,
        scheduler: str | Any,
        engine_path: str,
        spec: AnalysisSpec,
        deadline_s: float = 0.0,
        max_tries: int = 3,
    ) -> None:
        self.scheduler = scheduler
        self.engine_path = engine_path
        self.spec = spec
        self.deadline = deadline_s or default_deadline(spec)
        self.max_tries = max_tries

    @property
    def workers(self) -> str:
        return f"Dask at {self.scheduler}"

    def run(self, chunks: Sequence[Sequence[PositionTask]], on_chunk: OnChunk) -> PoolStats:
        stats = PoolStats()
        own_client = not hasattr(self.scheduler, "submit")
        client: Any = Client(self.scheduler) if own_client else self.scheduler  # type: ignore[no-untyped-call]
        try:
            client.register_plugin(EnginePlugin(self.engine_path, self.spec), name=PLUGIN_NAME)
            futures = {
                client.submit(
                    analyse_chunk_on_worker,
                    list(chunk),
                    self.deadline,
                    self.max_tries,
                    key=_chunk_key(chunk),
                    pure=False,
                    retries=1,
                ): chunk
                for chunk in chunks
            }
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                chunk = futures[future]
                try:
                    results, chunk_stats = future.result()
                except EngineError:
                    raise
                except Exception as exc:  # a lost chunk is reported, not fatal
                    reason = f"Dask task failed: {type(exc).__name__}: {exc}"
                    stats.failed.extend((t.position, reason) for t in chunk)
                    on_chunk({}, len(chunk))
                    continue
                stats.merge(chunk_stats)
                on_chunk(results, len(chunk))
        finally:
            if own_client:
                client.close()
        return stats
