"""Fischl's Fighter Rating and playing style, per game and player (METHODS.md §2), pure.

Material is counted Q 9, R 5, B 3, N 3, P 1 (kings not counted). A game's moves are replayed
on a light board that only tracks pieces; the full rules are python-chess's job at ingest.
"""

from __future__ import annotations

from collections.abc import Sequence

PIECE_VALUES = {"p": 1, "n": 3, "b": 3, "r": 5, "q": 9, "k": 0}
#: Material of each side at the start: Q + 2R + 2B + 2N + 8P.
START_MATERIAL = 39

_START_RANK = "rnbqkbnr"


_SQUARES = {f"{f}{r}": i + 8 * (r - 1) for i, f in enumerate("abcdefgh") for r in range(1, 9)}


#: After one half-move: (White's material, Black's material, square captured on or -1).
PlyMaterial = tuple[int, int, int]


def material_trace(moves: Sequence[str]) -> list[PlyMaterial]:
    """Material of both sides after each UCI move of a game from the standard start.

    Handles captures, en passant, castling and promotion. A null move ("0000") changes
    nothing.
    """
    board: list[str] = [""] * 64
    for f, piece in enumerate(_START_RANK):
        board[f] = piece.upper()
        board[8 + f] = "P"
        board[48 + f] = "p"
        board[56 + f] = piece
    white = black = START_MATERIAL
    out: list[PlyMaterial] = []
    for uci in moves:
        if uci == "0000" or len(uci) < 4:
            out.append((white, black, -1))
            continue
        src, dst = _SQUARES[uci[0:2]], _SQUARES[uci[2:4]]
        piece = board[src]
        is_white = piece.isupper()
        captured = board[dst]
        taken_on = dst
        kind = piece.lower()
        if kind == "p" and not captured and src % 8 != dst % 8:
            taken_on = (src // 8) * 8 + dst % 8  # en passant
            captured = board[taken_on]
            board[taken_on] = ""
        if kind == "k" and abs(src - dst) == 2:  # castling: move the rook too
            rook_from, rook_to = (src + 3, src + 1) if dst > src else (src - 4, src - 1)
            board[rook_to], board[rook_from] = board[rook_from], ""
        board[src] = ""
        placed = piece
        if len(uci) == 5:
            placed = uci[4].upper() if is_white else uci[4].lower()
            gain = PIECE_VALUES[uci[4].lower()] - 1
            if is_white:
                white += gain
            else:
                black += gain
        board[dst] = placed
        if captured:
            loss = PIECE_VALUES[captured.lower()]
            if captured.isupper():
                white -= loss
            else:
                black -= loss
        out.append((white, black, dst if captured else -1))
    return out


def balances(trace: Sequence[PlyMaterial], white: bool) -> list[int]:
    """Material balance (own − opponent's, pawns) after each half-move, player's view."""
    return [(w - b) if white else (b - w) for w, b, _ in trace]


def exchange_balances(trace: Sequence[PlyMaterial], white: bool) -> list[int]:
    """Balances where a capture answered at once by a recapture on the same square takes the
    balance after the recapture (chains of recaptures resolve to the last one)."""
    out = balances(trace, white)
    for i in range(len(trace) - 2, -1, -1):
        sq = trace[i][2]
        if sq >= 0 and trace[i + 1][2] == sq:
            out[i] = out[i + 1]
    return out


def longest_deficit(balance: Sequence[int], deficit: int = 1) -> int:
    """Most consecutive half-moves with balance ≤ −deficit."""
    best = run = 0
    for b in balance:
        run = run + 1 if b <= -deficit else 0
        best = max(best, run)
    return best


def sacrifice_won(
    trace: Sequence[PlyMaterial], white: bool, score: float, deficit: int = 1, plies: int = 6
) -> bool:
    """A win after being down ≥ ``deficit`` pawns for ≥ ``plies`` consecutive half-moves,
    disregarding exchanges (see :func:`exchange_balances`)."""
    return score == 1.0 and longest_deficit(exchange_balances(trace, white), deficit) >= plies


def short_draw_factor(
    material: int,
    plies: int,
    elo_white: float,
    elo_black: float,
    white: bool,
    *,
    max_plies: int = 45,
    points_per_ply: float = 3.0,
    max_penalty: float = 45.0,
    white_bonus: float = 50.0,
    elo_divisor: float = 8.0,
) -> float:
    """Fischl's Short Draw Factor of one player in one drawn game, before clipping at 0.

    ``material`` is the player's material in the final position; full moves =
    ``(plies + 1) // 2``. Seed's example: 34 material, 40 half-moves, 2700 against 2670 →
    39 for White, 19 for Black.

    >>> short_draw_factor(34, 40, 2700, 2670, True), short_draw_factor(34, 40, 2700, 2670, False)
    (39.0, 19.0)
    """
    if plies < 0:
        raise ValueError(f"plies must not be negative, got {plies}")
    full_moves = (plies + 1) // 2
    penalty = min(max_penalty, points_per_ply * max(0, max_plies - plies))
    elo_term = (elo_white + white_bonus - elo_black) / elo_divisor
    return material - full_moves + penalty + (elo_term if white else -elo_term)


def player_sdf(factors: Sequence[float], games: int) -> float | None:
    """Sum of the positive factors over the number of all the player's games; None for 0."""
    if games <= 0:
        return None
    return sum(max(0.0, f) for f in factors) / games


def balance_at_move(trace: Sequence[PlyMaterial], white: bool, move: int) -> int | None:
    """Exchange-aware balance after Black's ``move``-th move (ply 2·move); None if shorter."""
    ply = 2 * move
    if len(trace) < ply or ply <= 0:
        return None
    return exchange_balances(trace, white)[ply - 1]


def is_endgame_game(
    trace: Sequence[PlyMaterial],
    full_moves: int,
    min_moves: int = 50,
    check_move: int = 40,
    max_balance: int = 1,
) -> bool:
    """Fischl's endgame games: ≥ ``min_moves`` moves and, at ``check_move``, neither side up
    more than ``max_balance`` pawns."""
    if full_moves < min_moves:
        return False
    bal = balance_at_move(trace, True, check_move)
    return bal is not None and abs(bal) <= max_balance
