"""The local pool: one long-lived engine process per worker, fed in chunks.

A crashed engine is restarted and the position retried; an engine that misses the
per-position deadline is killed and restarted; a position that keeps failing is recorded
after ``max_tries`` and skipped. Only the driver (the ``on_chunk`` callback) writes the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import chess.engine

from site_builder.analysis.engine import PositionTask, analyse_task, open_engine
from site_builder.analysis.spec import AnalysisSpec


@dataclass
class PoolStats:
    positions: int = 0  # tasks finished
    searches: int = 0  # engine searches run (lines + single moves)
    engine_seconds: float = 0.0  # time the engine reported
    restarts: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (position, reason)

    def merge(self, other: PoolStats) -> None:
        self.positions += other.positions
        self.searches += other.searches
        self.engine_seconds += other.engine_seconds
        self.restarts += other.restarts
        self.failed.extend(other.failed)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def default_deadline(spec: AnalysisSpec) -> float:
    """Seconds one position may take: far above the expected time, so only a hang trips it."""
    if spec.depth:
        expected = 0.002 * spec.multipv * 1.6**spec.depth
    else:
        expected = spec.multipv * spec.nodes / 200_000
    return max(30.0, 50.0 * expected)


class EngineHolder:
    """One engine process, started on first use and restarted after a failure."""

    def __init__(self, path: str, spec: AnalysisSpec) -> None:
        self.path, self.spec = path, spec
        self.protocol: chess.engine.UciProtocol | None = None

    async def get(self) -> chess.engine.UciProtocol:
        if self.protocol is None:
            self.protocol = await open_engine(self.path, self.spec.hash_mb, self.spec.threads)
        return self.protocol

    def kill(self) -> None:
        protocol, self.protocol = self.protocol, None
        if protocol is not None and protocol.transport is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                protocol.transport.kill()
            protocol.transport.close()

    async def quit(self) -> None:
        if self.protocol is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.protocol.quit(), 5)
        self.kill()


OnChunk = Callable[[dict[str, Any], int], None]


class LocalPool:
    """Runs chunks of tasks on ``workers`` engine processes on this machine."""

    def __init__(
        self,
        engine_path: str,
        spec: AnalysisSpec,
        workers: int,
        deadline_s: float = 0.0,
        max_tries: int = 3,
    ) -> None:
        self.engine_path = engine_path
        self.spec = spec
        self.workers = workers or default_workers()
        self.deadline = deadline_s or default_deadline(spec)
        self.max_tries = max_tries

    def run(self, chunks: Sequence[Sequence[PositionTask]], on_chunk: OnChunk) -> PoolStats:
        """Analyse every chunk; ``on_chunk(results, tasks_done)`` runs once per finished chunk."""
        return asyncio.run(self._run(chunks, on_chunk))

    async def _run(self, chunks: Sequence[Sequence[PositionTask]], on_chunk: OnChunk) -> PoolStats:
        stats = PoolStats()
        queue: asyncio.Queue[Sequence[PositionTask]] = asyncio.Queue()
        for chunk in chunks:
            queue.put_nowait(chunk)
        n = min(self.workers, max(1, len(chunks)))
        workers = [asyncio.create_task(self._worker(queue, on_chunk, stats)) for _ in range(n)]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        return stats

    async def _worker(
        self,
        queue: asyncio.Queue[Sequence[PositionTask]],
        on_chunk: OnChunk,
        stats: PoolStats,
    ) -> None:
        engine = EngineHolder(self.engine_path, self.spec)
        try:
            while not queue.empty():
                chunk = queue.get_nowait()
                results = await run_chunk(
                    engine, self.spec, chunk, self.deadline, self.max_tries, stats
                )
                on_chunk(results, len(chunk))
        finally:
            await engine.quit()


async def run_chunk(
    engine: EngineHolder,
    spec: AnalysisSpec,
    chunk: Sequence[PositionTask],
    deadline: float,
    max_tries: int,
    stats: PoolStats,
) -> dict[str, Any]:
    """Analyse a chunk on one engine; restart it after a crash or a missed deadline.

    A position that fails ``max_tries`` times is recorded in ``stats.failed`` and skipped.
    Shared by every backend (local pool, Dask workers).
    """
    results: dict[str, Any] = {}
    for task in chunk:
        for attempt in range(1, max_tries + 1):
            try:
                protocol = await engine.get()
                out = await asyncio.wait_for(analyse_task(protocol, spec, task), deadline)
            except (chess.engine.EngineError, TimeoutError, OSError) as exc:
                engine.kill()
                stats.restarts += 1
                reason = (
                    f"no answer within {deadline:.0f} s"
                    if isinstance(exc, TimeoutError)
                    else f"engine failed: {exc or type(exc).__name__}"
                )
                if attempt == max_tries:
                    stats.failed.append((task.position, f"{reason} ({attempt} tries)"))
                await asyncio.sleep(min(2.0, 0.1 * 2**attempt))
                continue
            results.update(out)
            stats.positions += 1
            stats.searches += len(out)
            stats.engine_seconds += sum(float(v.get("time", 0.0)) for v in out.values())
            break
    return results
