#!/usr/bin/env python3
"""A tiny UCI engine for the pool tests: deterministic answers, and faults on demand.

Scores come from a hash of the FEN. Faults are chosen by environment variables holding a
substring of the position's FEN:

* ``FAKE_CRASH_ON``: exit at once (like SIGKILL) when asked to search such a position;
* ``FAKE_CRASH_ONCE``: the same, but only the first time (a marker file remembers it);
* ``FAKE_HANG_ON``: never answer for such a position.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import chess


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def score_of(fen: str, move: str) -> int:
    digest = hashlib.sha1(f"{fen}|{move}".encode()).digest()
    return int.from_bytes(digest[:2], "big") % 200 - 100


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
    if hang and hang in fen:
        while True:
            time.sleep(1)
    moves = [m.uci() for m in board.legal_moves]
    if root_moves:
        moves = [m for m in moves if m in root_moves]
    ranked = sorted(moves, key=lambda m: (-score_of(fen, m), m))[:multipv]
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
        if cmd == "uci":
            say("id name FakeUCI 1.0")
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
