"""A peer side by side: what a typical script does, against site-builder, on the same games.

The peer is a plain python-chess loop: every position of every game analysed at the same
depth and multi-PV (and the played move searched alone when outside the lines), one engine,
no cache, no dedupe. site-builder runs cold (empty cache) with one engine and with its default
pool, then warm.

Judged by: peer time / site-builder time (cold, same number of engines).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import chess
import chess.engine

from bench.common import STOCKFISH, demo_games
from site_builder.analysis.stage import prepare
from site_builder.config import settings_from_dict
from site_builder.stats import BuildStats

GAMES, DEPTH, MULTIPV = 12, 10, 10


def peer(games: list) -> float:  # type: ignore[type-arg]
    start = time.perf_counter()
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for g in games:
            board = chess.Board()
            for uci in g.moves:
                move = chess.Move.from_uci(uci)
                if board.fullmove_number >= 9 and board.legal_moves.count() > 1:
                    infos = engine.analyse(board, chess.engine.Limit(depth=DEPTH), multipv=MULTIPV)
                    if all(i["pv"][0] != move for i in infos):
                        engine.analyse(board, chess.engine.Limit(depth=DEPTH), root_moves=[move])
                board.push(move)
    return time.perf_counter() - start


def ours(content: Path, workers: int, cache: Path) -> float:
    settings = settings_from_dict(
        {"analysis": {"depth": DEPTH, "multipv": MULTIPV, "workers": workers}}
    )
    start = time.perf_counter()
    prepare(content, settings, BuildStats(), cache_dir=cache, progress=False, echo=lambda s: None)
    return time.perf_counter() - start


def main() -> dict[str, float]:
    games = demo_games("world-championships", GAMES)
    with tempfile.TemporaryDirectory() as tmp:
        content = Path(tmp) / "content"
        (content / "games").mkdir(parents=True)
        src = {g.source for g in games}
        text = []
        for g in games:
            text.append(
                "\n".join(
                    [
                        f'[Event "{g.event}"]',
                        f'[Date "{g.date}"]',
                        f'[White "{g.white}"]',
                        f'[Black "{g.black}"]',
                        f'[Result "{g.result}"]',
                        "",
                        " ".join(g.moves),
                        g.result,
                    ]
                )
            )
        (content / "games" / "peer.pgn").write_text("\n\n".join(text) + "\n")
        t_peer = peer(games)
        t_one = ours(content, 1, Path(tmp) / "c1")
        t_two = ours(content, 2, Path(tmp) / "c2")
        t_warm = ours(content, 2, Path(tmp) / "c2")
    print(
        f"peer: {len(games)} title-match games from {sorted(src)[0]}..., depth {DEPTH}, "
        f"multi-PV {MULTIPV}"
    )
    print(f"  plain python-chess loop, 1 engine, no cache: {t_peer:.1f} s")
    print(f"  site-builder cold, 1 engine: {t_one:.1f} s")
    print(f"  site-builder cold, 2 engines: {t_two:.1f} s")
    print(f"  site-builder warm (cache): {t_warm:.1f} s")
    print(f"RATIO peer / site-builder cold, same engines: {t_peer / t_one:.2f}x")
    print(
        f"RATIO peer / site-builder cold, default pool: {t_peer / t_two:.2f}x; "
        f"warm rebuild: {t_peer / t_warm:.0f}x"
    )
    return {"peer": t_peer, "one": t_one, "two": t_two, "warm": t_warm}


if __name__ == "__main__":
    main()
