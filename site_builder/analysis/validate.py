"""What a valid evaluation looks like: checked before anything is stored in the cache.

One pure function, :func:`invalid_reason`, is used at every boundary: on the engine's answer
(:mod:`pool`), on import (:mod:`exchange`) and by ``site-builder doctor --check``. An entry it
accepts can be read by the metrics (:func:`site_builder.metrics.moves.move_row`) without error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import chess

from site_builder.analysis.spec import board_from_key, move_of

#: The move of a line whose move is unknown (evaluations read from PGN comments).
UNKNOWN_MOVE = ""


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _score_reason(cp: object, mate: object) -> str | None:
    """A score is centipawns or mate in n (never both, never neither), as integers."""
    if cp is None and mate is None:
        return "a score has neither centipawns nor mate"
    if cp is not None and mate is not None:
        return "a score has both centipawns and mate"
    if cp is not None and not _is_int(cp):
        return f"centipawns {cp!r} is not an integer"
    if mate is not None and not _is_int(mate):
        return f"mate {mate!r} is not an integer"
    return None


def _board(position: str) -> chess.Board | None:
    """The board of a position key (EPD and halfmove clock), or None if it is malformed."""
    parts = position.split(" ")
    if len(parts) != 5 or not parts[4].isdigit():
        return None
    try:
        board = board_from_key(position)
    except ValueError:
        return None
    return board if board.is_valid() else None


class _Legality:
    """Which moves are legal in one position, asked move by move (an entry names about ten
    moves, fewer than a position has): each answer computed once."""

    def __init__(self, board: chess.Board) -> None:
        self.board = board
        self.answers: dict[str, bool] = {}
        self.has_moves = any(True for _ in board.generate_legal_moves())

    def __call__(self, uci: str) -> bool:
        found = self.answers.get(uci)
        if found is None:
            move = _move(uci)
            found = self.answers[uci] = move is not None and self.board.is_legal(move)
        return found


@lru_cache(maxsize=4096)
def _legality(position: str) -> _Legality | None:
    """None: not a valid position. Memoised: a position's lines and its played moves'
    entries come one after the other."""
    board = _board(position)
    return None if board is None else _Legality(board)


def _move(uci: str) -> chess.Move | None:
    try:
        return move_of(uci)
    except ValueError:
        return None


def _move_reason(legal: _Legality, uci: object, allow_unknown: bool) -> str | None:
    if allow_unknown and uci == UNKNOWN_MOVE:
        return None
    if not isinstance(uci, str):
        return f"move {uci!r} is not a UCI string"
    if legal(uci):
        return None
    if _move(uci) is None:
        return f"move {uci!r} is not a UCI move"
    return f"move {uci} is illegal in this position"


def _counters_reason(value: dict[str, Any], fields: tuple[str, ...]) -> str | None:
    for name in fields:
        if name not in value:
            return f"field {name!r} is missing"
        check = _is_number if name == "time" else _is_int
        if not check(value[name]) or value[name] < 0:
            return f"field {name!r} is {value[name]!r}, not a non-negative number"
    return None


def lines_reason(
    position: str, value: object, multipv: int, knows_best_move: bool = True
) -> str | None:
    """Why a position's principal lines are invalid, or None."""
    if not isinstance(value, dict):
        return f"value is {type(value).__name__}, not a mapping"
    legal = _legality(position) if isinstance(position, str) else None
    if legal is None:
        return f"position {position!r} is not a valid chess position"
    reason = _counters_reason(value, ("depth", "seldepth", "nodes", "time"))
    if reason:
        return reason
    lines, by_depth = value.get("lines"), value.get("by_depth")
    if not isinstance(lines, list) or not isinstance(by_depth, list):
        return "field 'lines' or 'by_depth' is missing or not a list"
    has_moves = legal.has_moves
    if has_moves and not lines:
        return "no principal line"
    if not has_moves and lines:
        return "lines given for a position with no legal move"
    if len(lines) > multipv:
        return f"{len(lines)} lines but multi-PV is {multipv}"
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, list) or len(line) != 3:
            return f"line {number} is not [move, cp, mate]"
        uci, cp, mate = line
        reason = _move_reason(legal, uci, not knows_best_move) or _score_reason(cp, mate)
        if reason:
            return f"line {number}: {reason}"
        if uci in seen:
            return f"line {number}: move {uci} appears twice"
        seen.add(uci)
    for step in by_depth:
        if not isinstance(step, list) or len(step) != 4 or not _is_int(step[0]):
            return "a by-depth entry is not [depth, cp, mate, move]"
        reason = _move_reason(legal, step[3], not knows_best_move) or _score_reason(*step[1:3])
        if reason:
            return f"depth {step[0]}: {reason}"
    return None


def move_reason(position: str, uci: str, value: object) -> str | None:
    """Why the score of the played move ``uci`` searched alone is invalid, or None."""
    if not isinstance(value, dict):
        return f"value is {type(value).__name__}, not a mapping"
    legal = _legality(position) if isinstance(position, str) else None
    if legal is None:
        return f"position {position!r} is not a valid chess position"
    reason = _move_reason(legal, uci, False)
    if reason:
        return reason
    if value.get("move") != uci:
        return f"value is for move {value.get('move')!r}, not {uci}"
    return _score_reason(value.get("cp"), value.get("mate")) or _counters_reason(
        value, ("depth", "nodes", "time")
    )


@dataclass(frozen=True)
class KeyParts:
    """A cache key read back: what :func:`invalid_reason` needs to check its value."""

    kind: str  # "pv" or "mv"
    multipv: int
    knows_best_move: bool
    position: str
    move: str | None


_SPEC_PART = re.compile(r"\|pv(\d+)\|hash\d+\|threads(\d+)\|s\d+\|")


def parse_key(key: str) -> KeyParts | None:
    """The parts of a ``pv|...`` or ``mv|...`` key (see :mod:`spec`); None for other keys."""
    if not key.startswith(("pv|", "mv|")):
        return None
    found = _SPEC_PART.search(key)
    if found is None:
        return None
    rest = key[found.end() :]
    move: str | None = None
    if key.startswith("mv|"):
        if "|" not in rest:
            return None
        rest, move = rest.rsplit("|", 1)
    return KeyParts(key[:2], int(found[1]), int(found[2]) > 0, rest, move)


def invalid_reason(key: str, value: object) -> str | None:
    """Why the cache entry ``key`` → ``value`` is invalid, or None when it is sound.

    Other keys than evaluations (``meta|...``) are not checked.
    """
    parts = parse_key(key)
    if parts is None:
        if key.startswith(("pv|", "mv|")):
            return "the key is not in the evaluation key format"
        return None
    if parts.move is None:
        return lines_reason(parts.position, value, parts.multipv, parts.knows_best_move)
    return move_reason(parts.position, parts.move, value)
