"""A game's SAN comes from the PGN's own tokens where they are canonical (kept per main-line
move by the reader's visitor), else from python-chess; variations never shift the main line's,
and a bad move in one still makes the game unreadable."""

from __future__ import annotations

import io

import chess.pgn

from site_builder.config import TimeControlSection
from site_builder.ingest.names import AliasTable
from site_builder.ingest.pgn import _MainLine, parse_game

PGN = """[White "A"]
[Black "B"]
[Result "*"]

1. e4 e5 (1... c5 2. Nf3) 2. g1f3 Nc6 3. Bb5 a6 4. Bxc6 dxc6 5. O-O f6 6. d4 exd4
7. Nxd4 c5 8. Nb3 Qxd1 9. Rxd1 Bg4 10. f3 Be6 11. Nc3 Nh6 12. Rd8+ Rxd8 13. Be3 Ke7
14. b3d2 *
"""


def _read(text: str) -> _MainLine:
    game = chess.pgn.read_game(io.StringIO(text), Visitor=_MainLine)
    assert game is not None
    return game


def test_canonical_tokens_are_kept_per_main_line_move() -> None:
    game = _read(PGN)
    tree = chess.pgn.read_game(io.StringIO(PGN))
    assert tree is not None
    assert game.moves == list(tree.mainline_moves())  # the variation's c5, Nf3 are not kept
    # g1f3 (UCI) is no SAN: python-chess's; Rd8+ is kept without its check sign
    assert game.sans[:4] == ["e4", "e5", "Nf3", "Nc6"]
    assert game.sans[22:] == ["Rd8", "Rxd8", "Be3", "Ke7", "Nd2"]
    assert not game.errors


def test_a_bad_move_in_a_variation_is_an_error() -> None:
    text = PGN.replace("(1... c5 2. Nf3)", "(1... c5 2. Nf6)")
    game = _read(text)
    tree = chess.pgn.read_game(io.StringIO(text))
    assert tree is not None
    assert [str(e) for e in game.errors] == [str(e) for e in tree.errors]
    assert str(game.errors[0]) == (
        "illegal san: 'Nf6' in rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
    )
    record, problems = parse_game("t.pgn", 1, text, AliasTable({}), TimeControlSection())
    assert record is None and "moves could not be read: illegal san: 'Nf6'" in problems[0].reason


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
