"""The Dask backend on a LocalCluster over loopback: same results as the local pool, and a
worker killed mid-run loses nothing and writes nothing twice."""

from __future__ import annotations

import os
import signal
from typing import Any

import chess
import pytest

from site_builder.analysis.engine import PositionTask
from site_builder.analysis.pool import LocalPool
from site_builder.analysis.positions import chunked
from site_builder.analysis.spec import AnalysisSpec, position_key
from site_builder.analysis.stage import identify_engine
from tests.conftest import STOCKFISH, local_cluster, requires_engine

distributed = pytest.importorskip("distributed")
pytestmark = [requires_engine, pytest.mark.engine]


def _positions(n: int) -> list[str]:
    board = chess.Board()
    out: list[str] = []
    game = [
        "e2e4",
        "c7c5",
        "g1f3",
        "d7d6",
        "d2d4",
        "c5d4",
        "f3d4",
        "g8f6",
        "b1c3",
        "a7a6",
        "c1e3",
        "e7e5",
        "d4b3",
        "c8e6",
        "f2f3",
        "f8e7",
        "d1d2",
        "e8g8",
        "e1c1",
        "b8d7",
        "g2g4",
        "b7b5",
        "g4g5",
        "b5b4",
        "c3e2",
        "f6e8",
        "f3f4",
        "a6a5",
        "f4f5",
        "a5a4",
    ]
    for uci in game:
        out.append(position_key(board))
        for move in list(board.legal_moves)[:4]:
            b = board.copy(stack=False)
            b.push(move)
            out.append(position_key(b))
        board.push_uci(uci)
    unique = list(dict.fromkeys(out))
    return unique[:n]


def _strip_time(values: dict[str, Any]) -> dict[str, Any]:
    return {k: {f: v for f, v in value.items() if f != "time"} for k, value in values.items()}


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    from distributed import Client

    with local_cluster() as lc, Client(lc) as client:
        yield client


def _spec(depth: int) -> AnalysisSpec:
    assert STOCKFISH is not None
    return AnalysisSpec(identify_engine(STOCKFISH), depth, 0, 3, 16, 1)


def test_dask_gives_the_same_evaluations_as_the_local_pool(cluster: Any) -> None:
    from site_builder.analysis.dask_backend import DaskPool

    spec = _spec(6)
    tasks = [PositionTask(p, True, ()) for p in _positions(40)]
    chunks = chunked(tasks, 10)
    local: dict[str, Any] = {}
    LocalPool(STOCKFISH or "", spec, 2).run(chunks, lambda r, n: local.update(r))
    remote: dict[str, Any] = {}
    stats = DaskPool(cluster, STOCKFISH or "", spec).run(chunks, lambda r, n: remote.update(r))
    assert stats.failed == [] and stats.positions == 40
    assert len(local) == 40
    assert _strip_time(remote) == _strip_time(local)


def test_killed_worker_loses_nothing_and_writes_nothing_twice(cluster: Any) -> None:
    from site_builder.analysis.dask_backend import DaskPool

    spec = _spec(10)
    tasks = [PositionTask(p, True, ()) for p in _positions(120)]
    chunks = chunked(tasks, 8)
    written: dict[str, Any] = {}
    calls: list[int] = []
    killed: list[int] = []

    def on_chunk(results: dict[str, Any], done: int) -> None:
        for key in results:
            assert key not in written, "a position was written twice"
        written.update(results)
        calls.append(done)
        if not killed:
            pids = cluster.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    stats = DaskPool(cluster, STOCKFISH or "", spec).run(chunks, on_chunk)
    assert killed
    assert stats.failed == []
    assert len(calls) == len(chunks)  # each chunk delivered exactly once
    assert len(written) == len(tasks)
