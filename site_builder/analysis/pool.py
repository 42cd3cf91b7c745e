"""The local pool: one long-lived engine process per worker, fed in chunks.

A crashed engine is restarted and the position retried; an engine that misses the
per-position deadline is killed and restarted; a position that keeps failing is recorded
after ``max_tries`` and skipped. An answer that fails :func:`validate.invalid_reason` (an
illegal move, a malformed score) is recorded at once and never stored. After
:data:`GIVE_UP_AFTER` positions in a row have failed, the pool stops with an
:class:`EngineError`. Only the driver (the ``on_chunk`` callback) writes the cache.
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
from site_builder.analysis.validate import invalid_reason
from site_builder.errors import EngineError

#: Positions in a row that may fail (each after ``max_tries`` tries, or with an invalid
#: answer) before the engine is given up on: a single position that crashes an engine does
#: not stop the build, an engine that never answers does within a few deadlines.
GIVE_UP_AFTER = 3


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


@dataclass
class Streak:
    """Positions failed in a row, shared by every engine of a pool."""

    engine_path: str
    limit: int = GIVE_UP_AFTER
    failed: int = 0
    analysed: int = 0
    gave_up: str = ""

    def success(self) -> None:
        self.failed = 0
        self.analysed += 1

    def failure(self, reason: str) -> None:
        self.failed += 1
        if self.failed >= self.limit and not self.gave_up:
            self.gave_up = (
                f"gave up on the engine {self.engine_path}: {self.failed} positions in a row "
                f"could not be analysed (the last: {reason}). The {self.analysed} positions "
                "analysed before are cached. Check the engine with `site-builder doctor`, or "
                "choose another with --engine or [analysis] engine in content/site.toml."
            )


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
        streak = Streak(self.engine_path)
        queue: asyncio.Queue[Sequence[PositionTask]] = asyncio.Queue()
        for chunk in chunks:
            queue.put_nowait(chunk)
        n = min(self.workers, max(1, len(chunks)))
        workers = [
            asyncio.create_task(self._worker(queue, on_chunk, stats, streak)) for _ in range(n)
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        if streak.gave_up:
            raise EngineError(streak.gave_up)
        return stats

    async def _worker(
        self,
        queue: asyncio.Queue[Sequence[PositionTask]],
        on_chunk: OnChunk,
        stats: PoolStats,
        streak: Streak,
    ) -> None:
        engine = EngineHolder(self.engine_path, self.spec)
        try:
            while not queue.empty() and not streak.gave_up:
                chunk = queue.get_nowait()
                results = await run_chunk(
                    engine, self.spec, chunk, self.deadline, self.max_tries, stats, streak
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
    streak: Streak | None = None,
) -> dict[str, Any]:
    """Analyse a chunk on one engine; restart it after a crash or a missed deadline.

    A position that fails ``max_tries`` times, or whose answer is invalid, is recorded in
    ``stats.failed`` and skipped. Once ``streak`` gives up, the chunk stops and what it
    analysed so far is returned. Shared by every backend (local pool, Dask workers).
    """
    streak = streak or Streak(engine.path)
    results: dict[str, Any] = {}
    for task in chunk:
        if streak.gave_up:
            break
        for attempt in range(1, max_tries + 1):
            try:
                protocol = await engine.get()
                out = await asyncio.wait_for(analyse_task(protocol, spec, task), deadline)
            except (chess.engine.EngineError, EngineError, TimeoutError, OSError) as exc:
                engine.kill()
                stats.restarts += 1
                reason = (
                    f"no answer within {deadline:g} s"
                    if isinstance(exc, TimeoutError)
                    else f"engine failed: {exc or type(exc).__name__}"
                )
                if attempt == max_tries:
                    reason = f"{reason} ({attempt} tries)"
                    stats.failed.append((task.position, reason))
                    streak.failure(reason)
                    break
                await asyncio.sleep(min(2.0, 0.1 * 2**attempt))
                continue
            invalid = next(
                (f"{r} ({key})" for key, value in out.items() if (r := invalid_reason(key, value))),
                None,
            )
            if invalid is not None:  # a deterministic engine would repeat it: no retry
                reason = f"the engine's answer is invalid: {invalid}"
                stats.failed.append((task.position, reason))
                streak.failure(reason)
                break
            results.update(out)
            stats.positions += 1
            stats.searches += len(out)
            stats.engine_seconds += sum(float(v.get("time", 0.0)) for v in out.values())
            streak.success()
            break
    return results
