"""One UCI engine analysing positions: the asynchronous core shared by every backend.

A position is analysed from its FEN alone (see :func:`spec.position_key`), after
``ucinewgame``, so the answer depends only on the cache key.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import chess.engine

from site_builder.analysis.spec import AnalysisSpec, board_from_key, move_key, pv_key
from site_builder.errors import EngineNotFoundError

INSTALL_HINT = (
    "Install Stockfish (Debian/Ubuntu: `sudo apt-get install stockfish`, which puts it at "
    "/usr/games/stockfish; macOS: `brew install stockfish`) or point to any UCI engine with "
    "--engine PATH or [analysis] engine in content/site.toml."
)

_INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV


@dataclass(frozen=True)
class PositionTask:
    """Work for one position: its principal lines (if not cached) and played moves to score.

    ``moves`` are the played moves whose score is still unknown; those found among the
    principal lines need no extra search.
    """

    position: str
    need_pv: bool
    moves: tuple[str, ...]


def resolve_engine(path: str) -> str:
    """Absolute path of the engine executable, or :class:`EngineNotFoundError`."""
    found = shutil.which(path)
    if found is None and Path(path).is_file():
        found = path
    if found is None:
        raise EngineNotFoundError(f"no chess engine at {path!r}. {INSTALL_HINT}")
    return found


async def open_engine(path: str, hash_mb: int, threads: int) -> chess.engine.UciProtocol:
    """Start the engine and set the options that make its answers reproducible."""
    _transport, protocol = await chess.engine.popen_uci(resolve_engine(path))
    options: dict[str, Any] = {}
    if "Threads" in protocol.options:
        options["Threads"] = threads
    if "Hash" in protocol.options:
        options["Hash"] = hash_mb
    if "OwnBook" in protocol.options:  # Toga II plays from its book otherwise.
        options["OwnBook"] = False
    await protocol.configure(options)
    return protocol


def engine_name(protocol: chess.engine.UciProtocol) -> str:
    return protocol.id.get("name", "unknown engine").strip()


def _score(info: chess.engine.InfoDict) -> tuple[int | None, int | None]:
    pov = info["score"].relative
    mate = pov.mate()
    return (None, mate) if mate is not None else (pov.score(), None)


def _limit(spec: AnalysisSpec) -> chess.engine.Limit:
    return chess.engine.Limit(depth=spec.depth or None, nodes=spec.nodes or None)


async def analyse_lines(
    protocol: chess.engine.UciProtocol, spec: AnalysisSpec, board: chess.Board
) -> dict[str, Any]:
    """Multi-PV search: every line's first move and score, and the best score per depth.

    Scores are centipawns (or mate in n) from the side to move's point of view.
    """
    by_depth: dict[int, list[Any]] = {}
    with await protocol.analysis(
        board, _limit(spec), multipv=spec.multipv, game=object(), info=_INFO
    ) as analysis:
        async for info in analysis:
            if info.get("multipv", 1) != 1 or "score" not in info or "depth" not in info:
                continue
            if info.get("lowerbound") or info.get("upperbound") or not info.get("pv"):
                continue
            cp, mate = _score(info)
            by_depth[info["depth"]] = [info["depth"], cp, mate, info["pv"][0].uci()]
        final = analysis.multipv
    lines = []
    for info in final:
        if "score" not in info or not info.get("pv"):
            continue
        cp, mate = _score(info)
        lines.append([info["pv"][0].uci(), cp, mate])
    top = final[0] if final else {}
    return {
        "depth": int(top.get("depth", 0)),
        "seldepth": int(top.get("seldepth", 0)),
        "nodes": int(top.get("nodes", 0)),
        "time": float(top.get("time", 0.0)),
        "lines": lines,
        "by_depth": [by_depth[d] for d in sorted(by_depth)],
    }


async def analyse_move(
    protocol: chess.engine.UciProtocol, spec: AnalysisSpec, board: chess.Board, uci: str
) -> dict[str, Any]:
    """The played move searched alone (``root_moves``) at the same limit."""
    move = chess.Move.from_uci(uci)
    info = await protocol.analyse(board, _limit(spec), game=object(), info=_INFO, root_moves=[move])
    cp, mate = _score(info)
    return {
        "move": uci,
        "cp": cp,
        "mate": mate,
        "depth": int(info.get("depth", 0)),
        "nodes": int(info.get("nodes", 0)),
        "time": float(info.get("time", 0.0)),
    }


async def analyse_task(
    protocol: chess.engine.UciProtocol, spec: AnalysisSpec, task: PositionTask
) -> dict[str, Any]:
    """All cache entries one task produces: {cache key: value}."""
    board = board_from_key(task.position)
    out: dict[str, Any] = {}
    in_lines: set[str] = set()
    if task.need_pv:
        value = await analyse_lines(protocol, spec, board)
        out[pv_key(spec, task.position)] = value
        in_lines = {line[0] for line in value["lines"]}
    for uci in task.moves:
        if uci not in in_lines:
            out[move_key(spec, task.position, uci)] = await analyse_move(protocol, spec, board, uci)
    return out
