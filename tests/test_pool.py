"""The local pool with a fake UCI engine: crashes, hangs, retries, clean shutdown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import chess
import psutil
import pytest

from site_builder.analysis.engine import PositionTask
from site_builder.analysis.pool import LocalPool
from site_builder.analysis.positions import chunked
from site_builder.analysis.spec import AnalysisSpec, position_key, pv_key

FAKE = str(Path(__file__).parent / "engines" / "fake_uci.py")
SPEC = AnalysisSpec("FakeUCI 1.0", depth=3, nodes=0, multipv=3, hash_mb=16, threads=1)


def _positions(n: int) -> list[str]:
    """n distinct positions from a real opening sequence and its side lines."""
    board = chess.Board()
    keys = []
    for uci in ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1"]:
        keys.append(position_key(board))
        board.push_uci(uci)
    while len(keys) < n:
        for move in list(board.legal_moves):
            b = board.copy()
            b.push(move)
            keys.append(position_key(b))
            if len(keys) == n:
                break
        board.push(next(iter(board.legal_moves)))
    return keys[:n]


def _run(
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    positions: list[str],
    workers: int = 2,
    deadline: float = 0.0,
    tries: int = 3,
    chunk: int = 5,
) -> tuple[Any, dict[str, Any], list[int]]:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    pool = LocalPool(FAKE, SPEC, workers, deadline_s=deadline, max_tries=tries)
    tasks = [PositionTask(p, True, ()) for p in positions]
    written: dict[str, Any] = {}
    calls: list[int] = []

    def on_chunk(results: dict[str, Any], done: int) -> None:
        for key in results:
            assert key not in written, "a position was written twice"
        written.update(results)
        calls.append(done)

    stats = pool.run(chunked(tasks, chunk), on_chunk)
    return stats, written, calls


def test_all_positions_analysed_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    positions = _positions(23)
    stats, written, calls = _run(monkeypatch, {}, positions)
    assert stats.positions == 23 and stats.failed == [] and stats.restarts == 0
    assert set(written) == {pv_key(SPEC, p) for p in positions}
    assert sorted(calls) == [3, 5, 5, 5, 5]  # one cache write per chunk
    value = written[pv_key(SPEC, positions[0])]
    assert len(value["lines"]) == 3 and value["depth"] == 3
    assert [d[0] for d in value["by_depth"]] == [1, 2, 3]


def test_engine_killed_mid_search_is_restarted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    positions = _positions(12)
    victim = positions[6].split()[0]
    stats, written, _ = _run(
        monkeypatch, {"FAKE_CRASH_ONCE": victim, "FAKE_MARKER": str(tmp_path / "m")}, positions
    )
    assert stats.restarts == 1
    assert stats.failed == []
    assert set(written) == {pv_key(SPEC, p) for p in positions}


def test_position_that_always_kills_is_reported_after_bounded_tries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    positions = _positions(12)
    victim = positions[4]
    stats, written, _ = _run(monkeypatch, {"FAKE_CRASH_ON": victim.split()[0]}, positions, tries=3)
    assert stats.restarts == 3
    assert [p for p, _ in stats.failed] == [victim]
    assert "3 tries" in stats.failed[0][1]
    assert set(written) == {pv_key(SPEC, p) for p in positions if p != victim}


def test_hanging_engine_is_killed_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    positions = _positions(8)
    victim = positions[2]
    stats, written, _ = _run(
        monkeypatch, {"FAKE_HANG_ON": victim.split()[0]}, positions, deadline=0.5, tries=2
    )
    assert [p for p, _ in stats.failed] == [victim]
    assert "no answer within" in stats.failed[0][1]
    assert len(written) == 7


def test_no_engine_process_outlives_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}
    _run(monkeypatch, {}, _positions(10))
    after = {
        p.pid
        for p in psutil.Process(os.getpid()).children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    }
    assert after <= before
