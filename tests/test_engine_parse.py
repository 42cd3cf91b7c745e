"""The driver's lean UCI reader gives exactly what python-chess's full parser gives.

``engine.parse_info`` reads only the fields the cache keeps (and a line's first move), so that
the driver needs little CPU next to busy engines. These tests hold it to python-chess: on
hand-written info lines, and on real Stockfish searches compared with the python-chess
``analysis()``/``analyse()`` reading this project used before.
"""

from __future__ import annotations

import asyncio
from typing import Any

import chess
import chess.engine
import pytest

from site_builder.analysis.engine import analyse_lines, analyse_move, open_engine, parse_info
from site_builder.analysis.spec import AnalysisSpec
from tests.conftest import STOCKFISH, requires_engine

LINES = [
    "info depth 10 seldepth 14 multipv 1 score cp 31 nodes 5321 nps 812000 hashfull 3 tbhits 0"
    " time 7 pv e2e4 e7e5 g1f3",
    "info depth 10 seldepth 14 multipv 3 score cp -12 lowerbound nodes 5321 time 7 pv d2d4",
    "info depth 12 multipv 2 score mate -3 upperbound wdl 0 10 990 nodes 99 time 1200 pv h7h8q",
    "info depth 7 currmove e2e4 currmovenumber 1",
    "info depth 3 seldepth 3 multipv 1 score mate 0 nodes 12 time 0",
    "info string NNUE evaluation using nn-ad9b42354671.nnue enabled",
    "info depth 5 multipv 1 score cp 40 ebf 1.5 cpuload 100 time 3 pv e1g1 e8g8",
    "info nodes 4 unknownfield",
]


def _reference(line: str, board: chess.Board) -> dict[str, Any]:
    full = chess.engine._parse_uci_info(line.split(" ", 1)[1], board)
    out: dict[str, Any] = {}
    for key, value in full.items():
        if key == "score":
            pov = value.relative
            out[key] = (None, pov.mate()) if pov.mate() is not None else (pov.score(), None)
        elif key == "pv":
            out[key] = value[0].uci()
        elif key in ("currmove", "wdl", "ebf"):
            continue
        else:
            out[key] = value
    return out


@pytest.mark.parametrize("line", LINES)
def test_parse_info_agrees_with_python_chess(line: str) -> None:
    board = chess.Board("4k3/7P/8/8/8/8/4P3/R3K2R w KQ - 0 1")
    if "e7e5" in line or "d2d4" in line or "e2e4" in line:
        board = chess.Board()
    if "e8g8" in line:
        board = chess.Board("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1")
    got = parse_info(line)
    want = _reference(line, board)
    if "string" in want:
        assert got["string"] == want["string"]
        return
    assert got == want


async def _python_chess_lines(
    protocol: chess.engine.UciProtocol, spec: AnalysisSpec, board: chess.Board
) -> dict[str, Any]:
    """The reading this project used before: python-chess parses every line in full."""
    limit = chess.engine.Limit(depth=spec.depth)
    by_depth: dict[int, list[Any]] = {}
    with await protocol.analysis(board, limit, multipv=spec.multipv, game=object()) as analysis:
        async for info in analysis:
            if info.get("multipv", 1) != 1 or "score" not in info or "depth" not in info:
                continue
            if info.get("lowerbound") or info.get("upperbound") or not info.get("pv"):
                continue
            pov = info["score"].relative
            by_depth[info["depth"]] = [info["depth"], pov.score(), pov.mate(), info["pv"][0].uci()]
        final = analysis.multipv
    lines = []
    for info in final:
        if "score" in info and info.get("pv"):
            pov = info["score"].relative
            lines.append([info["pv"][0].uci(), pov.score(), pov.mate()])
    top = final[0]
    return {
        "depth": top["depth"],
        "seldepth": top["seldepth"],
        "nodes": top["nodes"],
        "lines": lines,
        "by_depth": [by_depth[d] for d in sorted(by_depth)],
    }


POSITIONS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",  # mate in one
    "7k/8/6KQ/8/8/8/8/8 b - - 0 1",  # two legal moves: fewer lines than multi-PV
    "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
]


@requires_engine
@pytest.mark.engine
@pytest.mark.parametrize("multipv", [1, 10])
def test_real_searches_read_as_python_chess_reads_them(multipv: int) -> None:
    spec = AnalysisSpec("Stockfish", 9, 0, multipv, 16, 1)

    async def run() -> list[tuple[str, Any, Any, Any, Any]]:
        assert STOCKFISH is not None
        protocol = await open_engine(STOCKFISH, 16, 1)
        out = []
        try:
            for fen in POSITIONS:
                board = chess.Board(fen)
                lean = await analyse_lines(protocol, spec, board)
                full = await _python_chess_lines(protocol, spec, board)
                move = next(iter(board.legal_moves)).uci()
                single = await analyse_move(protocol, spec, board, move)
                info = await protocol.analyse(
                    board,
                    chess.engine.Limit(depth=9),
                    game=object(),
                    root_moves=[chess.Move.from_uci(move)],
                )
                pov = info["score"].relative
                out.append((fen, lean, full, single, (pov.score(), pov.mate(), info["depth"])))
        finally:
            await protocol.quit()
        return out

    for fen, lean, full, single, reference in asyncio.run(run()):
        assert {k: v for k, v in lean.items() if k != "time"} == full, fen
        assert (single["cp"], single["mate"], single["depth"]) == reference, fen
