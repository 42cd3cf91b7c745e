"""One UCI engine analysing positions: the asynchronous core shared by every backend.

A position is analysed from its FEN alone (see :func:`spec.position_key`), after
``ucinewgame``, so the answer depends only on the cache key.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import chess.engine

from site_builder.analysis.spec import AnalysisSpec, board_from_key, move_key, pv_key
from site_builder.errors import EngineError, EngineNotFoundError

INSTALL_HINT = (
    "Install Stockfish (Debian/Ubuntu: `sudo apt-get install stockfish`, which puts it at "
    "/usr/games/stockfish; macOS: `brew install stockfish`) or point to any UCI engine with "
    "--engine PATH or [analysis] engine in content/site.toml."
)


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


#: Seconds an engine may take from its start to ``uciok``: Stockfish needs well under one.
HANDSHAKE_SECONDS = 20.0


async def open_engine(path: str, hash_mb: int, threads: int) -> chess.engine.UciProtocol:
    """Start the engine and set the options that make its answers reproducible.

    An engine that exits, or does not finish the UCI handshake within
    :data:`HANDSHAKE_SECONDS`, is stopped and reported as an :class:`EngineError`.
    """
    exe = resolve_engine(path)
    fix = (
        "Point --engine or [analysis] engine in content/site.toml to a UCI chess engine "
        "(check it with `site-builder doctor`)."
    )
    try:
        transport, protocol = await chess.engine.UciProtocol.popen(exe)
    except OSError as exc:
        raise EngineError(f"the engine {exe} could not be started ({exc}). {fix}") from exc
    try:
        await asyncio.wait_for(protocol.initialize(), HANDSHAKE_SECONDS)
        options: dict[str, Any] = {}
        if "Threads" in protocol.options:
            options["Threads"] = threads
        if "Hash" in protocol.options:
            options["Hash"] = hash_mb
        if "OwnBook" in protocol.options:  # Toga II plays from its book otherwise.
            options["OwnBook"] = False
        await protocol.configure(options)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError, OSError):
            transport.kill()
        transport.close()
        if isinstance(exc, TimeoutError):
            raise EngineError(
                f"the engine {exe} did not finish the UCI handshake within "
                f"{HANDSHAKE_SECONDS:.0f} s (no 'uciok' after 'uci'): it is not a UCI chess "
                f"engine, or it hangs. {fix}"
            ) from exc
        if isinstance(exc, chess.engine.EngineError):
            raise EngineError(
                f"the engine {exe} stopped during the UCI handshake "
                f"({exc or type(exc).__name__}). {fix}"
            ) from exc
        raise
    return protocol


def engine_name(protocol: chess.engine.UciProtocol) -> str:
    return protocol.id.get("name", "unknown engine").strip()


_INT_FIELDS = frozenset(
    {"depth", "seldepth", "nodes", "multipv", "currmovenumber", "hashfull", "nps", "tbhits"}
    | {"cpuload"}
)
_SKIP = {"currmove": 1, "ebf": 1, "wdl": 3}
_UCI_MOVE = re.compile(r"^[a-h][1-8][a-h][1-8][pnbrqk]?|[PNBRQK]@[a-h][1-8]|0000\Z")


def parse_info(line: str) -> dict[str, Any]:
    """The fields of one ``info`` line that the cache keeps, read as python-chess reads them.

    The score is from the side to move's point of view, as ``(cp, mate)``; ``pv`` is the
    line's first move only. Reading just that (not every move of every line, as
    python-chess's full parser does) keeps the driver's CPU share small when every core
    runs an engine; ``tests/test_engine_parse`` checks it against python-chess.
    """
    tokens = line.split()
    info: dict[str, Any] = {}
    i, n = 1, len(tokens)
    while i < n:
        token = tokens[i]
        if token in _INT_FIELDS and i + 1 < n:
            info[token] = int(tokens[i + 1])
            i += 2
        elif token == "time" and i + 1 < n:
            info["time"] = int(tokens[i + 1]) / 1000.0
            i += 2
        elif token == "score" and i + 2 < n:
            kind, value = tokens[i + 1], int(tokens[i + 2])
            i += 3
            if i < n and tokens[i] in ("lowerbound", "upperbound"):
                info[tokens[i]] = True
                i += 1
            info["score"] = (value, None) if kind == "cp" else (None, value)
        elif token == "pv":
            if i + 1 < n and _UCI_MOVE.match(tokens[i + 1]):
                info["pv"] = tokens[i + 1]
            break
        elif token == "string":
            info["string"] = line.split(" string ", 1)[-1]
            break
        else:
            i += 1 + _SKIP.get(token, 0)
    return info


#: The options each engine was last sent by a search (those python-chess manages itself,
#: which ``configure`` refuses): a search sends only the ones whose value differs from the
#: last one sent or else the engine's declared default, as python-chess's ``analyse`` does.
_SENT: weakref.WeakKeyDictionary[chess.engine.UciProtocol, dict[str, Any]] = (
    weakref.WeakKeyDictionary()
)


def _set_option(protocol: chess.engine.UciProtocol, name: str, value: Any) -> None:
    """``setoption`` if ``value`` (checked by the engine's declared option) is news to it."""
    option = protocol.options.get(name)
    if option is None:
        raise chess.engine.EngineError(
            f"engine does not support option {name} "
            f"(available options: {', '.join(protocol.options)})"
        )
    parsed = option.parse(value)
    sent = _SENT.setdefault(protocol, {})
    if parsed is None or parsed != sent.get(name, option.default):
        if parsed is None:
            protocol.send_line(f"setoption name {name}")
        elif isinstance(parsed, bool):
            protocol.send_line(f"setoption name {name} value {'true' if parsed else 'false'}")
        else:
            protocol.send_line(f"setoption name {name} value {parsed}")
        sent[name] = parsed


def _position_line(board: chess.Board) -> str:
    """UCI ``position`` for ``board``: its root and moves (as python-chess sends it)."""
    history = board.move_stack if all(board.move_stack) else []
    fen = (board.root() if history else board).fen(shredder=board.chess960, en_passant="fen")
    if type(board).uci_variant == "chess" and fen == chess.STARTING_FEN:
        line = "position startpos"
    else:
        line = f"position fen {fen}"
    return f"{line} moves {' '.join(m.uci() for m in history)}" if history else line


def _go_line(spec: AnalysisSpec, root_moves: list[chess.Move] | None) -> str:
    """UCI ``go`` at the spec's limit (depth and/or nodes), restricted to ``root_moves``."""
    line = "go"
    if spec.depth:
        line += f" depth {max(1, spec.depth)}"
    if spec.nodes:
        line += f" nodes {max(1, spec.nodes)}"
    if root_moves is not None:
        line += " searchmoves " + (" ".join(m.uci() for m in root_moves) or "0000")
    return line


class _Search(chess.engine.BaseCommand[dict[str, Any]]):
    """One ``go`` after ``ucinewgame``: per multi-PV index the latest value of every field
    (merged line by line, as python-chess's ``AnalysisResult.multipv``), and the best line's
    score at each completed depth. The commands are python-chess's ``analyse`` sends."""

    def __init__(
        self,
        protocol: chess.engine.UciProtocol,
        board: chess.Board,
        spec: AnalysisSpec,
        multipv: int,
        root_moves: list[chess.Move] | None,
    ) -> None:
        super().__init__(protocol)
        self.protocol, self.board, self.spec = protocol, board, spec
        self.multipv, self.root_moves = multipv, root_moves
        self.lines: list[dict[str, Any]] = []
        self.by_depth: dict[int, list[Any]] = {}
        self.searching = False

    def start(self) -> None:
        p = self.protocol
        if "Ponder" in p.options:
            _set_option(p, "Ponder", False)
        if "UCI_AnalyseMode" in p.options and "UCI_AnalyseMode" not in p.target_config:
            _set_option(p, "UCI_AnalyseMode", True)
        if "MultiPV" in p.options or self.multipv > 1:
            _set_option(p, "MultiPV", self.multipv)
        p.send_line("ucinewgame")
        p.send_line("isready")

    def line_received(self, line: str) -> None:
        if line.startswith("info "):
            self._info(parse_info(line))
        elif line.startswith("bestmove"):
            if not self.searching:
                raise chess.engine.EngineError("was not searching, but engine sent bestmove")
            self.result.set_result({"lines": self.lines, "by_depth": self.by_depth})
            self.set_finished()
        elif line.strip() == "readyok" and not self.searching:
            self.searching = True
            self._go()

    def _go(self) -> None:
        p, board = self.protocol, self.board
        variant = type(board).uci_variant
        if "UCI_Variant" in p.options:
            _set_option(p, "UCI_Variant", variant)
        elif variant != "chess":
            raise chess.engine.EngineError("engine does not support UCI_Variant")
        if "UCI_Chess960" in p.options:
            _set_option(p, "UCI_Chess960", board.chess960)
        elif board.chess960:
            raise chess.engine.EngineError("engine does not support UCI_Chess960")
        p.send_line(_position_line(board))
        p.send_line(_go_line(self.spec, self.root_moves))

    def _info(self, info: dict[str, Any]) -> None:
        if not info:
            return
        k = info.get("multipv", 1)
        while len(self.lines) < k:
            self.lines.append({})
        self.lines[k - 1].update(info)
        exact = not (info.get("lowerbound") or info.get("upperbound"))
        if k == 1 and exact and "score" in info and "depth" in info and "pv" in info:
            cp, mate = info["score"]
            self.by_depth[info["depth"]] = [info["depth"], cp, mate, info["pv"]]

    def cancel(self) -> None:
        self.protocol.send_line("stop")


async def _search(
    protocol: chess.engine.UciProtocol,
    spec: AnalysisSpec,
    board: chess.Board,
    multipv: int,
    root_moves: list[chess.Move] | None = None,
) -> dict[str, Any]:
    return await protocol.communicate(lambda p: _Search(p, board, spec, multipv, root_moves))


async def analyse_lines(
    protocol: chess.engine.UciProtocol, spec: AnalysisSpec, board: chess.Board
) -> dict[str, Any]:
    """Multi-PV search: every line's first move and score, and the best score per depth.

    Scores are centipawns (or mate in n) from the side to move's point of view.
    """
    found = await _search(protocol, spec, board, spec.multipv)
    final, by_depth = found["lines"], found["by_depth"]
    lines = [[f["pv"], *f["score"]] for f in final if "score" in f and "pv" in f]
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
    """The played move searched alone (``searchmoves``) at the same limit."""
    found = await _search(protocol, spec, board, 1, [chess.Move.from_uci(uci)])
    info = found["lines"][0] if found["lines"] else {}
    if "score" not in info:
        raise chess.engine.EngineError(f"no score for {uci} in {board.fen()}")
    cp, mate = info["score"]
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
