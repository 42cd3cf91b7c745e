"""Make full_spreads.jsonl.gz: every legal move of real positions, scored by Stockfish.

Positions: from the demo's calibration games (content/games/calibration/*.pgn), full move 9
on, not forced, not a repetition, |e_best| <= 300 cp in the shipped depth-10 analysis; a
seeded sample of ``PER_FILE`` per file. Each is searched at depth 10 (Threads 1, Hash 16,
the shipped analysis's setting) with MultiPV = its number of legal moves, so every legal
move gets a score; the hash is cleared between positions (a new game each). Run from the
repository root: ``.venv/bin/python tests/data/full_spreads/make.py``.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import chess
import chess.engine
import chess.pgn

ROOT = Path(__file__).resolve().parents[3]
OUT = Path(__file__).with_name("full_spreads.jsonl.gz")
PER_FILE = 80
MATE_CP = 10000


def key(board: chess.Board) -> str:
    return f"{board.epd()} {board.halfmove_clock}"


def cp(score: chess.engine.PovScore, turn: chess.Color) -> int:
    pov = score.pov(turn)
    mate = pov.mate()
    if mate is None:
        value = pov.score()
        assert value is not None
        return value
    return MATE_CP - mate if mate > 0 else -MATE_CP - mate


def main() -> None:
    best: dict[str, int] = {}
    with gzip.open(ROOT / "content/analysis/calibration-d10.jsonl.gz", "rt") as fh:
        next(fh)
        for line in fh:
            row = json.loads(line)
            if "lines" in row["v"]:
                c0, m0 = row["v"]["lines"][0][1:]
                best[row["p"]] = (MATE_CP if (m0 or 0) > 0 else -MATE_CP) if c0 is None else c0
    rng = random.Random(20261124)
    picked: list[tuple[str, str]] = []
    for pgn in sorted((ROOT / "content/games/calibration").glob("elo-*.pgn")):
        pool: list[str] = []
        with pgn.open(encoding="utf-8") as fh:
            while (game := chess.pgn.read_game(fh)) is not None:
                board = game.board()
                seen: set[str] = set()
                for move in game.mainline_moves():
                    k = key(board)
                    rep = board.epd() in seen
                    seen.add(board.epd())
                    n = board.legal_moves.count()
                    usable = board.fullmove_number >= 9 and not rep and n >= 2
                    if usable and k in best and abs(best[k]) <= 300:
                        pool.append(k)
                    board.push(move)
        pool = sorted(set(pool))
        picked += [(pgn.stem, k) for k in rng.sample(pool, PER_FILE)]
    engine = chess.engine.SimpleEngine.popen_uci("/usr/games/stockfish")
    engine.configure({"Threads": 1, "Hash": 16})
    rows = []
    for source, k in picked:
        epd, clock = k.rsplit(" ", 1)
        board = chess.Board(f"{epd} {clock} 1")
        n = board.legal_moves.count()
        # a new ``game`` object makes python-chess send ucinewgame first
        infos = engine.analyse(board, chess.engine.Limit(depth=10), multipv=n, game=object())
        scores = sorted((cp(i["score"], board.turn) for i in infos), reverse=True)
        rows.append({"source": source, "p": k, "legal": n, "scores": scores})
    engine.quit()
    with gzip.GzipFile(OUT, "wb", mtime=0) as out:
        for row in rows:
            out.write((json.dumps(row, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main()
