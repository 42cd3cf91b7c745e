"""A game's SAN comes from the PGN's own tokens where they are canonical (kept per move by the
reader's game class), else from python-chess; variations never shift the main line's."""

from __future__ import annotations

import io

import chess.pgn

from site_builder.config import TimeControlSection
from site_builder.ingest.names import AliasTable
from site_builder.ingest.pgn import _CollectingBuilder, parse_game

PGN = """[White "A"]
[Black "B"]
[Result "*"]

1. e4 e5 (1... c5 2. Nf3) 2. g1f3 Nc6 3. Bb5 a6 4. Bxc6 dxc6 5. O-O f6 6. d4 exd4
7. Nxd4 c5 8. Nb3 Qxd1 9. Rxd1 Bg4 10. f3 Be6 11. Nc3 Nh6 12. Rd8+ Rxd8 13. Be3 Ke7
14. b3d2 *
"""


def _read(text: str) -> chess.pgn.Game:
    game = chess.pgn.read_game(io.StringIO(text), Visitor=_CollectingBuilder)
    assert game is not None
    return game


def test_canonical_tokens_are_kept_per_main_line_move() -> None:
    game = _read(PGN)
    tokens = game.san_tokens  # type: ignore[attr-defined]
    main = list(game.mainline())
    # g1f3 (UCI) is no SAN: not kept; Rd8+ is kept without its check sign
    assert [tokens.get(n) for n in main[:4]] == ["e4", "e5", None, "Nc6"]
    assert [tokens.get(n) for n in main[22:]] == ["Rd8", "Rxd8", "Be3", "Ke7", None]
    # the variation's moves are kept on the variation's own nodes
    side = main[0].variations[1]
    assert (tokens[side], tokens[side.next()]) == ("c5", "Nf3")


def test_a_game_s_sans_are_its_tokens_or_python_chess_san() -> None:
    record, problems = parse_game("t.pgn", 1, PGN, AliasTable({}), TimeControlSection())
    assert record is not None and not problems
    board, want = chess.Board(), []
    for uci in record.moves:
        move = chess.Move.from_uci(uci)
        want.append(board.san(move).rstrip("+#"))
        board.push(move)
    assert record.sans == tuple(want)
    assert (record.sans[2], record.sans[22], record.sans[-1]) == ("Nf3", "Rd8", "Nd2")
