"""Material, sacrifices, endgames and the Short Draw Factor (metrics/style.py)."""

from __future__ import annotations

from pathlib import Path

import chess
import chess.pgn
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.metrics import style

DATA = Path(__file__).parent / "data"
VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}

# The seed's example: a draw after 20 moves in which each side gave a knight and two pawns,
# so each keeps Q, 2R, 2B, N and 6P = 34; White 2700, Black 2670.
SEED_DRAW = """[Event "Seed example"]
[White "White, A"]
[Black "Black, B"]
[Result "1/2-1/2"]
[Date "2024.01.01"]
[WhiteElo "2700"]
[BlackElo "2670"]

1. e4 d5 2. exd5 Qxd5 3. Nc3 Qa5 4. d4 e5 5. dxe5 Qxe5+ 6. Be2 Nc6 7. Nf3 Qa5
8. Nd4 Nf6 9. Nxc6 bxc6 10. O-O Be7 11. Re1 O-O 12. Bf1 Re8 13. h3 h6 14. a3 a6
15. g3 g6 16. Bg2 Bf8 17. Kh2 Kh7 18. Rf1 Rb8 19. Rb1 Bd7 20. Be3 Bd6 1/2-1/2
"""


def games(path: Path) -> list[chess.pgn.Game]:
    out = []
    with path.open(encoding="utf-8") as fh:
        while (game := chess.pgn.read_game(fh)) is not None:
            out.append(game)
    return out


def uci(game: chess.pgn.Game) -> list[str]:
    return [m.uci() for m in game.mainline_moves()]


def test_seed_example_to_the_digit() -> None:
    assert style.short_draw_factor(34, 40, 2700, 2670, True) == 39.0
    assert style.short_draw_factor(34, 40, 2700, 2670, False) == 19.0
    # Without the Elo term: 34 − 20 + 15 = 29.
    assert style.short_draw_factor(34, 40, 2700, 2750, True) == 29.0


def test_seed_example_from_the_moves() -> None:
    import io

    game = chess.pgn.read_game(io.StringIO(SEED_DRAW))
    assert game is not None
    trace = style.material_trace(uci(game))
    assert len(trace) == 40
    assert trace[-1][:2] == (34, 34)
    assert style.short_draw_factor(trace[-1][0], 40, 2700, 2670, True) == 39.0
    assert style.short_draw_factor(trace[-1][1], 40, 2700, 2670, False) == 19.0


def test_short_draw_penalty_and_clipping() -> None:
    # 3 per half-move under 45, at most 45: 10 half-moves would be 105, capped at 45.
    assert style.short_draw_factor(39, 10, 2600, 2650, True) == 39 - 5 + 45 + 0
    assert style.short_draw_factor(39, 44, 2600, 2650, True) == 39 - 22 + 3
    assert style.short_draw_factor(39, 45, 2600, 2650, True) == 39 - 23
    # A long fighting draw is negative and counts 0 in the player's SDF.
    assert style.short_draw_factor(5, 120, 2600, 2650, True) < 0
    assert style.player_sdf([-30.0, 12.0], 4) == 3.0


def test_zero_draws_and_zero_games() -> None:
    assert style.player_sdf([], 9) == 0.0
    assert style.player_sdf([], 0) is None


def test_light_board_matches_python_chess(data_dir: Path) -> None:
    """Captures, en passant, castling and promotions: the material after every half-move."""
    files = [
        data_dir / "small-site/games/WorldChamp1886.pgn",
        data_dir / "small-site/games/GrandSwissPalma2017.pgn",
        DATA / "results/sacrifices.pgn",
    ]
    checked = 0
    for path in files:
        for game in games(path):
            board = game.board()
            trace = style.material_trace(uci(game))
            for move, (white, black, capture) in zip(game.mainline_moves(), trace, strict=True):
                taken = board.is_capture(move)
                board.push(move)
                pieces = board.piece_map().values()
                assert white == sum(VALUES.get(p.piece_type, 0) for p in pieces if p.color)
                assert black == sum(VALUES.get(p.piece_type, 0) for p in pieces if not p.color)
                assert (capture >= 0) == taken and (not taken or capture == move.to_square)
                checked += 1
    assert checked > 7000


