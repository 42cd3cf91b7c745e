#!/usr/bin/env python3
"""A tiny UCI engine for the pool tests: deterministic answers, and faults on demand.

Scores come from a hash of the FEN. Faults are chosen by environment variables holding a
substring of the position's FEN:

* ``FAKE_CRASH_ON``: exit at once (like SIGKILL) when asked to search such a position;
* ``FAKE_CRASH_ONCE``: the same, but only the first time (a marker file remembers it);
* ``FAKE_HANG_ON``: never answer for such a position.

and by ``FAKE_MODE``, for engines that are broken as a whole:

* ``illegal``: the best line starts with a move that is illegal in the position;
* ``garbage``: answers ``uci`` with lines of nonsense and never ``uciok``;
* ``no-handshake``: says nothing at all;
* ``silent-go``: completes the handshake but never answers ``go``;
* ``stockfish``: calls itself ``Stockfish 15.1`` (with ``FAKE_MODE=stockfish,illegal``
  an impostor that also plays illegal moves).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

try:
    import chess
except ModuleNotFoundError:  # started through the shebang by a Python without python-chess
    _venv = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"
    os.execv(_venv, [str(_venv), __file__, *sys.argv[1:]])

MODES = set(os.environ.get("FAKE_MODE", "").split(","))


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def score_of(fen: str, move: str) -> int:
    digest = hashlib.sha1(f"{fen}|{move}".encode()).digest()
    return int.from_bytes(digest[:2], "big") % 200 - 100


def illegal_move(board: chess.Board) -> str:
    """A well-formed UCI move that is not legal here (a1a1 is never legal)."""
    for square in chess.SQUARES:
        for target in (chess.A8, chess.H8, chess.A1, chess.H1):
            move = chess.Move(square, target)
            if square != target and not board.is_legal(move):
                return move.uci()
    return "a1a8"


def search(board: chess.Board, depth: int, multipv: int, root_moves: list[str]) -> None:
    fen = board.fen()
    crash = os.environ.get("FAKE_CRASH_ON")
    if crash and crash in fen:
        os._exit(9)
    once = os.environ.get("FAKE_CRASH_ONCE")
    marker = Path(os.environ.get("FAKE_MARKER", "/tmp/fake-uci-marker"))
    if once and once in fen and not marker.exists():
        marker.write_text("crashed")
        os._exit(9)
    hang = os.environ.get("FAKE_HANG_ON")
    if (hang and hang in fen) or "silent-go" in MODES:
        while True:
            time.sleep(1)
    moves = [m.uci() for m in board.legal_moves]
    if root_moves:
        moves = [m for m in moves if m in root_moves]
    ranked = sorted(moves, key=lambda m: (-score_of(fen, m), m))[:multipv]
    if "illegal" in MODES:
        ranked = [illegal_move(board), *ranked[1:]]
    for d in range(1, depth + 1):
        for i, m in enumerate(ranked, start=1):
            say(
                f"info depth {d} seldepth {d} multipv {i} score cp {score_of(fen, m) + d} "
                f"nodes {100 * d} nps 1000 time {d} pv {m}"
            )
    say(f"bestmove {ranked[0]}")


def main() -> None:
    board = chess.Board()
    multipv = 1
    for raw in sys.stdin:
        parts = raw.split()
        if not parts:
            continue
        cmd = parts[0]
        if "no-handshake" in MODES:
            continue
        if cmd == "uci" and "garbage" in MODES:
            for n in range(50):
                say(f"\x07%%%% {n} lorem ipsum \x1b[31m \u00e9 bestmove readyok")
            continue
        if cmd == "uci":
            say("id name " + ("Stockfish 15.1" if "stockfish" in MODES else "FakeUCI 1.0"))
            say("option name Hash type spin default 16 min 1 max 1024")
            say("option name Threads type spin default 1 min 1 max 8")
            say("option name MultiPV type spin default 1 min 1 max 500")
            say("uciok")
        elif cmd == "isready":
            say("readyok")
        elif cmd == "setoption" and "MultiPV" in parts:
            multipv = int(parts[-1])
        elif cmd == "position":
            if parts[1] == "startpos":
                board = chess.Board()
                rest = parts[2:]
            else:
                board = chess.Board(" ".join(parts[2:8]))
                rest = parts[8:]
            if rest and rest[0] == "moves":
                for m in rest[1:]:
                    board.push_uci(m)
        elif cmd == "go":
            depth = int(parts[parts.index("depth") + 1]) if "depth" in parts else 3
            roots = parts[parts.index("searchmoves") + 1 :] if "searchmoves" in parts else []
            search(board, depth, multipv, roots)
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
