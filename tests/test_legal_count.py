"""positions.legal_move_count: python-chess's legal move count, counted on bitboards, in
every position of random games and of the demo's games, and in positions made to test
pins, en passant, promotions and castling."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.pgn
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.analysis.positions import legal_move_count

GAMES = Path(__file__).resolve().parents[1] / "content" / "games"

TRICKY = [
    # Kiwipete and the other perft positions of the Chess Programming Wiki
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    # en passant that would expose the king along its rank
    "8/8/8/K2pP2r/8/8/8/7k w - d6 0 2",
    "4k3/8/8/2KpP2r/8/8/8/8 w - d6 0 1",
    # en passant by a pawn pinned on a file, and out of a pawn's check
    "8/8/3k4/3pP3/8/8/3K4/3R4 w - d6 0 1",
    "1k6/8/8/5pP1/4K3/8/8/8 w - f6 0 1",
    # a pawn pinned on its file may push; on a diagonal it may only take the pinner
    "4k3/8/4r3/8/8/8/4P3/4K3 w - - 0 1",
    "4k3/8/8/8/8/2b5/3P4/4K3 w - - 0 1",
    # promotions, with a capture, and castling through an attacked square
    "r3k3/1P6/8/8/8/8/8/4K2R w K - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/5p2/R3K2R w KQkq - 0 1",
    "k7/8/8/8/8/8/5p2/4K1b1 b - - 0 1",
]


@pytest.mark.parametrize("fen", TRICKY)
def test_made_positions(fen: str) -> None:
    board = chess.Board(fen)
    assert legal_move_count(board) == board.legal_moves.count()
    board.turn = not board.turn  # the other side to move, where that is a legal position
    if board.is_valid():
        assert legal_move_count(board) == board.legal_moves.count()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_every_position_of_a_random_game(seed: int) -> None:
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(400):
        assert legal_move_count(board) == board.legal_moves.count(), board.fen()
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))


def test_every_position_of_the_demos_world_championship_games() -> None:
    positions = 0
    for path in sorted((GAMES / "world-championships").glob("*.pgn")):
        with path.open(encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                board = game.board()
                for move in game.mainline_moves():
                    assert legal_move_count(board) == board.legal_moves.count(), board.fen()
                    positions += 1
                    board.push(move)
    assert positions > 10_000
