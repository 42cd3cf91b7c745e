"""Which positions of which games are analysed, and what is still missing from the cache."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import chess
import numpy as np
from numpy.typing import NDArray

from site_builder.analysis.cache import EvalCache
from site_builder.analysis.engine import PositionTask
from site_builder.analysis.spec import AnalysisSpec, move_of, position_key
from site_builder.model import GameRecord, refusing_other_layouts


@refusing_other_layouts
@dataclass(frozen=True, slots=True)
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


def legal_move_count(board: chess.Board) -> int:
    """``board.legal_moves.count()``, counted on bitboards instead of made move by move (12.6
    against 28.6 µs a position of the demo's games): outside check a piece's moves are its
    attacks (a pinned piece's along its pin), each pawn promotion counts four, a king's move
    counts when its square is not attacked; castling, en passant and positions in check
    (few) are left to python-chess's own generators, which the counts mirror."""
    us = board.turn
    king = board.king(us)
    if king is None or board.attackers_mask(not us, king):  # in check (the king found once)
        return board.legal_moves.count()
    ours, theirs, occupied = board.occupied_co[us], board.occupied_co[not us], board.occupied
    pinned = _pinned(board, king, ours)
    count = 0
    for square in chess.scan_reversed(ours & ~board.pawns & ~board.kings):
        moves = board.attacks_mask(square) & ~ours
        if pinned & chess.BB_SQUARES[square]:
            moves &= chess.ray(king, square)
        count += moves.bit_count()
    for target in chess.scan_reversed(chess.BB_KING_ATTACKS[king] & ~ours):
        count += not board.is_attacked_by(not us, target)
    if board.castling_rights & ours:
        count += sum(1 for _ in board.generate_castling_moves())
    pawns = board.pawns & ours
    for square in chess.scan_reversed(pawns & pinned):  # each along its own pin
        along = chess.ray(king, square)
        count += _pawn_moves(chess.BB_SQUARES[square], us, theirs, occupied, along)
    count += _pawn_moves(pawns & ~pinned, us, theirs, occupied, chess.BB_ALL)
    if board.ep_square is not None:
        count += sum(1 for move in board.generate_pseudo_legal_ep() if board.is_legal(move))
    return count


def _pinned(board: chess.Board, king: chess.Square, ours: chess.Bitboard) -> chess.Bitboard:
    """Our pieces alone between our king and an enemy slider on its line."""
    rooks_and_queens = board.rooks | board.queens
    bishops_and_queens = board.bishops | board.queens
    snipers = (
        (chess.BB_RANK_ATTACKS[king][0] & rooks_and_queens)
        | (chess.BB_FILE_ATTACKS[king][0] & rooks_and_queens)
        | (chess.BB_DIAG_ATTACKS[king][0] & bishops_and_queens)
    ) & board.occupied_co[not board.turn]
    pinned = 0
    for sniper in chess.scan_reversed(snipers):
        between = chess.between(king, sniper) & board.occupied
        if between and chess.BB_SQUARES[chess.msb(between)] == between:
            pinned |= between
    return pinned & ours


def _pawn_moves(
    pawns: chess.Bitboard,
    white: bool,
    theirs: chess.Bitboard,
    occupied: chess.Bitboard,
    allowed: chess.Bitboard,
) -> int:
    """The pushes and captures of ``pawns`` (en passant aside) whose target is in ``allowed``,
    a promotion four times."""
    if not pawns:
        return 0
    if white:
        single = pawns << 8 & ~occupied & chess.BB_ALL
        double = single << 8 & ~occupied & chess.BB_RANK_4
        captures = [(pawns & ~chess.BB_FILE_A) << 7, (pawns & ~chess.BB_FILE_H) << 9]
    else:
        single = pawns >> 8 & ~occupied
        double = single >> 8 & ~occupied & chess.BB_RANK_5
        captures = [(pawns & ~chess.BB_FILE_H) >> 7, (pawns & ~chess.BB_FILE_A) >> 9]
    count = 0
    for targets in (single, double, *(c & theirs & chess.BB_ALL for c in captures)):
        targets &= allowed
        count += targets.bit_count() + 3 * (targets & chess.BB_BACKRANKS).bit_count()
    return count


def game_plies(game: GameRecord, keys_from: int | None = 1) -> list[Ply]:
    """Every move of the game (no engine involved).

    Position keys and forced-move checks are made from full move ``keys_from`` on
    (``None``: never, for games the engine does not analyse).
    """
    board = chess.Board()
    seen: set[object] = set()
    out: list[Ply] = []
    sans = tuple(game.sans)
    for index, uci in enumerate(game.moves):
        move = move_of(uci)
        keyed = keys_from is not None and board.fullmove_number >= keys_from
        rep_key = repetition_key(board)
        legal = legal_move_count(board) if keyed else 0
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


def position_hash(position: str) -> int:
    """A 64-bit hash of a position key (to count distinct positions in little memory)."""
    return int.from_bytes(hashlib.blake2b(position.encode(), digest_size=8).digest(), "big")


class HashSet:
    """Distinct 64-bit hashes, added a batch at a time, kept as sorted runs whose lengths at
    least double from the newest to the oldest (a log-structured merge): adding n hashes in
    all costs O(n log n) and a lookup one binary search a run. (Merging every batch into one
    sorted array, as ``np.union1d`` does, sorts everything seen at each batch: quadratic in
    the games, 100 s for 64 batches of 150,000 new hashes.)"""

    def __init__(self) -> None:
        self._runs: list[NDArray[np.uint64]] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def contains(self, values: NDArray[np.uint64]) -> NDArray[np.bool_]:
        """Which of ``values`` were added before."""
        found = np.zeros(len(values), dtype=bool)
        for run in self._runs:
            at = np.minimum(np.searchsorted(run, values), len(run) - 1)
            found |= run[at] == values
        return found

    def add(self, values: NDArray[np.uint64]) -> NDArray[np.bool_]:
        """Add ``values``; which of them were not added before (one lookup for both)."""
        new = ~self.contains(values)
        fresh = np.unique(values[new])
        if not len(fresh):
            return new
        self._runs.append(fresh)
        while len(self._runs) > 1 and len(self._runs[-2]) <= 2 * len(self._runs[-1]):
            newer, older = self._runs.pop(), self._runs.pop()
            merged = np.concatenate([older, newer])
            merged.sort(kind="stable")  # timsort: two sorted runs merge in linear time
            self._runs.append(merged)
        return new

    def sorted(self) -> NDArray[np.uint64]:
        """Every hash, sorted."""
        if not self._runs:
            return np.empty(0, np.uint64)
        every = np.concatenate(self._runs)
        every.sort(kind="stable")
        return every


class Wanted:
    """The (position, played move) pairs a build needs, added a batch of games at a time:
    the tasks the evaluation cache cannot answer (positions in first-seen order, each with
    its played moves) and the distinct positions, kept as 64-bit hashes, so the games'
    plies need not stay in memory until the engines run."""

    def __init__(self, spec: AnalysisSpec, cache: EvalCache) -> None:
        self.spec, self.cache = spec, cache
        #: position → (the whole position is missing, its played moves still to search)
        self._missing: dict[str, tuple[bool, list[str]]] = {}
        self._pairs = HashSet()
        self._positions = HashSet()
        #: positions handed to the engines by :meth:`take_tasks`
        self._tasked = HashSet()

    def __len__(self) -> int:
        """Distinct positions."""
        return len(self._positions)

    @property
    def positions(self) -> NDArray[np.uint64]:
        """:func:`position_hash` of every distinct position, sorted."""
        return self._positions.sorted()

    def add(self, wanted: Iterable[tuple[str, str]]) -> None:
        batch = list(wanted)
        if not batch:
            return
        n = len(batch)
        pairs = np.fromiter((position_hash(f"{p} {m}") for p, m in batch), np.uint64, n)
        fresh = self._pairs.add(pairs)  # pairs of earlier batches are settled
        self._positions.add(np.fromiter((position_hash(p) for p, _ in batch), np.uint64, n))
        moves_by_position: dict[str, list[str]] = {}
        for (position, uci), new in zip(batch, fresh.tolist(), strict=True):
            if new:
                moves = moves_by_position.setdefault(position, [])
                if uci not in moves:
                    moves.append(uci)
        for position, moves in moves_by_position.items():
            task = self._missing.get(position)
            if task is not None and task[0]:  # searched whole: every played move with it
                task[1].extend(moves)
                continue
            value = self.cache.lookup(self.spec, position)
            if value is None:
                self._missing[position] = (True, moves)
                continue
            in_lines = {line[0] for line in value["lines"]}
            extra = [
                m
                for m in moves
                if m not in in_lines and self.cache.lookup(self.spec, position, m) is None
            ]
            if extra and task is None:
                self._missing[position] = (False, extra)
            elif extra and task is not None:
                task[1].extend(extra)

    def tasks(self) -> list[PositionTask]:
        """What the engines must search, positions in first-seen order."""
        return [PositionTask(p, full, tuple(moves)) for p, (full, moves) in self._missing.items()]

    @property
    def pending(self) -> int:
        """Positions with a search still to hand to the engines."""
        return len(self._missing)

    def take_tasks(self) -> list[PositionTask]:
        """:meth:`tasks`, no longer held here: the build analyses them before it adds more
        games, so it holds the positions of a round of analysis, not of the corpus."""
        tasks = self.tasks()
        self._tasked.add(_hashes(t.position for t in tasks))
        self._missing = {}
        return tasks

    @property
    def hits(self) -> int:
        """Distinct positions the cache answered in full when they were added."""
        held = _hashes(self._missing)
        return len(self._positions) - len(self._tasked) - int((~self._tasked.contains(held)).sum())


def _hashes(positions: Iterable[str]) -> NDArray[np.uint64]:
    found = [position_hash(p) for p in positions]
    return np.array(found, dtype=np.uint64)


def missing_tasks(
    wanted: Sequence[tuple[str, str]], spec: AnalysisSpec, cache: EvalCache
) -> tuple[list[PositionTask], int]:
    """Tasks for (position, played move) pairs not answered by the cache.

    Returns (tasks in first-seen order, number of unique positions already answered).
    """
    needed = Wanted(spec, cache)
    needed.add(wanted)
    return needed.tasks(), needed.hits


def chunked(tasks: Sequence[PositionTask], size: int) -> list[list[PositionTask]]:
    return [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]
