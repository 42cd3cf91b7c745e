"""Repetitions in :func:`positions.game_plies` are python-chess's: the same position as
``Board.is_repetition`` sees it, through the key made of python-chess's public board state."""

from __future__ import annotations

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.analysis.positions import game_plies, repetition_key
from site_builder.config import TimeControlSection
from site_builder.ingest.names import AliasTable
from site_builder.ingest.pgn import read_file
from site_builder.model import GameRecord, PgnDate
from tests.conftest import DATA


def _game(moves: list[str]) -> GameRecord:
    return GameRecord(
        game_id="g",
        source="t.pgn",
        line=1,
        white="A",
        black="B",
        result="*",
        date=PgnDate.parse("?"),
        event="",
        site="",
        round="",
        white_elo=None,
        black_elo=None,
        eco=None,
        moves=tuple(moves),
    )


def _reference(moves: tuple[str, ...]) -> list[bool]:
    """Whether each move's position occurred before, by python-chess's ``is_repetition``."""
    board, flags = chess.Board(), []
    for uci in moves:
        flags.append(board.is_repetition(2))
        board.push_uci(uci)
    return flags


def _real_games() -> list[GameRecord]:
    return [
        g
        for path in sorted((DATA / "small-site/games").glob("*.pgn"))
        for g in read_file(path, path.name, AliasTable({}), TimeControlSection())[0]
    ]


def test_repetitions_of_real_games_are_python_chess_repetitions() -> None:
    games = _real_games()
    flags = [(g.game_id, [p.repetition for p in game_plies(g, None)]) for g in games]
    assert len(games) > 50 and any(any(f) for _, f in flags)
    assert flags == [(g.game_id, _reference(g.moves)) for g in games]


def test_a_shuffle_repeats_but_a_lost_en_passant_right_does_not() -> None:
    # 1.e4 a6 2.e5 d5 (exd6 e.p. is possible) 3.Nf3 Nf6 4.Ng1 Ng8: the same pieces, but
    # without the en passant capture; 5.Nf3 Nf6 6.Ng1 Ng8 7.Nf3: from 5...Nf6 on, each
    # position of the shuffle occurred before.
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    moves = ["e2e4", "a7a6", "e4e5", "d7d5", *shuffle, *shuffle, "g1f3"]
    flags = [p.repetition for p in game_plies(_game(moves), 1)]
    assert flags == _reference(tuple(moves))
    assert flags == [False] * 9 + [True] * 4


@pytest.mark.parametrize(
    ("fen", "same_as"),
    [
        # an en passant capture that would expose the king is no right: the same position
        ("4k3/8/8/KPp4r/8/8/8/8 w - c6 0 2", "4k3/8/8/KPp4r/8/8/8/8 w - - 0 2"),
        # castling rights without the rook are no rights
        ("4k3/8/8/8/8/8/8/4K3 w K - 0 1", "4k3/8/8/8/8/8/8/4K3 w - - 0 1"),
    ],
)
def test_rights_that_cannot_be_used_do_not_count(fen: str, same_as: str) -> None:
    assert repetition_key(chess.Board(fen)) == repetition_key(chess.Board(same_as))


@pytest.mark.parametrize(
    ("fen", "other"),
    [
        ("4k3/8/8/1Pp5/8/8/8/K7 w - c6 0 2", "4k3/8/8/1Pp5/8/8/8/K7 w - - 0 2"),
        ("r3k3/8/8/8/8/8/8/R3K3 w Qq - 0 1", "r3k3/8/8/8/8/8/8/R3K3 w q - 0 1"),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 0 1", "4k3/8/8/8/8/8/8/R3K3 b - - 0 1"),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 0 1", "4k3/8/8/8/8/8/8/Q3K3 w - - 0 1"),
        ("4k3/8/8/8/8/8/8/R3K3 w - - 0 1", "4k3/8/8/8/8/8/8/r3K3 w - - 0 1"),
    ],
)
def test_positions_that_differ_in_a_right_the_turn_or_a_piece_differ(fen: str, other: str) -> None:
    assert repetition_key(chess.Board(fen)) != repetition_key(chess.Board(other))


def _epd_key(board: chess.Board) -> str:
    return f"{board.epd()} {board.halfmove_clock}"


def test_position_keys_of_real_games_are_python_chess_epds() -> None:
    """:func:`spec.position_key` (its own board FEN) is python-chess's EPD and clock at every
    ply of real games: the evaluation cache's keys do not change."""
    from site_builder.analysis.spec import position_key

    plies = 0
    for game in _real_games():
        board = chess.Board()
        for uci in game.moves:
            assert position_key(board) == _epd_key(board)
            board.push(chess.Move.from_uci(uci))
            plies += 1
        assert position_key(board) == _epd_key(board)
    assert plies > 5000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=160))
def test_position_keys_of_random_games_are_python_chess_epds(choices: list[int]) -> None:
    """Random legal games (promotions, en passant, castling rights lost, bare kings) give
    python-chess's EPD and clock."""
    from site_builder.analysis.spec import position_key

    board = chess.Board()
    for choice in choices:
        moves = sorted(board.legal_moves, key=lambda m: m.uci())
        if not moves:
            break
        board.push(moves[choice % len(moves)])
        assert position_key(board) == _epd_key(board)


@pytest.mark.parametrize(
    "fen",
    [
        "8/8/8/8/8/8/8/8 w - - 0 1",  # no piece at all
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
        "k7/8/8/8/8/8/8/7K b - - 99 80",
        "QQQQQQQQ/8/8/8/8/8/8/k6K w - - 0 1",
        "1n1n1n1n/8/8/8/8/8/8/k6K w - - 0 1",
    ],
)
def test_position_keys_of_edge_boards_are_python_chess_epds(fen: str) -> None:
    from site_builder.analysis.spec import board_fen, position_key

    board = chess.Board(fen)
    assert board_fen(board) == board.board_fen()
    assert position_key(board) == _epd_key(board)
