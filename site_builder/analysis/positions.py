"""Which positions of which games are analysed, and what is still missing from the cache."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import chess

from site_builder.analysis.cache import EvalCache
from site_builder.analysis.engine import PositionTask
from site_builder.analysis.spec import AnalysisSpec, position_key
from site_builder.model import GameRecord


@dataclass(frozen=True)
class Ply:
    """One move of a game, as the metrics see it."""

    ply: int  # 0-based half-move index
    move_number: int  # full-move number
    white: bool  # True when White makes the move
    position: str  # cache position key before the move ("" when not analysed)
    played: str  # UCI
    san: str
    forced: bool  # the only legal move
    repetition: bool  # position occurred earlier in the game
    legal: int = 0  # legal moves in the position (0 when not keyed)


def repetition_key(board: chess.Board) -> tuple[object, ...]:
    """What makes two positions "the same" for repetition (FIDE Laws 9.2.2): the same
    pieces on the same squares, the same side to move, the same castling rights and the
    same en passant capture, if one is legal. (python-chess's own ``is_repetition`` replays
    the game at every ply: 2x the time of this key, 0.74 s against 0.37 s for the demo's
    289,406 plies.)"""
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.occupied_co[chess.BLACK],
        board.turn,
        board.clean_castling_rights(),
        board.ep_square if board.has_legal_en_passant() else None,
    )


def game_plies(game: GameRecord, keys_from: int | None = 1) -> list[Ply]:
    """Every move of the game (no engine involved).

    Position keys and forced-move checks are made from full move ``keys_from`` on
    (``None``: never, for games the engine does not analyse).
    """
    board = chess.Board()
    seen: set[object] = set()
    out: list[Ply] = []
    sans = game.sans
    for index, uci in enumerate(game.moves):
        move = chess.Move.from_uci(uci)
        keyed = keys_from is not None and board.fullmove_number >= keys_from
        rep_key = repetition_key(board)
        legal = board.legal_moves.count() if keyed else 0
        out.append(
            Ply(
                ply=index,
                move_number=board.fullmove_number,
                white=board.turn == chess.WHITE,
                position=position_key(board) if keyed else "",
                played=uci,
                san=sans[index] if sans else "",
                forced=legal == 1,
                repetition=rep_key in seen,
                legal=legal,
            )
        )
        seen.add(rep_key)
        if not sans:
            out[-1] = replace(out[-1], san=board.san(move))
            board.push(move)
            continue
        board.push(move)
        if board.is_check():  # PGN tokens come without the check sign
            mate = next(board.generate_legal_moves(), None) is None
            out[-1] = replace(out[-1], san=out[-1].san + ("#" if mate else "+"))
    return out


def analysed_plies(plies: Iterable[Ply], first_move: int) -> list[Ply]:
    """Plies the engine looks at: from ``first_move`` on, forced moves left out."""
    return [p for p in plies if p.move_number >= first_move and p.position and not p.forced]


def missing_tasks(
    wanted: Sequence[tuple[str, str]], spec: AnalysisSpec, cache: EvalCache
) -> tuple[list[PositionTask], int]:
    """Tasks for (position, played move) pairs not answered by the cache.

    Returns (tasks in first-seen order, number of unique positions already answered).
    """
    moves_by_position: dict[str, list[str]] = {}
    for position, uci in wanted:
        moves = moves_by_position.setdefault(position, [])
        if uci not in moves:
            moves.append(uci)
    tasks: list[PositionTask] = []
    hits = 0
    for position, moves in moves_by_position.items():
        value = cache.lookup(spec, position)
        if value is None:
            tasks.append(PositionTask(position, True, tuple(moves)))
            continue
        in_lines = {line[0] for line in value["lines"]}
        extra = tuple(
            m for m in moves if m not in in_lines and cache.lookup(spec, position, m) is None
        )
        if extra:
            tasks.append(PositionTask(position, False, extra))
        else:
            hits += 1
    return tasks, hits


def chunked(tasks: Sequence[PositionTask], size: int) -> list[list[PositionTask]]:
    return [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]