def test_promotion_and_en_passant() -> None:
    # 1.e4 d5 2.e5 f5 3.exf6 (en passant) ... 5.fxg8=Q: White gains 8 on promotion.
    moves = ["e2e4", "d7d5", "e4e5", "f7f5", "e5f6", "a7a6", "f6g7", "a6a5", "g7h8q"]
    trace = style.material_trace(moves)
    assert trace[4] == (39, 38, 45)  # exf6 e.p. lands on f6 (square 45)
    assert trace[6] == (39, 37, 54)
    assert trace[8] == (39 + 8, 37 - 5, 63)


def test_won_piece_sacrifices_count() -> None:
    """Kupper – Tal, Zurich 1959 (16...Nxb2 17.Kxb2) and Kasparov – Topalov 1999 (24.Rxd4)."""
    tal, kasparov = games(DATA / "results/sacrifices.pgn")
    trace = style.material_trace(uci(tal))
    balance = style.exchange_balances(trace, white=False)
    # 16...Nxb2 is ply 32 (index 31): a knight for a pawn, −2 until 23...exd4.
    assert balance[30] == 0 and balance[31:45] == [-2] * 14
    assert style.longest_deficit(balance) == 14
    assert style.sacrifice_won(trace, white=False, score=1.0)
    trace = style.material_trace(uci(kasparov))
    assert style.exchange_balances(trace, white=True)[46] == -4  # 24.Rxd4 cxd4: R for P
    assert style.longest_deficit(style.exchange_balances(trace, white=True)) == 30
    assert style.sacrifice_won(trace, white=True, score=1.0)
    # The losers were never down material for long; and a loss is never a sacrifice win.
    assert not style.sacrifice_won(trace, white=False, score=0.0)


def test_plain_exchanges_do_not_count() -> None:
    """Capablanca – Reti, New York 1924: twenty captures, each answered on the same square."""
    (game,) = games(DATA / "results/exchanges.pgn")
    trace = style.material_trace(uci(game))
    raw = style.balances(trace, white=True)
    assert sum(1 for t in trace if t[2] >= 0) == 20
    assert sum(1 for b in raw if b <= -1) == 6  # the opponent's half of each exchange
    assert style.exchange_balances(trace, white=True) == [0] * len(trace)
    assert not style.sacrifice_won(trace, white=True, score=1.0)


def test_exchange_rule_details() -> None:
    # A capture answered by a capture elsewhere is no exchange: the dip stays.
    trace = [(39, 36, 10), (36, 36, 20), (36, 36, -1)]
    assert style.exchange_balances(trace, white=True) == [3, 0, 0]
    # A chain of recaptures on one square takes the balance after the last.
    chain = [(39, 34, 27), (34, 34, 27), (34, 29, 27), (29, 29, 27), (29, 29, -1)]
    assert style.exchange_balances(chain, white=False) == [0, 0, 0, 0, 0]
    # A piece simply taken (no capture before it) starts a run.
    hung = [(39, 39, -1), (36, 39, 30)] + [(36, 39, -1)] * 5
    assert style.longest_deficit(style.exchange_balances(hung, white=True)) == 6
    assert style.sacrifice_won(hung, white=True, score=1.0)
    assert not style.sacrifice_won(hung, white=True, score=1.0, plies=7)


def test_endgame_games() -> None:
    quiet = [(39, 39, -1)] * 100  # 50 moves, level material
    assert style.is_endgame_game(quiet, 50)
    assert not style.is_endgame_game(quiet, 49)
    up_two = [(39, 37, -1)] * 100
    assert not style.is_endgame_game(up_two, 50)
    assert style.is_endgame_game(up_two, 50, max_balance=2)
    assert style.balance_at_move(quiet[:79], True, 40) is None


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 39),
    st.integers(0, 300),
    st.integers(1000, 2900),
    st.integers(1000, 2900),
)
def test_colours_differ_by_twice_the_elo_term(
    material: int, plies: int, elo_w: int, elo_b: int
) -> None:
    white = style.short_draw_factor(material, plies, elo_w, elo_b, True)
    black = style.short_draw_factor(material, plies, elo_w, elo_b, False)
    assert white - black == pytest.approx((elo_w + 50 - elo_b) / 4)
